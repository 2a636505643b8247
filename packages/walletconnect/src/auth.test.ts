import { ed25519 } from '@noble/curves/ed25519.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import * as relayAuth from '@walletconnect/relay-auth'
import { describe, expect, test } from 'vitest'
import { clientIdOf, RelayAuthError, signRelayJwt, verifyRelayJwt } from './auth.js'

// Interoperability is proven against @walletconnect/relay-auth@1.1.0 (MIT, test-only), which the
// official clients use to sign their relay tokens.

const seed = '07'.repeat(32)
const now = 1_800_000_000

function officialToken(options: { iat?: number } = {}) {
  const keyPair = relayAuth.generateKeyPair(hexToBytes(seed))
  return relayAuth.signJWT('ab'.repeat(32), 'ws://localhost:5555', 86_400, keyPair, options.iat ?? now)
}

describe('relay auth JWT', () => {
  test('default: verifies a token signed by the official client library', async () => {
    const claims = verifyRelayJwt(await officialToken(), { now })
    expect(claims).toEqual({
      iss: clientIdOf(ed25519.getPublicKey(hexToBytes(seed))),
      sub: 'ab'.repeat(32),
      aud: 'ws://localhost:5555',
      iat: now,
      exp: now + 86_400,
    })
    expect(claims.iss.startsWith('did:key:z6Mk')).toBe(true)
  })

  test('default: our token is byte-identical to the official one and verifies there', async () => {
    const ours = signRelayJwt({ seed, aud: 'ws://localhost:5555', sub: 'ab'.repeat(32), iat: now })
    expect(ours).toBe(await officialToken())
    expect(await relayAuth.verifyJWT(signRelayJwt({ seed, aud: 'ws://x', iat: Math.floor(Date.now() / 1000) }))).toBe(true)
  })

  test('error: a tampered payload or signature', async () => {
    const [header, payload, signature] = (await officialToken()).split('.') as [string, string, string]
    const otherPayload = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), aud: 'ws://evil' })).toString('base64url')
    expect(() => verifyRelayJwt(`${header}.${otherPayload}.${signature}`, { now })).toThrow('the signature does not verify')
    const flipped = Buffer.from(signature, 'base64url')
    flipped[0] = (flipped[0] as number) ^ 1
    expect(() => verifyRelayJwt(`${header}.${payload}.${flipped.toString('base64url')}`, { now })).toThrow('the signature does not verify')
  })

  test('error: expired, issued in the future, beyond the leeway only', async () => {
    const token = await officialToken()
    expect(verifyRelayJwt(token, { now: now + 86_400 + 120 }).iat).toBe(now)
    expect(() => verifyRelayJwt(token, { now: now + 86_400 + 121 })).toThrow('the token has expired')
    expect(verifyRelayJwt(token, { now: now - 120 }).iat).toBe(now)
    expect(() => verifyRelayJwt(token, { now: now - 121 })).toThrow('the token is issued in the future')
  })

  test('error: refuses a token that lives longer than a day (a 100-year token)', () => {
    expect(verifyRelayJwt(signRelayJwt({ seed, aud: 'a', iat: now, ttl: 86_400 }), { now }).exp).toBe(now + 86_400)
    const century = signRelayJwt({ seed, aud: 'a', iat: now, ttl: 100 * 365 * 86_400 })
    expect(() => verifyRelayJwt(century, { now })).toThrow(new RelayAuthError('the token lives longer than 86400 s'))
    expect(() => verifyRelayJwt(signRelayJwt({ seed, aud: 'a', iat: now, ttl: 86_401 }), { now })).toThrow('the token lives longer than 86400 s')
    expect(verifyRelayJwt(century, { now, maxLifetime: 100 * 365 * 86_400 }).iat).toBe(now)
  })

  test('error: malformed tokens each get a reason', () => {
    const good = signRelayJwt({ seed, aud: 'a', iat: now })
    const [header, payload, signature] = good.split('.') as [string, string, string]
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
    const cases: [string, string][] = [
      ['not-a-jwt', 'the token is not a JWT'],
      [`${encode({ alg: 'HS256', typ: 'JWT' })}.${payload}.${signature}`, 'the token header is not EdDSA/JWT'],
      [`${header}.${encode({ iss: 'did:key:zabc', sub: 's', aud: 'a', iat: now, exp: now + 1 })}.${signature}`, 'iss is not an ed25519 did:key'],
      [`${header}.${encode({ iss: 'x', aud: 'a' })}.${signature}`, 'the token lacks iss, sub or aud'],
      [`${header}.${encode({ iss: 'x', sub: 's', aud: 'a' })}.${signature}`, 'the token lacks iat or exp'],
    ]
    for (const [token, reason] of cases) {
      const error = (() => {
        try {
          verifyRelayJwt(token, { now })
          return undefined
        } catch (e) {
          return e
        }
      })()
      expect(error).toBeInstanceOf(RelayAuthError)
      expect((error as RelayAuthError).reason).toBe(reason)
    }
  })

  test('error: an audience outside the accepted set', () => {
    const token = signRelayJwt({ seed, aud: 'ws://elsewhere', iat: now })
    expect(() => verifyRelayJwt(token, { now, audiences: ['ws://localhost:5555'] })).toThrow('the token is for another relay (ws://elsewhere)')
  })

  test('behavior: the client id is stable for a seed', () => {
    const a = signRelayJwt({ seed, aud: 'x', iat: now })
    const b = signRelayJwt({ seed, aud: 'y', iat: now + 5 })
    const iss = (token: string) => JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()).iss
    expect(iss(a)).toBe(iss(b))
    expect(bytesToHex(ed25519.getPublicKey(hexToBytes(seed)))).toHaveLength(64)
  })
})
