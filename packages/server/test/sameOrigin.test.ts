import { describe, expect, test } from 'vitest'
import { OAUTH_CALLBACK_PATH } from '../src/index.js'
import { answer, generateApiKeyPair, newEmail, origin, useBackend } from './backend.js'

// CSRF and login CSRF (security review M1): a page on another origin that is same-site with the
// backend (a sibling subdomain, another port of localhost) gets the browser's SameSite cookie on
// its form posts and no-cors fetches. Such a request carries a safelisted type and the page's own
// Origin; it is refused before the route runs, and nothing is written.

const { t, post, mailTo, frameAnswer, signedUpWithPasskey, stampLogin, withPasskey, session } = useBackend()
const evil = 'https://evil.sibling.example'
const refusedOrigin = (from: string) => [403, { error: { code: 'origin_not_allowed', message: `This request must come from an allowed origin, not ${from}` } }]
const noOrigin = [403, { error: { code: 'origin_not_allowed', message: 'This request must come from an allowed origin, and it named none' } }]
const notJson = [403, { error: { code: 'json_required', message: 'This request must be sent as application/json' } }]

/** A request as a page sends it without a preflight: a safelisted type, any origin. */
const send = (path: string, body: string, headers: Record<string, string>) => t.app.request(path, { method: 'POST', body, headers })

/** The API keys of the account's user, as the parent organization reads them. */
const apiKeysOf = async (account: { organizationId: string; userId: string }) =>
  (await t.backend.getApiKeys({ organizationId: account.organizationId, userId: account.userId })).apiKeys.map((key) => key.credential.publicKey)

describe('the review’s attack shape: a foreign page acting with the victim’s cookie (sign out everywhere, deleting the victim’s keys)', () => {
  test('error: a text/plain no-cors fetch from a foreign origin: 403, no key deleted in the kms', async () => {
    const victim = await signedUpWithPasskey({ email: newEmail() })
    const keysBefore = await apiKeysOf(victim)
    const response = await send('/auth/signout', JSON.stringify({ everywhere: true }), {
      'content-type': 'text/plain;charset=UTF-8',
      origin: evil,
      cookie: victim.cookie,
    })
    expect(await answer(response)).toEqual(refusedOrigin(evil))
    // No CORS grant to the foreign page either.
    expect(response.headers.get('access-control-allow-origin')).toBe(null)
    expect(await apiKeysOf(victim)).toEqual(keysBefore)
  })

  test('error: the HTML form shape (enctype=text/plain, a form-encoded body): 403, no key deleted', async () => {
    const victim = await signedUpWithPasskey({ email: newEmail() })
    const keysBefore = await apiKeysOf(victim)
    // <form enctype="text/plain"><input name='{"everywhere":true,"x":"' value='"}'> posts this body.
    const formBody = `{"everywhere":true,"x":"="}`
    expect(await answer(await send('/auth/signout', formBody, { 'content-type': 'text/plain', origin: evil, cookie: victim.cookie }))).toEqual(
      refusedOrigin(evil),
    )
    expect(
      await answer(
        await send('/auth/signout', 'everywhere=true', {
          'content-type': 'application/x-www-form-urlencoded',
          origin: evil,
          cookie: victim.cookie,
        }),
      ),
    ).toEqual(refusedOrigin(evil))
    expect(await apiKeysOf(victim)).toEqual(keysBefore)
  })

  test('error: a text/plain body from the allowed origin, or JSON with no origin: 403, no key deleted', async () => {
    const victim = await signedUpWithPasskey({ email: newEmail() })
    const keysBefore = await apiKeysOf(victim)
    const body = JSON.stringify({ everywhere: true })
    expect(await answer(await send('/auth/signout', body, { 'content-type': 'text/plain;charset=UTF-8', origin, cookie: victim.cookie }))).toEqual(notJson)
    expect(await answer(await send('/auth/signout', body, { 'content-type': 'application/json', cookie: victim.cookie }))).toEqual(noOrigin)
    expect(await apiKeysOf(victim)).toEqual(keysBefore)
  })
})

