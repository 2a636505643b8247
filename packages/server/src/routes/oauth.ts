import { createHash } from 'node:crypto'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { generateP256KeyPair } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import type { Context } from 'hono'
import { createRemoteJWKSet, type JWTPayload, errors as joseErrors, jwtVerify } from 'jose'
import { z } from 'zod'
import { incompleteAnswer, ServerError } from '../errors.js'
import { callKms, enforce, type RouteContext, readBody, startSession } from '../internal/context.js'
import { compressedP256Key, SESSION_KEY_SECONDS, sessionKeySeconds } from '../internal/schemas.js'
import { createAccountSubOrganization } from '../internal/subOrganization.js'
import { type KnownAccount, type LoginKind, newLoginId, type Store } from '../store.js'

/**
 * The social sign-ins with defaults of their own (their names, Apple's form_post). The operator may
 * configure any further OpenID Connect provider under a name of its own (`github`, `discord`, …:
 * `OAUTH_PROVIDER_NAME`), with its issuer and client id.
 */
export const OAUTH_PROVIDERS = ['google', 'apple'] as const
/** A configured provider's name: one of OAUTH_PROVIDERS, or any other the operator configures. */
export type OAuthProviderName = string
/** What a provider's name may be: lower-case letters, digits and dashes, up to 32 characters. */
export const OAUTH_PROVIDER_NAME = /^[a-z][a-z0-9-]{0,31}$/

/**
 * One OpenID issuer the backend accepts ID tokens from: locally the devnet's provider, in
 * production Google (`https://accounts.google.com`) or Apple (`https://appleid.apple.com`) with the
 * app's client id. Endpoints come from the issuer's discovery document unless given.
 */
export type OAuthProviderConfig = {
  /** What users read, in errors and login labels. Default: 'Google', 'Apple', else the provider's name. */
  displayName?: string | undefined
  issuer: string
  clientId: string
  /**
   * For the code exchange of confidential clients: Google web apps' secret, or a function giving
   * the current one, as Apple needs (`appleClientSecret`: a JWT signed with the team's key, renewed
   * before it expires).
   */
  clientSecret?: string | (() => string | Promise<string>) | undefined
  /** Default: from `{issuer}/.well-known/openid-configuration`. */
  authorizationEndpoint?: string | undefined
  tokenEndpoint?: string | undefined
  jwksUri?: string | undefined
  /**
   * How the provider hands the browser its answer: 'query' (a redirect to the app's callback page)
   * or 'form_post' (a POST to the backend's `/auth/oauth/callback`, which redirects the browser on
   * to the app's page). Default: 'form_post' for Apple, which requires it when the email is asked
   * for; 'query' for Google.
   */
  responseMode?: 'query' | 'form_post' | undefined
  /**
   * With 'form_post': the URL the provider posts to, registered with it (Apple's "Return URL").
   * Default: `/auth/oauth/callback` on the origin the browser reached the backend at.
   */
  redirectUri?: string | undefined
}

/** The backend route a provider posts its answer to, with response_mode=form_post. */
export const OAUTH_CALLBACK_PATH = '/auth/oauth/callback'

/** The response mode of a provider, its default as the provider needs. @internal */
export const responseModeOf = (name: OAuthProviderName, config: OAuthProviderConfig) => config.responseMode ?? (name === 'apple' ? 'form_post' : 'query')

const BUILT_IN_NAMES: Readonly<Record<string, string>> = { google: 'Google', apple: 'Apple' }

/** The login kind of a provider's identities. @internal */
export const oauthLoginKind = (name: OAuthProviderName): LoginKind => `oauth:${name}`
/** The subject of an OAuth login: the ID token's issuer and subject. @internal */
export const oauthSubject = (claims: JWTPayload) => `${claims.iss} ${claims.sub}`
/** The provider's name as users read it. @internal */
export const providerNameOf = (name: OAuthProviderName, config?: OAuthProviderConfig) =>
  config?.displayName ?? (Object.hasOwn(BUILT_IN_NAMES, name) ? BUILT_IN_NAMES[name]! : name)

/** The nonce an ID token must carry to sign in the holder of `publicKey`: hex SHA-256 of the key's hex (Turnkey's oauth_login). */
export const oauthNonce = (publicKey: string) => createHash('sha256').update(publicKey).digest('hex')

