import { randomBytes } from 'node:crypto'
import { decodeJwt } from 'jose'
import { sql } from 'kysely'
import { type Address, serializeSignature, toPrefixedMessage } from 'viem'
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { describe, expect, inject, test } from 'vitest'
import { anvilKeys } from '../../../test/chains.js'
import { createServerApp, oauthNonce } from '../src/index.js'
import { EmailAlreadyLinkedError, emailLogin } from '../src/store.js'
import { type Authenticator, answer, cookieOf, generateApiKeyPair, newEmail, oauthRedirectUri, origin, softwareAuthenticator, useBackend } from './backend.js'
import { totp } from './totp.js'

// Account linking (issue 28, item 1): one user, many logins, each linked by its own flow while
// signed in; a login of another user is refused with nothing written, here or in the kms.

const { t, post, mailTo, frameAnswer, signedInByEmail, signedUpWithPasskey, oauthSignIn, stampLogin, withKey, withPasskey, userStamped, session } = useBackend({
  oidc: true,
  chains: [{ id: 31337, rpcUrl: inject('chainARpc') }],
})

const get = (path: string, cookie: string) => t.app.request(path, { headers: { cookie, origin } })
const del = (path: string, cookie: string) => t.app.request(path, { method: 'DELETE', headers: { cookie, origin, 'content-type': 'application/json' } })
const postAs = (cookie: string, path: string, json: unknown) => post(path, json, { cookie })

/** GET /auth/user's logins, without their ids and times. */
async function loginsOf(cookie: string) {
  const response = await get('/auth/user', cookie)
  expect(response.status).toBe(200)
  const body = (await response.json()) as { logins: { id: string; kind: string; label: string; linkedAt: string }[] }
  return body.logins.map(({ kind, label }) => ({ kind, label }))
}

/** Everything the backend wrote about logins and webhook events, to show a refusal wrote nothing. */
async function written() {
  const db = t.store.database.db
  return {
    logins: await db.selectFrom('logins').select(['kind', 'subject', 'organization_id']).orderBy('kind').orderBy('subject').execute(),
    accounts: await db.selectFrom('accounts').select(['email', 'organization_id']).orderBy('email').execute(),
    events: await db.selectFrom('webhook_events').select('type').where('type', 'like', 'account.%').execute(),
  }
}

/** An ID token of the local issuer for `email`, bound to `sessionPublicKey`. */
const idTokenFor = (email: string, sessionPublicKey: string, provider: 'google' | 'apple' | 'github' | 'discord' = 'google') =>
  t.oidc!.idToken({ provider, email, nonce: oauthNonce(sessionPublicKey), redirectUri: oauthRedirectUri })

/**
 * Links the Google identity of `email` to `user`, its ID token bound to the user's session key, as
 * the session of `cookie` (default the user's own) posts it.
 */
async function linkGoogle(user: { cookie: string; sessionKey: { apiPublicKey: string } }, email: string, cookie = user.cookie) {
  const sessionPublicKey = user.sessionKey.apiPublicKey
  return postAs(cookie, '/auth/user/link/oauth', { provider: 'google', sessionPublicKey, idToken: await idTokenFor(email, sessionPublicKey) })
}

/** A SIWE message for `address` with a nonce issued to a new browser, and that browser's nonce cookie. */
async function siweMessage(address: Address) {
  const nonce = await t.app.request('/auth/nonce', { headers: { origin } })
  const message = createSiweMessage({
    address,
    chainId: 31337,
    domain: 'localhost:5173',
    uri: origin,
    version: '1',
    nonce: ((await nonce.json()) as { nonce: string }).nonce,
    issuedAt: new Date(t.clock),
  })
  return { message, nonceCookie: cookieOf(nonce) }
}

/** Links the external `wallet` to the user of `cookie` by its SIWE signature; answers the login's id. */
async function linkWallet(cookie: string, wallet: PrivateKeyAccount) {
  const { message, nonceCookie } = await siweMessage(wallet.address)
  const linked = await postAs(`${cookie}; ${nonceCookie}`, '/auth/user/link/wallet', { message, signature: await wallet.signMessage({ message }) })
  expect(linked.status).toBe(200)
  return ((await linked.json()) as { login: { id: string } }).login.id
}

/** Sign-In with Ethereum by `wallet` (an outside wallet's, `injected`): the session's cookie. */
async function signedInWithWallet(wallet: PrivateKeyAccount) {
  const { message, nonceCookie } = await siweMessage(wallet.address)
  const response = await post('/auth/siwe', { message, signature: await wallet.signMessage({ message }), walletKind: 'injected' }, { cookie: nonceCookie })
  expect(response.status).toBe(200)
  return cookieOf(response)
}

/** A refresh token of the session of `cookie` (`POST /auth/token`). */
async function refreshTokenOf(cookie: string) {
  const issued = await postAs(cookie, '/auth/token', {})
  expect(issued.status).toBe(200)
  return ((await issued.json()) as { refreshToken: string }).refreshToken
}

const UNKNOWN_KEY = 'Turnkey error 16: could not find public key in organization or its parent organization'

/** A signed-in user as the link routes need them: the session cookie, whose account, and the key its consent frame stamps with. */
type Linker = { cookie: string; organizationId: string; userId: string; sessionKey: Parameters<typeof userStamped>[0] }

/** update_user_email setting `email` for `user`, as their consent frame stamps it after their Approve. */
const emailUpdate = (user: Linker, email: string, by = user.sessionKey) =>
  userStamped(by, {
    type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
    organizationId: user.organizationId,
    parameters: { userId: user.userId, userEmail: email },
  })

