import { bytesToBase64url, bytesToHex, utf8Encode } from './encoding.js'
import { p1363ToDer } from './p256.js'

// Turnkey's API-key stamp, as the frames make it: the auth frame with a credential from a bundle,
// the consent frame with its own signing key.

/** A non-extractable ECDSA P-256 signing key and its compressed public key (hex). */
export type Credential = { readonly key: CryptoKey; readonly publicKey: string }

/**
 * The `X-Stamp` value `ApiKeyStamper` makes: base64url JSON {publicKey, scheme, signature (DER hex)}
 * over SHA-256 of the exact `payload`.
 *
 * @example
 * const header = await stamp(credential, JSON.stringify(body))
 */
export async function stamp(credential: Credential, payload: string): Promise<string> {
  const signature = new Uint8Array(await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, credential.key, utf8Encode(payload)))
  const body = { publicKey: credential.publicKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256', signature: bytesToHex(p1363ToDer(signature)) }
  return bytesToBase64url(utf8Encode(JSON.stringify(body)))
}
