import { createHash, generateKeyPairSync } from 'node:crypto'
import { getFreePort, oidcInstance } from '@latchkey/devnet'
import { createKms, generateApiKeyPair, type Kms } from '@latchkey/kms'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createServerApp, oauthNonce, openStore, type ServerAppOptions } from '../src/index.js'

// "Continue with Google / Apple" against a real OpenID provider (oidc-provider, the devnet's, playing
// both issuers), a real kms, and the backend's /auth/oauth. The browser's part is played here with
// fetch: the provider's sign-in page takes an email; the code comes back to the redirect uri.

const origin = 'http://localhost:5173'
const redirectUri = `${origin}/oauth/callback`
const clientId = 'latchkey-demo'
const backendKey = generateApiKeyPair()
let kms: Kms
let oidc: ReturnType<typeof oidcInstance>
let options: ServerAppOptions
let clock = Date.now()

beforeAll(async () => {
  kms = createKms({ port: await getFreePort(), now: () => clock })
  oidc = oidcInstance({ port: await getFreePort(), clientId, redirectUris: [redirectUri] })
  await Promise.all([kms.start(), oidc.start()])
  const organizationId = (await kms.createParentOrganization({ name: 'Demo', userName: 'backend', publicKey: backendKey.apiPublicKey })).organizationId
  options = {
    store: await openStore(':memory:'),
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

/** Signs in at the provider as a browser would (its page: an email, "Sign in"); answers the code and the PKCE verifier. */
async function authorize(provider: 'google' | 'apple', email: string, sessionPublicKey: string) {
  const verifier = base64url(Buffer.from(crypto.getRandomValues(new Uint8Array(32))))
  const url = new URL(`${oidc.issuers[provider].issuer}/auth`)
  url.search = new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid email',
    state: 'state',
    nonce: oauthNonce(sessionPublicKey),
    code_challenge: base64url(createHash('sha256').update(verifier).digest()),
    code_challenge_method: 'S256',
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
    expect(page).toContain('<label for="email">Email</label>')
    expect(page).toContain('<button type="submit">Sign in</button>')
    next = new URL(/action="([^"]+)"/.exec(page)![1]!.replace(/&#47;/g, '/'), next)
    body = new URLSearchParams({ email })
  }
  throw new Error('the provider never sent the browser back')
}

/** The ID token the code is worth, as a provider's token endpoint answers it. */
async function idTokenFor(provider: 'google' | 'apple', email: string, sessionPublicKey: string) {
  const { code, codeVerifier } = await authorize(provider, email, sessionPublicKey)
  const response = await fetch(`${oidc.issuers[provider].issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: codeVerifier, redirect_uri: redirectUri, client_id: clientId }),
  })
  return ((await response.json()) as { id_token: string }).id_token
}

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
      apple: { clientId, authorizationEndpoint: `${oidc.issuers.apple.issuer}/auth` },
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
    expect(first.headers.get('set-cookie')).toMatch(/^latchkey_session=/)
    expect(await whoami(key, account.organizationId)).toMatchObject({ userId: account.userId })

    for (const provider of ['google', 'apple'] as const) {
      const again = generateApiKeyPair()
      const response = await post(app, { provider, sessionPublicKey: again.apiPublicKey, idToken: await idTokenFor(provider, email, again.apiPublicKey) })
      expect(await response.json()).toMatchObject({ organizationId: account.organizationId, userId: account.userId, address: account.address })
    }
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
})