/** Links the email by its code, as the consent frame would: the start, the mailed code sealed, the approved update. */
async function linkEmail(user: Linker, email: string, update?: Awaited<ReturnType<typeof userStamped>>) {
  const start = await postAs(user.cookie, '/auth/user/link/email/start', { email })
  expect(start.status).toBe(200)
  const sent = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
  const [mail] = await mailTo(email)
  const { otpId, encryptedOtpBundle } = await frameAnswer(sent, /sign-in code is (\d{6})\./.exec(mail!.text)![1]!)
  return postAs(user.cookie, '/auth/user/link/email', { otpId, encryptedOtpBundle, ...(update ?? (await emailUpdate(user, email))) })
}

/**
 * Links a new passkey of `authenticator` for `user`, its create_authenticators stamped by `by` (the
 * session key, or a passkey: a fresh verification).
 */
async function linkPasskey(user: Linker, authenticator: Authenticator, by: Parameters<typeof userStamped>[0] = user.sessionKey, name = 'Laptop') {
  const challenge = randomBytes(32).toString('base64url')
  const activity = await userStamped(by, {
    type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
    organizationId: user.organizationId,
    parameters: { userId: user.userId, authenticators: [{ authenticatorName: name, challenge, attestation: authenticator.register(challenge) }] },
  })
  return postAs(user.cookie, '/auth/user/link/passkey', activity)
}

