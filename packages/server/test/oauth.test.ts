import { createHash, generateKeyPairSync } from 'node:crypto'
import { getFreePort, oidcInstance } from '@latchkey/devnet'
import { createKms, generateApiKeyPair, type Kms } from '@latchkey/kms'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { freshDatabaseUrl } from '../../service/test/testDatabase.js'
import { createServerApp, OAUTH_CALLBACK_PATH, oauthNonce, openStore, type ServerAppOptions } from '../src/index.js'

// "Continue with Google / Apple" against a real OpenID provider (oidc-provider, the devnet's, playing
// both issuers), a real kms that verifies the same tokens against the same JWKS, and the backend's
// /auth/oauth. The browser's part is played here with fetch: the provider's sign-in page takes an
// email; Google's code comes back to the app's page, Apple's is posted (form_post) to the backend,
// which sends the browser on to the app's page.

const origin = 'http://localhost:5173'
const redirectUri = `${origin}/oauth/callback`
// Where "Apple" posts: the backend's route, on the origin app.request() answers as.
const backendCallback = `http://localhost${OAUTH_CALLBACK_PATH}`
const clientId = 'latchkey-demo'
const backendKey = generateApiKeyPair()
let kms: Kms
let oidc: ReturnType<typeof oidcInstance>
let options: ServerAppOptions
let clock = Date.now()
let databaseUrl: string

beforeAll(async () => {
  oidc = oidcInstance({
    port: await getFreePort(),
    clientId,
    redirectUris: [redirectUri, backendCallback],
    // Test users whose issuer says their email is not verified, or says nothing.
    emailVerified: (email) => (email.startsWith('unverified.') ? false : email.startsWith('silent.') ? undefined : true),
  })
  kms = createKms({
    port: await getFreePort(),
    now: () => clock,
    oidcIssuers: [oidc.issuers.google, oidc.issuers.apple].map(({ issuer }) => ({ issuer, audiences: [clientId] })),
  })
  await Promise.all([kms.start(), oidc.start()])
  const { organizationId } = await kms.createParentOrganization({ name: 'Demo', userName: 'backend', publicKey: backendKey.apiPublicKey })
  // A SQLite file, or PostgreSQL in `npm run test:server-postgres`: a second instance opens it too.
  databaseUrl = await freshDatabaseUrl()
  options = {
    store: await openStore(databaseUrl),
    kmsUrl: kms.url,
    organizationId,
    ...backendKey,
    sessionSignerPublicKey: kms.signerPublicKey,
    appName: 'Latchkey Demo',
    allowedOrigins: [origin],
    now: () => clock,
    oauth: { google: { issuer: oidc.issuers.google.issuer, clientId }, apple: { issuer: oidc.issuers.apple.issuer, clientId } },
  }
})
afterAll(async () => {
  await Promise.all([kms.stop(), oidc.stop()])
  await options.store.close()
})

let people = 0
const newEmail = () => `oauth${++people}.${Date.now()}@example.test`
const base64url = (bytes: Buffer) => bytes.toString('base64url')

/**
 * Signs in at the provider as a browser would (its page: an email, "Sign in"); answers the code and
 * the PKCE verifier. Apple answers with a form the browser posts to the backend (`app`), whose 303
 * sends it on to the app's page with the code.
 */
