import { randomBytes } from 'node:crypto'
import { toPrefixedMessage } from 'viem'
import { describe, expect, test } from 'vitest'
import { createServerApp, LIMITS, oauthNonce } from '../src/index.js'
import { answer, cookieOf, generateApiKeyPair, newEmail, oauthRedirectUri, origin, softwareAuthenticator, useBackend } from './backend.js'

// Guest accounts (issue 28 item 3): "Continue as guest" is an embedded wallet with no login, its
// one key the consent frame's; linking a login later keeps the address.

const { t, post, mailTo, frameAnswer, signedInByEmail, oauthSignIn, withKey, withPasskey, stampLogin, userStamped } = useBackend({ oidc: true })
const get = (path: string, cookie: string) => t.app.request(path, { headers: { cookie, origin } })
type Guest = { organizationId: string; userId: string; address: string; sessionExpiresAt: string }

/** A guest from `ip`, with the frame's key. */
async function continueAsGuest(ip = '198.51.100.7', app: { request: typeof t.app.request } = t.app) {
  const sessionKey = generateApiKeyPair()
  const response = await app.request('/auth/guest', {
    method: 'POST',
    body: JSON.stringify({ sessionPublicKey: sessionKey.apiPublicKey }),
    headers: { 'content-type': 'application/json', origin, 'x-test-ip': ip },
  })
  return { response, sessionKey }
}

/** The sub-organizations the kms has for a guest key (a guest's is named after it). */
const guestOrganizations = async (publicKey: string) =>
  (await t.backend.getSubOrgIds({ organizationId: t.parentOrganizationId, filterType: 'NAME', filterValue: `guest ${publicKey}` })).organizationIds

const signs = async (client: ReturnType<typeof withKey>, account: { organizationId: string; address: string }) => {
  const { activity } = await client.signRawPayload({
    type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
    timestampMs: String(t.clock),
    organizationId: account.organizationId,
    parameters: {
      signWith: account.address,
      payload: toPrefixedMessage('hello'),
      encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
      hashFunction: 'HASH_FUNCTION_KECCAK256',
    },
  })
  return activity.status
}