describe('account linking', () => {
  test('default', async () => {
    // A passkey user links Google: the Google sign-in opens the same wallet.
    const user = await signedUpWithPasskey()
    expect(await loginsOf(user.cookie)).toEqual([{ kind: 'passkey', label: 'my passkey' }])
    const email = newEmail()
    const linked = await linkGoogle(user, email)
    expect(linked.status).toBe(200)
    const { login } = (await linked.json()) as { login: { id: string; kind: string; label: string; linkedAt: string } }
    expect(login).toEqual({ id: expect.stringMatching(/^lg_/), kind: 'oauth:google', label: `Google · ${email}`, linkedAt: expect.any(String) })
    const me = await get('/auth/user', user.cookie)
    expect(await answer(me)).toEqual([
      200,
      {
        userId: user.userId,
        organizationId: user.organizationId,
        logins: [{ id: expect.stringMatching(/^lg_/), kind: 'passkey', label: 'my passkey', linkedAt: expect.any(String) }, { ...login }],
        wallets: [{ address: user.address, kind: 'embedded' }],
        mfa: { enrolled: [] },
      },
    ])
    const { oauthProviders } = await t.backend.getOauthProviders({ organizationId: user.organizationId, userId: user.userId })
    expect(oauthProviders.map((provider) => provider.issuer)).toEqual([t.oidc!.issuers.google.issuer])
    // The login keeps the kms's id of the identity (its V2 result).
    expect((await t.store.loginsOf(user.organizationId)).map((row) => row.kms_id)).toEqual([null, oauthProviders[0]!.providerId])
    const { response } = await oauthSignIn(email)
    expect(await answer(response)).toEqual([
      200,
      { organizationId: user.organizationId, userId: user.userId, address: user.address, sessionExpiresAt: expect.any(String) },
    ])
    expect((await written()).events).toEqual([{ type: 'account.linked' }])
    // The event, as the outbox will send it.
    const [event] = await t.store.database.db.selectFrom('webhook_events').select('body').where('type', '=', 'account.linked').execute()
    expect(JSON.parse(event!.body)).toEqual({
      type: 'account.linked',
      timestamp: login.linkedAt,
      data: {
        userId: user.userId,
        organizationId: user.organizationId,
        address: user.address,
        login: { id: login.id, kind: 'oauth:google', label: login.label },
      },
    })
  })

  test('behavior: GitHub and Discord, OpenID providers the operator configured, link and sign in as Google does; an unconfigured name is 404', async () => {
    const user = await signedUpWithPasskey()
    const key = user.sessionKey
    const config = (await (await t.app.request('/auth/config')).json()) as { oauth: Record<string, unknown> }
    expect(config.oauth['github']).toEqual({ displayName: 'GitHub', clientId: 'latchkey-demo', authorizationEndpoint: `${t.oidc!.issuers.github.issuer}/auth` })
    const labels = []
    for (const provider of ['github', 'discord'] as const) {
      const email = newEmail()
      const linked = await postAs(user.cookie, '/auth/user/link/oauth', {
        provider,
        sessionPublicKey: key.apiPublicKey,
        idToken: await idTokenFor(email, key.apiPublicKey, provider),
      })
      expect(linked.status).toBe(200)
      const { response } = await oauthSignIn(email, provider)
      expect(await answer(response)).toEqual([
        200,
        { organizationId: user.organizationId, userId: user.userId, address: user.address, sessionExpiresAt: expect.any(String) },
      ])
      labels.push(`${provider === 'github' ? 'GitHub' : 'Discord'} · ${email}`)
    }
    expect((await loginsOf(user.cookie)).slice(1)).toEqual([
      { kind: 'oauth:github', label: labels[0] },
      { kind: 'oauth:discord', label: labels[1] },
    ])
    for (const provider of ['gitlab', 'constructor'])
      expect(await answer(await post('/auth/oauth', { provider, sessionPublicKey: key.apiPublicKey, idToken: 'x' }))).toEqual([
        404,
        { error: { code: 'unknown_provider', message: `${provider} sign-in is not configured` } },
      ])
  })

  test('behavior: an email linked by its code is the kms user’s email and signs in to the same wallet; unlinked, it is neither', async () => {
    const user = await signedUpWithPasskey()
    const email = newEmail()
    // Stamped by the passkey: a new email needs a fresh verification, which the session key is not.
    const linked = await answer(await linkEmail(user, email, await emailUpdate(user, email, user.authenticator)))
    expect(linked).toEqual([200, { login: { id: expect.stringMatching(/^lg_/), kind: 'email', label: email, linkedAt: expect.any(String) } }])
    const { user: kmsUser } = await t.backend.getUser({ organizationId: user.organizationId, userId: user.userId })
    expect(kmsUser.userEmail).toBe(email)
    const again = await signedInByEmail(email)
    expect([again.organizationId, again.userId, again.address]).toEqual([user.organizationId, user.userId, user.address])

    const { login } = linked[1] as { login: { id: string } }
    expect((await del(`/auth/user/logins/${login.id}`, user.cookie)).status).toBe(204)
    expect(await loginsOf(user.cookie)).toEqual([{ kind: 'passkey', label: 'my passkey' }])
    const { user: after } = await t.backend.getUser({ organizationId: user.organizationId, userId: user.userId })
    expect(after.userEmail ?? null).toBe(null)
    expect(await t.store.account(email)).toBeUndefined()
    expect((await written()).events).toEqual([{ type: 'account.linked' }, { type: 'account.unlinked' }])
  })

  test('behavior: a passkey linked by its attestation signs in to the same wallet; unlinked, the kms forgets it', async () => {
    const user = await signedInByEmail(newEmail())
    const authenticator = softwareAuthenticator()
    const linked = await answer(await linkPasskey(user, authenticator))
    expect(linked).toEqual([200, { login: { id: expect.stringMatching(/^lg_/), kind: 'passkey', label: 'Laptop', linkedAt: expect.any(String) } }])
    const { authenticators } = await t.backend.getAuthenticators({ organizationId: user.organizationId, userId: user.userId })
    expect(authenticators.map((one) => one.authenticatorName)).toEqual(['Laptop'])
    // The passkey's stamp_login (a browser's "Sign in with a passkey") opens the same account.
    const session = await stampLogin(withPasskey(authenticator), generateApiKeyPair().apiPublicKey, user.organizationId)
    const login = await post('/auth/login', { session })
    expect(await answer(login)).toEqual([200, { organizationId: user.organizationId, userId: user.userId, address: user.address }])

    const { login: row } = linked[1] as { login: { id: string } }
    expect((await del(`/auth/user/logins/${row.id}`, user.cookie)).status).toBe(204)
    const { authenticators: after } = await t.backend.getAuthenticators({ organizationId: user.organizationId, userId: user.userId })
    expect(after).toEqual([])
  })

  test('error: a linking activity not the signed-in user’s own, or not stamped by their key, is refused and nothing is written here or in the kms', async () => {
    const user = await signedInByEmail(newEmail())
    const other = await signedInByEmail(newEmail())
    const noEmail = await signedUpWithPasskey()
    const before = await written()
    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const passkeyFor = (userId: string, organizationId = user.organizationId) => ({
      type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
      organizationId,
      parameters: { userId, authenticators: [{ authenticatorName: 'Laptop', challenge, attestation: authenticator.register(challenge) }] },
    })
    // For another user, or in another organization: refused before the kms is asked.
    expect(await answer(await postAs(user.cookie, '/auth/user/link/passkey', await userStamped(user.sessionKey, passkeyFor(other.userId))))).toEqual([
      400,
      { error: { code: 'invalid_request', message: 'activity.parameters.userId: must be the signed-in user' } },
    ])
    expect(
      await answer(await postAs(user.cookie, '/auth/user/link/passkey', await userStamped(user.sessionKey, passkeyFor(user.userId, other.organizationId)))),
    ).toEqual([400, { error: { code: 'invalid_request', message: "activity.organizationId: must be the signed-in user's organization" } }])
    // The user's own activity, stamped by someone else's key (what a backend or a page could make): the kms refuses.
    const forged = await answer(await postAs(user.cookie, '/auth/user/link/passkey', await userStamped(other.sessionKey, passkeyFor(user.userId))))
    const unknownKey = 'could not find public key in organization or its parent organization'
    expect(forged).toEqual([401, { error: { code: 'kms_refused', message: unknownKey, kms: { code: 16, message: unknownKey, details: [] } } }])
    // A body changed after its stamp: the kms refuses it.
    const stamped = await userStamped(user.sessionKey, passkeyFor(user.userId))
    const changed = { ...stamped, activity: stamped.activity.replace('"Laptop"', '"Attacker"') }
    expect((await answer(await postAs(user.cookie, '/auth/user/link/passkey', changed)))[1]).toMatchObject({ error: { code: 'kms_refused' } })
    // An approved email that is not the one the code went to.
    const email = newEmail()
    expect(await answer(await linkEmail(noEmail, email, await emailUpdate(noEmail, newEmail())))).toEqual([
      400,
      { error: { code: 'email_mismatch', message: 'The approved email is not the one the code was sent to' } },
    ])
    expect(await written()).toEqual(before)
    const { authenticators } = await t.backend.getAuthenticators({ organizationId: user.organizationId, userId: user.userId })
    expect(authenticators).toEqual([])
    const { user: kmsUser } = await t.backend.getUser({ organizationId: noEmail.organizationId, userId: noEmail.userId })
    expect(kmsUser.userEmail ?? null).toBe(null)
  })

  test('behavior: a kms refusal of the user’s stamp reaches the page as the kms wrote it: a passkey user’s session key needs a fresh verification, and their passkey’s stamp then links', async () => {
    const user = await signedUpWithPasskey()
    const authenticator = softwareAuthenticator()
    const refused = await answer(await linkPasskey(user, authenticator))
    expect(refused[0]).toBe(403)
    expect(refused[1]).toMatchObject({
      error: { code: 'kms_refused', kms: { code: 7, message: expect.stringMatching(/^fresh verification required: ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2 /) } },
    })
    expect(await loginsOf(user.cookie)).toEqual([{ kind: 'passkey', label: 'my passkey' }])
    expect(await answer(await linkPasskey(user, authenticator, user.authenticator))).toEqual([
      200,
      { login: { id: expect.stringMatching(/^lg_/), kind: 'passkey', label: 'Laptop', linkedAt: expect.any(String) } },
    ])
  })

  test('error: a passkey user’s stale session key may not set an email: the kms’s fresh-verification refusal reaches the page as `kms`, and nothing is written here or in the kms; the passkey’s stamp then links it with a new code', async () => {
    const user = await signedUpWithPasskey()
    const email = newEmail()
    const before = await written()
    const refused = await answer(await linkEmail(user, email))
    expect(refused[0]).toBe(403)
    expect(refused[1]).toMatchObject({
      error: { code: 'kms_refused', kms: { code: 7, message: expect.stringMatching(/^fresh verification required: ACTIVITY_TYPE_UPDATE_USER_EMAIL /) } },
    })
    expect(await written()).toEqual(before)
    const { user: kmsUser } = await t.backend.getUser({ organizationId: user.organizationId, userId: user.userId })
    expect(kmsUser.userEmail ?? null).toBe(null)
    expect(await answer(await linkEmail(user, email, await emailUpdate(user, email, user.authenticator)))).toEqual([
      200,
      { login: { id: expect.stringMatching(/^lg_/), kind: 'email', label: email, linkedAt: expect.any(String) } },
    ])
  })

  test('behavior: a wallet linked by a SIWE signature is listed among the wallets, and its Sign-In with Ethereum is a session of the account', async () => {
    const email = newEmail()
    const user = { ...(await signedInByEmail(email)), email }
    const wallet = privateKeyToAccount(anvilKeys[8])
    const nonce = await t.app.request('/auth/nonce', { headers: { origin } })
    const siweCookie = cookieOf(nonce)
    const message = createSiweMessage({
      address: wallet.address,
      chainId: 31337,
      domain: 'localhost:5173',
      uri: origin,
      version: '1',
      nonce: ((await nonce.json()) as { nonce: string }).nonce,
      issuedAt: new Date(t.clock),
    })
    const cookie = `${user.cookie}; ${siweCookie}`
    const linked = await postAs(cookie, '/auth/user/link/wallet', { message, signature: await wallet.signMessage({ message }) })
    expect(await answer(linked)).toEqual([
      200,
      { login: { id: expect.stringMatching(/^lg_/), kind: 'wallet', label: wallet.address, linkedAt: expect.any(String) } },
    ])
    const me = (await (await get('/auth/user', user.cookie)).json()) as { wallets: unknown }
    expect(me.wallets).toEqual([
      { address: user.address, kind: 'embedded' },
      { address: wallet.address, kind: 'external' },
    ])
    // Sign-In with Ethereum by the linked wallet is a session of the account.
    const next = await t.app.request('/auth/nonce', { headers: { origin } })
    const signIn = createSiweMessage({
      address: wallet.address,
      chainId: 31337,
      domain: 'localhost:5173',
      uri: origin,
      version: '1',
      nonce: ((await next.json()) as { nonce: string }).nonce,
      issuedAt: new Date(t.clock),
    })
    const session = await post(
      '/auth/siwe',
      { message: signIn, signature: await wallet.signMessage({ message: signIn }), walletKind: 'injected' },
      { cookie: cookieOf(next) },
    )
    expect(await answer(session)).toEqual([
      200,
      {
        email: user.email,
        address: wallet.address,
        organizationId: user.organizationId,
        userId: user.userId,
        kind: 'siwe',
        chainId: 31337,
        walletKind: 'injected',
        expiresAt: expect.any(String),
      },
    ])
  })

  test('error: a login of another user is refused with 409 account_already_linked, and nothing is written here or in the kms', async () => {
    const email = newEmail()
    const owner = await signedInByEmail(email)
    const { response } = await oauthSignIn(email)
    expect(response.status).toBe(200)
    const other = await signedUpWithPasskey()
    const before = await written()
    const refused = {
      error: { code: 'account_already_linked', message: 'This login belongs to another user; sign in with it, or unlink it from that account first' },
    }

    expect(await answer(await linkEmail(other, email))).toEqual([409, refused])
    expect(await answer(await linkGoogle(other, email))).toEqual([409, refused])

    expect(await written()).toEqual(before)
    expect(await loginsOf(other.cookie)).toEqual([{ kind: 'passkey', label: 'my passkey' }])
    const { user: kmsUser } = await t.backend.getUser({ organizationId: other.organizationId, userId: other.userId })
    expect(kmsUser.userEmail ?? null).toBe(null)
    const { oauthProviders } = await t.backend.getOauthProviders({ organizationId: other.organizationId, userId: other.userId })
    expect(oauthProviders).toEqual([])
    expect(owner.organizationId).not.toBe(other.organizationId)
  })

  test('error: a second email is refused before any code is sent (409 email_already_linked); linking one’s own login again is 409 already_linked', async () => {
    const email = newEmail()
    const user = await signedInByEmail(email)
    const second = newEmail()
    expect(await answer(await postAs(user.cookie, '/auth/user/link/email/start', { email: second }))).toEqual([
      409,
      { error: { code: 'email_already_linked', message: 'This account has an email already (one per user); unlink it first' } },
    ])
    expect(await mailTo(second)).toEqual([])
    const other = await signedUpWithPasskey()
    const authenticator = softwareAuthenticator()
    // A passkey user's session key is no fresh verification: their passkey stamps the link.
    const link = () => linkPasskey(other, authenticator, other.authenticator)
    expect((await link()).status).toBe(200)
    expect(await answer(await link())).toEqual([409, { error: { code: 'already_linked', message: 'This login is linked to your account already' } }])
  })

  test('error: the last login cannot be unlinked (409 last_login); a login of no one’s is 404; signed out, the user is null', async () => {
    const user = await signedUpWithPasskey()
    const me = (await (await get('/auth/user', user.cookie)).json()) as { logins: { id: string }[] }
    expect(await answer(await del(`/auth/user/logins/${me.logins[0]!.id}`, user.cookie))).toEqual([
      409,
      { error: { code: 'last_login', message: 'This is the last way to sign in to this account; link another before removing it' } },
    ])
    expect(await answer(await del('/auth/user/logins/lg_nothing', user.cookie))).toEqual([
      404,
      { error: { code: 'unknown_login', message: 'This account has no such login' } },
    ])
    expect(await answer(await t.app.request('/auth/user', { headers: { origin } }))).toEqual([200, null])
    expect(await loginsOf(user.cookie)).toEqual([{ kind: 'passkey', label: 'my passkey' }])
    expect((await written()).events).toEqual([])
    // The refusals are in the audit trail, as every change is.
    const audited = await sql<{ action: string; outcome: string; reason: string }>`select action, outcome, reason from server_audit_events
      where action like 'DELETE %' order by seq`.execute(t.store.database.db)
    expect(audited.rows).toEqual([
      {
        action: `DELETE /auth/user/logins/${me.logins[0]!.id}`,
        outcome: 'refused',
        reason: '409 last_login: This is the last way to sign in to this account; link another before removing it',
      },
      { action: 'DELETE /auth/user/logins/lg_nothing', outcome: 'refused', reason: '404 unknown_login: This account has no such login' },
    ])
  })
})

