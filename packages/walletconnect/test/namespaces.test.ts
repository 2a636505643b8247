import type { Relay } from '@latchkey/relay'
import { afterAll, afterEach, beforeAll, describe, expect, inject, test } from 'vitest'
import { WebSocket } from 'ws'
import {
  createEthereumProvider,
  type EthereumProvider,
  type EthereumProviderOptions,
  type SessionNamespaces,
  type WalletConnectError,
  type WebSocketConstructor,
} from '../src/index.js'
import { account, closing, grant, type Peer, peer, startRelay } from './peers.js'

// SPEC §3, §5 and §7 through the provider: session properties, the wallet's default chain, the
// session's rpcMap, the relay's JSON-RPC endpoint as the eip155 default, the chains rule, and
// namespaces other than eip155.

const SOLANA = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
const SOLANA_ACCOUNT = `${SOLANA}:9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM`

let relay: Relay
const open: { close(): void }[] = []

beforeAll(async () => {
  relay = await startRelay()
})
afterEach(() => {
  for (const item of open.splice(0)) item.close()
})
afterAll(() => relay.stop())

function provider(extra: Partial<EthereumProviderOptions> = {}): EthereumProvider {
  const created = createEthereumProvider({
    relayUrl: relay.url,
    metadata: { name: 'ns-dapp', description: 'test', url: 'http://dapp.test', icons: [] },
    chains: [31337],
    optionalChains: [31338],
    WebSocket: WebSocket as unknown as WebSocketConstructor,
    reinitWaitMs: 0,
    ...extra,
  })
  open.push(created)
  return created
}

/** A provider connected to our wallet-role client, which approves with `namespaces`. */
async function connected(
  options: Partial<EthereumProviderOptions>,
  namespaces: SessionNamespaces,
  approve: { sessionProperties?: Record<string, string> } = {},
) {
  const dapp = provider(options)
  const w: Peer = await peer(relay, 'wallet')
  open.push(w)
  await dapp.init()
  dapp.on('display_uri', (uri) => void w.pair({ uri }).catch(closing))
  const proposal = new Promise<{ id: number; params: { sessionProperties?: Record<string, string> | undefined } }>((resolve) =>
    w.events.once('session_proposal', resolve),
  )
  w.events.on('session_proposal', ({ id }) => void w.approve({ id, namespaces, ...approve }).catch(closing))
  const session = await dapp.connect()
  return { dapp, w, session, proposal: await proposal }
}

const code = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: WalletConnectError) => `${error.code}: ${error.shortMessage}`,
  )