const invalidToken = (message: string) => new ServerError(400, 'invalid_token', message)
const unverifiedEmail = (provider: string) =>
  new ServerError(400, 'unverified_email', `${provider} has not verified this email (the ID token's email_verified is not true); sign in another way`)

type Discovered = { authorization_endpoint: string; token_endpoint: string; jwks_uri: string }

/** How old a kept key set may grow before a sign-in fetches it anew, in the background. */
const OAUTH_KEYS_REFRESH_MS = 5 * 60_000

/**
 * A provider's keys as kept: jose never blocks on their age (only on an unknown key id, a rotated
 * key, when it fetches them at once); their age is watched here instead.
 */
type KeySet = { readonly jwks: ReturnType<typeof createRemoteJWKSet>; loadedAt: number }

/** Fetches the set anew in the background when older than OAUTH_KEYS_REFRESH_MS, after the token in hand used the kept one. */
function refreshIfOld(keySet: KeySet, at: number): void {
  if (at - keySet.loadedAt < OAUTH_KEYS_REFRESH_MS || keySet.jwks.reloading) return
  keySet.jwks.reload().then(
    () => (keySet.loadedAt = Date.now()),
    () => undefined,
  )
}

/**
 * The issuers, their discovered endpoints and JWKS (fetched once, or ahead by `warm`, and kept;
 * see OAUTH_KEYS_REFRESH_MS); the nonces already used are in the store, shared by every instance. @internal
 */
