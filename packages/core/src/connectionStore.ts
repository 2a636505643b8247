import { connectionStorageKey } from './connectors/info.js'
import { LAST_USED_CHAIN_ID_KEY, STORAGE_PREFIX } from './constants.js'
import { getDefaultStorage, type KeyValueStorage } from './storage.js'
import type { Address } from './types.js'

/** The session of a session-based connector (WalletConnect): its topic and the granted namespaces. */
export type ConnectorSession = {
  readonly topic: string
  readonly namespaces: Readonly<Record<string, unknown>>
}

/** What is kept of one connector's connection (SPEC §3 browser storage); `null` where nothing is. */
export type StoredConnection = {
  readonly activeAccount: Address | null
  readonly sessionTopic: string | null
  readonly currentChain: number | null
  /** The chain the session-based provider is on; kept only while there is a session. */
  readonly providerChainId: number | null
  readonly namespaces: Readonly<Record<string, unknown>> | null
}

export type StoredField = keyof StoredConnection

/**
 * What a connector reports: the payloads of its `connect` and `change` events (and of its
 * `connect()` result), and `disconnect`. An empty `accounts` in a change means the wallet locked
 * or revoked the site, and counts as a disconnect.
 */
export type ConnectionReport =
  | { type: 'connect'; accounts: readonly Address[]; chainId: number; session?: ConnectorSession | undefined }
  | { type: 'change'; accounts?: readonly Address[] | undefined; chainId?: number | undefined; session?: ConnectorSession | undefined }
  | { type: 'disconnect' }

/**
 * The one writer of connection state in storage. Connectors never write; they report what
 * happened (`connect`, `change`, `disconnect`) and read back what is kept, for restoring.
 *
 * The layout (SPEC §3, ARCHITECTURE "Storage"):
 * - `latchkey.<connectorId>.activeAccount | sessionTopic | currentChain | providerChainId | namespaces`;
 * - `latchkey.lastUsedChainId` (fixed key), written with every chain a connection lands on;
 * - `latchkey.recentConnectorId`, the wallet used last (the "Recent" marker, reconnect on load).
 *
 * A disconnect clears exactly {@link DISCONNECT_CLEARS} of that connector (SPEC §4: the session,
 * accounts, namespaces, the stored active account and chain) and nothing else: not another
 * connector's fields, not the last used chain, not the recent connector, and not the keys a
 * connector's own package keeps beside them (the WalletConnect protocol's key store under
 * `latchkey.<connectorId>.client.*`, the embedded wallet's record `latchkey.embedded.wallet`),
 * which those packages manage themselves.
 *
 * **The seam for other state owners (the wagmi bridge).** Everything above goes through this
 * type, so an app whose connection state lives elsewhere passes its own store to
 * `createClient({ connectionStore })` instead of keeping a second copy. Where another store
 * already keeps accounts and chain (wagmi's `wagmi.store`), use
 * `createConnectionStore({ storage, keep: SESSION_FIELDS })`: only what no one else keeps (the
 * WalletConnect session) is written. A bridge that builds a core connector itself gives it
 * `stored: () => store.read(id)` and forwards its reports:
 * `connector.emitter.on('change', (change) => store.report(id, { type: 'change', ...change }))`,
 * and `store.report(id, { type: 'connect', ...(await connector.connect()) })`.
 *
 * @example
 * const store = createConnectionStore({ storage: localStorage })
 * store.report('walletConnect', { type: 'connect', accounts: ['0x…'], chainId: 1, session: { topic, namespaces } })
 * store.read('walletConnect').sessionTopic // topic
 * store.report('walletConnect', { type: 'disconnect' })
 */
export type ConnectionStore = {
  /** What is kept of `connectorId`'s connection. */
  read(connectorId: string): StoredConnection
  /** Records what a connector reported: the only way connection state is written. */
  report(connectorId: string, report: ConnectionReport): void
  /** The chain the last connection was on (`latchkey.lastUsedChainId`). */
  getLastUsedChainId(): number | null
  /** The connector connected last, until another one connects. */
  getRecentConnectorId(): string | null
}

/** What a disconnect clears, for the disconnected connector only (SPEC §4). */
export const DISCONNECT_CLEARS = ['activeAccount', 'sessionTopic', 'currentChain', 'providerChainId', 'namespaces'] as const satisfies readonly StoredField[]