describe('one email per user', () => {
  test('error: two emails linked at once: one links, the other is refused as a second email (409 email_already_linked); the kms user has the one linked', async () => {
    const key = generateApiKeyPair()
    const guest = await post('/auth/guest', { sessionPublicKey: key.apiPublicKey })
    expect(guest.status).toBe(200)
    const user: Linker = { ...((await guest.json()) as { organizationId: string; userId: string }), cookie: cookieOf(guest), sessionKey: key }
    const emails = [newEmail(), newEmail()]
    const proofs = []
    for (const email of emails) {
      const start = await postAs(user.cookie, '/auth/user/link/email/start', { email })
      expect(start.status).toBe(200)
      const sent = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
      const [mail] = await mailTo(email)
      proofs.push({ ...(await frameAnswer(sent, /sign-in code is (\d{6})\./.exec(mail!.text)![1]!)), ...(await emailUpdate(user, email)) })
    }

    const results = await Promise.all(proofs.map(async (proof) => answer(await postAs(user.cookie, '/auth/user/link/email', proof))))

    expect(results.map(([status]) => status).sort()).toEqual([200, 409])
    expect(results.find(([status]) => status === 409)).toEqual([
      409,
      { error: { code: 'email_already_linked', message: 'This account has an email already (one per user); unlink it first' } },
    ])
    const linked = emails[results.findIndex(([status]) => status === 200)]!
    expect(await loginsOf(user.cookie)).toEqual([{ kind: 'email', label: linked }])
    expect((await written()).accounts.filter((row) => row.organization_id === user.organizationId)).toEqual([
      { email: linked, organization_id: user.organizationId },
    ])
    const { user: kmsUser } = await t.backend.getUser({ organizationId: user.organizationId, userId: user.userId })
    expect(kmsUser.userEmail).toBe(linked)
  })

  test('error: an email linked while another email’s link is still in its transaction is refused (EmailAlreadyLinkedError), and its kms step is never run', async () => {
    const user = await signedUpWithPasskey()
    const emailLink = (email: string) => {
      const account = { email, organization_id: user.organizationId, user_id: user.userId, address: user.address, created_at: t.clock }
      return { row: emailLogin(account), account }
    }
    const [first, second] = [emailLink(newEmail()), emailLink(newEmail())]
    let inFirst!: () => void
    let releaseFirst!: () => void
    const firstEntered = new Promise<void>((resolve) => {
      inFirst = resolve
    })
    const firstReleased = new Promise<void>((resolve) => {
      releaseFirst = resolve
    })
    // The first link stops inside its transaction, at its kms step, until the second has started.
    const firstLinked = t.store.linkLogin(
      first.row,
      async () => {
        inFirst()
        await firstReleased
        return null
      },
      first.account,
    )
    await firstEntered
    let secondKmsCalled = false
    const secondLinked = t.store.linkLogin(
      second.row,
      async () => {
        secondKmsCalled = true
        return null
      },
      second.account,
    )
    releaseFirst()

    expect((await firstLinked).subject).toBe(first.row.subject)
    await expect(secondLinked).rejects.toThrow(EmailAlreadyLinkedError)
    expect(secondKmsCalled).toBe(false)
    const emails = (await t.store.loginsOf(user.organizationId)).filter((row) => row.kind === 'email')
    expect(emails.map((row) => row.subject)).toEqual([first.row.subject])
  })
})

