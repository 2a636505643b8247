import { type Bytes, bytesToHex } from './encoding.js'

// The frame's embedded key: an ECDH P-256 key pair that bundles are encrypted to. Its private JWK
// lives in the frame origin's localStorage with an expiry (so an email sign-in link still opens
// after a reload), bound to the parent origin that created it; never sent anywhere.

/** Default lifetime of an embedded key: 48 hours, as the hosted frames keep theirs. */
export const DEFAULT_EMBEDDED_KEY_TTL_MS = 48 * 60 * 60 * 1000

export type EmbeddedKey = {
  readonly privateKey: CryptoKey
  /** 65 bytes, uncompressed. */
  readonly publicKey: Bytes
  /** The uncompressed public key as hex: what PUBLIC_KEY_READY carries. */
  readonly publicKeyHex: string
  readonly expiresAt: number
}

type Stored = { jwk: JsonWebKey; expiresAt: number; parentOrigin: string }

export type KeyStorage = Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>

/** The storage key of a page's embedded key; each page keeps its own so the export frame's reset spares the auth frame's. */
export const embeddedKeyStorageKey = (page: string) => `latchkey.frames.${page}.embeddedKey`

/**
 * The embedded key of one frame page, kept in `storage` under {@link embeddedKeyStorageKey}.
 *
 * @example
 * const keys = embeddedKeyStore({ storage: localStorage, page: 'auth' })
 * const key = await keys.getOrCreate('https://app.example', DEFAULT_EMBEDDED_KEY_TTL_MS)
 */
export function embeddedKeyStore(parameters: { storage: KeyStorage; page: string; now?: () => number }) {
  const { storage } = parameters
  const name = embeddedKeyStorageKey(parameters.page)
  const now = parameters.now ?? Date.now

  async function load(parentOrigin: string): Promise<EmbeddedKey | undefined> {
    const text = storage.getItem(name)
    if (text === null) return undefined
    let stored: Partial<Stored> | null = null
    try {
      stored = JSON.parse(text) as Partial<Stored> | null
    } catch {
      stored = null
    }
    // Expired, unreadable, or made for another parent page: that key is not used again.
    if (!stored?.jwk || typeof stored.expiresAt !== 'number' || stored.expiresAt <= now() || stored.parentOrigin !== parentOrigin) {
      storage.removeItem(name)
      return undefined
    }
    try {
      return await fromJwk(stored.jwk, stored.expiresAt)
    } catch {
      storage.removeItem(name)
      return undefined
    }
  }

  return {
    /** The stored key for `parentOrigin`, if one is there and has not expired. */
    get: load,
    /** The stored key for `parentOrigin`, or a new one that expires `ttlMs` from now. */
    async getOrCreate(parentOrigin: string, ttlMs: number): Promise<EmbeddedKey> {
      const existing = await load(parentOrigin)
      if (existing) return existing
      const pair = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits'])
      const jwk = await crypto.subtle.exportKey('jwk', pair.privateKey)
      const expiresAt = now() + ttlMs
      storage.setItem(name, JSON.stringify({ jwk, expiresAt, parentOrigin } satisfies Stored))
      return fromJwk(jwk, expiresAt)
    },
    /** Forgets the key: bundles encrypted to it can no longer be opened here. */
    reset() {
      storage.removeItem(name)
    },
  }
}

export type EmbeddedKeyStore = ReturnType<typeof embeddedKeyStore>

async function fromJwk(jwk: JsonWebKey, expiresAt: number): Promise<EmbeddedKey> {
  const privateKey = await crypto.subtle.importKey('jwk', jwk, { name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveBits'])
  const publicJwk: JsonWebKey = { kty: 'EC', crv: 'P-256', x: jwk.x ?? '', y: jwk.y ?? '', ext: true }
  const publicKey = new Uint8Array(
    await crypto.subtle.exportKey('raw', await crypto.subtle.importKey('jwk', publicJwk, { name: 'ECDH', namedCurve: 'P-256' }, true, [])),
  )
  return { privateKey, publicKey, publicKeyHex: bytesToHex(publicKey), expiresAt }
}

/** localStorage when the frame may use it, else memory (storage blocked: the key lasts as long as the page). */
export function frameStorage(): KeyStorage {
  try {
    const probe = 'latchkey.frames.probe'
    localStorage.setItem(probe, '1')
    localStorage.removeItem(probe)
    return localStorage
  } catch {
    const memory = new Map<string, string>()
    return { getItem: (key) => memory.get(key) ?? null, setItem: (key, value) => void memory.set(key, value), removeItem: (key) => void memory.delete(key) }
  }
}
