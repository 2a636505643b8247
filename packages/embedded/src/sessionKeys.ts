import { IndexedDbStamper } from '@turnkey/indexed-db-stamper'

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

/**
 * The browser's session keys: `@turnkey/indexed-db-stamper` (IndexedDB `TurnkeyStamperDB`), made
 * by WebCrypto as non-extractable P-256 keys.
 *
 * @example
 * const keys = indexedDbSessionKeys()
 * const publicKey = await keys.create()
 */
export function indexedDbSessionKeys(): SessionKeyStore {
  let ready: Promise<IndexedDbStamper> | undefined
  const stamper = () =>
    (ready ??= (async () => {
      const created = new IndexedDbStamper()
      await created.init()
      return created
    })())
  return {
    async create() {
      const keys = await stamper()
      await keys.resetKeyPair()
      return keys.getPublicKey()!
    },
    async publicKey() {
      return (await stamper()).getPublicKey() ?? undefined
    },
    stamper: { stamp: async (payload) => (await stamper()).stamp(payload) },
    async clear() {
      await (await stamper()).clear()
    },
  }
}