describe('an email start that no sign-in completed', () => {
  /** `POST /auth/email/start` of `email` by someone who never sees its code: the account it made, and the code the mailbox got. */
  async function squat(email: string) {
    const start = await post('/auth/email/start', { email })
    expect(start.status).toBe(200)
    const sent = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
    const [mail] = await mailTo(email)
    const squatter = (await t.store.account(email))!
    return { sent, code: /sign-in code is (\d{6})\./.exec(mail!.text)![1]!, organizationId: squatter.organization_id, userId: squatter.user_id }
  }

  test('error: it does not keep the email from its owner: a proven link takes it over; email sign-in then opens the linker’s wallet, the squatted account loses that email here and in the kms, and its code opens nothing', async () => {
    const email = newEmail()
    const squatted = await squat(email)
    const owner = await signedUpWithPasskey()

    // Stamped by the owner's passkey: a new email needs a fresh verification in the kms.
    const linked = await linkEmail(owner, email, await emailUpdate(owner, email, owner.authenticator))

    expect(await answer(linked)).toEqual([200, { login: { id: expect.stringMatching(/^lg_/), kind: 'email', label: email, linkedAt: expect.any(String) } }])
    expect((await t.store.account(email))?.organization_id).toBe(owner.organizationId)
    expect(await t.store.loginsOf(squatted.organizationId)).toEqual([])
    const kmsEmailOf = async (user: { organizationId: string; userId: string }) =>
      (await t.backend.getUser({ organizationId: user.organizationId, userId: user.userId })).user.userEmail ?? null
    expect([await kmsEmailOf(squatted), await kmsEmailOf(owner)]).toEqual([null, email])
    // The code the squatter's start sent (to the owner's mailbox) opens neither account now; nor
    // does it when a start that read the account before the takeover records its code after it.
    const opensNothing = [400, { error: { code: 'unknown_code', message: 'This code was not sent, or has been used; ask for a new one' } }]
    const verifySquatted = async () => answer(await post('/auth/email/verify', await frameAnswer(squatted.sent, squatted.code)))
    expect(await verifySquatted()).toEqual(opensNothing)
    await t.store.insertPendingCode({ otp_id: squatted.sent.otpId, email, organization_id: squatted.organizationId, created_at: t.clock })
    expect(await verifySquatted()).toEqual(opensNothing)
    const again = await signedInByEmail(email)
    expect([again.organizationId, again.userId, again.address]).toEqual([owner.organizationId, owner.userId, owner.address])
    // Nothing was merged: the squatted account is left as it was made, only without the email.
    expect((await written()).events).toEqual([{ type: 'account.linked' }])
  })

  test('behavior: a squatter’s start racing the owner’s first sign-in: the owner’s code signs in, and the email, proven, is no longer taken over (409 account_already_linked)', async () => {
    const email = newEmail()
    // The squatter's start and the owner's, at once: one account is kept, and the newest code is in it.
    const starts = await Promise.all([post('/auth/email/start', { email }, { 'x-test-ip': '198.51.100.7' }), post('/auth/email/start', { email })])
    expect(starts.map((start) => start.status)).toEqual([200, 200])
    const [newest] = await mailTo(email)
    const code = /sign-in code is (\d{6})\./.exec(newest!.text)![1]!
    const verified = []
    for (const start of starts) verified.push(await post('/auth/email/verify', await frameAnswer(await start.json(), code)))
    const signedIn = verified.find((response) => response.status === 200)!
    const account = (await signedIn.json()) as { organizationId: string }
    expect(account.organizationId).toBe((await t.store.account(email))!.organization_id)

    const other = await signedUpWithPasskey()
    const before = await written()
    expect(await answer(await linkEmail(other, email, await emailUpdate(other, email, other.authenticator)))).toEqual([
      409,
      { error: { code: 'account_already_linked', message: 'This login belongs to another user; sign in with it, or unlink it from that account first' } },
    ])
    expect(await written()).toEqual(before)
    expect((await t.backend.getUser({ organizationId: account.organizationId, userId: (await t.store.account(email))!.user_id })).user.userEmail).toBe(email)
  })

  test('error: a sign-in proving the code while a link is taking the email over, inside its transaction, loses whole: it is told the code opens nothing', async () => {
    const email = newEmail()
    const squatted = await squat(email)
    const linker = await signedUpWithPasskey()
    const account = { email, organization_id: linker.organizationId, user_id: linker.userId, address: linker.address, created_at: t.clock }
    let inLink!: () => void
    let releaseLink!: () => void
    const linkEntered = new Promise<void>((resolve) => {
      inLink = resolve
    })
    const linkReleased = new Promise<void>((resolve) => {
      releaseLink = resolve
    })
    const released: string[] = []
    // The link stops inside its transaction, at its kms step, until the sign-in's proof has started.
    const linking = t.store.linkLogin(
      emailLogin(account),
      async () => {
        inLink()
        await linkReleased
        return null
      },
      account,
      async (row) => {
        released.push(row.organization_id)
      },
    )
    // A link refused before its kms step (no takeover) ends the wait too, and fails below.
    await Promise.race([linkEntered, linking])
    const proving = t.store.proveEmailSignIn(email, squatted.organizationId)
    releaseLink()

    expect((await linking).organization_id).toBe(linker.organizationId)
    expect(await proving).toBe(false)
    expect(released).toEqual([squatted.organizationId])
    expect((await written()).logins.filter((row) => row.subject === email)).toEqual([{ kind: 'email', subject: email, organization_id: linker.organizationId }])
  })
})

