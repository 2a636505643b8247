/** The subset of the Web Storage API Latchkey needs; localStorage fits, so does a Map wrapper. */
export type KeyValueStorage = {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
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
