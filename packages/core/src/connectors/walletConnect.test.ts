import { getFreePort } from '@latchkey/devnet'
import { createRelay, type Relay } from '@latchkey/relay'
import {
  buildApprovedNamespaces,
  createSignClient,
  type KeyValueStorage,
  memoryStorage,
  type SignClient,
  type WebSocketConstructor,
} from '@latchkey/walletconnect'
import { verifyMessage } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { WebSocket } from 'ws'
import { anvilKeys, testChains } from '../../../../test/chains.js'
import { connect } from '../actions/connect.js'
import { disconnect } from '../actions/disconnect.js'
import { reconnect } from '../actions/reconnect.js'
import { sendCalls } from '../actions/sendCalls.js'
import { signMessage } from '../actions/signMessage.js'
import { switchChain } from '../actions/switchChain.js'
import type { ConnectionReport } from '../connectionStore.js'
import { createClient } from '../createClient.js'
import { CallsNotSupportedError } from '../errors/calls.js'
import { createMemoryStorage } from '../storage.js'
import { type WalletConnectParameters, walletConnect } from './walletConnect.js'

// The walletConnect connector driven through the client's actions, paired with a wallet made of
// our wallet-role Sign client and a real key, through our relay. Signing only: no transactions,
// so the shared anvil key cannot race another test's nonce.

const signer = privateKeyToAccount(anvilKeys[9]!)
const supported = (chains: string[]) => ({
  eip155: {
    chains,
    methods: ['personal_sign', 'eth_sendTransaction'],
    events: ['chainChanged', 'accountsChanged'],
    accounts: chains.map((chain) => `${chain}:${signer.address}`),
  },
})

let relay: Relay
const closers: (() => void)[] = []

beforeAll(async () => {
  relay = createRelay({ port: await getFreePort() })
  await relay.start()
})
afterEach(() => {
  for (const close of closers.splice(0)) close()
})
afterAll(() => relay.stop())

/** A wallet that pairs with whatever URI the client shows and signs personal_sign for real. */
async function wallet(options: { chains?: string[]; reject?: boolean } = {}): Promise<SignClient> {
  const client = await createSignClient({
    relayUrl: relay.url,
    metadata: { name: 'Test Wallet', description: 'test', url: 'http://wallet.test', icons: [] },
    WebSocket: WebSocket as unknown as WebSocketConstructor,
  })
  closers.push(() => client.close())
  client.events.on('session_proposal', ({ id, params }) => {
    const answer = options.reject
      ? client.reject({ id })
      : client.approve({
          id,
          namespaces: buildApprovedNamespaces({ proposal: params, supported: supported(options.chains ?? ['eip155:31337', 'eip155:31338']) }),
        })
    answer.catch(() => undefined)
  })
  client.events.on('session_request', async ({ id, topic, params }) => {
    const [message] = params.request.params as [`0x${string}`]
    const signature = await signer.signMessage({ message: { raw: message } })
    await client.respond({ topic, response: { id, jsonrpc: '2.0', result: signature } }).catch(() => undefined)
  })
  return client
}

function setup(extra: Partial<WalletConnectParameters> = {}, storage = createMemoryStorage(), wcStorage: KeyValueStorage = memoryStorage()) {
  const client = createClient({
    chains: testChains(),
    connectors: [
      walletConnect({ relayUrl: relay.url, WebSocket: WebSocket as unknown as WebSocketConstructor, storage: wcStorage, reinitWaitMs: 0, ...extra }),
    ],
    storage,
  })
  const connector = client.getConnectors().find((c) => c.id === 'walletConnect')!
  closers.push(
    () =>
      void connector
        .getProvider()
        .then((p) => (p as unknown as { close?: () => void }).close?.())
        .catch(() => undefined),
  )
  return { client, connector, storage, wcStorage }
}

/** Pairs `w` with the URI the client publishes in its state, as a phone scanning the QR code would. */
function scanWith(client: ReturnType<typeof setup>['client'], w: SignClient) {
  return client.subscribe((state) => {
    if (state.status === 'pairing' && state.pairingUri) void w.pair({ uri: state.pairingUri }).catch(() => undefined)
  })
}