describe('second factors', () => {
  /** Submits a Latchkey second-factor activity with the user's own session key (the embedded wallet's). */
  const submitFactor = (
    user: { organizationId: string; user: { request: (url: string, body: unknown) => Promise<unknown> } },
    op: string,
    type: string,
    parameters: unknown,
  ) =>
    user.user.request(`/public/v1/submit/${op}`, { type, timestampMs: String(t.clock), organizationId: user.organizationId, parameters }) as Promise<{
      activity: { result: { createTotpFactorResult: { factorId: string; secret: string } } }
    }>

  test('behavior: GET /auth/user lists the factors the kms holds: none, then a TOTP once its first code is verified, then locked after five wrong codes', async () => {
    const user = await signedInByEmail(newEmail())
    const mfaOf = async () => ((await (await get('/auth/user', user.cookie)).json()) as { mfa: unknown }).mfa
    expect(await mfaOf()).toEqual({ enrolled: [] })
    const enrolledAt = t.clock
    const created = await submitFactor(user, 'create_totp_factor', 'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR', { userId: user.userId })
    const { factorId, secret } = created.activity.result.createTotpFactorResult
    // Pending until a first code is verified: not enrolled yet.
    expect(await mfaOf()).toEqual({ enrolled: [] })
    await submitFactor(user, 'verify_mfa_factor', 'ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR', { factorId, code: totp(secret, t.clock) })
    const factor = { factorId, type: 'totp', name: 'Authenticator app', enrolledAt: new Date(enrolledAt).toISOString() }
    expect(await mfaOf()).toEqual({ enrolled: [factor] })

    t.clock += 60_000
    const wrong = [totp(secret, t.clock - 30_000), totp(secret, t.clock), totp(secret, t.clock + 30_000)].includes('000000') ? '111111' : '000000'
    for (let attempt = 0; attempt < 5; attempt++)
      await expect(submitFactor(user, 'verify_mfa_factor', 'ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR', { factorId, code: wrong })).rejects.toThrow(
        /^Turnkey error 3: invalid code: /,
      )
    const lockedUntil = new Date(t.clock + 900_000).toISOString()
    expect(await mfaOf()).toEqual({ enrolled: [{ ...factor, lockedUntil }] })
  })
})

