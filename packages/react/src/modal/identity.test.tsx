// @vitest-environment happy-dom

import { connect, createClient, createMemoryStorage, injected, type SignInAdapter } from '@latchkey/core'
import { createDevWallet } from '@latchkey/core/dev'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { createPublicClient, http, toHex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterEach, beforeAll, describe, expect, test } from 'vitest'
import { testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { ConnectButton } from '../ConnectButton.js'
import { useSendTransaction } from '../hooks/useSendTransaction.js'
import { LatchkeyProvider } from '../LatchkeyProvider.js'

// Who is signed in, in the account modal: what the backend's /auth/session carries (through the
// client's sign-in adapter), and what the app just sent through the hooks.
const key = generatePrivateKey()
const address = privateKeyToAddress(key)
const chains = testChains()
beforeAll(async () => {
  const chainA = createPublicClient({ transport: http(chains[0].rpcUrls.default.http[0]) })
  await chainA.request({ method: 'anvil_setBalance' as never, params: [address, toHex(10n ** 20n)] as never })
})
afterEach(cleanup)

function adapter(session: Record<string, unknown> | null): SignInAdapter {
  return {
    getNonce: async () => 'unused',
    verify: async () => {
      throw new Error('not in this test')
    },
    getSession: async () => session as never,
    signOut: async () => {},
  }
}

async function setup(session: Record<string, unknown> | null) {
  const wallet = createDevWallet({ privateKey: key, chains })
  const client = createClient({
    chains,
    storage: createMemoryStorage(),
    logger: createRecordingLogger(),
    window: new EventTarget(),
    connectors: [injected({ id: 'dev', name: 'Dev Wallet', provider: wallet })],
    signIn: adapter(session),
  })
  await connect(client, { connector: 'dev' })
  // What a reload does: the session the backend still holds.
  await client.auth?.restore()
  function Send() {
    const { sendTransaction } = useSendTransaction()
    return (
      <button type="button" onClick={() => void sendTransaction({ to: address, value: 1n }).catch(() => {})}>
        send
      </button>
    )
  }
  render(
    <LatchkeyProvider client={client} toasts={false}>
      <ConnectButton />
      <Send />
    </LatchkeyProvider>,
  )
  await userEvent.click(screen.getByRole('button', { name: `Account ${address.slice(0, 6)}…${address.slice(-4)}` }))
  return within(await screen.findByRole('dialog', { name: 'Account' }))
}

describe('identity in the account modal', () => {
  test('default: the email of an OAuth session and how the user signed in', async () => {
    const dialog = await setup({ address, email: 'ada@example.test', kind: 'oauth', expiresAt: '2099-01-01T00:00:00.000Z' })
    const identity = dialog.getByRole('group', { name: 'Signed-in user' })
    expect(identity.textContent).toBe('ada@example.testSigned in with Google or Apple')
    expect(decodeURIComponent(identity.querySelector('img')?.getAttribute('src') ?? '')).toMatch(/^data:image\/svg\+xml,<svg .*>A<\/text><\/svg>$/)
  })

  test('behavior: an email session says so; a passkey session without an email shows the short address', async () => {
    const dialog = await setup({ address, email: 'bo@example.test', kind: 'email' })
    expect(dialog.getByRole('group', { name: 'Signed-in user' }).textContent).toBe('bo@example.testSigned in with email')
    cleanup()
    const again = await setup({ address, email: null, kind: 'passkey' })
    expect(again.getByRole('group', { name: 'Signed-in user' }).textContent).toBe(`${address.slice(0, 6)}…${address.slice(-4)}Signed in with a passkey`)
  })

  test('behavior: without a session the modal shows the short address and no last transaction; after a send it shows it', async () => {
    const dialog = await setup(null)
    expect(dialog.getByRole('group', { name: 'Signed-in user' }).textContent).toBe(`${address.slice(0, 6)}…${address.slice(-4)}`)
    expect(dialog.queryByRole('region', { name: 'Last transaction' })).toBe(null)
    await userEvent.click(screen.getByRole('button', { name: 'send' }))
    const last = await dialog.findByRole('region', { name: 'Last transaction' })
    await waitFor(() => expect(last.textContent).toBe('Last transactionTransaction confirmedView on Local explorer'))
    expect(within(last).getByRole('link').getAttribute('href')).toMatch(/^http:\/\/localhost:5173\/explorer\/31337\/tx\/0x[0-9a-f]{64}$/)
  })
})