describe('POST /auth/guest', () => {
  test('default', async () => {
    const { response, sessionKey } = await continueAsGuest()
    expect(response.status).toBe(200)
    const created = (await response.json()) as Guest
    expect(created).toEqual({
      organizationId: expect.any(String),
      userId: expect.any(String),
      address: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/),
      sessionExpiresAt: expect.any(String),
    })
    const cookie = cookieOf(response)
    const session = (await (await get('/auth/session', cookie)).json()) as { kind: string; expiresAt: string }
    expect([session.kind, session.expiresAt]).toEqual(['guest', created.sessionExpiresAt])
    expect(await answer(await get('/auth/user', cookie))).toEqual([
      200,
      {
        userId: created.userId,
        organizationId: created.organizationId,
        guest: true,
        logins: [],
        wallets: [{ address: created.address, kind: 'embedded' }],
        mfa: { enrolled: [] },
      },
    ])
    // The user's one credential is the frame's key, and it signs.
    const { user } = await t.backend.getUser({ organizationId: created.organizationId, userId: created.userId })
    // It lives as long as a session key may (a day): the guest has no other way back in.
    expect([user.userEmail, user.authenticators, user.oauthProviders, user.apiKeys.map((key) => [key.credential.publicKey, key.expirationSeconds])]).toEqual([
      undefined,
      [],
      [],
      [[sessionKey.apiPublicKey, '86400']],
    ])
    expect(await signs(withKey(sessionKey), created)).toBe('ACTIVITY_STATUS_COMPLETED')
    const [event] = await t.store.database.db.selectFrom('webhook_events').select('body').where('type', '=', 'user.created').execute()
    expect(JSON.parse(event!.body).data).toEqual({
      userId: created.userId,
      organizationId: created.organizationId,
      address: created.address,
      email: null,
      loginMethod: 'guest',
    })
  })

  test('behavior: a guest signs, links an email, and the email signs in to the same address', async () => {
    const { response, sessionKey } = await continueAsGuest()
    const created = (await response.json()) as Guest
    const cookie = cookieOf(response)
    expect(await signs(withKey(sessionKey), created)).toBe('ACTIVITY_STATUS_COMPLETED')
    const email = newEmail()
    const start = await post('/auth/user/link/email/start', { email }, { cookie })
    expect(start.status).toBe(200)
    const sent = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
    const [mail] = await mailTo(email)
    const { otpId, encryptedOtpBundle } = await frameAnswer(sent, /sign-in code is (\d{6})\./.exec(mail!.text)![1]!)
    // The guest's own key (its consent frame, after their Approve) sets the email.
    const update = await userStamped(sessionKey, {
      type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
      organizationId: created.organizationId,
      parameters: { userId: created.userId, userEmail: email },
    })
    expect((await post('/auth/user/link/email', { otpId, encryptedOtpBundle, ...update }, { cookie })).status).toBe(200)
    const me = (await (await get('/auth/user', cookie)).json()) as { guest?: boolean; logins: { kind: string }[] }
    expect([me.guest, me.logins.map((login) => login.kind)]).toEqual([undefined, ['email']])
    const signedIn = await signedInByEmail(email)
    expect([signedIn.organizationId, signedIn.address]).toEqual([created.organizationId, created.address])
    expect(await signs(signedIn.user, created)).toBe('ACTIVITY_STATUS_COMPLETED')
    // The one login is the last one: it cannot go (the guest row is no way in).
    const { logins } = (await (await get('/auth/user', cookie)).json()) as { logins: { id: string }[] }
    const unlink = await t.app.request(`/auth/user/logins/${logins[0]!.id}`, {
      method: 'DELETE',
      headers: { cookie, origin, 'content-type': 'application/json' },
    })
    expect(((await unlink.json()) as { error: { code: string } }).error.code).toBe('last_login')
  })

  test('behavior: a guest links Google, and Google signs in to the same address', async () => {
    const { response, sessionKey } = await continueAsGuest()
    const created = (await response.json()) as Guest
    const email = newEmail()
    const idToken = await t.oidc!.idToken({ provider: 'google', email, nonce: oauthNonce(sessionKey.apiPublicKey), redirectUri: oauthRedirectUri })
    const linked = await post(
      '/auth/user/link/oauth',
      { provider: 'google', sessionPublicKey: sessionKey.apiPublicKey, idToken },
      { cookie: cookieOf(response) },
    )
    expect(linked.status).toBe(200)
    const signedIn = await oauthSignIn(email)
    expect(((await signedIn.response.json()) as Guest).address).toBe(created.address)
    expect(await signs(withKey(signedIn.sessionKey), created)).toBe('ACTIVITY_STATUS_COMPLETED')
  })

  test('behavior: a guest links a passkey with their own key (the only way in, so no fresh verification is asked), and the passkey signs in to the same address', async () => {
    const { response, sessionKey } = await continueAsGuest()
    const created = (await response.json()) as Guest
    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const activity = await userStamped(sessionKey, {
      type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
      organizationId: created.organizationId,
      parameters: { userId: created.userId, authenticators: [{ authenticatorName: 'Phone', challenge, attestation: authenticator.register(challenge) }] },
    })
    const linked = await post('/auth/user/link/passkey', activity, { cookie: cookieOf(response) })
    expect(linked.status).toBe(200)
    const session = await stampLogin(withPasskey(authenticator), generateApiKeyPair().apiPublicKey, created.organizationId)
    expect(await answer(await post('/auth/login', { session }))).toEqual([
      200,
      { organizationId: created.organizationId, userId: created.userId, address: created.address },
    ])
  })

  test('error: a malformed key is 400 and creates nothing', async () => {
    const refused = await post('/auth/guest', { sessionPublicKey: 'nope' })
    expect(refused.status).toBe(400)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid_request')
    expect(await t.store.database.db.selectFrom('logins').select('id').execute()).toEqual([])
  })

  test(`error: more than ${LIMITS.guestsPerIp} guests from one network in a window is 429, before the kms is called`, async () => {
    for (let i = 0; i < LIMITS.guestsPerIp; i++) expect((await continueAsGuest('203.0.113.9')).response.status).toBe(200)
    const { response, sessionKey } = await continueAsGuest('203.0.113.9')
    expect(await answer(response)).toEqual([
      429,
      { error: { code: 'rate_limited', message: 'Too many guest accounts from this network; try again in 10 minutes' } },
    ])
    expect(await guestOrganizations(sessionKey.apiPublicKey)).toEqual([])
    // Another network still may.
    expect((await continueAsGuest('203.0.113.10')).response.status).toBe(200)
  })

  test('error: past the limit of all networks together, 429 from any network', async () => {
    const app = createServerApp({ ...t.options, guestsPerWindow: 2 })
    expect((await continueAsGuest('203.0.113.20', app)).response.status).toBe(200)
    expect((await continueAsGuest('203.0.113.21', app)).response.status).toBe(200)
    const { response, sessionKey } = await continueAsGuest('203.0.113.22', app)
    expect(await answer(response)).toEqual([
      429,
      { error: { code: 'rate_limited', message: 'Too many guest accounts are being made; try again in 10 minutes' } },
    ])
    expect(await guestOrganizations(sessionKey.apiPublicKey)).toEqual([])
  })
})