describe('unlinking a login', () => {
  test('behavior: every other session of the account ends (its cookie, its refresh tokens, its kms key); the session that unlinked stays signed in', async () => {
    const user = await signedInByEmail(newEmail())
    const wallet = privateKeyToAccount(generatePrivateKey())
    const walletLogin = await linkWallet(user.cookie, wallet)
    const googleEmail = newEmail()
    expect((await linkGoogle(user, googleEmail)).status).toBe(200)
    const google = await oauthSignIn(googleEmail)
    expect(google.response.status).toBe(200)
    const googleCookie = cookieOf(google.response)
    const walletCookie = await signedInWithWallet(wallet)
    const refreshTokens = [await refreshTokenOf(googleCookie), await refreshTokenOf(walletCookie)]

    expect((await del(`/auth/user/logins/${walletLogin}`, user.cookie)).status).toBe(204)

    expect(await answer(await session(walletCookie))).toEqual([200, null])
    expect(await answer(await session(googleCookie))).toEqual([200, null])
    for (const refreshToken of refreshTokens)
      expect(await answer(await post('/auth/token/refresh', { refreshToken }))).toEqual([
        401,
        { error: { code: 'invalid_refresh_token', message: 'This refresh token is unknown, used, expired or signed out; sign in again' } },
      ])
    await expect(withKey(google.sessionKey).getWhoami({ organizationId: user.organizationId })).rejects.toThrow(UNKNOWN_KEY)
    // The session that unlinked, and its key, are untouched.
    expect(await answer(await session(user.cookie))).toMatchObject([200, { organizationId: user.organizationId, kind: 'email' }])
    expect(await withKey(user.sessionKey).getWhoami({ organizationId: user.organizationId })).toMatchObject({ userId: user.userId })
    expect(await loginsOf(user.cookie)).toEqual([
      { kind: 'email', label: expect.any(String) },
      { kind: 'oauth:google', label: `Google · ${googleEmail}` },
    ])
  })

  test('error: the Sign-In with Ethereum of a wallet unlinked from the account is signed out: it reads nothing and links nothing, and the Google identity it tried opens an account of its own', async () => {
    const victim = await signedInByEmail(newEmail())
    const wallet = privateKeyToAccount(generatePrivateKey())
    const walletLogin = await linkWallet(victim.cookie, wallet)
    const walletCookie = await signedInWithWallet(wallet)

    expect((await del(`/auth/user/logins/${walletLogin}`, victim.cookie)).status).toBe(204)

    expect(await answer(await get('/auth/user', walletCookie))).toEqual([200, null])
    const attackerKey = generateApiKeyPair()
    const attackerEmail = newEmail()
    const addGoogle = await linkGoogle({ cookie: walletCookie, sessionKey: attackerKey }, attackerEmail)
    expect(await answer(addGoogle)).toEqual([401, { error: { code: 'signed_out', message: 'Not signed in' } }])
    const { response } = await oauthSignIn(attackerEmail)
    expect(response.status).toBe(200)
    expect(((await response.json()) as { organizationId: string }).organizationId).not.toBe(victim.organizationId)
    const { oauthProviders } = await t.backend.getOauthProviders({ organizationId: victim.organizationId, userId: victim.userId })
    expect(oauthProviders).toEqual([])
  })

  test('error: a passkey’s stamp_login never posted to /auth/login ends with an unlink: its key reads nothing; the unlinking session’s key still does', async () => {
    const user = await signedInByEmail(newEmail())
    const authenticator = softwareAuthenticator()
    const linked = await linkPasskey(user, authenticator)
    expect(linked.status).toBe(200)
    const { login } = (await linked.json()) as { login: { id: string } }
    // The passkey's own session, whose JWT never reached the backend: no session here knows its key.
    const hidden = generateApiKeyPair()
    await stampLogin(withPasskey(authenticator), hidden.apiPublicKey, user.organizationId)
    expect(await withKey(hidden).getWhoami({ organizationId: user.organizationId })).toMatchObject({ userId: user.userId })

    expect((await del(`/auth/user/logins/${login.id}`, user.cookie)).status).toBe(204)

    await expect(withKey(hidden).getWhoami({ organizationId: user.organizationId })).rejects.toThrow(UNKNOWN_KEY)
    expect(await withKey(user.sessionKey).getWhoami({ organizationId: user.organizationId })).toMatchObject({ userId: user.userId })
  })

  test('error: a kms outage while unlinking is answered as at sign-out (502 kms_unavailable) and audited as failed, and ends nothing', async () => {
    const user = await signedInByEmail(newEmail())
    const wallet = privateKeyToAccount(generatePrivateKey())
    const walletLogin = await linkWallet(user.cookie, wallet)
    const walletCookie = await signedInWithWallet(wallet)
    // The same backend over the same store, with its kms out of reach (a wallet's unlink asks it nothing else).
    const cutOff = createServerApp({ ...t.options, kmsUrl: 'http://127.0.0.1:9' })

    const refused = await cutOff.request(`/auth/user/logins/${walletLogin}`, {
      method: 'DELETE',
      headers: { cookie: user.cookie, origin, 'content-type': 'application/json' },
    })

    expect(refused.status).toBe(502)
    expect(await refused.json()).toEqual({ error: { code: 'kms_unavailable', message: 'The key-management service is unavailable' } })
    expect((await loginsOf(user.cookie)).map((row) => row.kind)).toEqual(['email', 'wallet'])
    expect(await answer(await session(walletCookie))).toMatchObject([200, { address: wallet.address }])
    const audited = await sql<{ outcome: string; reason: string }>`select outcome, reason from server_audit_events
      where action = ${`DELETE /auth/user/logins/${walletLogin}`}`.execute(t.store.database.db)
    expect(audited.rows).toEqual([{ outcome: 'failed', reason: '502 kms_unavailable: The key-management service is unavailable' }])
  })

  test('behavior: the session that unlinked the email no longer carries it: neither /auth/session nor its next access JWT names it once another account signs in with it', async () => {
    const email = newEmail()
    const user = await signedInByEmail(email)
    await linkWallet(user.cookie, privateKeyToAccount(generatePrivateKey()))
    const logins = ((await (await get('/auth/user', user.cookie)).json()) as { logins: { id: string; kind: string }[] }).logins
    const emailLogin = logins.find((row) => row.kind === 'email')!
    expect(await answer(await session(user.cookie))).toMatchObject([200, { email }])

    expect((await del(`/auth/user/logins/${emailLogin.id}`, user.cookie)).status).toBe(204)

    const other = await signedInByEmail(email)
    expect(other.organizationId).not.toBe(user.organizationId)
    expect(await answer(await session(user.cookie))).toMatchObject([200, { email: null, organizationId: user.organizationId }])
    const issued = await postAs(user.cookie, '/auth/token', {})
    expect(issued.status).toBe(200)
    const claims = decodeJwt(((await issued.json()) as { accessToken: string }).accessToken)
    expect([claims['org'], claims['email']]).toEqual([user.organizationId, undefined])
  })
})

