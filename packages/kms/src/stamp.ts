import { createPublicKey, type KeyObject, verify } from 'node:crypto'
import { GrpcCode, KmsError } from './errors.js'

/** The P-256 scheme of API keys, session keys and the auth frame. */
export const API_KEY_P256_SCHEME = 'SIGNATURE_SCHEME_TK_API_P256'

/** What a verified stamp proves: the request body was signed by this key. */
export type Stamp = { readonly publicKey: string; readonly scheme: typeof API_KEY_P256_SCHEME }

// SubjectPublicKeyInfo header of a compressed P-256 key: id-ecPublicKey, prime256v1, 33-byte bit string.
const P256_COMPRESSED_SPKI = Buffer.from('3039301306072a8648ce3d020106082a8648ce3d030107032200', 'hex')
const keys = new Map<string, KeyObject>()

function keyObject(publicKey: string): KeyObject {
  let key = keys.get(publicKey)
  if (!key) {
    key = createPublicKey({ key: Buffer.concat([P256_COMPRESSED_SPKI, Buffer.from(publicKey, 'hex')]), format: 'der', type: 'spki' })
    if (keys.size > 10_000) keys.clear()
    keys.set(publicKey, key)
  }
  return key
}

const unauthenticated = (message: string) => new KmsError(GrpcCode.unauthenticated, message)

/**
 * Verifies an `X-Stamp` header against the exact body bytes: base64url JSON `{publicKey, scheme,
 * signature}`, a DER ECDSA P-256 signature over SHA-256 of the body. High-S signatures are valid
 * (WebCrypto and Node do not normalise S), so OpenSSL verifies, not a low-S library default.
 *
 * @example
 * const { publicKey } = verifyApiKeyStamp(request.headers.get('x-stamp'), bodyBytes)
 */
export function verifyApiKeyStamp(header: string, body: Uint8Array): Stamp {
  const { publicKey, scheme } = checkApiKeyStamp(header, body)
  return { publicKey, scheme }
}

/**
 * verifyApiKeyStamp, also answering the signature it checked (a vote lists it).
 *
 * @internal
 * @example
 * const { publicKey, signature } = checkApiKeyStamp(request.headers.get('x-stamp'), bodyBytes)
 */
export function checkApiKeyStamp(header: string, body: Uint8Array): Stamp & { readonly signature: string } {
  let stamp: { publicKey?: unknown; scheme?: unknown; signature?: unknown }
  try {
    stamp = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'))
  } catch {
    throw unauthenticated('malformed stamp: X-Stamp is not base64url-encoded JSON')
  }
  const { publicKey, scheme, signature } = stamp ?? {}
  if (scheme !== API_KEY_P256_SCHEME) throw unauthenticated(`unsupported stamp scheme: ${String(scheme)}`)
  if (typeof publicKey !== 'string' || !/^0[23][0-9a-f]{64}$/.test(publicKey))
    throw unauthenticated('malformed stamp: publicKey must be a compressed P-256 key in hex')
  if (typeof signature !== 'string' || !/^(?:[0-9a-f]{2})+$/.test(signature)) throw unauthenticated('malformed stamp: signature must be DER hex')
  let valid: boolean
  try {
    valid = verify('sha256', body, keyObject(publicKey), Buffer.from(signature, 'hex'))
  } catch {
    valid = false
  }
  if (!valid) throw unauthenticated('invalid stamp: the signature does not match the request body')
  return { publicKey, scheme, signature }
}
