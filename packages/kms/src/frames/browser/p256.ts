import { type Bytes, bytesToHex, concatBytes, FrameError, hexToBytes } from './encoding.js'

// P-256 keys and signatures in the encodings the wire uses (SEC1 points, DER signatures) and the
// ones WebCrypto takes (uncompressed points, IEEE P1363 signatures, PKCS#8 private keys).

const P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn
const B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn

function modPow(base: bigint, exponent: bigint, modulus: bigint): bigint {
  let result = 1n
  for (base %= modulus; exponent > 0n; exponent >>= 1n) {
    if (exponent & 1n) result = (result * base) % modulus
    base = (base * base) % modulus
  }
  return result
}

const toBigInt = (bytes: Uint8Array) => BigInt(`0x${bytesToHex(bytes) || '0'}`)
const toBytes32 = (value: bigint) => hexToBytes(value.toString(16).padStart(64, '0'))

/**
 * A P-256 public key in either SEC1 form as its 65-byte uncompressed encoding. Compressed points
 * are decompressed here (y = sqrt(x³ − 3x + b), p ≡ 3 mod 4) because not every browser's WebCrypto
 * imports them; only public values pass through this arithmetic.
 */
export function uncompressedPoint(bytes: Uint8Array): Bytes {
  if (bytes.length === 65 && bytes[0] === 4) return concatBytes(bytes)
  if (bytes.length !== 33 || (bytes[0] !== 2 && bytes[0] !== 3)) throw new FrameError('not a P-256 public key')
  const x = toBigInt(bytes.subarray(1))
  if (x >= P) throw new FrameError('not a P-256 public key')
  const right = (((x * x * x - 3n * x + B) % P) + P) % P
  let y = modPow(right, (P + 1n) / 4n, P)
  if ((y * y) % P !== right) throw new FrameError('not a P-256 public key')
  if ((y & 1n) !== BigInt(bytes[0] & 1)) y = P - y
  return concatBytes(Uint8Array.of(4), toBytes32(x), toBytes32(y))
}

/** The 33-byte compressed form of a 65-byte uncompressed point. */
export const compressedPoint = (uncompressed: Uint8Array): Bytes => concatBytes(Uint8Array.of(2 + ((uncompressed[64] ?? 0) & 1)), uncompressed.subarray(1, 33))

/** DER `SEQUENCE { INTEGER r, INTEGER s }` to the 64-byte r ‖ s WebCrypto verifies. */
export function derToP1363(der: Uint8Array): Bytes {
  const fail = () => new FrameError('the signature is not DER')
  if (der[0] !== 0x30 || der[1] !== der.length - 2 || der.length > 72) throw fail()
  const integers: Uint8Array[] = []
  for (let offset = 2; offset < der.length; ) {
    const length = der[offset + 1] ?? 0
    if (der[offset] !== 0x02 || length === 0 || offset + 2 + length > der.length) throw fail()
    integers.push(der.subarray(offset + 2, offset + 2 + length))
    offset += 2 + length
  }
  if (integers.length !== 2) throw fail()
  return concatBytes(
    ...integers.map((integer) => {
      const value = toBigInt(integer)
      if (value >> 256n) throw fail()
      return toBytes32(value)
    }),
  )
}

/** 64-byte r ‖ s from WebCrypto to the DER the stamps carry. */
export function p1363ToDer(signature: Uint8Array): Bytes {
  const integer = (half: Uint8Array) => {
    let start = 0
    while (start < half.length - 1 && half[start] === 0) start++
    const trimmed = half.subarray(start)
    // A set high bit would read as negative: DER prepends a zero byte.
    const body = (trimmed[0] ?? 0) & 0x80 ? concatBytes(Uint8Array.of(0), trimmed) : concatBytes(trimmed)
    return concatBytes(Uint8Array.of(0x02, body.length), body)
  }
  const r = integer(signature.subarray(0, 32))
  const s = integer(signature.subarray(32, 64))
  return concatBytes(Uint8Array.of(0x30, r.length + s.length), r, s)
}

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