describe('linking a social account', () => {
  test('error: a session with no kms key of its own (a linked wallet’s Sign-In with Ethereum) cannot link one (403 session_key_required), and nothing is written', async () => {
    const user = await signedInByEmail(newEmail())
    const wallet = privateKeyToAccount(generatePrivateKey())
    await linkWallet(user.cookie, wallet)
    const walletCookie = await signedInWithWallet(wallet)
    const before = await written()
    const key = generateApiKeyPair()
    const email = newEmail()
    const refused = await linkGoogle({ cookie: walletCookie, sessionKey: key }, email)
    expect(await answer(refused)).toEqual([
      403,
      {
        error: {
          code: 'session_key_required',
          message: 'This session holds no key of the wallet; sign in with email, a passkey or a social account to link a social account',
        },
      },
    ])
    expect(await written()).toEqual(before)
    const { oauthProviders } = await t.backend.getOauthProviders({ organizationId: user.organizationId, userId: user.userId })
    expect(oauthProviders).toEqual([])
  })

  test('behavior: the embedded wallet’s own Sign-In with Ethereum links one with the wallet’s session key, and it signs in to the same wallet', async () => {
    const user = await signedInByEmail(newEmail())
    const address = user.address as Address
    const { message, nonceCookie } = await siweMessage(address)
    const { activity } = await user.user.signRawPayload({
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: String(t.clock),
      organizationId: user.organizationId,
      parameters: { signWith: address, payload: toPrefixedMessage(message), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
    })
    const { r, s, v } = activity.result.signRawPayloadResult!
    const signature = serializeSignature({ r: `0x${r}`, s: `0x${s}`, yParity: Number(v) })
    const siwe = await post('/auth/siwe', { message, signature, walletKind: 'embedded' }, { cookie: nonceCookie })
    expect(siwe.status).toBe(200)
    const email = newEmail()
    expect((await linkGoogle(user, email, cookieOf(siwe))).status).toBe(200)
    const { response } = await oauthSignIn(email)
    expect(((await response.json()) as { organizationId: string }).organizationId).toBe(user.organizationId)
  })
})
