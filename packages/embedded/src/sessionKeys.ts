import { p256 } from '@noble/curves/p256'
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
  /** Keeps a credential opened from a bundle (private key hex) as the session key; its compressed public key. */
  importPrivateKey(privateKeyHex: string): Promise<string>
  /** The stored key's compressed public key, if one is stored. */
  publicKey(): Promise<string | undefined>
  /** Stamps with the stored key. */
  stamper: Stamper
  /** Deletes the stored key. */
  clear(): Promise<void>
}

/**
 * The browser's session keys: `@turnkey/indexed-db-stamper` (IndexedDB `TurnkeyStamperDB`), with
 * credentials from bundles imported as non-extractable keys.
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
    async importPrivateKey(privateKeyHex) {
      const keys = await stamper()
      await keys.resetKeyPair(await importP256(privateKeyHex))
      return keys.getPublicKey()!
    },
    async publicKey() {
      return (await stamper()).getPublicKey() ?? undefined
    },
    stamper: { stamp: async (payload) => (await stamper()).stamp(payload) },
    async clear() {
      await (await stamper()).clear()
      ready = undefined
    },
  }
}

/** A P-256 private key (hex) as a non-extractable ECDSA key pair. */
async function importP256(privateKeyHex: string): Promise<CryptoKeyPair> {
  const point = p256.getPublicKey(privateKeyHex, false)
  const b64url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
  const jwk = { kty: 'EC', crv: 'P-256', x: b64url(point.slice(1, 33)), y: b64url(point.slice(33, 65)) }
  const scalar = Uint8Array.from(privateKeyHex.match(/../g)!.map((byte) => parseInt(byte, 16)))
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256' }
  const [privateKey, publicKey] = await Promise.all([
    crypto.subtle.importKey('jwk', { ...jwk, d: b64url(scalar) }, algorithm, false, ['sign']),
    crypto.subtle.importKey('jwk', jwk, algorithm, true, ['verify']),
  ])
  scalar.fill(0)
  return { privateKey, publicKey }
}
