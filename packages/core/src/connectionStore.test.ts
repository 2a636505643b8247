import { readdirSync, readFileSync } from 'node:fs'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys, testChains } from '../../../test/chains.js'
import { createRecordingLogger } from '../../../test/setup.js'
import { connect } from './actions/connect.js'
import { disconnect } from './actions/disconnect.js'
import { switchChain } from './actions/switchChain.js'
import { type ConnectionReport, type ConnectionStore, createConnectionStore, DISCONNECT_CLEARS, SESSION_FIELDS } from './connectionStore.js'
import { injected } from './connectors/injected.js'
import { LAST_USED_CHAIN_ID_KEY } from './constants.js'
import { createClient } from './createClient.js'
import { createDevWallet } from './dev/devWallet.js'
import { createMemoryStorage } from './storage.js'

const alice = privateKeyToAddress(anvilKeys[2])
const bob = privateKeyToAddress(anvilKeys[3])
const session = { topic: 'a'.repeat(64), namespaces: { eip155: { chains: ['eip155:31338'] } } }

/** Every key of every connector field, another connector's, both fixed keys and neighbours the store does not own. */
function seeded() {
  const backend = createMemoryStorage()
  for (const connector of ['walletConnect', 'io.metamask'])
    for (const field of DISCONNECT_CLEARS) backend.setItem(`latchkey.${connector}.${field}`, JSON.stringify(field === 'activeAccount' ? alice : 1))
  backend.setItem('latchkey.lastUsedChainId', '31338')
  backend.setItem('latchkey.recentConnectorId', '"walletConnect"')
  backend.setItem('latchkey.walletConnect.client.sessions', '[]')
  backend.setItem('latchkey.embedded.wallet', '{}')
  backend.setItem('someone.else', 'x')
  return backend
}

describe('createConnectionStore', () => {
  test('default: layout latchkey.<connectorId>.<field>, the fixed last-used-chain key and the recent connector', () => {
    const backend = createMemoryStorage()
    const store = createConnectionStore({ storage: backend })
    store.report('walletConnect', { type: 'connect', accounts: [alice], chainId: 31338, session })
    expect(Object.fromEntries(backend.map)).toEqual({
      'latchkey.walletConnect.activeAccount': JSON.stringify(alice),
      'latchkey.walletConnect.sessionTopic': JSON.stringify(session.topic),
      'latchkey.walletConnect.currentChain': '31338',
      'latchkey.walletConnect.providerChainId': '31338',
      'latchkey.walletConnect.namespaces': '{"eip155":{"chains":["eip155:31338"]}}',
      'latchkey.lastUsedChainId': '31338',
      'latchkey.recentConnectorId': '"walletConnect"',
    })
    expect(LAST_USED_CHAIN_ID_KEY).toBe('latchkey.lastUsedChainId')
    expect(store.read('walletConnect')).toEqual({
      activeAccount: alice,
      sessionTopic: session.topic,
      currentChain: 31338,
      providerChainId: 31338,
      namespaces: session.namespaces,
    })
    expect(store.getRecentConnectorId()).toBe('walletConnect')
    expect(store.getLastUsedChainId()).toBe(31338)
  })

  test('behavior: changes follow the connection; providerChainId only where there is a session', () => {
    const backend = createMemoryStorage()
    const store = createConnectionStore({ storage: backend })
    store.report('io.metamask', { type: 'connect', accounts: [alice], chainId: 31337 })
    store.report('io.metamask', { type: 'change', accounts: [bob] })
    store.report('io.metamask', { type: 'change', chainId: 31338 })
    expect(Object.fromEntries(backend.map)).toEqual({
      'latchkey.io.metamask.activeAccount': JSON.stringify(bob),
      'latchkey.io.metamask.currentChain': '31338',
      'latchkey.lastUsedChainId': '31338',
      'latchkey.recentConnectorId': '"io.metamask"',
    })
  })

  test('behavior: a disconnect clears exactly the five fields of that connector (SPEC §4), nothing else', () => {
    const backend = seeded()
    createConnectionStore({ storage: backend }).report('walletConnect', { type: 'disconnect' })
    expect([...backend.map.keys()].sort()).toEqual([
      'latchkey.embedded.wallet',
      'latchkey.io.metamask.activeAccount',
      'latchkey.io.metamask.currentChain',
      'latchkey.io.metamask.namespaces',
      'latchkey.io.metamask.providerChainId',
      'latchkey.io.metamask.sessionTopic',
      'latchkey.lastUsedChainId',
      'latchkey.recentConnectorId',
      'latchkey.walletConnect.client.sessions',
      'someone.else',
    ])
  })

  test('behavior: an empty account list (wallet locked) clears like a disconnect', () => {
    const backend = seeded()
    createConnectionStore({ storage: backend }).report('io.metamask', { type: 'change', accounts: [] })
    expect([...backend.map.keys()].filter((key) => key.startsWith('latchkey.io.metamask.'))).toEqual([])
  })

  test('behavior: beside another store (wagmi), only the session fields are kept', () => {
    const backend = createMemoryStorage()
    const store = createConnectionStore({ storage: backend, keep: SESSION_FIELDS })
    store.report('walletConnect', { type: 'connect', accounts: [alice], chainId: 31338, session })
    store.report('walletConnect', { type: 'change', chainId: 31337 })
    expect(Object.fromEntries(backend.map)).toEqual({
      'latchkey.walletConnect.sessionTopic': JSON.stringify(session.topic),
      'latchkey.walletConnect.providerChainId': '31337',
      'latchkey.walletConnect.namespaces': '{"eip155":{"chains":["eip155:31338"]}}',
    })
    expect(store.read('walletConnect')).toMatchObject({ activeAccount: null, currentChain: null, sessionTopic: session.topic })
    expect(store.getRecentConnectorId()).toBeNull()
  })

  test('behavior: unreadable data counts as absent', () => {
    const backend = createMemoryStorage()
    backend.setItem('latchkey.lastUsedChainId', '{not json')
    backend.setItem('latchkey.x.activeAccount', '{not json')
    const store = createConnectionStore({ storage: backend })
    expect(store.getLastUsedChainId()).toBeNull()
    expect(store.read('x').activeAccount).toBeNull()
  })

  test('error: a failing write (quota) is reported, not thrown', () => {
    const backend = createMemoryStorage()
    const quota = new Error('QuotaExceededError')
    const reported: unknown[] = []
    const store = createConnectionStore({
      storage: {
        getItem: backend.getItem,
        removeItem: backend.removeItem,
        setItem: () => {
          throw quota
        },
      },
      onError: (error) => reported.push(error),
    })
    expect(() => store.report('x', { type: 'connect', accounts: [alice], chainId: 1 })).not.toThrow()
    expect(reported).toEqual([quota, quota, quota, quota])
  })
})