async function authorize(provider: 'google' | 'apple', email: string, sessionPublicKey: string, app?: ReturnType<typeof createServerApp>) {
  const verifier = base64url(Buffer.from(crypto.getRandomValues(new Uint8Array(32))))
  const formPost = provider === 'apple'
  const state = formPost ? `state.${Buffer.from(redirectUri).toString('base64url')}` : 'state'
  const url = new URL(`${oidc.issuers[provider].issuer}/auth`)
  url.search = new URLSearchParams({
    client_id: clientId,
    redirect_uri: formPost ? backendCallback : redirectUri,
    response_type: 'code',
    scope: 'openid email',
    state,
    nonce: oauthNonce(sessionPublicKey),
    code_challenge: base64url(createHash('sha256').update(verifier).digest()),
    code_challenge_method: 'S256',
    ...(formPost ? { response_mode: 'form_post' } : {}),
  }).toString()
  const cookies = new Map<string, string>()
  let next: URL = url
  let body: URLSearchParams | undefined
  for (let hop = 0; hop < 10; hop++) {
    const response = await fetch(next, {
      method: body ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(body ? { body: body.toString() } : {}),
    })
    body = undefined
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const [name, ...value] = pair!.split('=')
      cookies.set(name!, value.join('='))
    }
    const location = response.headers.get('location')
    if (location?.startsWith(redirectUri)) return { code: new URL(location).searchParams.get('code')!, codeVerifier: verifier }
    if (location) {
      next = new URL(location, next)
      continue
    }
    const page = await response.text()
    const action = /<form method="post" action="([^"]+)"/.exec(page)?.[1]
    if (formPost && action === backendCallback) {
      // The provider's self-submitting form: what the browser posts to the backend.
      const fields = new URLSearchParams([...page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/>/g)].map((match) => [match[1]!, match[2]!]))
      const answer = await app!.request(OAUTH_CALLBACK_PATH, {
        method: 'POST',
        body: fields.toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(oidc.issuers.apple.issuer).origin },
      })
      expect([answer.status, answer.headers.get('cache-control'), answer.headers.get('referrer-policy')]).toEqual([303, 'no-store', 'no-referrer'])
      const appPage = new URL(answer.headers.get('location')!)
      expect([appPage.origin + appPage.pathname, appPage.searchParams.get('state')]).toEqual([redirectUri, state])
      return { code: appPage.searchParams.get('code')!, codeVerifier: verifier }
    }
    expect(page).toContain('<label for="email">Email</label>')
    expect(page).toContain('<button type="submit">Sign in</button>')
    next = new URL(action!.replace(/&#47;/g, '/'), next)
    body = new URLSearchParams({ email })
  }
  throw new Error('the provider never sent the browser back')
}

/** The ID token the provider issues for `email`, bound to `sessionPublicKey`. */
const idTokenFor = (provider: 'google' | 'apple', email: string, sessionPublicKey: string) =>
  oidc.idToken({ provider, email, nonce: oauthNonce(sessionPublicKey), redirectUri: provider === 'apple' ? backendCallback : redirectUri })

function post(app: ReturnType<typeof createServerApp>, json: unknown) {
  return app.request('/auth/oauth', { method: 'POST', body: JSON.stringify(json), headers: { 'content-type': 'application/json', origin } })
}

const whoami = (key: { apiPublicKey: string; apiPrivateKey: string }, organizationId: string) =>
  new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(key)).getWhoami({ organizationId })

