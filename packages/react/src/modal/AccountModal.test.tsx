// @vitest-environment happy-dom

import { connect, createClient, createMemoryStorage, walletConnect } from '@latchkey/core'
import { buildApprovedNamespaces, createSignClient, type SignClient, type WebSocketConstructor } from '@latchkey/walletconnect'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { afterEach, expect, inject, test } from 'vitest'
import { WebSocket } from 'ws'
import { testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { LatchkeyProvider } from '../LatchkeyProvider.js'
import { AccountModal } from './AccountModal.js'

// The account modal over a real WalletConnect session (the run's relay, our wallet-role Sign client)
// in which the wallet granted chain A only: switching to chain B must send the user to the wallet.

const address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const relayUrl = inject('relayUrl')
const closers: (() => void)[] = []
afterEach(() => {
  cleanup()
  for (const close of closers.splice(0)) close()
})

async function walletGranting(chains: string[]): Promise<SignClient> {
  const wallet = await createSignClient({
    relayUrl,
    metadata: { name: 'Test Wallet', description: 'test', url: 'http://wallet.test', icons: [] },
    WebSocket: WebSocket as unknown as WebSocketConstructor,
  })
  closers.push(() => wallet.close())
  wallet.events.on('session_proposal', ({ id, params }) => {
    const namespaces = buildApprovedNamespaces({
      proposal: params,
      supported: {
        eip155: {
          chains,
          methods: ['personal_sign', 'eth_sendTransaction'],
          events: ['chainChanged', 'accountsChanged'],
          accounts: chains.map((c) => `${c}:${address}`),
        },
      },
    })
    void wallet.approve({ id, namespaces }).catch(() => undefined)
  })
  return wallet
}

test('behavior: a chain the WalletConnect session lacks shows the error and "switch in your wallet" guidance', async () => {
  const wallet = await walletGranting(['eip155:31337'])
  const client = createClient({
    chains: testChains(),
    storage: createMemoryStorage(),
    logger: createRecordingLogger(),
    window: new EventTarget(),
    connectors: [walletConnect({ relayUrl, WebSocket: WebSocket as unknown as WebSocketConstructor })],
  })
  const connector = client.getConnectors()[0]!
  closers.push(
    () =>
      void connector
        .getProvider()
        .then((p) => (p as unknown as { close?: () => void }).close?.())
        .catch(() => undefined),
  )
  client.subscribe((state) => {
    if (state.status === 'pairing' && state.pairingUri) void wallet.pair({ uri: state.pairingUri }).catch(() => undefined)
  })
  await connect(client, { connector })

  render(
    <LatchkeyProvider client={client}>
      <AccountModal theme="light" onClose={() => undefined} />
    </LatchkeyProvider>,
  )
  const dialog = await screen.findByRole('dialog', { name: 'Account' })
  await userEvent.click(within(dialog).getByRole('button', { name: 'Anvil B (31338)' }))
  const alert = await within(dialog).findByRole('alert')
  expect(alert.textContent).toBe('Network switching is not available at this time. The user should manually switch network in their wallet')
  expect(within(dialog).getByRole('note', { name: 'Switch in your wallet' }).textContent).toBe(
    "Open your wallet and switch to Anvil B (31338) there; this app follows the wallet's network.",
  )
  expect(client.getState().chainId).toBe(31337)

  // When the wallet then switches (here: after adding the chain to the session), the app follows.
  const [session] = wallet.sessions()
  await wallet.update({
    topic: session!.topic,
    namespaces: {
      eip155: {
        chains: ['eip155:31337', 'eip155:31338'],
        methods: ['personal_sign', 'eth_sendTransaction'],
        events: ['chainChanged', 'accountsChanged'],
        accounts: [`eip155:31337:${address}`, `eip155:31338:${address}`],
      },
    },
  })
  const followed = new Promise((resolve) => client.subscribe((state) => state.chainId === 31338 && resolve(true)))
  await wallet.emit({ topic: session!.topic, chainId: 'eip155:31338', event: { name: 'chainChanged', data: 31338 } })
  expect(await followed).toBe(true)
  expect(within(dialog).getByRole('button', { name: 'Anvil B (31338)' }).getAttribute('aria-pressed')).toBe('true')
  // The balance on the new chain arrives (and no read is left in flight when the page goes).
  await waitFor(() => expect(within(dialog).getByLabelText('Balance').textContent).toMatch(/ ETH$/))
})
