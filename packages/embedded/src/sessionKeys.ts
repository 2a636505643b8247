import { bytesToNumberBE } from '@noble/curves/abstract/utils'
import { DER } from '@noble/curves/abstract/weierstrass'

/** What `@turnkey/http` asks of a stamper. */
export type Stamper = { stamp(payload: string): Promise<{ stampHeaderName: string; stampHeaderValue: string }> }

/**
 * Where the session key pair lives (SPEC §3: publicKey, privateKey, expirationDate; the expiry is
 * kept with the wallet's record). In browsers the private key is a non-extractable WebCrypto key in
 * IndexedDB: script can sign with it, nothing can read it out.
 */
export type SessionKeyStore = {
  /** A new key pair replaces the old; resolves to its compressed public key (hex). */
  create(): Promise<string>
  /** The stored key's compressed public key, if one is stored. */
  publicKey(): Promise<string | undefined>
  /** Stamps with the stored key. */
  stamper: Stamper
  /** Deletes the stored key. */
  clear(): Promise<void>
}

// The layout `@turnkey/indexed-db-stamper` uses, so a key stored by either survives the other.
const DB_NAME = 'TurnkeyStamperDB'
const DB_STORE = 'KeyStore'
const PUBLIC_KEY = 'turnkeyKeyPair-pub'
const PRIVATE_KEY = 'turnkeyKeyPair-priv'
const P256 = { name: 'ECDSA', namedCurve: 'P-256' } as const

const hex = (bytes: Uint8Array) => Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')

/** The compressed SEC1 form of a 65-byte uncompressed point. */
const compress = (point: Uint8Array) => Uint8Array.of(2 + ((point[64] ?? 0) & 1), ...point.subarray(1, 33))

/**
 * The `X-Stamp` of `payload` (the exact request body): base64url JSON of the compressed public
 * key, the scheme and the DER signature (hex) over SHA-256 of the body. WebCrypto signs in IEEE
 * P1363 (r ‖ s); the stamp carries DER, encoded by @noble/curves.
 *
 * @example
 * const { stampHeaderValue } = await stampWithKey(privateKey, '02ab…', JSON.stringify(body))
 */
export async function stampWithKey(
  privateKey: CryptoKey,
  publicKey: string,
  payload: string,
): Promise<{ stampHeaderName: 'X-Stamp'; stampHeaderValue: string }> {
  const raw = new Uint8Array(await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, privateKey, new TextEncoder().encode(payload)))
  const signature = DER.hexFromSig({ r: bytesToNumberBE(raw.subarray(0, 32)), s: bytesToNumberBE(raw.subarray(32)) })
  const json = JSON.stringify({ publicKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256', signature })
  return { stampHeaderName: 'X-Stamp', stampHeaderValue: btoa(json).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '') }
}

function request<result>(run: (store: IDBObjectStore) => IDBRequest<result> | undefined, mode: IDBTransactionMode): Promise<result | undefined> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(DB_NAME, 1)
    open.onupgradeneeded = () => open.result.createObjectStore(DB_STORE)
    open.onerror = () => reject(open.error)
    open.onsuccess = () => {
      const db = open.result
      const tx = db.transaction(DB_STORE, mode)
      const pending = run(tx.objectStore(DB_STORE))
      tx.oncomplete = () => {
        db.close()
        resolve(pending?.result)
      }
      tx.onerror = tx.onabort = () => {
        db.close()
        reject(tx.error)
      }
    }
  })
}

/**
 * The browser's session keys: non-extractable WebCrypto P-256 keys in IndexedDB (`TurnkeyStamperDB`,
 * the layout of `@turnkey/indexed-db-stamper`), stamping as `@turnkey/api-key-stamper` does.
 *
 * @example
 * const keys = indexedDbSessionKeys()
 * const publicKey = await keys.create()
 */
export function indexedDbSessionKeys(): SessionKeyStore {
  let loaded: Promise<{ publicKey: string; privateKey: CryptoKey } | undefined> | undefined
  const load = () =>
    (loaded ??= (async () => {
      const publicKey = await request<string>((store) => store.get(PUBLIC_KEY), 'readonly')
      const privateKey = await request<CryptoKey>((store) => store.get(PRIVATE_KEY), 'readonly')
      return publicKey && privateKey ? { publicKey, privateKey } : undefined
    })())
  const keys: SessionKeyStore = {
    async create() {
      const pair = await crypto.subtle.generateKey(P256, false, ['sign', 'verify'])
      const publicKey = hex(compress(new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey))))
      await request((store) => {
        store.put(publicKey, PUBLIC_KEY)
        return store.put(pair.privateKey, PRIVATE_KEY)
      }, 'readwrite')
      loaded = Promise.resolve({ publicKey, privateKey: pair.privateKey })
      return publicKey
    },
    async publicKey() {
      return (await load())?.publicKey
    },
    stamper: {
      async stamp(payload) {
        // Without a stored key, a new one: the kms refuses it as unknown, and the wallet registers
        // a key through the backend and retries (as @turnkey/indexed-db-stamper's init does).
        if (!(await load())) await keys.create()
        const key = (await load()) as { publicKey: string; privateKey: CryptoKey }
        return stampWithKey(key.privateKey, key.publicKey, payload)
      },
    },
    async clear() {
      loaded = Promise.resolve(undefined)
      await request((store) => {
        store.delete(PUBLIC_KEY)
        return store.delete(PRIVATE_KEY)
      }, 'readwrite')
    },
  }
  return keys
}
