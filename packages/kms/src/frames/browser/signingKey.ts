import { bytesToHex } from './encoding.js'
import { type FrameKey, type FrameKeyStore, frameKeyStore } from './frameKeys.js'
import { compressedPoint } from './p256.js'
import { stamp } from './stamp.js'
import type { FrameStore } from './storage.js'

// The consent frame's signing key: the embedded wallet's credential. A non-extractable ECDSA P-256
// key made here and kept in the frames origin's IndexedDB, one per parent origin, with an expiry.
// The parent learns only its public key, compressed (the form a Turnkey API key takes), and gets
// stamps only for requests the user approved in this frame.

/** Default lifetime of a signing key in the frame: 48 hours; the kms's own expiry of the API key still applies. */
export const DEFAULT_SIGNING_KEY_TTL_MS = 48 * 60 * 60 * 1000

export type SigningKeyStore = FrameKeyStore<FrameKey>

/** The store entry of `parentOrigin`'s signing key. */
export const signingKeyStorageKey = (parentOrigin: string) => `latchkey.frames.consent.signingKey ${parentOrigin}`

/**
 * The consent frame's signing keys, one per parent origin.
 *
 * @example
 * const keys = signingKeyStore({ store: frameStore() })
 * const key = await keys.getOrCreate('https://app.example', DEFAULT_SIGNING_KEY_TTL_MS) // key.publicKeyHex: '02…'
 */
export function signingKeyStore(parameters: { store: FrameStore; now?: () => number }): SigningKeyStore {
  return frameKeyStore({
    store: parameters.store,
    slot: signingKeyStorageKey,
    algorithm: { name: 'ECDSA', namedCurve: 'P-256' },
    usages: ['sign'],
    publicKeyHex: (uncompressed) => bytesToHex(compressedPoint(uncompressed)),
    now: parameters.now,
  })
}

/** The `X-Stamp` of `payload` (the exact body) with `key`: what @turnkey/api-key-stamper makes. */
export async function stampWithSigningKey(key: FrameKey, payload: string): Promise<{ stampHeaderName: 'X-Stamp'; stampHeaderValue: string }> {
  return { stampHeaderName: 'X-Stamp', stampHeaderValue: await stamp({ key: key.privateKey, publicKey: key.publicKeyHex }, payload) }
}