describe('SPEC namespace rules', () => {
  test('sessionProperties: set on connect, carried to the wallet, exposed on the session', async () => {
    const { dapp, session, proposal } = await connected({ sessionProperties: { caip154: 'true', app: 'latchkey' } }, grant())
    expect(proposal.params.sessionProperties).toEqual({ caip154: 'true', app: 'latchkey' })
    expect(session.sessionProperties).toEqual({ caip154: 'true', app: 'latchkey' })
    expect(dapp.session?.sessionProperties).toEqual({ caip154: 'true', app: 'latchkey' })
  })

  test('sessionProperties: the wallet’s answer wins over what was asked', async () => {
    const { session } = await connected({ sessionProperties: { capabilities: '{}' } }, grant(), { sessionProperties: { capabilities: '{"atomic":true}' } })
    expect(session.sessionProperties).toEqual({ capabilities: '{"atomic":true}' })
  })

  test('defaultChain: the wallet’s default chain is the starting chain', async () => {
    const namespaces = { eip155: { ...grant().eip155, defaultChain: 'eip155:31338' } }
    const { dapp } = await connected({ rpcMap: { 31337: inject('chainARpc'), 31338: inject('chainBRpc') } }, namespaces)
    expect(dapp.chainId).toBe(31338)
    expect(await dapp.request({ method: 'eth_chainId' })).toBe('0x7a6a')
  })

  test('rpcMap: the session’s rpcMap serves reads when the app gave none', async () => {
    const urls: string[] = []
    const recording: typeof fetch = (url, init) => (urls.push(String(url)), fetch(url, init))
    const namespaces = { eip155: { ...grant().eip155, rpcMap: { '31337': inject('chainBRpc') } } }
    const { dapp } = await connected({ rpcMap: {}, fetch: recording }, namespaces)
    expect(await dapp.request({ method: 'eth_blockNumber' })).toMatch(/^0x[0-9a-f]+$/)
    expect(urls).toEqual([inject('chainBRpc')])
  })

  test('relay endpoint: the eip155 default with a project id, only where no RPC url is given', async () => {
    const urls: string[] = []
    const fetchStub: typeof fetch = async (url, init) => {
      urls.push(String(url))
      return fetch(inject('chainARpc'), init)
    }
    const { dapp } = await connected({ projectId: 'local', rpcMap: { 31338: inject('chainBRpc') }, fetch: fetchStub }, grant())
    expect(await dapp.request({ method: 'eth_blockNumber' })).toMatch(/^0x[0-9a-f]+$/)
    expect(urls).toEqual([`${relay.url.replace('ws', 'http')}/v1/?chainId=eip155%3A31337&projectId=local`])
    dapp.setDefaultChain(31338)
    await dapp.request({ method: 'eth_blockNumber' })
    expect(urls[1]).toBe(inject('chainBRpc'))
  })

  test('error: chains [] is refused with Invalid chains whatever optionalChains holds', async () => {
    const dapp = provider({ chains: [], optionalChains: [31337, 31338] })
    await dapp.init()
    expect(await code(dapp.connect())).toBe('invalid_chains: Invalid chains')
    expect(await code(dapp.connect({ chains: [], optionalChains: [1] }))).toBe('invalid_chains: Invalid chains')
  })
})

describe('namespaces other than eip155', () => {
  const solana = { solana: { chains: [SOLANA], methods: ['solana_signMessage'], events: [] } }
  const both = {
    ...grant(),
    solana: { chains: [SOLANA], methods: ['solana_signMessage'], events: [], accounts: [SOLANA_ACCOUNT] },
  }

  test('default: a session holds solana beside eip155; requests go to the namespace of their chain', async () => {
    const { dapp, w, session, proposal } = await connected({ namespaces: solana, rpcMap: { 31337: inject('chainARpc') } }, both)
    expect((proposal.params as { optionalNamespaces?: unknown }).optionalNamespaces).toMatchObject(solana)
    expect(session.namespaces.solana?.accounts).toEqual([SOLANA_ACCOUNT])
    const seen: string[] = []
    w.events.on('session_request', ({ id, topic, params }) => {
      seen.push(`${params.chainId} ${params.request.method}`)
      void w.respond({ topic, response: { id, jsonrpc: '2.0', result: { signature: 'sig' } } }).catch(closing)
    })
    expect(await dapp.request({ method: 'solana_signMessage', params: { message: 'aGk=', pubkey: 'x' } }, SOLANA)).toEqual({ signature: 'sig' })
    expect(await dapp.request({ method: 'personal_sign', params: ['0x01', account] })).toEqual({ signature: 'sig' })
    expect(seen).toEqual([`${SOLANA} solana_signMessage`, 'eip155:31337 personal_sign'])
  })

  test('reads for a non-eip155 chain go to its configured RPC url; without one, JSON-RPC provider not found', async () => {
    // Any JSON-RPC node proves the routing; the anvil node answers with its own chain id.
    const { dapp } = await connected({ namespaces: solana, rpcMap: { [SOLANA]: inject('chainBRpc') } }, both)
    expect(await dapp.request({ method: 'eth_chainId' }, SOLANA)).toBe('0x7a6a')
    const bare = await connected({ namespaces: solana, rpcMap: {}, projectId: 'local' }, both)
    expect(await code(bare.dapp.request({ method: 'getBalance', params: ['x'] }, SOLANA))).toBe(
      `rpc_provider_not_found: JSON-RPC provider for ${SOLANA} not found`,
    )
  })
})
