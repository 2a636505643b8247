import { bytesToHex } from './encoding.js'
import { type FrameKey, type FrameKeyStore, frameKeyStore } from './frameKeys.js'
import type { FrameStore } from './storage.js'

// The frame's embedded key: an ECDH P-256 key pair that bundles are encrypted to, non-extractable,
// kept in the frames origin's IndexedDB with an expiry (so an email sign-in link still opens after
// a reload), bound to the parent origin that created it; never sent anywhere. HPKE opens bundles
// with deriveBits on the key as it is, so it never needs exporting.

/** Default lifetime of an embedded key: 48 hours, as the hosted frames keep theirs. */
export const DEFAULT_EMBEDDED_KEY_TTL_MS = 48 * 60 * 60 * 1000

/** The embedded key; `publicKeyHex` is uncompressed, as PUBLIC_KEY_READY carries it. */
export type EmbeddedKey = FrameKey

export type EmbeddedKeyStore = FrameKeyStore<EmbeddedKey>

/** The store entry of a page's embedded key; each page keeps its own so the export frame's reset spares the auth frame's. */
export const embeddedKeyStorageKey = (page: string) => `latchkey.frames.${page}.embeddedKey`

/**
 * The embedded key of one frame page, kept in `store` under {@link embeddedKeyStorageKey}.
 *
 * @example
 * const keys = embeddedKeyStore({ store: frameStore(), page: 'auth' })
 * const key = await keys.getOrCreate('https://app.example', DEFAULT_EMBEDDED_KEY_TTL_MS)
 */
export function embeddedKeyStore(parameters: { store: FrameStore; page: string; now?: () => number }): EmbeddedKeyStore {
  forgetLegacyKey(parameters.page)
  return frameKeyStore({
    store: parameters.store,
    slot: () => embeddedKeyStorageKey(parameters.page),
    algorithm: { name: 'ECDH', namedCurve: 'P-256' },
    usages: ['deriveBits'],
    publicKeyHex: bytesToHex,
    now: parameters.now,
  })
}

/** Earlier versions kept the key as an extractable JWK in localStorage under the same name: it goes. */
function forgetLegacyKey(page: string) {
  try {
    globalThis.localStorage?.removeItem(embeddedKeyStorageKey(page))
  } catch {
    // Storage blocked: there is nothing of ours in it.
  }
}
