import type { Relay } from '@latchkey/relay'
import { afterAll, afterEach, beforeAll, describe, expect, inject, test } from 'vitest'
import { WebSocket } from 'ws'
import {
  createEthereumProvider,
  type EthereumProvider,
  type EthereumProviderOptions,
  type KeyValueStorage,
  memoryStorage,
  type WalletConnectError,
  type WebSocketConstructor,
} from '../src/index.js'
import { account, closing, grant, next, type Peer, peer, startRelay } from './peers.js'

// The EIP-1193 provider (dapp side) against our wallet-role Sign client, through our relay; reads
// go to a real anvil chain.

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
    metadata: { name: 'provider-dapp', description: 'test', url: 'http://dapp.test', icons: [] },
    chains: [31337],
    optionalChains: [31338],
    rpcMap: { 31337: inject('chainARpc'), 31338: inject('chainBRpc') },
    WebSocket: WebSocket as unknown as WebSocketConstructor,
    reinitWaitMs: 0,
    ...extra,
  })
  open.push(created)
  return created
}

async function wallet(storage?: KeyValueStorage): Promise<Peer> {
  const created = await peer(relay, 'wallet', storage ? { storage } : {})
  open.push(created)
  return created
}

/** The wallet pairs with every URI the provider shows and answers proposals with `answer`. */
function pairOnDisplay(dapp: EthereumProvider, w: Peer, answer: (id: number) => Promise<unknown>) {
  dapp.on('display_uri', (uri) => void w.pair({ uri }).catch(closing))
  w.events.on('session_proposal', ({ id }) => void answer(id).catch(closing))
}

async function connected(options: Partial<EthereumProviderOptions> = {}, chains = grant()) {
  const dapp = provider(options)
  const w = await wallet()
  await dapp.init()
  pairOnDisplay(dapp, w, (id) => w.approve({ id, namespaces: chains }))
  const session = await dapp.connect()
  return { dapp, w, session }
}

const code = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: WalletConnectError) => `${error.code}: ${error.shortMessage}`,
  )