export function createOAuth(providers: Readonly<Record<OAuthProviderName, OAuthProviderConfig | undefined>>, now: () => number, store: Store) {
  const nameOf = (name: OAuthProviderName) => providerNameOf(name, Object.hasOwn(providers, name) ? providers[name] : undefined)
  const discovered = new Map<OAuthProviderName, Promise<Discovered>>()
  const keySets = new Map<OAuthProviderName, Promise<KeySet>>()

  function discover(name: OAuthProviderName): Promise<Discovered> {
    const config = providers[name]!
    let found = discovered.get(name)
    if (!found) {
      found = (async () => {
        const given = { authorization_endpoint: config.authorizationEndpoint, token_endpoint: config.tokenEndpoint, jwks_uri: config.jwksUri }
        if (given.authorization_endpoint && given.token_endpoint && given.jwks_uri) return given as Discovered
        const response = await fetch(`${config.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`)
        if (!response.ok) throw new Error(`discovery answered ${response.status}`)
        const document = (await response.json()) as Discovered
        return {
          authorization_endpoint: given.authorization_endpoint ?? document.authorization_endpoint,
          token_endpoint: given.token_endpoint ?? document.token_endpoint,
          jwks_uri: given.jwks_uri ?? document.jwks_uri,
        }
      })()
      found.catch(() => discovered.delete(name))
      discovered.set(name, found)
    }
    return found.catch((error: unknown) => {
      throw new ServerError(502, 'oauth_unavailable', `The ${nameOf(name)} sign-in service is unavailable: ${(error as Error).message}`)
    })
  }

  /** The provider's keys, fetched once (a failure is tried again by the next sign-in). */
  function keySetOf(name: OAuthProviderName): Promise<KeySet> {
    let found = keySets.get(name)
    if (!found) {
      found = discover(name).then(async ({ jwks_uri }) => {
        const keySet: KeySet = { jwks: createRemoteJWKSet(new URL(jwks_uri), { cacheMaxAge: Number.POSITIVE_INFINITY }), loadedAt: 0 }
        await keySet.jwks.reload()
        keySet.loadedAt = Date.now()
        return keySet
      })
      found.catch(() => keySets.delete(name))
      keySets.set(name, found)
    }
    return found
  }

  const configured = Object.keys(providers).filter((name) => providers[name] && Object.hasOwn(providers, name))
  return {
    configured,
    /** Fetches every provider's discovery document and keys ahead of the first sign-in; failures are left for it. */
    async warm(): Promise<void> {
      await Promise.all(configured.map((name) => keySetOf(name).catch(() => undefined)))
    },
    /** The provider's settings; undefined for one not configured (never an inherited property of the map). */
    config: (name: OAuthProviderName) => (Object.hasOwn(providers, name) ? providers[name] : undefined),
    /** The provider's name as users read it. */
    displayName: nameOf,
    discover,
    /** Exchanges an authorization code (PKCE) for the ID token. */
    async exchange(name: OAuthProviderName, code: string, codeVerifier: string, redirectUri: string): Promise<string> {
      const config = providers[name]!
      const { token_endpoint } = await discover(name)
      const form = new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        code_verifier: codeVerifier,
        redirect_uri: redirectUri,
        client_id: config.clientId,
      })
      const clientSecret = typeof config.clientSecret === 'function' ? await config.clientSecret() : config.clientSecret
      if (clientSecret) form.set('client_secret', clientSecret)
      const response = await fetch(token_endpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form })
      const answer = (await response.json().catch(() => ({}))) as { id_token?: string; error?: string; error_description?: string }
      if (!response.ok || !answer.id_token)
        throw invalidToken(`${nameOf(name)} refused the sign-in code: ${answer.error_description ?? answer.error ?? response.status}`)
      return answer.id_token
    },
    /**
     * The claims of an ID token, once jose verified its signature against the issuer's JWKS, its
     * issuer, audience and expiry, and the nonce binds it to `sessionPublicKey`, unused before (for
     * a `link`, unused before with this issuer).
     */
    async verify(
      name: OAuthProviderName,
      token: string,
      sessionPublicKey: string,
      use: 'sign-in' | 'link' = 'sign-in',
    ): Promise<JWTPayload & { email: string }> {
      const config = providers[name]!
      let payload: JWTPayload
      try {
        const keySet = await keySetOf(name)
        refreshIfOld(keySet, Date.now())
        ;({ payload } = await jwtVerify(token, keySet.jwks, {
          issuer: config.issuer,
          audience: config.clientId,
          currentDate: new Date(now()),
          requiredClaims: ['exp', 'nonce'],
        }))
      } catch (error) {
        if (error instanceof joseErrors.JOSEError) throw invalidToken(`The ${nameOf(name)} ID token is not valid: ${error.message}`)
        throw error
      }
      const nonce = payload['nonce']
      if (nonce !== oauthNonce(sessionPublicKey)) throw invalidToken('The ID token nonce is not bound to this session key')
      const email = payload['email']
      if (typeof email !== 'string') throw invalidToken('The ID token has no email')
      // The email names the account (security review L3): only an issuer's word that it is verified
      // counts; no claim is no word. Apple sends the string 'true'.
      const verified = payload['email_verified']
      if (verified !== true && verified !== 'true') throw unverifiedEmail(nameOf(name))
      // A nonce is good once, on any instance: kept until its token expires (a replay after that fails on expiry).
      // A link spends it per issuer: one session key may link an identity of each provider (every
      // token of theirs carries the same nonce), each token still once.
      const spent = use === 'link' ? `link ${payload.iss} ${nonce}` : nonce
      if (!(await store.spendOAuthNonce(spent, payload.exp! * 1000, now()))) throw invalidToken('This ID token was used already')
      return { ...payload, email: email.toLowerCase() }
    },
  }
}

export type OAuth = ReturnType<typeof createOAuth>

/**
 * What proves an OAuth identity, for a sign-in or a link: the provider, the browser's session key
 * (the ID token's nonce binds it), and either the ID token or the code to exchange for one.
 * @internal
 */
export const oauthProof = z.object({
  provider: z.string().regex(OAUTH_PROVIDER_NAME, 'must be a provider name'),
  sessionPublicKey: compressedP256Key,
  idToken: z.string().min(1).max(8192).optional(),
  code: z.string().min(1).max(2048).optional(),
  codeVerifier: z
    .string()
    .regex(/^[A-Za-z0-9._~-]{43,128}$/, 'must be a PKCE code verifier')
    .optional(),
  redirectUri: z.url().optional(),
})

/** Either the ID token, or the code with its verifier and redirect URI. @internal */
export const oneOAuthProof = (input: z.infer<typeof oauthProof>) =>
  (input.idToken !== undefined) !== (input.code !== undefined && input.codeVerifier !== undefined && input.redirectUri !== undefined)
export const ONE_OAUTH_PROOF = 'send either idToken, or code with codeVerifier and redirectUri'

const oauthSchema = oauthProof.extend({ sessionSeconds: sessionKeySeconds.optional() }).refine(oneOAuthProof, ONE_OAUTH_PROOF)

