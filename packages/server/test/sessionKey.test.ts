import { describe, expect, test } from 'vitest'
import { LIMITS } from '../src/index.js'
import { answer, generateApiKeyPair, newEmail, useBackend } from './backend.js'

// A signed-in browser whose session key expired registers a new one through the backend
// (SPEC §4: "a new session is created without restoring"); the new key then stamps on its own.

const { t, post, signedInByEmail, signedUpWithPasskey, withKey } = useBackend()
const UNKNOWN_KEY = 'Turnkey error 16: could not find public key in organization or its parent organization'
const notSignedIn = [401, { error: { code: 'signed_out', message: 'Not signed in' } }]

describe('POST /auth/session-key', () => {
  test('default: the new key stamps for the session’s user until it expires, then the kms answers expired api key', async () => {
    const account = await signedUpWithPasskey({ email: newEmail() })
    const key = generateApiKeyPair()
    const response = await post('/auth/session-key', { publicKey: key.apiPublicKey }, { cookie: account.cookie })
    const at = t.clock
    const body = (await response.json()) as { apiKeyId: string; expiresAt: string }
    expect([response.status, body]).toEqual([200, { apiKeyId: expect.any(String), expiresAt: expect.any(String) }])
    expect(Date.parse(body.expiresAt) - at).toBe(900_000)

    const browser = withKey(key)
    expect(await browser.getWhoami({ organizationId: account.organizationId })).toMatchObject({ userId: account.userId })
    const { apiKeys } = await browser.getApiKeys({ organizationId: account.organizationId, userId: account.userId })
    const registered = apiKeys.find((apiKey) => apiKey.apiKeyId === body.apiKeyId)!
    expect([registered.apiKeyName, registered.credential.publicKey, registered.expirationSeconds]).toEqual([
      `session ${new Date(at).toISOString()}`,
      key.apiPublicKey,
      '900',
    ])
    t.clock += 900_000
    try {
      await expect(browser.getWhoami({ organizationId: account.organizationId })).rejects.toThrow(
        `Turnkey error 16: rpc error: code = Unauthenticated desc = expired api key publicKey: ${key.apiPublicKey}`,
      )
    } finally {
      t.clock -= 900_000
    }
  })

  test('behavior: an email session gets a key too, with the lifetime asked for', async () => {
    const email = newEmail()
    const account = await signedInByEmail(email)
    const key = generateApiKeyPair()
    const response = await post('/auth/session-key', { publicKey: key.apiPublicKey, expirationSeconds: 3600 }, { cookie: account.cookie })
    const at = t.clock
    const { expiresAt } = (await response.json()) as { expiresAt: string }
    expect([response.status, Date.parse(expiresAt) - at]).toEqual([200, 3_600_000])
    t.clock += 3_599_000
    try {
      expect(await withKey(key).getWhoami({ organizationId: account.organizationId })).toMatchObject({ userId: account.userId, username: email })
    } finally {
      t.clock -= 3_599_000
    }
  })

  test('error: without a session cookie, or with an ended one: 401 and nothing registered', async () => {
    const key = generateApiKeyPair()
    expect(await answer(await post('/auth/session-key', { publicKey: key.apiPublicKey }))).toEqual(notSignedIn)
    expect(await answer(await post('/auth/session-key', { publicKey: key.apiPublicKey }, { cookie: '__Host-latchkey_session=made-up' }))).toEqual(notSignedIn)
    const account = await signedUpWithPasskey()
    expect((await post('/auth/signout', {}, { cookie: account.cookie })).status).toBe(204)
    expect(await answer(await post('/auth/session-key', { publicKey: key.apiPublicKey }, { cookie: account.cookie }))).toEqual(notSignedIn)
    t.clock += 7 * 86_400_000
    try {
      const later = await signedUpWithPasskey()
      t.clock += 7 * 86_400_000
      expect(await answer(await post('/auth/session-key', { publicKey: key.apiPublicKey }, { cookie: later.cookie }))).toEqual(notSignedIn)
    } finally {
      t.clock -= 14 * 86_400_000
    }
    await expect(withKey(key).getWhoami({ organizationId: t.parentOrganizationId })).rejects.toThrow(UNKNOWN_KEY)
  })

  test('error: bad public keys and lifetimes are refused; nothing registered', async () => {
    const account = await signedUpWithPasskey()
    const key = generateApiKeyPair()
    const uncompressed = `04${'11'.repeat(64)}`
    const cases: [object, string][] = [
      [{}, 'publicKey: Invalid input: expected string, received undefined'],
      [{ publicKey: uncompressed }, 'publicKey: must be a compressed P-256 public key in lowercase hex'],
      [{ publicKey: key.apiPublicKey.slice(0, -2) }, 'publicKey: must be a compressed P-256 public key in lowercase hex'],
      [{ publicKey: `0x${key.apiPublicKey}` }, 'publicKey: must be a compressed P-256 public key in lowercase hex'],
      [{ publicKey: `02${'ff'.repeat(32)}` }, 'publicKey: is not a point on P-256'],
      [{ publicKey: key.apiPublicKey, expirationSeconds: 0 }, 'expirationSeconds: must be at least 60 seconds'],
      [{ publicKey: key.apiPublicKey, expirationSeconds: 86_401 }, 'expirationSeconds: must be at most 86400 seconds'],
      [{ publicKey: key.apiPublicKey, expirationSeconds: 90.5 }, 'expirationSeconds: must be a whole number of seconds'],
      [{ publicKey: key.apiPublicKey, expirationSeconds: '900' }, 'expirationSeconds: Invalid input: expected number, received string'],
    ]
    for (const [body, message] of cases)
      expect(await answer(await post('/auth/session-key', body, { cookie: account.cookie }))).toEqual([400, { error: { code: 'invalid_request', message } }])
    await expect(withKey(key).getWhoami({ organizationId: account.organizationId })).rejects.toThrow(UNKNOWN_KEY)
  })

  test('error: a key that is already registered is refused by the kms', async () => {
    const account = await signedUpWithPasskey()
    expect(await answer(await post('/auth/session-key', { publicKey: account.sessionKey.apiPublicKey }, { cookie: account.cookie }))).toEqual([
      400,
      { error: { code: 'kms_refused', message: `api key ${account.sessionKey.apiPublicKey} is already registered` } },
    ])
  })

  test(`error: more than ${LIMITS.perSession} keys per session in ten minutes`, async () => {
    const account = await signedUpWithPasskey()
    for (let i = 0; i < LIMITS.perSession; i++)
      expect((await post('/auth/session-key', { publicKey: generateApiKeyPair().apiPublicKey }, { cookie: account.cookie })).status).toBe(200)
    const key = generateApiKeyPair()
    const limited = await post('/auth/session-key', { publicKey: key.apiPublicKey }, { cookie: account.cookie })
    expect(await answer(limited)).toEqual([
      429,
      { error: { code: 'rate_limited', message: 'Too many session keys for this session; try again in 10 minutes' } },
    ])
    expect(limited.headers.get('retry-after')).toBe('600')
    await expect(withKey(key).getWhoami({ organizationId: account.organizationId })).rejects.toThrow(UNKNOWN_KEY)
    // Another session of the same person is counted apart.
    const other = await signedUpWithPasskey()
    expect((await post('/auth/session-key', { publicKey: key.apiPublicKey }, { cookie: other.cookie })).status).toBe(200)
  })
})
