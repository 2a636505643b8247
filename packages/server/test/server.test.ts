import { getFreePort } from '@latchkey/devnet'
import { generateApiKeyPair as apiKeyPair, createKms, type Kms } from '@latchkey/kms'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { generateP256KeyPair } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { freshDatabaseUrl } from '../../service/test/testDatabase.js'
import { createServerApp, LIMITS, openStore, type Store } from '../src/index.js'
import { sealCode } from './consentFrameCode.js'

// The app backend against a real kms on loopback: codes are read from the kms's dev inbox, and
// the credential bundle the browser receives is opened with @turnkey/crypto and used.

const origin = 'http://localhost:5173'
let kms: Kms
let clock = Date.now()
let store: Store
let app: ReturnType<typeof createServerApp>
const backendKey = apiKeyPair()
let parentOrganizationId: string

beforeAll(async () => {
  kms = createKms({ port: await getFreePort(), now: () => clock })
  await kms.start()
  parentOrganizationId = (await kms.createParentOrganization({ name: 'Demo', userName: 'backend', publicKey: backendKey.apiPublicKey })).organizationId
})
afterAll(() => kms.stop())
/** The backend over this test's store; `options` replace the defaults. */
const newApp = (options: Partial<Parameters<typeof createServerApp>[0]> = {}) =>
  createServerApp({
    store,
    kmsUrl: kms.url,
    organizationId: parentOrganizationId,
    ...backendKey,
    appName: 'Latchkey Demo',
    allowedOrigins: [origin],
    // Each reading a millisecond on, as real time would be: identical bodies are one kms activity.
    now: () => ++clock,
    ipOf: (request) => request.headers.get('x-test-ip') ?? '127.0.0.1',
    ...options,
  })
beforeEach(async () => {
  store = await openStore(await freshDatabaseUrl({ memory: true }))
  app = newApp()
})
afterEach(() => store.close())

let emails = 0
const newEmail = () => `person${++emails}.${Date.now()}@example.test`
const post = (path: string, json: unknown, headers: Record<string, string> = {}) =>
  app.request(path, { method: 'POST', body: JSON.stringify(json), headers: { 'content-type': 'application/json', origin, ...headers } })