/** A store that records what it hears and keeps nothing: what a bridge to another store sees. */
function recordingStore(): ConnectionStore & { heard: [string, ConnectionReport][] } {
  const heard: [string, ConnectionReport][] = []
  const nothing = { activeAccount: null, sessionTopic: null, currentChain: null, providerChainId: null, namespaces: null }
  return { heard, read: () => nothing, report: (id, report) => void heard.push([id, report]), getLastUsedChainId: () => null, getRecentConnectorId: () => null }
}

describe('the client writes through its connection store only', () => {
  test('behavior: connect, account change, chain switch and disconnect reach the store as reports; storage stays untouched', async () => {
    const wallet = createDevWallet({ privateKey: anvilKeys[2], otherKeys: [anvilKeys[3]], chains: testChains() })
    const backend = createMemoryStorage()
    const store = recordingStore()
    const client = createClient({
      chains: testChains(),
      storage: backend,
      connectionStore: store,
      logger: createRecordingLogger(),
      connectors: [injected({ id: 'dev', provider: wallet })],
    })
    await connect(client, { connector: 'dev' })
    wallet.selectAccount(1)
    await switchChain(client, { chainId: 31338 })
    await disconnect(client)
    expect(store.heard).toEqual([
      ['dev', { type: 'connect', accounts: [alice], chainId: 31337, session: undefined }],
      ['dev', { type: 'change', accounts: [bob] }],
      ['dev', { type: 'change', chainId: 31338 }],
      ['dev', { type: 'disconnect' }],
    ])
    expect(backend.map.size).toBe(0)
  })

  test("behavior: switching to another wallet clears the previous wallet's fields only", async () => {
    const wallet = createDevWallet({ privateKey: anvilKeys[2], chains: testChains() })
    const backend = seeded()
    const client = createClient({
      chains: testChains(),
      storage: backend,
      logger: createRecordingLogger(),
      connectors: [injected({ id: 'io.metamask', provider: wallet }), injected({ id: 'walletConnect', provider: wallet })],
    })
    await connect(client, { connector: 'io.metamask' })
    await connect(client, { connector: 'walletConnect' })
    expect([...backend.map.keys()].filter((key) => key.startsWith('latchkey.io.metamask.'))).toEqual([])
    expect(backend.getItem('latchkey.walletConnect.client.sessions')).toBe('[]')
    expect(backend.getItem('someone.else')).toBe('x')
  })

  test('behavior: no connector module writes storage; connectors get a read-only view', () => {
    // A connector that wrote storage itself would need a writable handle: none is given
    // (ConnectorConfig.stored is a reader), and none may be reached for around it.
    const directory = new URL('./connectors/', import.meta.url)
    const sources = readdirSync(directory).filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
    const writes = sources.flatMap((file) =>
      [...readFileSync(new URL(file, directory), 'utf8').matchAll(/\.(setItem|removeItem)\(|createConnectionStore|\.report\(/g)].map(
        (match) => `${file}: ${match[0]}`,
      ),
    )
    expect(writes).toEqual([])
  })
})
