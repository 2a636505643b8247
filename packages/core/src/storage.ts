import { LAST_USED_CHAIN_ID_KEY, STORAGE_PREFIX } from './constants.js'

/** The subset of the Web Storage API Latchkey needs; localStorage fits, so does a Map wrapper. */
export type KeyValueStorage = {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
}

/** What each connector keeps, under `latchkey.<connectorId>.<field>` (SPEC §3 browser storage). */
export type ConnectorStorageFields = {
  activeAccount: `0x${string}`
  sessionTopic: string
  currentChain: number
  providerChainId: number
  namespaces: Record<string, unknown>
}

export type ConnectorStorage = {
  get<field extends keyof ConnectorStorageFields>(field: field): ConnectorStorageFields[field] | null
  set<field extends keyof ConnectorStorageFields>(field: field, value: ConnectorStorageFields[field]): void
  remove(field: keyof ConnectorStorageFields): void
  /** Removes every field of this connector: what a disconnect clears (SPEC §4). */
  clear(): void
}

export type Storage = {
  forConnector(connectorId: string): ConnectorStorage
  getLastUsedChainId(): number | null
  setLastUsedChainId(chainId: number): void
  getRecentConnectorId(): string | null
  setRecentConnectorId(connectorId: string): void
  /** Failed writes (quota, private mode) are reported here instead of thrown. */
  onError: ((error: unknown) => void) | undefined
}

const connectorFields = [
  'activeAccount',
  'sessionTopic',
  'currentChain',
  'providerChainId',
  'namespaces',
] as const satisfies readonly (keyof ConnectorStorageFields)[]

export const RECENT_CONNECTOR_KEY = `${STORAGE_PREFIX}.recentConnectorId`

/**
 * Latchkey's storage layout over any key-value store.
 *
 * @example
 * const storage = createStorage({ storage: createMemoryStorage() })
 * storage.forConnector('io.metamask').set('activeAccount', '0x…')
 */
export function createStorage(parameters: { storage?: KeyValueStorage | undefined } = {}): Storage {
  const backend = parameters.storage ?? getDefaultStorage()
  const self: Storage = {
    onError: undefined,
    forConnector(connectorId) {
      const keyOf = (field: string) => `${STORAGE_PREFIX}.${connectorId}.${field}`
      return {
        get: (field) => read(keyOf(field)),
        set: (field, value) => write(keyOf(field), value),
        remove: (field) => remove(keyOf(field)),
        clear: () => {
          for (const field of connectorFields) remove(keyOf(field))
        },
      }
    },
    getLastUsedChainId: () => read<number>(LAST_USED_CHAIN_ID_KEY),
    setLastUsedChainId: (chainId) => write(LAST_USED_CHAIN_ID_KEY, chainId),
    getRecentConnectorId: () => read<string>(RECENT_CONNECTOR_KEY),
    setRecentConnectorId: (connectorId) => write(RECENT_CONNECTOR_KEY, connectorId),
  }

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
      self.onError?.(error)
    }
  }
  function remove(key: string) {
    try {
      backend.removeItem(key)
    } catch (error) {
      self.onError?.(error)
    }
  }
  return self
}

/**
 * A Map-backed storage, for servers and tests.
 *
 * @example
 * const client = createClient({ chains, storage: createMemoryStorage() })
 */
export function createMemoryStorage(): KeyValueStorage & { readonly map: Map<string, string> } {
  const map = new Map<string, string>()
  return {
    map,
    getItem: (key) => map.get(key) ?? null,
    setItem: (key, value) => void map.set(key, value),
    removeItem: (key) => void map.delete(key),
  }
}

/** localStorage when a browser offers it (it may throw in sandboxed frames), memory otherwise. */
export function getDefaultStorage(): KeyValueStorage {
  try {
    if (typeof window !== 'undefined' && window.localStorage) return window.localStorage
  } catch {
    // Access denied: fall through to memory.
  }
  return createMemoryStorage()
}
