import type { Bytes } from './encoding.js'
import type { FrameStore } from './storage.js'

// The frames' own P-256 keys (the embedded ECDH key bundles are encrypted to, the consent frame's
// ECDSA signing key): made non-extractable by WebCrypto and kept as CryptoKey objects in the
// frames origin's store with an expiry, bound to the parent origin that asked for them. Nothing
// can read a private key out, not even this origin's own script; it can only use it here.

export type FrameKey = {
  readonly privateKey: CryptoKey
  /** 65 bytes, uncompressed. */
  readonly publicKey: Bytes
  /** The public key as the parent is told it (uncompressed or compressed hex, by kind). */
  readonly publicKeyHex: string
  readonly expiresAt: number
}

/** What the channel needs from a page's key store. */
export type FrameKeyStore<key extends FrameKey = FrameKey> = {
  /** The stored key for `parentOrigin`, if one is there and has not expired. */
  get(parentOrigin: string): Promise<key | undefined>
  /** The stored key for `parentOrigin`, or a new one that expires `ttlMs` from now. */
  getOrCreate(parentOrigin: string, ttlMs: number): Promise<key>
  /** Forgets the key of `parentOrigin`. */
  reset(parentOrigin: string): Promise<void>
}

type Stored = { privateKey: CryptoKey; publicKey: Bytes; expiresAt: number; parentOrigin: string }

export type FrameKeyStoreParameters = {
  store: FrameStore
  /** The store entry of `parentOrigin`'s key. */
  slot: (parentOrigin: string) => string
  algorithm: { readonly name: 'ECDH' | 'ECDSA'; readonly namedCurve: 'P-256' }
  usages: readonly KeyUsage[]
  /** The public key as PUBLIC_KEY_READY carries it. */
  publicKeyHex: (uncompressed: Bytes) => string
  now?: (() => number) | undefined
}

const isStored = (value: unknown): value is Stored => {
  const stored = value as Partial<Stored> | undefined
  return (
    typeof stored === 'object' &&
    stored !== null &&
    stored.privateKey instanceof CryptoKey &&
    stored.publicKey instanceof Uint8Array &&
    typeof stored.expiresAt === 'number' &&
    typeof stored.parentOrigin === 'string'
  )
}

/**
 * A store of non-extractable P-256 keys, one per slot.
 *
 * @example
 * const keys = frameKeyStore({ store: frameStore(), slot: () => 'k', algorithm: { name: 'ECDH', namedCurve: 'P-256' }, usages: ['deriveBits'], publicKeyHex: bytesToHex })
 */
export function frameKeyStore(parameters: FrameKeyStoreParameters): FrameKeyStore {
  const { store, slot, algorithm } = parameters
  const now = parameters.now ?? Date.now
  const toKey = (stored: Stored): FrameKey => ({
    privateKey: stored.privateKey,
    publicKey: stored.publicKey,
    publicKeyHex: parameters.publicKeyHex(stored.publicKey),
    expiresAt: stored.expiresAt,
  })

  async function get(parentOrigin: string): Promise<FrameKey | undefined> {
    const name = slot(parentOrigin)
    const stored = await store.get(name)
    if (stored === undefined) return undefined
    // Expired, unreadable, or made for another parent page: that key is not used again.
    if (!isStored(stored) || stored.expiresAt <= now() || stored.parentOrigin !== parentOrigin) {
      await store.delete(name)
      return undefined
    }
    return toKey(stored)
  }

  return {
    get,
    async getOrCreate(parentOrigin, ttlMs) {
      const existing = await get(parentOrigin)
      if (existing) return existing
      const pair = await crypto.subtle.generateKey(algorithm, false, [...parameters.usages])
      const publicKey = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey))
      const stored: Stored = { privateKey: pair.privateKey, publicKey, expiresAt: now() + ttlMs, parentOrigin }
      await store.put(slot(parentOrigin), stored)
      return toKey(stored)
    },
    async reset(parentOrigin) {
      await store.delete(slot(parentOrigin))
    },
  }
}
