import * as official from '@walletconnect/utils'
import { describe, expect, test } from 'vitest'
import { decodeEnvelope, decrypt, deriveSymKey, encrypt, generateKeyPair, generateSymKey, topicOf } from './crypto.js'
import { InvalidEnvelopeError, InvalidKeyError } from './errors.js'

// Interoperability is proven against @walletconnect/utils@2.21.8 (Apache-2.0, test-only).

describe('key agreement', () => {
  test('default: both sides derive the same key, equal to the official derivation', () => {
    const dapp = generateKeyPair()
    const wallet = official.generateKeyPair()
    const ours = deriveSymKey(dapp.privateKey, wallet.publicKey)
    expect(ours).toMatch(/^[0-9a-f]{64}$/)
    expect(official.deriveSymKey(wallet.privateKey, dapp.publicKey)).toBe(ours)
    expect(official.deriveSymKey(dapp.privateKey, wallet.publicKey)).toBe(ours)
  })

  test('default: topic = sha256(key), as the official hashKey', () => {
    const symKey = generateSymKey()
    expect(topicOf(symKey)).toBe(official.hashKey(symKey))
    expect(topicOf('0'.repeat(64))).toBe('66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925')
  })

  test('error: keys that are not 32 bytes of hex', () => {
    expect(() => topicOf('abc')).toThrow(InvalidKeyError)
    expect(() => deriveSymKey('zz'.repeat(32), generateKeyPair().publicKey)).toThrow(InvalidKeyError)
  })
})

describe('envelopes', () => {
  const message = JSON.stringify({ id: 1, jsonrpc: '2.0', method: 'wc_sessionPing', params: {} })

  test('default: type 0, ours opened by the official client and the reverse', () => {
    const symKey = generateSymKey()
    expect(official.decrypt({ symKey, encoded: encrypt({ symKey, message }) })).toBe(message)
    expect(decrypt({ symKey, envelope: official.encrypt({ symKey, message }) })).toBe(message)
  })

  test('default: type 1 carries the sender key, both ways', () => {
    const sender = generateKeyPair()
    const receiver = official.generateKeyPair()
    const symKey = deriveSymKey(sender.privateKey, receiver.publicKey)
    const ours = encrypt({ symKey, message, type: 1, senderPublicKey: sender.publicKey })
    expect(decodeEnvelope(ours)).toMatchObject({ type: 1, senderPublicKey: sender.publicKey })
    expect(official.decrypt({ symKey: official.deriveSymKey(receiver.privateKey, sender.publicKey), encoded: ours })).toBe(message)
    const theirs = official.encrypt({ type: 1, symKey, message, senderPublicKey: sender.publicKey })
    expect(decrypt({ symKey, envelope: theirs })).toBe(message)
  })

  test('behavior: a fixed iv gives the official bytes exactly', () => {
    const symKey = '11'.repeat(32)
    const iv = '22'.repeat(12)
    expect(encrypt({ symKey, message: 'hello', iv })).toBe(official.encrypt({ symKey, message: 'hello', iv }))
  })

  test('error: a wrong key fails authentication', () => {
    const envelope = encrypt({ symKey: generateSymKey(), message })
    expect(() => decrypt({ symKey: generateSymKey(), envelope })).toThrow(InvalidEnvelopeError)
  })

  test('error: one flipped bit anywhere after the type byte fails authentication', () => {
    const symKey = generateSymKey()
    const bytes = Buffer.from(encrypt({ symKey, message }), 'base64')
    for (const index of [1, 13, bytes.length - 1]) {
      const altered = Buffer.from(bytes)
      altered[index] = (altered[index] as number) ^ 1
      expect(() => decrypt({ symKey, envelope: altered.toString('base64') })).toThrow('A message could not be decrypted.')
    }
  })

  test('error: unknown type, truncated, not base64, type 1 without its key', () => {
    const symKey = generateSymKey()
    const bytes = Buffer.from(encrypt({ symKey, message }), 'base64')
    expect(() => decodeEnvelope(Buffer.concat([Buffer.of(7), bytes.subarray(1)]).toString('base64'))).toThrow('unknown envelope type 7')
    expect(() => decodeEnvelope(bytes.subarray(0, 20).toString('base64'))).toThrow('a type 0 envelope is too short')
    expect(() => decodeEnvelope('***')).toThrow(InvalidEnvelopeError)
    expect(() => encrypt({ symKey, message, type: 1 })).toThrow('a type 1 envelope needs the sender public key')
  })
})
