import { StorageWriteError } from './errors.js'

/** The part of the Web Storage API the client needs; localStorage fits, so does a Map. */
export type KeyValueStorage = {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
}

/**
 * A storage in memory, for Node and tests.
 *
 * @example
 * const client = await createSignClient({ …, storage: memoryStorage() })
 */
export function memoryStorage(): KeyValueStorage & { readonly size: number } {
  const map = new Map<string, string>()
  return {
    getItem: (key) => map.get(key) ?? null,
    setItem: (key, value) => void map.set(key, String(value)),
    removeItem: (key) => void map.delete(key),
    get size() {
      return map.size
    },
  }
}

/**
 * One persisted map of records under `<prefix>.<name>`: read once, written whole on each change.
 * A failed write (quota, private mode) is reported through `onError` and the record lives on in
 * memory, so the session keeps working until the page closes.
 */
export type RecordStore<value> = {
  get(key: string): value | undefined
  set(key: string, value: value): void
  delete(key: string): boolean
  values(): value[]
  keys(): string[]
}

export function recordStore<value>(storage: KeyValueStorage, key: string, onError: (error: StorageWriteError) => void): RecordStore<value> {
  const records = new Map<string, value>(read(storage, key))
  const save = () => {
    try {
      if (records.size) storage.setItem(key, JSON.stringify(Object.fromEntries(records)))
      else storage.removeItem(key)
    } catch (error) {
      onError(new StorageWriteError(key, error))
    }
  }
  return {
    get: (id) => records.get(id),
    set(id, value) {
      records.set(id, value)
      save()
    },
    delete(id) {
      const had = records.delete(id)
      if (had) save()
      return had
    },
    values: () => [...records.values()],
    keys: () => [...records.keys()],
  }
}

function read<value>(storage: KeyValueStorage, key: string): [string, value][] {
  try {
    const text = storage.getItem(key)
    if (!text) return []
    const parsed: unknown = JSON.parse(text)
    return typeof parsed === 'object' && parsed !== null ? Object.entries(parsed as Record<string, value>) : []
  } catch {
    // A damaged entry is dropped rather than breaking every page load.
    return []
  }
}
