// @vitest-environment happy-dom

import { createClient, createMemoryStorage, walletConnect } from '@latchkey/core'
import { type Cacao, createSignClient, memoryStorage, type WebSocketConstructor } from '@latchkey/walletconnect'
import { createCacao, formatAuthMessage, populateAuthPayload } from '@latchkey/walletconnect/cacao'
import { cleanup, render, screen, waitFor } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { privateKeyToAccount } from 'viem/accounts'
import { afterEach, expect, inject, test } from 'vitest'
import { WebSocket } from 'ws'
import { anvilKeys, testChains } from '../../../test/chains.js'
import { createRecordingLogger } from '../../../test/setup.js'
import { verifyingAdapter } from '../../../test/siwe.js'
import { ConnectButton } from './ConnectButton.js'
import { useSession } from './hooks/useSignIn.js'
import { LatchkeyProvider } from './LatchkeyProvider.js'

// <ConnectButton requireSignIn /> with WalletConnect: the wallet (our wallet-role Sign client with
// a real key, through the run's relay) connects and signs in with one approval.

const signer = privateKeyToAccount(anvilKeys[5])
const relayUrl = inject('relayUrl')
const closers: (() => void)[] = []
afterEach(() => {
  cleanup()
  for (const close of closers.splice(0)) close()
})

function Session() {
  const { session } = useSession()
  return <output aria-label="Session">{session?.address ?? ''}</output>
}

test('behavior: ConnectButton requireSignIn with WalletConnect: connected and signed in after one approval', async () => {
  const wallet = await createSignClient({
    relayUrl,
    metadata: { name: 'Phone Wallet', description: 'test', url: 'http://wallet.test', icons: [] },
    WebSocket: WebSocket as unknown as WebSocketConstructor,
  })
  closers.push(() => wallet.close())
  const seen: string[] = []
  wallet.events.on('session_proposal', () => seen.push('session_proposal'))
  wallet.events.on('session_request', () => seen.push('session_request'))
  wallet.events.on('session_authenticate', async ({ id, params }) => {
    seen.push('session_authenticate')
    const payload = populateAuthPayload({ authPayload: params.authPayload, chains: ['eip155:31337'], methods: ['personal_sign', 'eth_sendTransaction'] })
    const iss = `did:pkh:eip155:31337:${signer.address}`
    const auths: Cacao[] = [
      createCacao({ payload, iss, signature: { t: 'eip191', s: await signer.signMessage({ message: formatAuthMessage({ payload, iss }) }) } }),
    ]
    await wallet.approveAuthenticate({ id, auths }).catch(() => undefined)
  })

  const { adapter, calls } = verifyingAdapter(location.host)
  const client = createClient({
    chains: testChains(),
    storage: createMemoryStorage(),
    logger: createRecordingLogger(),
    window: new EventTarget(),
    connectors: [walletConnect({ relayUrl, WebSocket: WebSocket as unknown as WebSocketConstructor, storage: memoryStorage() })],
    signIn: adapter,
  })
  closers.push(
    () =>
      void client
        .getConnectors()[0]!
        .getProvider()
        .then((p) => (p as unknown as { close?: () => void }).close?.()),
  )
  // The phone scans the QR code the modal shows.
  client.subscribe((state) => {
    if (state.status === 'pairing' && state.pairingUri) void wallet.pair({ uri: state.pairingUri }).catch(() => undefined)
  })
  render(
    <LatchkeyProvider client={client}>
      <ConnectButton requireSignIn />
      <Session />
    </LatchkeyProvider>,
  )
  const user = userEvent.setup()
  await user.click(screen.getByRole('button', { name: 'Connect Wallet' }))
  await user.click(await screen.findByRole('button', { name: /WalletConnect/ }))
  await waitFor(() => expect(screen.getByRole('status', { name: 'Session' }).textContent).toBe(signer.address), { timeout: 20_000 })
  expect(seen).toEqual(['session_authenticate'])
  expect(calls).toEqual(['getNonce', 'verifyCacao'])
  expect(screen.queryByRole('button', { name: /Sign in/ })).toBeNull()
})
