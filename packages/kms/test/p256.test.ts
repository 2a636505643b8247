import { createHash } from 'node:crypto'
import { p256 } from '@noble/curves/p256'
import { verifySessionJwtSignature } from '@turnkey/crypto'
import { describe, expect, test } from 'vitest'
import { sessionJwt } from '../src/credentials.js'
import { newP256Key, p256PublicKey, p256Sign, p256Verify, p256VerifyOwn } from '../src/p256.js'

// The service's P-256 by OpenSSL (src/p256.ts) against @noble/curves, which signed before and which
// the frames and @turnkey/crypto read with: the same keys, signatures each side accepts.

const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest()
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')

describe('P-256 by OpenSSL', () => {
  const privateKey = hex(p256.utils.randomPrivateKey())

  test('default: the public key is noble’s; signatures verify both ways, DER and r ‖ s', () => {
    expect(p256PublicKey(privateKey).toString('hex')).toBe(hex(p256.getPublicKey(privateKey, false)))
    expect(p256PublicKey(Buffer.from(privateKey, 'hex')).toString('hex')).toBe(hex(p256.getPublicKey(privateKey, false)))
    const message = 'the signed words'
    const der = p256Sign(privateKey, message, 'der')
    const raw = p256Sign(privateKey, message, 'p1363')
    expect(raw.length).toBe(64)
    expect(p256.verify(der, sha256(message), p256.getPublicKey(privateKey), { lowS: false, format: 'der' })).toBe(true)
    expect(p256.verify(raw, sha256(message), p256.getPublicKey(privateKey), { lowS: false })).toBe(true)
    const nobles = p256.sign(sha256(message), privateKey)
    expect(p256Verify(hex(p256.getPublicKey(privateKey, true)), message, nobles.toDERRawBytes(), 'der')).toBe(true)
    expect(p256Verify(p256.getPublicKey(privateKey, false), message, nobles.toCompactRawBytes(), 'p1363')).toBe(true)
    expect([p256VerifyOwn(privateKey, message, raw, 'p1363'), p256VerifyOwn(privateKey, message, der, 'der')]).toEqual([true, true])
  })

  test('default: a new key pair is a valid scalar and its point, 32 and 65 bytes', () => {
    for (let i = 0; i < 20; i++) {
      const key = newP256Key()
      expect([key.privateKey.length, key.publicKey.length]).toEqual([32, 65])
      expect(hex(key.publicKey)).toBe(hex(p256.getPublicKey(key.privateKey, false)))
    }
  })

  test('behavior: a session JWT verifies with @turnkey/crypto against the signer key', async () => {
    const token = sessionJwt({ exp: 1, public_key: '02', session_type: 'SESSION_TYPE_READ_WRITE', user_id: 'u', organization_id: 'o' }, privateKey)
    await expect(verifySessionJwtSignature(token, hex(p256.getPublicKey(privateKey, false)))).resolves.toBe(true)
  })

  test('error: another key, another message, a changed byte or a malformed key or signature do not verify', () => {
    const message = 'the signed words'
    const raw = p256Sign(privateKey, message, 'p1363')
    const publicKey = p256PublicKey(privateKey)
    const other = hex(p256.getPublicKey(p256.utils.randomPrivateKey(), true))
    const changed = Buffer.from(raw)
    changed[10]! ^= 1
    expect([
      p256Verify(publicKey, message, raw, 'p1363'),
      p256Verify(other, message, raw, 'p1363'),
      p256Verify(publicKey, 'other words', raw, 'p1363'),
      p256Verify(publicKey, message, changed, 'p1363'),
      p256Verify(publicKey, message, raw.subarray(1), 'p1363'),
      p256Verify(publicKey, message, raw, 'der'),
      p256Verify('04', message, raw, 'p1363'),
      p256Verify(`05${hex(publicKey).slice(2)}`, message, raw, 'p1363'),
      p256Verify(`02${'ff'.repeat(32)}`, message, raw, 'p1363'),
      p256Verify('not hex', message, raw, 'p1363'),
    ]).toEqual([true, false, false, false, false, false, false, false, false, false])
    const otherKey = hex(p256.utils.randomPrivateKey())
    expect([
      p256VerifyOwn(privateKey, message, raw, 'p1363'),
      p256VerifyOwn(otherKey, message, raw, 'p1363'),
      p256VerifyOwn(privateKey, 'other words', raw, 'p1363'),
      p256VerifyOwn(privateKey, message, changed, 'p1363'),
      p256VerifyOwn(privateKey, message, raw.subarray(1), 'p1363'),
      p256VerifyOwn(privateKey, message, raw, 'der'),
    ]).toEqual([true, false, false, false, false, false])
    expect(() => p256PublicKey('00'.repeat(32))).toThrow('Private key is not valid for specified curve.')
  })
})
