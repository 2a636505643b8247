// Where the frames keep their keys: the frames origin's IndexedDB, which stores CryptoKey objects
// as they are (structured clone), so a non-extractable private key is kept without ever being
// exported. Where IndexedDB is blocked (a browser that refuses third-party storage), memory: the
// keys then last as long as the page.

/** A small async key-value store of structured-clonable values. */
export type FrameStore = {
  get(name: string): Promise<unknown>
  put(name: string, value: unknown): Promise<void>
  delete(name: string): Promise<void>
}

const DATABASE = 'latchkey-frames'
const OBJECT_STORE = 'keys'

/** A store in memory: the fallback, and what the unit tests use. */
export function memoryStore(): FrameStore & { readonly map: Map<string, unknown> } {
  const map = new Map<string, unknown>()
  return {
    map,
    get: async (name) => map.get(name),
    put: async (name, value) => void map.set(name, value),
    delete: async (name) => void map.delete(name),
  }
}

function openDatabase(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(DATABASE, 1)
    open.onupgradeneeded = () => open.result.createObjectStore(OBJECT_STORE)
    open.onsuccess = () => resolve(open.result)
    open.onerror = () => reject(open.error)
    open.onblocked = () => reject(new Error('the frames database is blocked'))
  })
}

/**
 * The frames origin's IndexedDB (`latchkey-frames`, object store `keys`), or memory when it
 * cannot be opened.
 *
 * @example
 * const store = frameStore()
 * await store.put('latchkey.frames.consent.signingKey', { privateKey, expiresAt })
 */
export function frameStore(): FrameStore {
  let opened: Promise<IDBDatabase | FrameStore> | undefined
  const database = () => (opened ??= (typeof indexedDB === 'undefined' ? Promise.reject(new Error('no IndexedDB')) : openDatabase()).catch(() => memoryStore()))
  async function run<result>(mode: IDBTransactionMode, action: (store: IDBObjectStore) => IDBRequest<result>): Promise<result> {
    const db = (await database()) as IDBDatabase
    return new Promise((resolve, reject) => {
      const transaction = db.transaction(OBJECT_STORE, mode)
      const request = action(transaction.objectStore(OBJECT_STORE))
      transaction.oncomplete = () => resolve(request.result)
      transaction.onerror = transaction.onabort = () => reject(transaction.error)
    })
  }
  const fallback = async () => {
    const db = await database()
    return db instanceof IDBDatabase ? undefined : db
  }
  return {
    async get(name) {
      const memory = await fallback()
      return memory ? memory.get(name) : run('readonly', (store) => store.get(name))
    },
    async put(name, value) {
      const memory = await fallback()
      if (memory) return memory.put(name, value)
      await run('readwrite', (store) => store.put(value, name))
    },
    async delete(name) {
      const memory = await fallback()
      if (memory) return memory.delete(name)
      await run('readwrite', (store) => store.delete(name))
    },
  }
}
