/*
 * The three text encodings the protocol uses: base64 (envelopes, ReCaps), base64url without
 * padding (the relay's JWT) and base58btc (did:key). Base64 rides on the platform's btoa/atob,
 * present in every browser and in Node; the strict shape checks come first because atob forgives
 * whitespace and missing padding, and a peer's malformed envelope must be refused, not guessed.
 * Written here rather than imported: a general encoding library cost the lazy WalletConnect chunk
 * about 5 KB minified for these few lines.
 */

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
const BASE64URL = /^[A-Za-z0-9_-]*$/
const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'

/** Standard base64 with padding. */
export function toBase64(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

/** Decodes standard padded base64; throws a TypeError on anything else. */
export function fromBase64(text: string): Uint8Array {
  if (!BASE64.test(text)) throw new TypeError('not padded base64')
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0))
}

/** base64url without padding (RFC 7515). */
export function toBase64Url(bytes: Uint8Array): string {
  return toBase64(bytes).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')
}

/** Decodes unpadded base64url; throws a TypeError on anything else. */
export function fromBase64Url(text: string): Uint8Array {
  if (!BASE64URL.test(text) || text.length % 4 === 1) throw new TypeError('not unpadded base64url')
  const padded = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4)
  return fromBase64(padded)
}

/** base58btc (the Bitcoin alphabet): each leading zero byte becomes a leading '1'. */
export function toBase58(bytes: Uint8Array): string {
  let value = 0n
  for (const byte of bytes) value = value * 256n + BigInt(byte)
  let text = ''
  while (value > 0n) {
    text = BASE58_ALPHABET[Number(value % 58n)] + text
    value /= 58n
  }
  for (const byte of bytes) {
    if (byte !== 0) break
    text = `1${text}`
  }
  return text
}

/** Decodes base58btc; throws a TypeError on a character outside the alphabet. */
export function fromBase58(text: string): Uint8Array {
  let value = 0n
  for (const char of text) {
    const digit = BASE58_ALPHABET.indexOf(char)
    if (digit < 0) throw new TypeError(`'${char}' is not a base58 character`)
    value = value * 58n + BigInt(digit)
  }
  const body: number[] = []
  while (value > 0n) {
    body.unshift(Number(value % 256n))
    value /= 256n
  }
  let zeros = 0
  while (text[zeros] === '1') zeros++
  return Uint8Array.from([...new Array<number>(zeros).fill(0), ...body])
}