async function codeFor(email: string) {
  const inbox = (await (await fetch(`${kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
  return /sign-in code is (\d{6})\./.exec(inbox.messages.find((message) => message.to === email.toLowerCase())!.text)![1]!
}

/** A code sent to `email`: its otpId and target bundle, and the code from the inbox. */
async function startCode(email: string) {
  const start = await post('/auth/email/start', { email })
  expect(start.status).toBe(200)
  const sent = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
  return { ...sent, code: await codeFor(email) }
}

/** The verify body the consent frame's answer makes, for `code` (default the right one) and the frame's `key`. */
async function frameAnswer(sent: { otpId: string; otpEncryptionTargetBundle: string; code: string }, key = apiKeyPair(), code = sent.code) {
  return {
    otpId: sent.otpId,
    ...(await sealCode({ otpEncryptionTargetBundle: sent.otpEncryptionTargetBundle, code, key, signerPublicKey: kms.signerPublicKey })),
  }
}

async function signIn(email: string) {
  const sent = await startCode(email)
  const key = apiKeyPair()
  const verify = await post('/auth/email/verify', await frameAnswer(sent, key))
  return { verify, key, otpId: sent.otpId }
}

describe('email sign-in', () => {
  test('default: first sign-in creates the wallet; the frame’s key works for the user; the session cookie is set', async () => {
    const email = newEmail()
    const { verify, key } = await signIn(email)
    expect(verify.status).toBe(200)
    expect(verify.headers.get('access-control-allow-origin')).toBe(origin)
    expect(verify.headers.get('access-control-allow-credentials')).toBe('true')
    const result = (await verify.json()) as Record<string, string>
    expect(Object.keys(result).sort()).toEqual(['address', 'organizationId', 'sessionExpiresAt', 'userId'])
    expect(result['address']).toMatch(/^0x[0-9a-fA-F]{40}$/)

    const cookie = verify.headers.get('set-cookie')!
    expect(cookie).toMatch(/^__Host-latchkey_session=[\w-]{43}; Max-Age=604800; Path=\/; HttpOnly; Secure; SameSite=Strict$/)
    const session = await app.request('/auth/session', { headers: { cookie: cookie.split(';')[0]! } })
    expect(await session.json()).toEqual({
      email,
      address: result['address'],
      organizationId: result['organizationId'],
      userId: result['userId'],
      kind: 'email',
      expiresAt: expect.any(String),
    })

    const user = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(key))
    expect(await user.getWhoami({ organizationId: result['organizationId']! })).toMatchObject({ userId: result['userId'], username: email })
    const { wallets } = await user.getWallets({ organizationId: result['organizationId']! })
    expect(wallets.map((wallet) => wallet.walletName)).toEqual(['Turnkey HD'])
  })

  test('default: /auth/email/start answers the target bundle, signed by the kms’s signer key', async () => {
    const start = await post('/auth/email/start', { email: newEmail() })
    const answer = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
    expect(Object.keys(answer).sort()).toEqual(['otpEncryptionTargetBundle', 'otpId'])
    expect(JSON.parse(answer.otpEncryptionTargetBundle)).toMatchObject({ version: 'v1.0.0', enclaveQuorumPublic: kms.signerPublicKey })
  })

  test('behavior: the frame’s key works 900 seconds, or the sessionSeconds asked for; nothing else is registered', async () => {
    for (const [sessionSeconds, lifetime] of [
      [undefined, 900],
      [120, 120],
    ] as const) {
      const email = newEmail()
      const key = apiKeyPair()
      const verify = await post('/auth/email/verify', { ...(await frameAnswer(await startCode(email), key)), ...(sessionSeconds ? { sessionSeconds } : {}) })
      const result = (await verify.json()) as { organizationId: string }
      const user = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(key))
      const { apiKeys } = await user.getApiKeys({ organizationId: result.organizationId })
      expect(apiKeys.map((each) => [each.credential.publicKey, each.expirationSeconds])).toEqual([[key.apiPublicKey, String(lifetime)]])
      clock += lifetime * 1000
      try {
        await expect(user.getWhoami({ organizationId: result.organizationId })).rejects.toThrow(`expired api key publicKey: ${key.apiPublicKey}`)
      } finally {
        clock -= lifetime * 1000
      }
    }
    const bad = await post('/auth/email/verify', { ...(await frameAnswer(await startCode(newEmail()))), sessionSeconds: 30 })
    expect(await bad.json()).toEqual({ error: { code: 'invalid_request', message: 'sessionSeconds: must be at least 60 seconds' } })
  })

  test('error: a plaintext code is refused with 400 plaintext_code; it never reaches the kms', async () => {
    const email = newEmail()
    const sent = await startCode(email)
    const message = 'The code is typed in the consent frame: send its encryptedOtpBundle and clientSignature, never the code'
    for (const body of [
      { otpId: sent.otpId, code: sent.code, sessionPublicKey: apiKeyPair().apiPublicKey },
      { otpId: sent.otpId, code: sent.code, targetPublicKey: generateP256KeyPair().publicKeyUncompressed },
      { ...(await frameAnswer(sent)), code: sent.code },
    ]) {
      const refused = await post('/auth/email/verify', body)
      expect([refused.status, await refused.json()]).toEqual([400, { error: { code: 'plaintext_code', message } }])
      expect(refused.headers.get('set-cookie')).toBeNull()
    }
    // No try was spent: the frame's answer still signs in.
    expect((await post('/auth/email/verify', await frameAnswer(sent))).status).toBe(200)
  })

  test('error: a login signed by another key than the one sealed with the code is refused; the code is spent', async () => {
    const sent = await startCode(newEmail())
    const answer = await frameAnswer(sent)
    const other = await frameAnswer(sent)
    const refused = await post('/auth/email/verify', { ...answer, clientSignature: other.clientSignature })
    expect([refused.status, await refused.json()]).toEqual([
      403,
      { error: { code: 'invalid_code', message: 'clientSignature.publicKey is not the public key bound in the verification token' } },
    ])
    expect(refused.headers.get('set-cookie')).toBeNull()
    expect((await post('/auth/email/verify', answer)).status).toBe(400)
  })

  test('behavior: a second sign-in reuses the account; sign-out ends the session', async () => {
    const email = newEmail()
    const first = (await (await signIn(email)).verify.json()) as { address: string }
    const second = await signIn(email.toUpperCase())
    const again = (await second.verify.json()) as { address: string }
    expect(again.address).toBe(first.address)
    const cookie = second.verify.headers.get('set-cookie')!.split(';')[0]!
    const out = await app.request('/auth/signout', { method: 'POST', headers: { cookie, origin, 'content-type': 'application/json' } })
    expect(out.status).toBe(204)
    expect(out.headers.get('set-cookie')).toMatch(/^__Host-latchkey_session=; Max-Age=0; Path=\//)
    // Signed out is an answer (200, null), not an error; the stale cookie is cleared.
    const session = await app.request('/auth/session', { headers: { cookie } })
    expect([session.status, await session.json()]).toEqual([200, null])
    expect(session.headers.get('set-cookie')).toMatch(/^__Host-latchkey_session=; Max-Age=0; Path=\//)
  })

  test('default: signed out, GET /auth/session answers 200 null; an ended session the same, its cookie cleared', async () => {
    const none = await app.request('/auth/session', { headers: { origin } })
    expect([none.status, await none.json()]).toEqual([200, null])
    expect(none.headers.get('content-type')).toBe('application/json')
    expect(none.headers.get('set-cookie')).toBeNull()
    expect(none.headers.get('access-control-allow-credentials')).toBe('true')

    const unknown = await app.request('/auth/session', { headers: { origin, cookie: '__Host-latchkey_session=not-a-session' } })
    expect([unknown.status, await unknown.json()]).toEqual([200, null])
    expect(unknown.headers.get('set-cookie')).toMatch(/^__Host-latchkey_session=; Max-Age=0; Path=\//)

    const { verify } = await signIn(newEmail())
    const cookie = verify.headers.get('set-cookie')!.split(';')[0]!
    expect((await app.request('/auth/session', { headers: { cookie } })).status).toBe(200)
    clock += 7 * 86_400_000
    const expired = await app.request('/auth/session', { headers: { cookie } })
    expect([expired.status, await expired.json()]).toEqual([200, null])
    expect(expired.headers.get('set-cookie')).toMatch(/^__Host-latchkey_session=; Max-Age=0; Path=\//)
  })

  test('error: a wrong code says how many tries are left and sets no cookie; the code cannot be reused', async () => {
    const sent = await startCode(newEmail())
    const wrong = await post('/auth/email/verify', await frameAnswer(sent, apiKeyPair(), sent.code === '000000' ? '111111' : '000000'))
    expect([wrong.status, await wrong.json()]).toEqual([400, { error: { code: 'invalid_code', message: 'invalid code: 2 attempts left' } }])
    expect(wrong.headers.get('set-cookie')).toBeNull()
    expect((await post('/auth/email/verify', await frameAnswer(sent))).status).toBe(200)
    const reused = await post('/auth/email/verify', await frameAnswer(sent))
    expect([reused.status, await reused.json()]).toEqual([
      400,
      { error: { code: 'unknown_code', message: 'This code was not sent, or has been used; ask for a new one' } },
    ])
  })

  test('error: bad input is refused before anything is created', async () => {
    const bad = await post('/auth/email/start', { email: 'not-an-email' })
    expect([bad.status, await bad.json()]).toEqual([400, { error: { code: 'invalid_request', message: 'email: Invalid email address' } }])
    const notJson = await app.request('/auth/email/start', { method: 'POST', body: '{', headers: { 'content-type': 'application/json', origin } })
    expect([notJson.status, await notJson.json()]).toEqual([400, { error: { code: 'invalid_json', message: 'The request body must be JSON' } }])
    const answer = await frameAnswer(await startCode(newEmail()))
    const signature = await post('/auth/email/verify', { ...answer, clientSignature: { ...answer.clientSignature, publicKey: 'abc' } })
    expect([signature.status, await signature.json()]).toEqual([
      400,
      { error: { code: 'invalid_request', message: 'clientSignature.publicKey: must be a compressed P-256 public key in lowercase hex' } },
    ])
    expect(await store.account('not-an-email')).toBeUndefined()
  })

  test(`error: more than ${LIMITS.perEmail} codes per email in ten minutes are refused with Retry-After`, async () => {
    const email = newEmail()
    for (let i = 0; i < LIMITS.perEmail; i++) expect((await post('/auth/email/start', { email }, { 'x-test-ip': `10.0.0.${i}` })).status).toBe(200)
    const limited = await post('/auth/email/start', { email }, { 'x-test-ip': '10.0.1.1' })
    expect([limited.status, await limited.json()]).toEqual([
      429,
      { error: { code: 'rate_limited', message: 'Too many codes sent to this email; try again in 10 minutes' } },
    ])
    expect(limited.headers.get('retry-after')).toBe('600')
    clock += LIMITS.windowMs
    try {
      expect((await post('/auth/email/start', { email }, { 'x-test-ip': '10.0.1.2' })).status).toBe(200)
    } finally {
      clock -= LIMITS.windowMs
    }
  })

  test(`error: more than ${LIMITS.perIp} sign-ins from one address in ten minutes are refused`, async () => {
    const ip = '192.0.2.7'
    for (let i = 0; i < LIMITS.perIp; i++) await post('/auth/email/start', { email: `x${i}@${i}.invalid-but-parsed.test` }, { 'x-test-ip': ip })
    const limited = await post('/auth/email/start', { email: newEmail() }, { 'x-test-ip': ip })
    expect([limited.status, ((await limited.json()) as { error: { code: string } }).error.code]).toEqual([429, 'rate_limited'])
  })

  test('behavior: limitsPerIp sets the sign-ins one address may start (the local stack, where every browser is one address); per email stays', async () => {
    app = newApp({ ipOf: () => '127.0.0.1', limitsPerIp: { signIns: LIMITS.perIp + 2 } })
    const statuses: number[] = []
    for (let i = 0; i < LIMITS.perIp + 3; i++) statuses.push((await post('/auth/email/start', { email: `y${i}@${i}.invalid-but-parsed.test` })).status)
    expect(statuses).toEqual([...Array(LIMITS.perIp + 2).fill(200), 429])
    const email = newEmail()
    const perEmail: number[] = []
    app = newApp({ ipOf: () => '127.0.0.2', limitsPerIp: { signIns: 1000 } })
    for (let i = 0; i < LIMITS.perEmail + 1; i++) perEmail.push((await post('/auth/email/start', { email })).status)
    expect(perEmail).toEqual([...Array(LIMITS.perEmail).fill(200), 429])
  })

  test('behavior: CORS preflight only for the configured origin', async () => {
    const allowed = await app.request('/auth/email/start', { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } })
    expect([allowed.status, allowed.headers.get('access-control-allow-origin')]).toEqual([204, origin])
    const other = await app.request('/auth/email/start', { method: 'OPTIONS', headers: { origin: 'https://evil.test' } })
    expect(other.status).toBe(403)
  })
})