describe('walletConnect connector', () => {
  test('default: pairing shows a URI, the wallet approves, the client is connected and a message is signed', async () => {
    const w = await wallet()
    const { client, connector } = setup()
    const statuses: string[] = []
    client.subscribe((state) => statuses.push(state.status))
    scanWith(client, w)
    const result = await connect(client, { connector })
    expect(result.accounts).toEqual([signer.address])
    expect(result.chainId).toBe(31337)
    expect(statuses).toContain('pairing')
    expect(client.getState().status).toBe('connected')
    const stored = client.connections.read('walletConnect')
    expect(stored.sessionTopic).toMatch(/^[0-9a-f]{64}$/)
    expect(stored.activeAccount).toBe(signer.address)
    expect(Object.keys(stored.namespaces ?? {})).toEqual(['eip155'])

    const signature = await signMessage(client, { message: 'hello from the dapp' })
    expect(await verifyMessage({ address: signer.address, message: 'hello from the dapp', signature })).toBe(true)
  })

  test('the wallet changes chain and disconnects; the client follows and forgets the session', async () => {
    const w = await wallet()
    const { client, connector } = setup()
    scanWith(client, w)
    await connect(client, { connector })
    const [session] = w.sessions()
    const chain = new Promise((resolve) => client.subscribe((state) => state.chainId === 31338 && resolve(state.chainId)))
    await w.emit({ topic: session!.topic, chainId: 'eip155:31338', event: { name: 'chainChanged', data: 31338 } })
    await chain
    expect(client.connections.read('walletConnect').currentChain).toBe(31338)

    const gone = new Promise((resolve) => client.subscribe((state) => state.status === 'disconnected' && resolve(state)))
    await w.disconnect({ topic: session!.topic })
    await gone
    expect(client.connections.read('walletConnect').sessionTopic).toBeNull()
    expect(client.connections.read('walletConnect').activeAccount).toBeNull()
  })

  test('behavior: the connector reports to the connection store and writes no storage itself', async () => {
    const w = await wallet()
    const heard: [string, ConnectionReport][] = []
    const nothing = { activeAccount: null, sessionTopic: null, currentChain: null, providerChainId: null, namespaces: null }
    const backend = createMemoryStorage()
    const client = createClient({
      chains: testChains(),
      storage: backend,
      connectionStore: {
        read: () => nothing,
        report: (id, report) => void heard.push([id, report]),
        getLastUsedChainId: () => null,
        getRecentConnectorId: () => null,
      },
      connectors: [walletConnect({ relayUrl: relay.url, WebSocket: WebSocket as unknown as WebSocketConstructor, storage: memoryStorage(), reinitWaitMs: 0 })],
    })
    const connector = client.getConnectors()[0]!
    closers.push(() => void connector.getProvider().then((p) => (p as unknown as { close?: () => void }).close?.()))
    scanWith(client, w)
    await connect(client, { connector })
    const [session] = w.sessions()
    const chain = new Promise((resolve) => client.subscribe((state) => state.chainId === 31338 && resolve(state.chainId)))
    await w.emit({ topic: session!.topic, chainId: 'eip155:31338', event: { name: 'chainChanged', data: 31338 } })
    await chain
    const gone = new Promise((resolve) => client.subscribe((state) => state.status === 'disconnected' && resolve(state)))
    await w.disconnect({ topic: session!.topic })
    await gone
    expect(heard.map(([id, report]) => [id, report.type, 'session' in report ? report.session?.topic : undefined])).toEqual([
      ['walletConnect', 'connect', session!.topic],
      ['walletConnect', 'change', undefined],
      ['walletConnect', 'disconnect', undefined],
    ])
    expect(heard[0]![1]).toMatchObject({ accounts: [signer.address], chainId: 31337, session: { namespaces: { eip155: { accounts: expect.any(Array) } } } })
    expect(heard[1]![1]).toEqual({ type: 'change', chainId: 31338 })
    expect(backend.map.size).toBe(0)
  })

  test('behavior: the session asks for the EIP-5792 methods as optional; a wallet that does not grant them gives CallsNotSupportedError', async () => {
    const w = await wallet()
    const asked: string[][] = []
    w.events.on('session_proposal', ({ params }) => asked.push([...(params.optionalNamespaces['eip155']?.methods ?? [])]))
    const { client, connector } = setup()
    scanWith(client, w)
    await connect(client, { connector })
    expect(asked[0]).toEqual(expect.arrayContaining(['wallet_sendCalls', 'wallet_getCallsStatus', 'wallet_getCapabilities', 'wallet_showCallsStatus']))
    expect(w.sessions()[0]?.requiredNamespaces['eip155']?.methods ?? []).not.toContain('wallet_sendCalls')
    const error = await sendCalls(client, { calls: [{ to: signer.address, value: 1n }] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(CallsNotSupportedError)
    expect(error).toMatchObject({ code: 'calls_not_supported', method: 'wallet_sendCalls' })
  })

  test('a reload reconnects without a prompt, on the chain it was on', async () => {
    const w = await wallet()
    const first = setup()
    scanWith(first.client, w)
    await connect(first.client, { connector: first.connector })
    await switchChain(first.client, { chainId: 31338 })

    const second = setup({}, first.storage, first.wcStorage)
    expect(await reconnect(second.client)).toEqual({ connected: true })
    expect(second.client.getState().chainId).toBe(31338)
    expect(second.client.getState().connection?.accounts).toEqual([signer.address])
  })

  test('the user disconnects: the wallet hears it and the stored session is cleared', async () => {
    const w = await wallet()
    const { client, connector } = setup()
    scanWith(client, w)
    await connect(client, { connector })
    const deleted = new Promise((resolve) => w.events.once('session_delete', resolve))
    await disconnect(client)
    await deleted
    expect(client.connections.read('walletConnect').sessionTopic).toBeNull()
    expect(await connector.isAuthorized()).toBe(false)
  })

  test('a chain the wallet did not grant: switch it in the wallet', async () => {
    const w = await wallet({ chains: ['eip155:31337'] })
    const { client, connector } = setup()
    scanWith(client, w)
    await connect(client, { connector })
    const error = await switchChain(client, { chainId: 31338 }).catch((e: unknown) => e)
    expect(error).toMatchObject({
      code: 'network_switching_only_available_in_wallet',
      shortMessage: 'Network switching is not available at this time. The user should manually switch network in their wallet',
    })
  })

  test('a rejected proposal is reported as connection_rejected and pairing goes on with a new URI', async () => {
    const rejecting = await wallet({ reject: true })
    const { client, connector } = setup({}, createMemoryStorage())
    const messages: { type: string; data?: unknown }[] = []
    connector.emitter.on('message', (message) => messages.push(message))
    const uris: string[] = []
    client.subscribe((state) => {
      if (state.status !== 'pairing' || !state.pairingUri || uris.includes(state.pairingUri)) return
      uris.push(state.pairingUri)
      if (uris.length === 1) void rejecting.pair({ uri: state.pairingUri })
    })
    const controller = new AbortController()
    const attempt = connect(client, { connector, signal: controller.signal }).catch((e: unknown) => e)
    await expect.poll(() => uris.length).toBe(2)
    expect(messages.find((m) => m.type === 'connection_rejected')?.data).toMatchObject({
      code: 'connection_rejected',
      shortMessage: 'Connection rejected. Please try again.',
    })
    controller.abort()
    expect(await attempt).toMatchObject({ code: 'pairing_aborted', shortMessage: 'Pairing aborted' })
  })

  test('showQrModal without the package, and with a package that cannot build its modal', async () => {
    const missing = setup({
      showQrModal: true,
      loadQrModal: () => Promise.reject(Object.assign(new Error("Cannot find package '@latchkey/qr-modal'"), { code: 'ERR_MODULE_NOT_FOUND' })),
    })
    await expect(connect(missing.client, { connector: missing.connector })).rejects.toMatchObject({
      code: 'qr_modal_not_installed',
      shortMessage: 'To use QR modal, please install the modal package',
    })
    const broken = setup({
      showQrModal: true,
      loadQrModal: async () => ({
        createQrModal() {
          throw new Error('The QR modal needs a DOM.')
        },
      }),
    })
    await expect(connect(broken.client, { connector: broken.connector })).rejects.toMatchObject({
      code: 'qr_modal_instance',
      shortMessage: 'Could not generate WalletConnectModal Instance',
    })
  })

  test('the QR modal shows each URI and closing it aborts the pairing', async () => {
    const shown: string[] = []
    let close: (() => void) | undefined
    const { client, connector } = setup({
      showQrModal: true,
      loadQrModal: async () => ({
        createQrModal({ onClose }) {
          close = onClose
          return { open: (uri: string) => void shown.push(uri), close: () => undefined }
        },
      }),
    })
    const attempt = connect(client, { connector }).catch((e: unknown) => e)
    await expect.poll(() => shown.length).toBe(1)
    expect(shown[0]).toMatch(/^wc:/)
    close?.()
    expect(await attempt).toMatchObject({ code: 'pairing_aborted' })
  })
})