describe('POST /auth/oauth', () => {
  test('default: Google by code: a new wallet, the session key registered; the same email again, and by Apple, is the same wallet', async () => {
    const app = createServerApp(options)
    const config = (await (await app.request('/auth/config')).json()) as { oauth: Record<string, { clientId: string; authorizationEndpoint: string }> }
    expect(config.oauth).toEqual({
      google: { clientId, authorizationEndpoint: `${oidc.issuers.google.issuer}/auth` },
      apple: { clientId, authorizationEndpoint: `${oidc.issuers.apple.issuer}/auth`, responseMode: 'form_post', redirectUri: backendCallback },
    })

    const email = newEmail()
    const key = generateApiKeyPair()
    const first = await post(app, {
      provider: 'google',
      sessionPublicKey: key.apiPublicKey,
      redirectUri,
      ...(await authorize('google', email, key.apiPublicKey)),
    })
    expect(first.status).toBe(200)
    const account = (await first.json()) as { organizationId: string; userId: string; address: string; sessionExpiresAt: string }
    expect(account.address).toMatch(/^0x[0-9a-fA-F]{40}$/)
    expect(account.sessionExpiresAt).toBe(new Date(clock + 900_000).toISOString())
    expect(first.headers.get('set-cookie')).toMatch(/^__Host-latchkey_session=/)
    expect(await whoami(key, account.organizationId)).toMatchObject({ userId: account.userId })

    for (const provider of ['google', 'apple'] as const) {
      const again = generateApiKeyPair()
      const response = await post(app, { provider, sessionPublicKey: again.apiPublicKey, idToken: await idTokenFor(provider, email, again.apiPublicKey) })
      expect(await response.json()).toMatchObject({ organizationId: account.organizationId, userId: account.userId, address: account.address })
    }
  })

  test('default: Apple by form_post: the provider posts to the backend, which sends the browser to the app page with the code; that code signs in', async () => {
    const app = createServerApp(options)
    const email = newEmail()
    const key = generateApiKeyPair()
    const response = await post(app, {
      provider: 'apple',
      sessionPublicKey: key.apiPublicKey,
      redirectUri: backendCallback,
      ...(await authorize('apple', email, key.apiPublicKey, app)),
    })
    expect(response.status).toBe(200)
    const account = (await response.json()) as { organizationId: string; userId: string }
    expect(await whoami(key, account.organizationId)).toMatchObject({ userId: account.userId })
  })

  test('error: the form_post route refuses an answer without a state naming an allowed page, or without code and error; the error is handed on', async () => {
    const app = createServerApp(options)
    const callback = (fields: Record<string, string>, contentType = 'application/x-www-form-urlencoded') =>
      app.request(OAUTH_CALLBACK_PATH, { method: 'POST', body: new URLSearchParams(fields).toString(), headers: { 'content-type': contentType } })
    const stateFor = (page: string) => `nonce.${Buffer.from(page).toString('base64url')}`
    const refused = async (answer: Response) => [answer.status, ((await answer.json()) as { error: { code: string; message: string } }).error]
    expect(await refused(await callback({ state: stateFor('https://evil.example/oauth/callback'), code: 'c' }))).toEqual([
      400,
      { code: 'invalid_state', message: 'The sign-in answer names a page on https://evil.example, which is not an allowed origin' },
    ])
    expect(await refused(await callback({ state: 'no-page', code: 'c' }))).toEqual([
      400,
      { code: 'invalid_state', message: 'The sign-in answer names no page to return to' },
    ])
    expect(await refused(await callback({ state: stateFor(redirectUri) }))).toEqual([
      400,
      { code: 'invalid_request', message: 'The sign-in answer must have a state and either a code or an error' },
    ])
    expect(await refused(await callback({ state: stateFor(redirectUri), code: 'c' }, 'application/json'))).toEqual([
      400,
      { code: 'invalid_request', message: 'The provider must post the sign-in answer as a form' },
    ])
    // The user cancelled at Apple: the page learns it as from a redirecting provider.
    const cancelled = await callback({ state: stateFor(redirectUri), error: 'user_cancelled_authorize' })
    expect([cancelled.status, cancelled.headers.get('location')]).toEqual([
      303,
      `${redirectUri}?state=${encodeURIComponent(stateFor(redirectUri))}&error=user_cancelled_authorize`,
    ])
  })

  test("error: a forged, expired or wrong-audience token, another key's nonce, or a reused token is refused and nothing is written", async () => {
    const app = createServerApp(options)
    const email = newEmail()
    const key = generateApiKeyPair()
    const token = await idTokenFor('google', email, key.apiPublicKey)
    const refuse = async (body: object, message: string | RegExp, target = app) => {
      const response = await post(target, body)
      expect(response.status).toBe(400)
      const { error } = (await response.json()) as { error: { code: string; message: string } }
      expect(error.code).toBe('invalid_token')
      expect(error.message).toMatch(message)
    }

    // Forged: the issuer's key id and claims, another key's signature.
    const [header, payload] = token.split('.')
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>
    const { kid } = JSON.parse(Buffer.from(header!, 'base64url').toString()) as { kid: string }
    const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid }).sign(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey)
    await refuse({ provider: 'google', sessionPublicKey: key.apiPublicKey, idToken: forged }, 'signature verification failed')
    // Wrong audience: a backend whose client id is another.
    const otherApp = createServerApp({ ...options, oauth: { google: { issuer: oidc.issuers.google.issuer, clientId: 'another-app' } } })
    await refuse({ provider: 'google', sessionPublicKey: key.apiPublicKey, idToken: token }, /"aud" claim/, otherApp)
    // Another session key than the nonce names.
    await refuse(
      { provider: 'google', sessionPublicKey: generateApiKeyPair().apiPublicKey, idToken: token },
      'The ID token nonce is not bound to this session key',
    )
    // Expired: an hour and a bit later.
    const now = clock
    clock = (claims['exp'] as number) * 1000 + 1000
    try {
      await refuse({ provider: 'google', sessionPublicKey: key.apiPublicKey, idToken: token }, /"exp" claim/)
    } finally {
      clock = now
    }
    expect(await options.store.account(email)).toBeUndefined()

    // Used once, then refused; the second attempt writes nothing more.
    expect((await post(app, { provider: 'google', sessionPublicKey: key.apiPublicKey, idToken: token })).status).toBe(200)
    const account = (await options.store.account(email))!
    const keys = async () =>
      (
        await new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(backendKey)).getApiKeys({
          organizationId: account.organization_id,
          userId: account.user_id,
        })
      ).apiKeys.length
    const before = await keys()
    await refuse({ provider: 'google', sessionPublicKey: key.apiPublicKey, idToken: token }, 'This ID token was used already')
    expect(await keys()).toBe(before)
  })

  test('error: an ID token whose email_verified is false or absent is refused, before its nonce is spent; nothing is written', async () => {
    const app = createServerApp(options)
    for (const [prefix, provider] of [
      ['unverified', 'google'],
      ['silent', 'google'],
      ['silent', 'apple'],
    ] as const) {
      const email = `${prefix}.${newEmail()}`
      const key = generateApiKeyPair()
      const idToken = await idTokenFor(provider, email, key.apiPublicKey)
      const claims = JSON.parse(Buffer.from(idToken.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>
      expect(claims['email_verified']).toBe(prefix === 'unverified' ? false : undefined)
      const response = await post(app, { provider, sessionPublicKey: key.apiPublicKey, idToken })
      const name = provider === 'google' ? 'Google' : 'Apple'
      expect([response.status, await response.json()]).toEqual([
        400,
        {
          error: {
            code: 'unverified_email',
            message: `${name} has not verified this email (the ID token's email_verified is not true); sign in another way`,
          },
        },
      ])
      expect(response.headers.get('set-cookie')).toBeNull()
      expect(await options.store.account(email)).toBeUndefined()
      // The nonce was not spent: the refusal wrote nothing.
      expect(await options.store.spendOAuthNonce(claims['nonce'] as string, (claims['exp'] as number) * 1000, clock)).toBe(true)
    }
  })

  test('error: a token used on one instance is refused on another sharing its database, which writes nothing', async () => {
    const secondStore = await openStore(databaseUrl)
    try {
      const [first, second] = [createServerApp(options), createServerApp({ ...options, store: secondStore })]
      const email = newEmail()
      const key = generateApiKeyPair()
      const token = await idTokenFor('apple', email, key.apiPublicKey)
      const body = { provider: 'apple', sessionPublicKey: key.apiPublicKey, idToken: token }
      expect((await post(first, body)).status).toBe(200)
      const account = (await secondStore.account(email))!
      const keys = async () =>
        (
          await new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(backendKey)).getApiKeys({
            organizationId: account.organization_id,
            userId: account.user_id,
          })
        ).apiKeys.length
      const before = await keys()
      const replay = await post(second, body)
      expect([replay.status, await replay.json()]).toEqual([400, { error: { code: 'invalid_token', message: 'This ID token was used already' } }])
      expect(await keys()).toBe(before)
    } finally {
      await secondStore.close()
    }
  })
})
