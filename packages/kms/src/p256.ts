import { createECDH, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto'

// P-256 by OpenSSL (node:crypto) for the service's own work: the signer key that signs bundles,
// session JWTs and verification tokens, the keys it checks client signatures and tokens with, and
// the one-time target keys of codes. @noble/curves' pure-JS P-256 (kept in the frames, where
// WebCrypto signs) took 1 to 4 ms per signature, verification or public key here, several of them
// in each email sign-in; OpenSSL takes a few dozen µs. Signatures are ECDSA over SHA-256 of the
// data (OpenSSL hashes it), with a random nonce, and S as it comes, high or low: the readers
// (@turnkey/crypto, WebCrypto) accept both, as they did noble's (p256 does not normalise S).

// SubjectPublicKeyInfo headers of a P-256 key: id-ecPublicKey, prime256v1, then the SEC1 point.
const SPKI_COMPRESSED = Buffer.from('3039301306072a8648ce3d020106082a8648ce3d030107032200', 'hex')
const SPKI_UNCOMPRESSED = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex')

/** A private key as OpenSSL holds it, with its public key (65 bytes, uncompressed, and as OpenSSL holds it). */
type PrivateKey = { readonly key: KeyObject; readonly publicKey: Buffer; readonly publicKeyObject: KeyObject }

// The service signs with one or two keys (the signer, the next while it rotates): each is parsed
// once. A pure function of the key's bytes, so nothing here can go stale.
const privateKeys = new Map<string, PrivateKey>()

/** `hex` (32 bytes) as an OpenSSL key and its public key; throws unless it is a valid P-256 scalar. */
function privateKeyOf(hex: string): PrivateKey {
  const cached = privateKeys.get(hex)
  if (cached) return cached
  const secret = Buffer.from(hex, 'hex')
  if (secret.length !== 32) throw new Error('a P-256 private key is 32 bytes')
  const ecdh = createECDH('prime256v1')
  ecdh.setPrivateKey(secret)
  const publicKey = ecdh.getPublicKey()
  const key = createPrivateKey({
    format: 'jwk',
    key: {
      kty: 'EC',
      crv: 'P-256',
      d: secret.toString('base64url'),
      x: publicKey.subarray(1, 33).toString('base64url'),
      y: publicKey.subarray(33).toString('base64url'),
    },
  })
  const parsed = { key, publicKey, publicKeyObject: createPublicKey(key) }
  if (privateKeys.size >= 16) privateKeys.clear()
  privateKeys.set(hex, parsed)
  return parsed
}

/** The public key (65 bytes, uncompressed) of a P-256 private key given as hex or bytes. */
export function p256PublicKey(privateKey: string | Uint8Array): Buffer {
  if (typeof privateKey === 'string') return privateKeyOf(privateKey).publicKey
  const ecdh = createECDH('prime256v1')
  ecdh.setPrivateKey(privateKey)
  return ecdh.getPublicKey()
}

/**
 * Whether `signature` is the signature of `privateKey` (hex: the service's own key, so its public
 * key is parsed once) over SHA-256 of `data`; as `p256Verify`.
 */
export function p256VerifyOwn(privateKey: string, data: Uint8Array | string, signature: Uint8Array, encoding: 'der' | 'p1363'): boolean {
  if (encoding === 'p1363' && signature.length !== 64) return false
  try {
    const key = privateKeyOf(privateKey).publicKeyObject
    return verify('sha256', typeof data === 'string' ? Buffer.from(data) : data, { key, dsaEncoding: encoding === 'der' ? 'der' : 'ieee-p1363' }, signature)
  } catch {
    return false
  }
}

/** A new P-256 key pair: the private key (32 bytes) and the public key (65 bytes, uncompressed). */
export function newP256Key(): { privateKey: Buffer; publicKey: Buffer } {
  const ecdh = createECDH('prime256v1')
  const publicKey = ecdh.generateKeys()
  // OpenSSL gives the scalar without its leading zero bytes.
  const privateKey = Buffer.alloc(32)
  const scalar = ecdh.getPrivateKey()
  scalar.copy(privateKey, 32 - scalar.length)
  return { privateKey, publicKey }
}

/** ECDSA P-256 over SHA-256 of `data` with `privateKey` (hex): DER, or 64 bytes r ‖ s ('p1363'). */
export function p256Sign(privateKey: string, data: Uint8Array | string, encoding: 'der' | 'p1363'): Buffer {
  return sign('sha256', typeof data === 'string' ? Buffer.from(data) : data, {
    key: privateKeyOf(privateKey).key,
    dsaEncoding: encoding === 'der' ? 'der' : 'ieee-p1363',
  })
}

/**
 * Whether `signature` (DER, or 64 bytes r ‖ s for 'p1363') is `publicKey`'s ECDSA P-256 signature
 * over SHA-256 of `data`. `publicKey` is a SEC1 point, compressed or uncompressed (hex or bytes);
 * anything malformed is false.
 */
export function p256Verify(publicKey: string | Uint8Array, data: Uint8Array | string, signature: Uint8Array, encoding: 'der' | 'p1363'): boolean {
  try {
    const point = typeof publicKey === 'string' ? Buffer.from(publicKey, 'hex') : Buffer.from(publicKey)
    const header =
      point.length === 33 && (point[0] === 2 || point[0] === 3) ? SPKI_COMPRESSED : point.length === 65 && point[0] === 4 ? SPKI_UNCOMPRESSED : undefined
    if (!header || (encoding === 'p1363' && signature.length !== 64)) return false
    const key = createPublicKey({ key: Buffer.concat([header, point]), format: 'der', type: 'spki' })
    return verify('sha256', typeof data === 'string' ? Buffer.from(data) : data, { key, dsaEncoding: encoding === 'der' ? 'der' : 'ieee-p1363' }, signature)
  } catch {
    return false
  }
}