describe('connect', () => {
  test('default: a URI is shown, the wallet approves, accounts and chain come from the session', async () => {
    const { dapp, session } = await connected()
    expect(session.namespaces.eip155?.chains).toEqual(['eip155:31337', 'eip155:31338'])
    expect(await dapp.request({ method: 'eth_accounts' })).toEqual([account])
    expect(await dapp.request({ method: 'eth_chainId' })).toBe('0x7a69')
  })

  test('the proposal asks for the default methods and events, and the optional ones', async () => {
    const dapp = provider()
    const w = await wallet()
    await dapp.init()
    dapp.on('display_uri', (uri) => void w.pair({ uri }).catch(closing))
    const controller = new AbortController()
    const connecting = dapp.connect({ signal: controller.signal }).catch((error: Error) => error)
    const { params } = await next(w, 'session_proposal')
    controller.abort()
    expect(await connecting).toMatchObject({ code: 'pairing_aborted' })
    expect(params.requiredNamespaces.eip155).toEqual({
      chains: ['eip155:31337'],
      methods: ['eth_sendTransaction', 'personal_sign'],
      events: ['chainChanged', 'accountsChanged'],
    })
    expect(params.optionalNamespaces.eip155?.events).toEqual(['chainChanged', 'accountsChanged', 'message', 'disconnect', 'connect'])
    expect(params.optionalNamespaces.eip155?.chains).toEqual(['eip155:31337', 'eip155:31338'])
  })

  test('a rejected proposal is reported as connection_rejected and a new URI follows', async () => {
    const dapp = provider({ reinitWaitMs: undefined })
    const w = await wallet()
    await dapp.init()
    let answers = 0
    pairOnDisplay(dapp, w, (id) => (answers++ === 0 ? w.reject({ id }) : w.approve({ id, namespaces: grant() })))
    const uris: string[] = []
    const messages: { type: string; data: unknown }[] = []
    dapp.on('display_uri', (uri) => uris.push(uri))
    dapp.on('message', (message) => messages.push(message))
    await dapp.connect()
    expect(uris).toHaveLength(2)
    expect(uris[0]).not.toBe(uris[1])
    expect(messages.map((m) => [m.type, (m.data as WalletConnectError).code, (m.data as WalletConnectError).shortMessage])).toEqual([
      ['connection_rejected', 'connection_rejected', 'Connection rejected. Please try again.'],
    ])
  })

  test('an expired proposal starts a new attempt with a new URI, and the wallet can pair with that', async () => {
    let clock = Date.now()
    const dapp = provider({ now: () => clock })
    const w = await wallet()
    await dapp.init()
    const uris: string[] = []
    dapp.on('display_uri', (uri) => void uris.push(uri))
    const shown = (count: number) => new Promise<void>((resolve) => dapp.on('display_uri', () => uris.length >= count && resolve()))
    const [firstUri, secondUri] = [shown(1), shown(2)]
    const connecting = dapp.connect()
    await firstUri
    // Five minutes later nobody has scanned the code: the proposal expires.
    clock += 301_000
    await dapp.signClient!.cleanup()
    await secondUri
    expect(uris).toHaveLength(2)
    expect(uris[1]).not.toBe(uris[0])
    expect(Number(new URL(uris[1]!.replace('wc:', 'http://x/')).searchParams.get('expiryTimestamp'))).toBe(Math.floor(clock / 1000) + 300)
    w.events.on('session_proposal', ({ id }) => void w.approve({ id, namespaces: grant() }).catch(closing))
    await w.pair({ uri: uris[1]! })
    expect((await connecting).namespaces).toEqual(grant())
  })

  test('after the last attempt: Max auto pairing attempts reached', async () => {
    const dapp = provider({ maxPairingAttempts: 2 })
    const w = await wallet()
    await dapp.init()
    pairOnDisplay(dapp, w, (id) => w.reject({ id }))
    expect(await code(dapp.connect())).toBe('max_pairing_attempts: Max auto pairing attempts reached')
  })

  test('an aborted pairing: Pairing aborted; a newer connect resets the older one', async () => {
    const dapp = provider()
    await dapp.init()
    const controller = new AbortController()
    const aborted = code(dapp.connect({ signal: controller.signal }))
    await new Promise((resolve) => dapp.on('display_uri', resolve))
    controller.abort()
    expect(await aborted).toBe('pairing_aborted: Pairing aborted')

    const first = code(dapp.connect())
    const stop = new AbortController()
    const second = code(dapp.connect({ signal: stop.signal }))
    expect(await first).toBe('connection_reset: Connection request reset. Please try again.')
    stop.abort()
    expect(await second).toBe('pairing_aborted: Pairing aborted')
    expect(await code(dapp.connect({ signal: AbortSignal.abort() }))).toBe('pairing_aborted: Pairing aborted')
  })

  test('no chains: Invalid chains', async () => {
    const dapp = provider()
    await dapp.init()
    expect(await code(dapp.connect({ chains: [], optionalChains: [] }))).toBe('invalid_chains: Invalid chains')
    expect(await code(dapp.connect({ chains: 'eip155:1' as never }))).toBe('invalid_chains: Invalid chains')
  })
})

