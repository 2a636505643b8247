import { randomBytes } from '@noble/hashes/utils.js'
import { base58, base64, base64urlnopad } from '@scure/base'
import { describe, expect, test } from 'vitest'
import { fromBase58, fromBase64, fromBase64Url, toBase58, toBase64, toBase64Url } from './encoding.js'

// @scure/base is the reference: the protocol's encodings must match it byte for byte.
const samples = [
  new Uint8Array(0),
  Uint8Array.of(0),
  Uint8Array.of(0, 0, 1),
  Uint8Array.of(255, 254, 253),
  ...Array.from({ length: 200 }, (_, index) => {
    const bytes = randomBytes(index % 70)
    if (index % 5 === 0 && bytes.length > 2) bytes.fill(0, 0, 2)
    return bytes
  }),
]

describe('default: each encoding agrees with @scure/base both ways', () => {
  test.each([
    ['base64', toBase64, fromBase64, base64],
    ['base64url without padding', toBase64Url, fromBase64Url, base64urlnopad],
    ['base58btc', toBase58, fromBase58, base58],
  ] as const)('%s', (_, encode, decode, reference) => {
    for (const bytes of samples) {
      expect(encode(bytes)).toBe(reference.encode(bytes))
      expect(decode(reference.encode(bytes))).toEqual(bytes)
    }
  })
})

describe('error: malformed text is refused, not guessed', () => {
  test.each(['YQ', 'YQ=', 'Y Q==', 'YQ==YQ==', '****'])('base64 %j', (text) => {
    expect(() => fromBase64(text)).toThrow(TypeError)
    expect(() => base64.decode(text)).toThrow()
  })
  test.each(['a+b', 'a=', 'abcde'])('base64url %j', (text) => {
    expect(() => fromBase64Url(text)).toThrow(TypeError)
    expect(() => base64urlnopad.decode(text)).toThrow()
  })
  test.each(['0', 'O', 'I', 'l', 'abc!'])('base58 %j', (text) => {
    expect(() => fromBase58(text)).toThrow(TypeError)
    expect(() => base58.decode(text)).toThrow()
  })
})