describe('other cookie routes', () => {
  test('error: a foreign page cannot sign the victim out', async () => {
    const victim = await signedUpWithPasskey({ email: newEmail() })
    expect(await answer(await send('/auth/signout', '', { 'content-type': 'text/plain', origin: evil, cookie: victim.cookie }))).toEqual(refusedOrigin(evil))
    expect((await answer(await session(victim.cookie)))[1]).toMatchObject({ organizationId: victim.organizationId })
  })

  test('error: a foreign page cannot take an access token, even with no body', async () => {
    const victim = await signedUpWithPasskey({ email: newEmail() })
    expect(await answer(await t.app.request('/auth/token', { method: 'POST', headers: { origin: evil, cookie: victim.cookie } }))).toEqual(refusedOrigin(evil))
  })
})

describe('login CSRF: signing the victim’s browser into the attacker’s wallet', () => {
  test('error: the attacker’s session JWT posted to /auth/login from a foreign page: 403, no cookie, and the JWT is not spent', async () => {
    const attacker = await signedUpWithPasskey({ email: newEmail() })
    const jwt = await stampLogin(withPasskey(attacker.authenticator), generateApiKeyPair().apiPublicKey)
    const response = await send('/auth/login', JSON.stringify({ session: jwt }), { 'content-type': 'text/plain', origin: evil })
    expect(await answer(response)).toEqual(refusedOrigin(evil))
    expect(response.headers.get('set-cookie')).toBe(null)
    // Refused before the route: the token was not spent, its owner still signs in with it.
    expect((await post('/auth/login', { session: jwt })).status).toBe(200)
  })

  test('error: the attacker’s emailed code posted to /auth/email/verify from a foreign page: 403, no cookie, the code still unused', async () => {
    const email = newEmail()
    const start = await post('/auth/email/start', { email })
    const sent = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
    const code = /sign-in code is (\d{6})\./.exec((await mailTo(email))[0]!.text)![1]!
    const fields = await frameAnswer(sent, code)
    for (const headers of [{ 'content-type': 'text/plain', origin: evil }, { 'content-type': 'application/x-www-form-urlencoded' }]) {
      const response = await send('/auth/email/verify', JSON.stringify(fields), headers)
      expect(response.status).toBe(403)
      expect(response.headers.get('set-cookie')).toBe(null)
    }
    expect((await post('/auth/email/verify', fields)).status).toBe(200)
  })
})

describe('what is exempt', () => {
  test('behavior: the provider’s form post to the callback needs no origin (its state names the page)', async () => {
    const state = `x.${Buffer.from(`${origin}/oauth`).toString('base64url')}`
    const response = await send(OAUTH_CALLBACK_PATH, new URLSearchParams({ state, code: 'c' }).toString(), {
      'content-type': 'application/x-www-form-urlencoded',
      origin: 'https://appleid.apple.com',
    })
    expect([response.status, response.headers.get('location')]).toEqual([303, `${origin}/oauth?state=${state}&code=c`])
  })

  test('behavior: a refresh token sent by a service (no cookie, no origin) is read; with a cookie it must come from the page', async () => {
    const unknown = { refreshToken: 'a'.repeat(43) }
    const refused = [401, { error: { code: 'invalid_refresh_token', message: 'This refresh token is unknown, used, expired or signed out; sign in again' } }]
    expect(await answer(await send('/auth/token/refresh', JSON.stringify(unknown), { 'content-type': 'application/json' }))).toEqual(refused)
    expect((await send('/auth/token/revoke', JSON.stringify(unknown), { 'content-type': 'application/json' })).status).toBe(204)
    expect(await answer(await send('/auth/token/refresh', JSON.stringify(unknown), { 'content-type': 'text/plain', origin: evil, cookie: 'a=b' }))).toEqual(
      refusedOrigin(evil),
    )
  })
})
