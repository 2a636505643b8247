import { getFreePort } from '@latchkey/devnet'
import { createRelay, type Relay } from '@latchkey/relay'
import { buildApprovedNamespaces, type Cacao, createSignClient, memoryStorage, type SignClient, type WebSocketConstructor } from '@latchkey/walletconnect'
import { createCacao, formatAuthMessage, populateAuthPayload } from '@latchkey/walletconnect/cacao'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, afterEach, beforeAll, describe, expect, inject, test } from 'vitest'
import { WebSocket } from 'ws'
import { anvilKeys, testChains } from '../../../../test/chains.js'
import { verifyingAdapter } from '../../../../test/siwe.js'
import { switchChain } from '../actions/switchChain.js'
import { walletConnect } from '../connectors/walletConnect.js'
import { createClient } from '../createClient.js'
import { createMemoryStorage } from '../storage.js'
import { getSignIn } from './actions.js'
import { connectAndSignIn } from './connectAndSignIn.js'

// connectAndSignIn with the walletConnect connector against our wallet-role Sign client with a
// real key, through our relay; the adapter verifies for real (viem's SIWE check against anvil).

const signer = privateKeyToAccount(anvilKeys[9]!)
const CHAINS = ['eip155:31337', 'eip155:31338']

let relay: Relay
const closers: (() => void)[] = []
beforeAll(async () => {
  relay = createRelay({ port: await getFreePort(), rpc: { 'eip155:31337': inject('chainARpc') } })
  await relay.start()
})
afterEach(() => {
  for (const close of closers.splice(0)) close()
})
afterAll(() => relay.stop())

type Behaviour = 'sign' | 'reject' | 'without-method'

/** A phone wallet: one-click sign-in as `behaviour` says; proposals approved; personal_sign signed. */
async function wallet(behaviour: Behaviour) {
  const client = await createSignClient({
    relayUrl: relay.url,
    metadata: { name: 'Test Wallet', description: 'test', url: 'http://wallet.test', icons: [] },
    WebSocket: WebSocket as unknown as WebSocketConstructor,
  })
  closers.push(() => client.close())
  const seen: string[] = []
  if (behaviour !== 'without-method')
    client.events.on('session_authenticate', async ({ id, params }) => {
      seen.push('session_authenticate')
      if (behaviour === 'reject') return void (await client.rejectAuthenticate({ id }).catch(() => undefined))
      const payload = populateAuthPayload({ authPayload: params.authPayload, chains: CHAINS, methods: ['personal_sign', 'eth_sendTransaction'] })
      const auths: Cacao[] = await Promise.all(
        payload.chains.map(async (chain) => {
          const iss = `did:pkh:${chain}:${signer.address}`
          return createCacao({ payload, iss, signature: { t: 'eip191', s: await signer.signMessage({ message: formatAuthMessage({ payload, iss }) }) } })
        }),
      )
      await client.approveAuthenticate({ id, auths }).catch(() => undefined)
    })
  client.events.on('session_proposal', ({ id, params }) => {
    seen.push('session_proposal')
    const supported = {
      eip155: {
        chains: CHAINS,
        methods: ['personal_sign', 'eth_sendTransaction'],
        events: ['chainChanged', 'accountsChanged'],
        accounts: CHAINS.map((c) => `${c}:${signer.address}`),
      },
    }
    client.approve({ id, namespaces: buildApprovedNamespaces({ proposal: params, supported }) }).catch(() => undefined)
  })
  client.events.on('session_request', async ({ id, topic, params }) => {
    seen.push(params.request.method)
    const [message] = params.request.params as [`0x${string}`]
    await client.respond({ topic, response: { id, jsonrpc: '2.0', result: await signer.signMessage({ message: { raw: message } }) } }).catch(() => undefined)
  })
  return { client, seen }
}

function setup(extra: { projectId?: string } = {}) {
  const { adapter, calls } = verifyingAdapter()
  const client = createClient({
    chains: testChains(),
    connectors: [
      walletConnect({ relayUrl: relay.url, WebSocket: WebSocket as unknown as WebSocketConstructor, storage: memoryStorage(), reinitWaitMs: 0, ...extra }),
    ],
    storage: createMemoryStorage(),
    signIn: adapter,
  })
  const connector = client.getConnectors().find((c) => c.id === 'walletConnect')!
  closers.push(() => void connector.getProvider().then((p) => (p as unknown as { close?: () => void }).close?.()))
  return { client, connector, calls }
}

/** Pairs `w` with every URI the client shows, as a phone scanning each QR code. */
function scanWith(client: ReturnType<typeof setup>['client'], w: SignClient) {
  const uris: string[] = []
  client.subscribe((state) => {
    if (state.status !== 'pairing' || !state.pairingUri || uris.includes(state.pairingUri)) return
    uris.push(state.pairingUri)
    void w.pair({ uri: state.pairingUri }).catch(() => undefined)
  })
  return uris
}

describe('connectAndSignIn with WalletConnect', () => {
  test('default: connected and signed in after one approval; no personal_sign', async () => {
    const w = await wallet('sign')
    const { client, connector, calls } = setup()
    const uris = scanWith(client, w.client)
    const result = await connectAndSignIn(client, { connector, statement: 'Sign in to the test.' })
    expect(result.accounts).toEqual([signer.address])
    expect(result.session).toEqual({ address: signer.address, chainId: 31337, walletKind: 'walletConnect' })
    expect(getSignIn(client).status).toBe('signedIn')
    expect(client.getState().status).toBe('connected')
    expect(calls).toEqual(['getNonce', 'verifyCacao'])
    expect(w.seen).toEqual(['session_authenticate'])
    expect(uris).toHaveLength(1)
  })

  test('fallback: a wallet without the method approves the proposal, then signs the SIWE message', async () => {
    const w = await wallet('without-method')
    const { client, connector, calls } = setup()
    const uris = scanWith(client, w.client)
    const result = await connectAndSignIn(client, { connector })
    expect(result.session.address).toBe(signer.address)
    expect(calls).toEqual(['getNonce', 'getNonce', 'verify'])
    expect(w.seen).toEqual(['session_proposal', 'personal_sign'])
    expect(uris).toHaveLength(1)
  })

  test('fallback: a refusal, then a plain pairing on a new URI and personal_sign', async () => {
    const w = await wallet('reject')
    const { client, connector, calls } = setup()
    const uris = scanWith(client, w.client)
    const result = await connectAndSignIn(client, { connector })
    expect(result.session.address).toBe(signer.address)
    expect(getSignIn(client).status).toBe('signedIn')
    expect(calls).toEqual(['getNonce', 'getNonce', 'verify'])
    expect(w.seen).toEqual(['session_authenticate', 'session_proposal', 'personal_sign'])
    expect(uris).toHaveLength(2)
  })
})

describe('reads with a project id', () => {
  test('a chain without an RPC url here reads through the relay’s endpoint (which knows only 31337)', async () => {
    const w = await wallet('without-method')
    const { client, connector } = setup({ projectId: 'local' })
    scanWith(client, w.client)
    await connectAndSignIn(client, { connector })
    const provider = await connector.getProvider()
    expect(await provider.request({ method: 'eth_blockNumber' })).toMatch(/^0x[0-9a-f]+$/)
    await switchChain(client, { chainId: 31338 })
    await expect(provider.request({ method: 'eth_blockNumber' })).rejects.toThrow('Unsupported chainId eip155:31338')
  })
})