/** The fields only a session-based connector knows: what a store beside wagmi's keeps. */
export const SESSION_FIELDS = ['sessionTopic', 'namespaces', 'providerChainId'] as const satisfies readonly StoredField[]

/** The fixed key of the connector used last. */
export const RECENT_CONNECTOR_KEY = `${STORAGE_PREFIX}.recentConnectorId`

export type CreateConnectionStoreParameters = {
  /** Default: localStorage in browsers, memory elsewhere. */
  storage?: KeyValueStorage | undefined
  /**
   * The fields this store keeps; default all. With fewer (e.g. {@link SESSION_FIELDS} beside
   * wagmi), the others are neither written nor read, and the last used chain and recent
   * connector are left to the other store too.
   */
  keep?: readonly StoredField[] | undefined
  /** Failed writes (quota, private mode) are reported here instead of thrown. */
  onError?: ((error: unknown) => void) | undefined
}

/**
 * The default {@link ConnectionStore}, over any key-value store.
 *
 * @example
 * const client = createClient({ chains, connectionStore: createConnectionStore({ storage: sessionStorage }) })
 */
export function createConnectionStore(parameters: CreateConnectionStoreParameters = {}): ConnectionStore {
  const backend = parameters.storage ?? getDefaultStorage()
  const kept = new Set<StoredField>(parameters.keep ?? DISCONNECT_CLEARS)
  const keepsAll = DISCONNECT_CLEARS.every((field) => kept.has(field))
  const keyOf = (connectorId: string, field: StoredField) => connectionStorageKey(connectorId, field)

  function read<value>(key: string): value | null {
    try {
      const raw = backend.getItem(key)
      return raw === null ? null : (JSON.parse(raw) as value)
    } catch {
      // Unreadable or foreign data is treated as absent, never as a crash.
      return null
    }
  }
  function write(key: string, value: unknown) {
    try {
      backend.setItem(key, JSON.stringify(value))
    } catch (error) {
      parameters.onError?.(error)
    }
  }
  function remove(key: string) {
    try {
      backend.removeItem(key)
    } catch (error) {
      parameters.onError?.(error)
    }
  }
  const field = (connectorId: string, name: StoredField, value: unknown) => {
    if (kept.has(name)) write(keyOf(connectorId, name), value)
  }
  const get = <value>(connectorId: string, name: StoredField) => (kept.has(name) ? read<value>(keyOf(connectorId, name)) : null)

  function onChain(connectorId: string, chainId: number, hasSession: boolean) {
    field(connectorId, 'currentChain', chainId)
    if (hasSession) field(connectorId, 'providerChainId', chainId)
    if (keepsAll) write(LAST_USED_CHAIN_ID_KEY, chainId)
  }

  const store: ConnectionStore = {
    read: (connectorId) => ({
      activeAccount: get<Address>(connectorId, 'activeAccount'),
      sessionTopic: get<string>(connectorId, 'sessionTopic'),
      currentChain: get<number>(connectorId, 'currentChain'),
      providerChainId: get<number>(connectorId, 'providerChainId'),
      namespaces: get<Record<string, unknown>>(connectorId, 'namespaces'),
    }),
    report(connectorId, report) {
      if (report.type === 'disconnect' || (report.accounts && report.accounts.length === 0)) {
        for (const name of DISCONNECT_CLEARS) remove(keyOf(connectorId, name))
        return
      }
      if (report.session) {
        field(connectorId, 'sessionTopic', report.session.topic)
        field(connectorId, 'namespaces', report.session.namespaces)
      }
      const [account] = report.accounts ?? []
      if (account) field(connectorId, 'activeAccount', account)
      const hasSession = report.session !== undefined || read<string>(keyOf(connectorId, 'sessionTopic')) !== null
      if (report.chainId !== undefined) onChain(connectorId, report.chainId, hasSession)
      if (report.type === 'connect' && keepsAll) write(RECENT_CONNECTOR_KEY, connectorId)
    },
    getLastUsedChainId: () => (keepsAll ? read<number>(LAST_USED_CHAIN_ID_KEY) : null),
    getRecentConnectorId: () => (keepsAll ? read<string>(RECENT_CONNECTOR_KEY) : null),
  }
  return store
}