describe('requests', () => {
  test('default: signing goes to the wallet, reads go to the chain', async () => {
    const { dapp, w } = await connected()
    w.events.on(
      'session_request',
      ({ id, topic, params }) =>
        void w
          .respond({ topic, response: { id, jsonrpc: '2.0', result: `signed ${String((params.request.params as string[])[0])} on ${params.chainId}` } })
          .catch(closing),
    )
    expect(await dapp.request({ method: 'personal_sign', params: ['0x6869', account] })).toBe('signed 0x6869 on eip155:31337')
    expect(await dapp.request({ method: 'eth_getBalance', params: [account, 'latest'] })).toMatch(/^0x[0-9a-f]+$/)
  })

  test('before init, without a session, after close: the catalogue errors', async () => {
    const dapp = provider()
    expect(await code(dapp.request({ method: 'eth_accounts' }))).toBe('provider_not_initialized: Provider not initialized. Call init() first')
    expect(await code(dapp.connect())).toBe('provider_not_initialized: Provider not initialized. Call init() first')
    await dapp.init()
    expect(await code(dapp.request({ method: 'eth_accounts' }))).toBe('not_connected: Please call connect() before request()')
    dapp.close()
    expect(await code(dapp.connect())).toBe('sign_client_not_initialized: Sign Client not initialized')
  })

  test('a namespace outside the session, a chain without RPC, a method not granted', async () => {
    const { dapp } = await connected({ rpcMap: {} })
    expect(await code(dapp.request({ method: 'getBalance' }, 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'))).toBe(
      'namespace_not_configured: Namespace solana is not configured. Please call connect() first with namespace config.',
    )
    expect(await code(dapp.request({ method: 'eth_blockNumber' }))).toBe('rpc_provider_not_found: JSON-RPC provider for eip155:31337 not found')
    expect(await code(dapp.request({ method: 'eth_signTypedData_v4', params: [] }))).toBe(
      'method_not_granted: The wallet did not grant eth_signTypedData_v4 on eip155:31337.',
    )
  })

  test('with a project id and no rpcMap, reads go to the relay’s JSON-RPC endpoint', async () => {
    const urls: string[] = []
    const { dapp } = await connected({
      rpcMap: {},
      projectId: 'local',
      fetch: async (url, init) => (
        urls.push(String(url)), new Response(JSON.stringify({ id: 1, jsonrpc: '2.0', result: '0x2a' }), { status: 200, ...(init && {}) })
      ),
    })
    expect(await dapp.request({ method: 'eth_blockNumber' })).toBe('0x2a')
    expect(urls).toEqual([`${relay.url.replace('ws', 'http')}/v1/?chainId=eip155%3A31337&projectId=local`])
  })
})

describe('chains and events', () => {
  test('default: a session chain switches locally, without asking the wallet', async () => {
    const { dapp, w } = await connected()
    let asked = 0
    w.events.on('session_request', () => asked++)
    const changed = new Promise((resolve) => dapp.on('chainChanged', resolve))
    expect(await dapp.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: '0x7a6a' }] })).toBeNull()
    expect(await changed).toBe('0x7a6a')
    expect(dapp.chainId).toBe(31338)
    expect(asked).toBe(0)
  })

  test('a chain outside the session: only through the wallet', async () => {
    const { dapp } = await connected({}, grant(['eip155:31337']))
    expect(await code(dapp.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: '0x1' }] }))).toBe(
      'network_switching_only_available_in_wallet: Network switching is not available at this time. The user should manually switch network in their wallet',
    )
    expect(await code(dapp.request({ method: 'wallet_addEthereumChain', params: [{ chainId: '0x1' }] }))).toBe(
      'network_switching_through_wallet: Network switching is only supported through the wallet',
    )
    expect(() => dapp.setDefaultChain(1)).toThrow('ChainId not found')
  })

  test('a wallet that grants wallet_switchEthereumChain adds the chain, and the dapp follows', async () => {
    const namespaces = { eip155: { ...grant(['eip155:31337']).eip155, methods: ['personal_sign', 'eth_sendTransaction', 'wallet_switchEthereumChain'] } }
    const { dapp, w, session } = await connected({}, namespaces)
    w.events.on('session_request', async ({ id, topic }) => {
      await w.update({
        topic,
        namespaces: {
          eip155: { ...namespaces.eip155, chains: ['eip155:31337', 'eip155:31338'], accounts: [...namespaces.eip155.accounts, `eip155:31338:${account}`] },
        },
      })
      await w.respond({ topic, response: { id, jsonrpc: '2.0', result: null } }).catch(closing)
    })
    await dapp.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: '0x7a6a' }] })
    expect(dapp.chainId).toBe(31338)
    expect(dapp.session?.topic).toBe(session.topic)
  })

  test('wallet events: chainChanged, accountsChanged, and a disconnect from the wallet', async () => {
    const { dapp, w, session } = await connected()
    const chain = new Promise((resolve) => dapp.on('chainChanged', resolve))
    await w.emit({ topic: session.topic, chainId: 'eip155:31338', event: { name: 'chainChanged', data: 31338 } })
    expect(await chain).toBe('0x7a6a')
    const other = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
    const accounts = new Promise((resolve) => dapp.on('accountsChanged', resolve))
    await w.emit({ topic: session.topic, chainId: 'eip155:31338', event: { name: 'accountsChanged', data: [`eip155:31338:${other}`] } })
    expect(await accounts).toEqual([other])
    const disconnected = new Promise<WalletConnectError>((resolve) => dapp.on('disconnect', resolve))
    await w.disconnect({ topic: session.topic })
    expect((await disconnected).code).toBe('not_connected')
    expect(dapp.session).toBeUndefined()
    expect(await code(dapp.request({ method: 'eth_accounts' }))).toBe('not_connected: Please call connect() before request()')
  })

  test('a reload restores the session', async () => {
    const storage = memoryStorage()
    const { dapp, session } = await connected({ storage })
    dapp.close()
    const again = provider({ storage })
    await again.init()
    expect(again.session?.topic).toBe(session.topic)
    expect(again.accounts).toEqual([account])
  })
})
