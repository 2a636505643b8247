import { p256 } from '@noble/curves/p256'
import { type Bytes, bytesToHex, concatBytes, FrameError, hexToBytes } from './encoding.js'

// P-256 keys and signatures in the encodings the wire uses (SEC1 points, DER signatures) and the
// ones WebCrypto takes (uncompressed points, IEEE P1363 signatures, PKCS#8 private keys). Point
// and signature encodings come from @noble/curves; signing and verifying are WebCrypto's.

/**
 * A P-256 public key in either SEC1 form as its 65-byte uncompressed encoding, decompressed by
 * @noble/curves (not every browser's WebCrypto imports compressed points). The point is checked
 * to lie on the curve.
 */
export function uncompressedPoint(bytes: Uint8Array): Bytes {
  if (bytes.length === 65 && bytes[0] === 4) return concatBytes(bytes)
  try {
    if (bytes.length !== 33) throw new Error('not compressed')
    return concatBytes(p256.ProjectivePoint.fromHex(bytes).toRawBytes(false))
  } catch {
    throw new FrameError('not a P-256 public key')
  }
}

/** The 33-byte compressed form of a 65-byte uncompressed point. */
export const compressedPoint = (uncompressed: Uint8Array): Bytes => concatBytes(p256.ProjectivePoint.fromHex(uncompressed).toRawBytes(true))

/** DER `SEQUENCE { INTEGER r, INTEGER s }` to the 64-byte r ‖ s WebCrypto verifies. */
export function derToP1363(der: Uint8Array): Bytes {
  try {
    return concatBytes(p256.Signature.fromDER(der).toCompactRawBytes())
  } catch {
    throw new FrameError('the signature is not DER')
  }
}

/** 64-byte r ‖ s from WebCrypto to the DER the stamps carry. */
export const p1363ToDer = (signature: Uint8Array): Bytes => concatBytes(p256.Signature.fromCompact(signature).toDERRawBytes())

// PKCS#8 PrivateKeyInfo for a P-256 key with the optional public key left out; WebCrypto derives it.
const PKCS8_PREFIX = hexToBytes('3041020100301306072a8648ce3d020106082a8648ce3d030107042730250201010420')

/**
 * A 32-byte P-256 private key as a non-extractable ECDSA signing key, with its public key
 * (compressed, hex) for the stamps.
 */
export async function importSigningKey(privateKey: Uint8Array): Promise<{ key: CryptoKey; publicKey: string }> {
  if (privateKey.length !== 32) throw new FrameError('the credential is not a P-256 private key')
  let jwk: JsonWebKey
  try {
    const extractable = await crypto.subtle.importKey('pkcs8', concatBytes(PKCS8_PREFIX, privateKey), { name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign'])
    jwk = await crypto.subtle.exportKey('jwk', extractable)
  } catch {
    throw new FrameError('the credential is not a P-256 private key')
  }
  const key = await crypto.subtle.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])
  const point = concatBytes(Uint8Array.of(4), base64urlToBytes(jwk.x ?? ''), base64urlToBytes(jwk.y ?? ''))
  return { key, publicKey: bytesToHex(compressedPoint(point)) }
}

/** An ECDSA P-256 verification key from SEC1 bytes. */
export function importVerifyingKey(publicKey: Uint8Array): Promise<CryptoKey> {
  return crypto.subtle.importKey('raw', uncompressedPoint(publicKey), { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify'])
}

/** Whether `signatureDer` signs SHA-256(`data`) under `publicKey`; high-S signatures verify too. */
export async function verifySignature(publicKey: Uint8Array, signatureDer: Uint8Array, data: Uint8Array<ArrayBuffer>): Promise<boolean> {
  const key = await importVerifyingKey(publicKey)
  return crypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, key, derToP1363(signatureDer), data)
}

function base64urlToBytes(text: string): Bytes {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'))
  return Uint8Array.from(binary, (char) => char.charCodeAt(0))
}
