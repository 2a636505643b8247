// @vitest-environment happy-dom

import {
  type Connector,
  type CreateConnectorFn,
  connect,
  createClient,
  createMemoryStorage,
  type EmbeddedConnector,
  type EmbeddedFlows,
  type EmbeddedUser,
  getAccount,
  injected,
  type LinkedLogin,
} from '@latchkey/core'
import { createDevWallet } from '@latchkey/core/dev'
import { act, cleanup, render, renderHook, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import type { ReactNode } from 'react'
import { privateKeyToAddress } from 'viem/accounts'
import { afterEach, expect, test } from 'vitest'
import { anvilKeys, testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { ConnectButton } from '../ConnectButton.js'
import { useGuestSignIn } from '../hooks/useGuestSignIn.js'
import { LatchkeyProvider } from '../LatchkeyProvider.js'
import SignInMethods from './SignInMethods.js'

// Issue 28: "Continue as guest" (offered only when the backend says so, created only by a click,
// after the warning), the guest warning in Sign-in methods, and Verify-then-repeat when the kms
// asks for the second factor. The embedded connector's flows are the test's.

afterEach(cleanup)

const address = privateKeyToAddress(anvilKeys[0])
const email: LinkedLogin = { id: 'login-1', kind: 'email', label: 'ada@example.test', linkedAt: '2026-01-01T00:00:00.000Z' }
const passkey: LinkedLogin = { id: 'login-2', kind: 'passkey', label: 'Passkey', linkedAt: '2026-01-02T00:00:00.000Z' }
const totp = { factorId: 'factor-1', type: 'totp' as const, name: 'Authenticator app', enrolledAt: '2026-01-01T00:00:00.000Z' }
const WARNING =
  'This guest wallet lives in this browser only. Clearing this browser’s data, or a day passing, loses it, unless you add an email, a passkey or a social login.'
/** The kms's refusal as @latchkey/embedded throws it (its MfaRequiredError). */
const mfaRequired = () =>
  Object.assign(new Error('Turnkey error 7: a second factor is required'), {
    code: 'mfa_required',
    shortMessage: 'Turnkey error 7: a second factor is required',
    reason: 'MFA_REQUIRED',
    activityType: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
  })
/** Cancel in the consent frame, as the embedded wallet's ProviderRpcError. */
const cancelled = () => Object.assign(new Error('User rejected the request.'), { code: 4001 })

function setup(options: { guests?: boolean; guest?: boolean; mfa?: boolean; verify?: 'ok' | 'cancel' } = {}) {
  const calls: unknown[][] = []
  /** Each read of the backend's config (/auth/config). */
  const configReads: boolean[] = []
  const logins: LinkedLogin[] = options.guest ? [] : [email]
  let refusals = options.mfa ? 1 : 0
  const user = (): EmbeddedUser => ({
    userId: 'user-1',
    organizationId: 'org-1',
    logins: [...logins],
    wallets: [{ address, kind: 'embedded' }],
    mfa: { enrolled: options.mfa ? [totp] : [] },
    ...(options.guest && logins.length === 0 ? { guest: true as const } : {}),
  })
  const flows = {
    wallet: {
      continueAsGuest: async () => {
        calls.push(['continueAsGuest'])
      },
      verifyMfa: async (factorId: string) => {
        calls.push(['verifyMfa', factorId])
        if (options.verify === 'cancel') throw cancelled()
        return { verified: true }
      },
    },
    linking: {
      getUser: async () => user(),
      providers: async () => [],
      linkPasskey: async (name?: string) => {
        calls.push(['linkPasskey', name])
        if (refusals > 0) {
          refusals--
          throw mfaRequired()
        }
        logins.push(passkey)
        return passkey
      },
    },
  } as unknown as EmbeddedFlows
  const base = injected({ id: 'embedded', name: 'Embedded', provider: createDevWallet({ privateKey: anvilKeys[0], chains: testChains() }) })
  const fake = Object.assign(
    (config: Parameters<CreateConnectorFn>[0]) =>
      ({
        ...base(config),
        type: 'embedded',
        oauthProviders: [],
        offersGuests: async () => {
          configReads.push(options.guests === true)
          return options.guests === true
        },
        getFlows: async () => flows,
      }) as Connector,
    { id: 'embedded' },
  )
  const client = createClient({
    chains: testChains(),
    storage: createMemoryStorage(),
    logger: createRecordingLogger(),
    window: new EventTarget(),
    connectors: [fake],
  })
  const wrapper = ({ children }: { children: ReactNode }) => <LatchkeyProvider client={client}>{children}</LatchkeyProvider>
  const connector = () => client.getConnectors().find((candidate) => candidate.id === 'embedded') as EmbeddedConnector
  return { client, wrapper, calls, connector, configReads }
}

async function openConnectModal() {
  await userEvent.click(screen.getByRole('button', { name: 'Connect Wallet' }))
  return screen.findByRole('dialog', { name: 'Connect a wallet' })
}

test('default: the backend offers guests: "Continue as guest" shows the warning, and only the click on "Create a guest wallet" creates and connects it', async () => {
  const { client, wrapper, calls } = setup({ guests: true })
  render(<ConnectButton />, { wrapper })
  const dialog = await openConnectModal()
  await userEvent.click(await within(dialog).findByRole('button', { name: 'Continue as guest' }))
  const view = await screen.findByRole('dialog', { name: 'Sign in' })
  expect(await within(view).findByText(WARNING)).toBeTruthy()
  // Reading the warning creates nothing.
  expect(calls).toEqual([])
  await userEvent.click(within(view).getByRole('button', { name: 'Create a guest wallet' }))
  await waitFor(() => expect(getAccount(client).status).toBe('connected'))
  expect(getAccount(client).address).toBe(address)
  expect(calls).toEqual([['continueAsGuest']])
  await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull())
})

test('behavior: a backend that offers no guests has no "Continue as guest" button', async () => {
  const { wrapper, configReads, calls } = setup({ guests: false })
  render(<ConnectButton />, { wrapper })
  const dialog = await openConnectModal()
  await within(dialog).findByRole('button', { name: 'Continue with email' })
  // The config was read (once) and its answer rendered: still no button, and no guest created.
  await waitFor(() => expect(configReads).toEqual([false]))
  await act(async () => {})
  expect(calls).toEqual([])
  expect(within(dialog).queryByRole('button', { name: 'Continue as guest' })).toBeNull()
})

test('behavior: useGuestSignIn reads whether guests are offered, and signIn connects the guest wallet', async () => {
  const { client, wrapper, calls } = setup({ guests: true })
  const { result } = renderHook(() => useGuestSignIn(), { wrapper })
  await waitFor(() => expect(result.current.offered).toBe(true))
  expect(calls).toEqual([])
  await act(() => result.current.signIn())
  expect(result.current).toMatchObject({ status: 'success', data: { accounts: [address] }, error: null })
  expect(getAccount(client).address).toBe(address)
  expect(calls).toEqual([['continueAsGuest']])
})

test('behavior: a guest reads the warning in Sign-in methods, above the ways to add a login', async () => {
  const { client, wrapper, connector } = setup({ guest: true })
  await connect(client, { connector: 'embedded' })
  render(<SignInMethods connector={connector()} />, { wrapper })
  const warning = await screen.findByText(WARNING)
  const add = screen.getByRole('group', { name: 'Add a sign-in method' })
  expect(warning.compareDocumentPosition(add) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy()
})

test('behavior: a user with a login has no guest warning', async () => {
  const { client, wrapper, connector } = setup()
  await connect(client, { connector: 'embedded' })
  render(<SignInMethods connector={connector()} />, { wrapper })
  await screen.findByText(email.label)
  expect(screen.queryByText(WARNING)).toBeNull()
})

test('behavior: adding a login refused for want of the second factor offers Verify, which verifies it in the frame and repeats the link once', async () => {
  const { client, wrapper, connector, calls } = setup({ mfa: true, verify: 'ok' })
  await connect(client, { connector: 'embedded' })
  render(<SignInMethods connector={connector()} />, { wrapper })
  await screen.findByText(email.label)
  await userEvent.click(screen.getByRole('button', { name: 'Passkey' }))
  const alert = await screen.findByRole('alert')
  expect(alert.textContent).toBe('This change needs your second factor. Verify it, and the change is tried once more.Verify')
  expect(calls).toEqual([['linkPasskey', undefined]])
  await userEvent.click(within(alert).getByRole('button', { name: 'Verify' }))
  await waitFor(() => expect(screen.getByRole('status', { name: 'Sign-in methods status' }).textContent).toBe('Passkey linked. You can now sign in with it.'))
  expect(calls).toEqual([
    ['linkPasskey', undefined],
    ['verifyMfa', 'factor-1'],
    ['linkPasskey', undefined],
  ])
  expect(screen.queryByRole('alert')).toBeNull()
  await screen.findByText(passkey.label, { selector: '.lk-login-label' })
})

test('error: Verify cancelled in the frame leaves the refusal and its Verify, nothing linked and the link not repeated', async () => {
  const { client, wrapper, connector, calls } = setup({ mfa: true, verify: 'cancel' })
  await connect(client, { connector: 'embedded' })
  render(<SignInMethods connector={connector()} />, { wrapper })
  await screen.findByText(email.label)
  await userEvent.click(screen.getByRole('button', { name: 'Passkey' }))
  await userEvent.click(within(await screen.findByRole('alert')).getByRole('button', { name: 'Verify' }))
  await waitFor(() =>
    expect(calls).toEqual([
      ['linkPasskey', undefined],
      ['verifyMfa', 'factor-1'],
    ]),
  )
  const alert = await screen.findByRole('alert')
  expect(alert.textContent).toBe('This change needs your second factor. Verify it, and the change is tried once more.Verify')
  expect(within(alert).getByRole('button', { name: 'Verify' }).hasAttribute('disabled')).toBe(false)
  expect(screen.getAllByRole('listitem').map((item) => item.querySelector('.lk-login-label')?.textContent)).toEqual([`Email: ${email.label}`])
})
