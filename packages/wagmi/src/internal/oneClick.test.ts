import { connectAndSignIn, getSignIn } from '@latchkey/core'
import { getFreePort } from '@latchkey/devnet'
import { createRelay, type Relay } from '@latchkey/relay'
import { type Cacao, createSignClient, memoryStorage, type WebSocketConstructor } from '@latchkey/walletconnect'
import { createCacao, formatAuthMessage, populateAuthPayload } from '@latchkey/walletconnect/cacao'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, expect, inject, test } from 'vitest'
import { createConfig, http } from 'wagmi'
import { WebSocket } from 'ws'
import { anvilKeys, testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { verifyingAdapter } from '../../../../test/siwe.js'
import { walletConnect } from '../connectors/walletConnect.js'
import { createWagmiClient } from './createWagmiClient.js'

// One-click sign-in on wagmi: Latchkey's connectAndSignIn through the bridge, with this package's
// walletConnect() in a wagmi config, against a wallet-role Sign client with a real key through
// our relay; the adapter verifies the CACAO for real (viem's SIWE check against anvil).

const signer = privateKeyToAccount(anvilKeys[7]!)
const CHAINS = ['eip155:31337', 'eip155:31338']
let relay: Relay
const closers: (() => unknown)[] = []
beforeAll(async () => {
  relay = createRelay({ port: await getFreePort(), rpc: { 'eip155:31337': inject('chainARpc') } })
  await relay.start()
})
afterAll(async () => {
  for (const close of closers.splice(0)) await close()
  await relay.stop()
})

test('default: one approval in the wallet (session_authenticate, no proposal, no personal_sign) connects wagmi and signs in', async () => {
  const wallet = await createSignClient({
    relayUrl: relay.url,
    metadata: { name: 'Test Wallet', description: 'test', url: 'http://wallet.test', icons: [] },
    WebSocket: WebSocket as unknown as WebSocketConstructor,
  })
  closers.push(() => wallet.close())
  const seen: string[] = []
  wallet.events.on('session_proposal', () => seen.push('session_proposal'))
  wallet.events.on('session_request', ({ params }) => seen.push(params.request.method))
  wallet.events.on('session_authenticate', async ({ id, params }) => {
    seen.push('session_authenticate')
    const payload = populateAuthPayload({ authPayload: params.authPayload, chains: CHAINS, methods: ['personal_sign', 'eth_sendTransaction'] })
    const auths: Cacao[] = await Promise.all(
      payload.chains.map(async (chain) => {
        const iss = `did:pkh:${chain}:${signer.address}`
        return createCacao({ payload, iss, signature: { t: 'eip191', s: await signer.signMessage({ message: formatAuthMessage({ payload, iss }) }) } })
      }),
    )
    await wallet.approveAuthenticate({ id, auths })
  })

  const chains = testChains()
  const config = createConfig({
    chains,
    connectors: [walletConnect({ relayUrl: relay.url, WebSocket: WebSocket as unknown as WebSocketConstructor, storage: memoryStorage(), reinitWaitMs: 0 })],
    transports: { [chains[0].id]: http(), [chains[1].id]: http() },
    multiInjectedProviderDiscovery: false,
  })
  // The pairing URI as wagmi's own WalletConnect connector sends it; the wallet "scans" it.
  config.connectors[0]!.emitter.on('message', ({ type, data }) => {
    if (type === 'display_uri') void wallet.pair({ uri: data as string })
  })
  const { adapter, calls } = verifyingAdapter()
  const client = createWagmiClient(config, { signIn: adapter, logger: createRecordingLogger() })
  closers.push(client.mount())

  const result = await connectAndSignIn(client, { connector: 'walletConnect', statement: 'Sign in to the test.' })
  closers.push(() => config.connectors[0]!.disconnect())
  expect(result.session).toEqual({ address: signer.address, chainId: 31337, walletKind: 'walletConnect' })
  expect(getSignIn(client).status).toBe('signedIn')
  expect(calls).toEqual(['getNonce', 'verifyCacao'])
  expect(seen).toEqual(['session_authenticate'])
  const current = config.state.connections.get(config.state.current!)
  expect({ status: config.state.status, accounts: current?.accounts, chainId: current?.chainId }).toEqual({
    status: 'connected',
    accounts: [signer.address],
    chainId: 31337,
  })
})