/**
 * `POST /auth/oauth` `{provider, sessionPublicKey, sessionSeconds?, idToken | code+codeVerifier+redirectUri}`
 * → `{organizationId, userId, address, sessionExpiresAt}` and the session cookie (kind 'oauth').
 *
 * The ID token (given, or exchanged for the code) is verified with jose against the issuer's JWKS:
 * signature, issuer, audience (the client id), expiry, and a nonce that is the SHA-256 of the
 * browser's session key, used once. Its verified email names the account (the same email is the
 * same wallet, however the user signs in); a new one gets a sub-organization with the OAuth
 * identity. Then the kms's `oauth_login` registers the session key. A refused token changes nothing.
 *
 * @example
 * app.post('/auth/oauth', oauthSignIn(context, oauth))
 */
export const oauthSignIn = (context: RouteContext, oauth: OAuth) => async (c: Context) => {
  const { store, kms, now } = context
  const input = await readBody(c.req.raw, oauthSchema)
  if (!oauth.config(input.provider)) throw new ServerError(404, 'unknown_provider', `${oauth.displayName(input.provider)} sign-in is not configured`)
  enforce(await context.limits.signInsPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  const token = input.idToken ?? (await oauth.exchange(input.provider, input.code!, input.codeVerifier!, input.redirectUri!))
  const claims = await oauth.verify(input.provider, token, input.sessionPublicKey)
  const providerName = oauth.displayName(input.provider)
  const kind = oauthLoginKind(input.provider)
  const subject = oauthSubject(claims)

  // A linked identity opens its user's wallet, whatever email the token carries.
  const linked = await store.login(kind, subject)
  let account: KnownAccount | undefined = linked ? await store.accountByOrganization(linked.organization_id) : undefined
  if (account && linked?.kms_id !== null) {
    // Linked: the kms has the identity (linking recorded it there).
  } else if (account) {
    // Recorded without the kms's id: a pregenerated identity's first sign-in claims its wallet (the
    // kms user gets the identity now), or a sign-in recorded it before (the kms has it: its id is kept now).
    const organizationId = account.organization_id
    const userId = account.user_id
    const { oauthProviders } = await callKms(() => kms.getOauthProviders({ organizationId, userId }))
    let providerId = oauthProviders.find((provider) => provider.issuer === claims.iss && provider.subject === claims.sub)?.providerId
    if (providerId === undefined) {
      const delegated = await callKms(() => context.delegated.client(organizationId))
      const { activity } = await callKms(() =>
        delegated.createOauthProviders({
          type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
          timestampMs: String(now()),
          organizationId,
          parameters: { userId, oauthProviders: [{ providerName, oidcToken: token }] },
        }),
      )
      providerId = (activity.result.createOauthProvidersResultV2 ?? activity.result.createOauthProvidersResult)?.providerIds?.[0]
      if (providerId === undefined) throw incompleteAnswer()
    }
    await store.updateLogin(linked!.id, { kms_id: providerId, label: `${providerName} · ${claims.email}` })
  } else if (!(account = await store.account(claims.email))) {
    // A new user: a sub-organization with a one-minute key of the root user, which registers the identity.
    const bootstrap = generateP256KeyPair()
    const created = await createAccountSubOrganization(context, claims.email, {
      userName: claims.email,
      userEmail: claims.email,
      apiKeys: [{ apiKeyName: 'oauth bootstrap', publicKey: bootstrap.publicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '60' }],
      authenticators: [],
      oauthProviders: [],
    })
    const asUser = new TurnkeyClient({ baseUrl: context.kmsUrl }, new ApiKeyStamper({ apiPublicKey: bootstrap.publicKey, apiPrivateKey: bootstrap.privateKey }))
    await callKms(() =>
      asUser.createOauthProviders({
        type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
        timestampMs: String(now()),
        organizationId: created.subOrganizationId,
        parameters: { userId: created.userId, oauthProviders: [{ providerName, oidcToken: token }] },
      }),
    )
    account = await store.insertAccount({
      email: claims.email,
      organization_id: created.subOrganizationId,
      user_id: created.userId,
      address: created.address,
      created_at: now(),
    })
  } else {
    const { oauthProviders } = await callKms(() => kms.getOauthProviders({ organizationId: account!.organization_id, userId: account!.user_id }))
    const audience = oauth.config(input.provider)!.clientId
    if (!oauthProviders.some((provider) => provider.issuer === claims.iss && provider.subject === claims.sub && provider.audience === audience)) {
      // Linking writes in the sub-organization: the backend's delegated user does it (the parent may not).
      const delegated = await callKms(() => context.delegated.client(account!.organization_id))
      await callKms(() =>
        delegated.createOauthProviders({
          type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
          timestampMs: String(now()),
          organizationId: account!.organization_id,
          parameters: { userId: account!.user_id, oauthProviders: [{ providerName, oidcToken: token }] },
        }),
      )
    }
  }
  // The identity is one of the user's logins from now on (an account from before logins were kept gets it here).
  await store.recordLogin({
    id: newLoginId(),
    kind,
    subject,
    organization_id: account.organization_id,
    user_id: account.user_id,
    address: account.address,
    label: `${providerName} · ${claims.email}`,
    kms_id: null,
    created_at: now(),
  })
  const seconds = input.sessionSeconds ?? SESSION_KEY_SECONDS.default
  const at = now()
  const { activity } = await callKms(() =>
    kms.oauthLogin({
      type: 'ACTIVITY_TYPE_OAUTH_LOGIN',
      timestampMs: String(at),
      organizationId: account!.organization_id,
      parameters: { oidcToken: token, publicKey: input.sessionPublicKey, expirationSeconds: String(seconds) },
    }),
  )
  if (!activity.result.oauthLoginResult?.session) throw incompleteAnswer()
  await startSession(c, context, { ...account, session_public_key: input.sessionPublicKey }, 'oauth')
  return c.json({
    organizationId: account.organization_id,
    userId: account.user_id,
    address: account.address,
    sessionExpiresAt: new Date(at + seconds * 1000).toISOString(),
  })
}

const callbackSchema = z.object({
  state: z.string().min(1).max(4096),
  code: z.string().min(1).max(4096).optional(),
  error: z.string().min(1).max(256).optional(),
  error_description: z.string().max(1024).optional(),
})

/** The app page a form_post state names: `<random>.<base64url of the page's URL>`, on an allowed origin. */
function returnPageOf(state: string, allowedOrigins: readonly string[]): URL {
  const encoded = state.slice(state.indexOf('.') + 1)
  let page: URL | undefined
  try {
    page = state.includes('.') ? new URL(Buffer.from(encoded, 'base64url').toString('utf8')) : undefined
  } catch {
    page = undefined
  }
  if (!page) throw new ServerError(400, 'invalid_state', 'The sign-in answer names no page to return to')
  if (!allowedOrigins.includes(page.origin))
    throw new ServerError(400, 'invalid_state', `The sign-in answer names a page on ${page.origin}, which is not an allowed origin`)
  return page
}

/**
 * `POST /auth/oauth/callback`: where a provider with `response_mode=form_post` (Apple) posts its
 * answer (`state`, and `code` or `error`). The page that started the sign-in put its own callback
 * URL in the state; on an allowed origin only, the browser is sent there (303) with the answer
 * in the query, as a provider redirecting would, and the popup or redirect sign-in finishes there.
 * Nothing is exchanged or stored here: the code is worthless without the browser's PKCE verifier.
 *
 * @example
 * app.post('/auth/oauth/callback', oauthFormPost(allowedOrigins))
 */
export const oauthFormPost = (allowedOrigins: readonly string[]) => async (c: Context) => {
  if (!/^application\/x-www-form-urlencoded\b/i.test(c.req.header('content-type') ?? ''))
    throw new ServerError(400, 'invalid_request', 'The provider must post the sign-in answer as a form')
  const form = new URLSearchParams(await c.req.text())
  const parsed = callbackSchema.safeParse(Object.fromEntries(form))
  if (!parsed.success || (parsed.data.code === undefined) === (parsed.data.error === undefined))
    throw new ServerError(400, 'invalid_request', 'The sign-in answer must have a state and either a code or an error')
  const page = returnPageOf(parsed.data.state, allowedOrigins)
  for (const key of ['state', 'code', 'error', 'error_description'] as const) {
    const value = parsed.data[key]
    if (value !== undefined) page.searchParams.set(key, value)
  }
  // The code is in the page's address from here on, as with a redirecting provider: keep it out of Referer headers and caches.
  return c.body(null, 303, { location: page.href, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
}
