import { createPublicKey, verify } from 'node:crypto'

/**
 * An ed25519 signature check on node:crypto (OpenSSL), for the connection tokens: about a tenth
 * of the CPU of the portable @noble/curves check per connection (bench:relay-auth), which counts
 * when every client reconnects at once, after a deploy. OpenSSL checks as RFC 8032 says, stricter
 * than ZIP-215 on non-canonical encodings that no honest signer produces.
 *
 * @example
 * verifyRelayJwt(token, { now, verifySignature: verifyEd25519 })
 */
export function verifyEd25519(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature.length !== 64 || publicKey.length !== 32) return false
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey).toString('base64url') }, format: 'jwk' })
    return verify(null, message, key, signature)
  } catch {
    // A public key that is no curve point.
    return false
  }
}
