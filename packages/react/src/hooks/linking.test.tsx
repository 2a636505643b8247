// @vitest-environment happy-dom

import {
  AccountAlreadyLinkedError,
  type Connector,
  type CreateConnectorFn,
  connect,
  createClient,
  createMemoryStorage,
  type EmbeddedFlows,
  type EmbeddedUser,
  injected,
  LastLoginError,
  type LinkedLogin,
} from '@latchkey/core'
import { createDevWallet } from '@latchkey/core/dev'
import { act, renderHook, waitFor } from '@testing-library/react'
import type { ReactNode } from 'react'
import { privateKeyToAddress } from 'viem/accounts'
import { expect, test } from 'vitest'
import { anvilKeys, testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { LatchkeyProvider } from '../LatchkeyProvider.js'
import { useLinkAccount, useUnlinkAccount, useUser } from './useLinking.js'

// The linking hooks over an embedded connector whose flows are the test's: what each hook asks of
// them, and the embedded wallet's refusals (by their stable codes) as core's typed errors.

const address = privateKeyToAddress(anvilKeys[0])
const email: LinkedLogin = { id: 'login-1', kind: 'email', label: 'ada@example.test', linkedAt: '2026-01-01T00:00:00.000Z' }
const passkey: LinkedLogin = { id: 'login-2', kind: 'passkey', label: 'Laptop', linkedAt: '2026-01-02T00:00:00.000Z' }
/** An error as @latchkey/embedded throws it: a stable code and its catalogue text. */
const embeddedError = (code: string, shortMessage: string, details: string) => Object.assign(new Error(shortMessage), { code, shortMessage, details })

/** `signedOut`: the app backend has no session for the user (getUser is null). */
function setup({ signedOut = false } = {}) {
  const logins = [email]
  const calls: unknown[][] = []
  const user = (): EmbeddedUser => ({
    userId: 'user-1',
    organizationId: 'org-1',
    logins: [...logins],
    wallets: [{ address, kind: 'embedded' }],
    mfa: { enrolled: [] },
  })
  const flows = {
    linking: {
      getUser: async () => (signedOut ? null : user()),
      providers: async () => [],
      linkEmail: async (value: string) => {
        calls.push(['linkEmail', value])
        throw embeddedError('account_already_linked', 'This login belongs to another account.', 'This login belongs to another user')
      },
      linkPasskey: async (name?: string) => {
        calls.push(['linkPasskey', name])
        logins.push(passkey)
        return passkey
      },
      linkOAuth: async () => passkey,
      walletNonce: async () => 'nonce',
      linkWallet: async () => passkey,
      unlink: async (id: string) => {
        calls.push(['unlink', id])
        if (logins.length === 1) throw embeddedError('last_login', 'The last sign-in method cannot be removed.', 'This is the last way to sign in')
        logins.splice(
          logins.findIndex((login) => login.id === id),
          1,
        )
      },
    },
  } as unknown as EmbeddedFlows
  // The dev wallet stands in for the embedded wallet's provider; the flows are the test's.
  const base = injected({ id: 'embedded', name: 'Embedded', provider: createDevWallet({ privateKey: anvilKeys[0], chains: testChains() }) })
  const fake = Object.assign((config: Parameters<CreateConnectorFn>[0]) => ({ ...base(config), type: 'embedded', getFlows: async () => flows }) as Connector, {
    id: 'embedded',
  })
  const logger = createRecordingLogger()
  const client = createClient({ chains: testChains(), storage: createMemoryStorage(), logger, window: new EventTarget(), connectors: [fake] })
  const wrapper = ({ children }: { children: ReactNode }) => <LatchkeyProvider client={client}>{children}</LatchkeyProvider>
  return { client, wrapper, calls, logger }
}

test('default: useUser is idle until the embedded wallet connects, then reads the user; a linked passkey shows on refetch', async () => {
  const { client, wrapper, calls } = setup()
  const { result } = renderHook(() => ({ user: useUser(), link: useLinkAccount() }), { wrapper })
  expect(result.current.user).toMatchObject({ status: 'idle', data: undefined })
  await act(() => connect(client, { connector: 'embedded' }))
  await waitFor(() => expect(result.current.user.status).toBe('success'))
  expect(result.current.user.data?.logins).toEqual([email])
  let linked: LinkedLogin | undefined
  await act(async () => {
    linked = await result.current.link.linkAccount({ kind: 'passkey', name: 'Laptop' })
  })
  expect(linked).toEqual(passkey)
  expect(result.current.link).toMatchObject({ status: 'success', data: passkey, error: null })
  expect(calls).toEqual([['linkPasskey', 'Laptop']])
  act(() => result.current.user.refetch())
  await waitFor(() => expect(result.current.user.data?.logins).toEqual([email, passkey]))
})

test('behavior: signed out at the app backend, useUser is a success with null data, and nothing is logged', async () => {
  const { client, wrapper, logger } = setup({ signedOut: true })
  await connect(client, { connector: 'embedded' })
  const { result } = renderHook(() => useUser(), { wrapper })
  await waitFor(() => expect(result.current.status).toBe('success'))
  expect(result.current).toMatchObject({ data: null, error: null })
  expect([logger.errors, logger.warnings]).toEqual([[], []])
})

test('error: useLinkAccount of another user’s login is AccountAlreadyLinkedError in its state, not logged', async () => {
  const { client, wrapper, calls, logger } = setup()
  await connect(client, { connector: 'embedded' })
  const { result } = renderHook(() => useLinkAccount(), { wrapper })
  await act(() => result.current.linkAccount({ kind: 'email', email: 'bob@example.test' }).catch(() => undefined))
  expect(result.current.status).toBe('error')
  expect(result.current.error).toBeInstanceOf(AccountAlreadyLinkedError)
  expect(result.current.error).toMatchObject({ shortMessage: 'This login belongs to another account.', details: 'This login belongs to another user' })
  expect(calls).toEqual([['linkEmail', 'bob@example.test']])
  expect([logger.errors, logger.warnings]).toEqual([[], []])
})

test('error: useUnlinkAccount of the last login is LastLoginError in its state', async () => {
  const { client, wrapper, calls } = setup()
  await connect(client, { connector: 'embedded' })
  const { result } = renderHook(() => useUnlinkAccount(), { wrapper })
  await act(() => result.current.unlinkAccount({ id: email.id }).catch(() => undefined))
  expect(result.current.error).toBeInstanceOf(LastLoginError)
  expect(result.current.error?.shortMessage).toBe('The last sign-in method cannot be removed.')
  expect(calls).toEqual([['unlink', email.id]])
})
