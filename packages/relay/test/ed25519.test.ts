import { randomBytes } from 'node:crypto'
import { publicKeyOf, RelayAuthError, signRelayJwt, verifyRelayJwt } from '@latchkey/walletconnect'
import { ed25519 } from '@noble/curves/ed25519.js'
import { expect, test } from 'vitest'
import { verifyEd25519 } from '../src/ed25519.js'

// The relay checks connection tokens with node:crypto, the browser package with @noble/curves:
// both must take the same tokens and refuse the same forgeries.

const message = new TextEncoder().encode('header.payload')

test('default: agrees with @noble/curves on signatures by many keys', () => {
  for (let n = 0; n < 50; n++) {
    const secret = randomBytes(32)
    const publicKey = ed25519.getPublicKey(secret)
    const signature = ed25519.sign(message, secret)
    expect(verifyEd25519(signature, message, publicKey)).toBe(true)
    const flipped = signature.slice()
    flipped[n % 64]! ^= 1
    expect([verifyEd25519(flipped, message, publicKey), ed25519.verify(flipped, message, publicKey)]).toEqual([false, false])
  }
})

test('error: another message, another key, wrong lengths and a key that is no curve point are refused', () => {
  const secret = randomBytes(32)
  const publicKey = ed25519.getPublicKey(secret)
  const signature = ed25519.sign(message, secret)
  expect(verifyEd25519(signature, new TextEncoder().encode('header.payloae'), publicKey)).toBe(false)
  expect(verifyEd25519(signature, message, ed25519.getPublicKey(randomBytes(32)))).toBe(false)
  expect(verifyEd25519(signature.subarray(0, 63), message, publicKey)).toBe(false)
  expect(verifyEd25519(signature, message, publicKey.subarray(0, 31))).toBe(false)
  // y = 2 has no x on the curve: decoding fails, and the check says no rather than throwing.
  const notAPoint = new Uint8Array(32)
  notAPoint[0] = 2
  expect(() => ed25519.ExtendedPoint.fromHex(notAPoint)).toThrow()
  expect(verifyEd25519(signature, message, notAPoint)).toBe(false)
})

test('behavior: relay tokens verify through it as through the default, and a forged one is refused the same way', () => {
  const now = Math.floor(Date.now() / 1000)
  const token = signRelayJwt({ seed: randomBytes(32).toString('hex'), aud: 'ws://relay.test' })
  expect(verifyRelayJwt(token, { now, verifySignature: verifyEd25519 })).toEqual(verifyRelayJwt(token, { now }))
  // Another client's signature under this token's issuer.
  const other = signRelayJwt({ seed: randomBytes(32).toString('hex'), aud: 'ws://relay.test' })
  const forged = `${token.split('.').slice(0, 2).join('.')}.${other.split('.')[2]}`
  expect(publicKeyOf(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).iss)).toHaveLength(32)
  const reasons = [verifyEd25519, undefined].map((verifySignature) => {
    try {
      verifyRelayJwt(forged, { now, verifySignature })
      return 'accepted'
    } catch (error) {
      return error instanceof RelayAuthError ? error.reason : String(error)
    }
  })
  expect(reasons).toEqual(['the signature does not verify', 'the signature does not verify'])
})
