import { type Logger, type Metrics, routeObserver, tracingOn } from '@latchkey/service'
import type { AuditTrail, Database } from '@latchkey/service/database'
import { Hono } from 'hono'
import { createServerAudit } from './audit.js'
import { ServerError } from './errors.js'
import { createRouteContext, LIMITS, type PerIpLimits } from './internal/context.js'
import type { SiweChain } from './internal/siwe.js'
import { auditAuth } from './middleware/audit.js'
import { bodyLimit } from './middleware/bodyLimit.js'
import { signInMetrics } from './middleware/metrics.js'
import { sameOrigin } from './middleware/sameOrigin.js'
import { type PaymasterPolicyInput, parsePaymasterPolicy } from './paymaster/policy.js'
import type { PaymasterSchema } from './paymaster/schema.js'
import { createPaymaster, PAYMASTER_ERROR_CODES, type Paymaster } from './paymaster/service.js'
import { ADMIN_PREFIX, adminRoutes } from './routes/admin.js'
import { cacao } from './routes/cacao.js'
import { emailStart, emailVerify } from './routes/email.js'
import { guest } from './routes/guest.js'
import { login } from './routes/login.js'
import { nonce } from './routes/nonce.js'
import {
  createOAuth,
  OAUTH_CALLBACK_PATH,
  OAUTH_PROVIDERS,
  type OAuthProviderConfig,
  type OAuthProviderName,
  oauthFormPost,
  oauthSignIn,
  responseModeOf,
} from './routes/oauth.js'
import { passkeySignup, passkeySignupStart } from './routes/passkeySignup.js'
import { recoveryStart } from './routes/recoveryStart.js'
import { session, signOut } from './routes/session.js'
import { siwe } from './routes/siwe.js'
import { issueToken, jwks, refreshToken, revokeToken } from './routes/token.js'
import { linkEmail, linkEmailStart, linkOAuth, linkPasskey, linkWallet, unlink, user } from './routes/user.js'
import type { Store } from './store.js'

export type ServerAppOptions = {
  store: Store
  /** The key-management API (our kms locally, Turnkey in production). */
  kmsUrl: string
  /** The parent organization the backend acts for, and its API key pair. */
  organizationId: string
  apiPublicKey: string
  apiPrivateKey: string
  /**
   * What delegated users' keys derive from, 64 hex characters. Default: `apiPrivateKey`, as every
   * account made before this setting existed; set it to that key before rotating the API key, so
   * existing accounts keep their delegated access.
   */
  delegationSecret?: string | undefined
  /**
   * The key that signs session JWTs (uncompressed P-256 hex): our kms's `signerPublicKey` locally
   * (dev.json `kms.signerPublicKey`); while the kms's signer rotates, its signer and next key.
   * Default: Turnkey's production notarizer key.
   */
  sessionSignerPublicKey?: string | readonly string[] | undefined
  /** The key-management API as browsers reach it, published at /auth/config. Default: `kmsUrl`. */
  publicKmsUrl?: string | undefined
  /** Where the key-management frames (export, import, recovery) are served, published at /auth/config. */
  framesUrl?: string | undefined
  /** Shown in sign-in and recovery emails. */
  appName: string
  /**
   * "Continue with Google / Apple / …": the OpenID issuers and the app's client ids, by provider name
   * (`google`, `apple`, or any other OpenID Connect provider under a name of its own, `github`,
   * `discord`: `OAUTH_PROVIDER_NAME`; locally the devnet's provider plays them all). Published at
   * /auth/config; ID tokens are verified against their JWKS.
   */
  oauth?: Readonly<Record<OAuthProviderName, OAuthProviderConfig | undefined>> | undefined
  /** Browser origins allowed to call with credentials (the demo's); SIWE messages' uris must have one. */
  allowedOrigins: readonly string[]
  /**
   * The domains (host[:port]) a SIWE message may be for; a message's uri may also have their https
   * origins. Default: the hosts of `allowedOrigins`.
   */
  siweDomains?: readonly string[] | undefined
  /** The chains SIWE messages may name, each with an RPC url its signatures are verified through. Default: none. */
  chains?: readonly SiweChain[] | undefined
  /** Clock in unix ms. */
  now?: (() => number) | undefined
  /** The client's IP, for per-IP limits; default: the socket's address, else "unknown". */
  ipOf?: ((request: Request, env: unknown) => string) | undefined
  /**
   * The per-IP limits, for a deployment whose clients share one address, as every browser on the
   * local stack is 127.0.0.1: sign-ins (default `LIMITS.perIp`), SIWE nonces (`LIMITS.noncesPerIp`),
   * code tries (`LIMITS.verifiesPerIp`), paymaster requests (`LIMITS.paymasterPerIp`) and guest
   * accounts (`LIMITS.guestsPerIp`) per window. The per-email and per-code limits stay.
   */
  limitsPerIp?: PerIpLimits | undefined
  /**
   * "Continue as guest" (`POST /auth/guest`): a wallet with no login, published at /auth/config as
   * `guests: true` so the connect modal offers it. Default off (the route answers 404): each guest
   * is a kms sub-organization, so an operator opts in; the dev stack has it on.
   */
  guests?: boolean | undefined
  /** Guest accounts per window from all networks together (`POST /auth/guest`). Default `LIMITS.guests`. */
  guestsPerWindow?: number | undefined
  /** Session length. Default 7 days. */
  sessionSeconds?: number | undefined
  /** Where unexpected errors (answered 500) are logged. Default: the console. */
  logger?: Logger | undefined
  /** Counts requests by route, sign-ins by kind and outcome, rate-limit hits (`latchkey-server --metrics-port`). Default: nothing counted. */
  metrics?: Metrics | undefined
  /**
   * The P-256 keys of session JWTs (`POST /auth/token`): one PKCS#8 PEM or private JWK (JSON), or
   * several (PEM blocks one after another, a JSON array of JWKs or a JWK Set). The first signs;
   * all are published in the JWKS, so a rotation overlaps. Default: a key generated for this
   * process (development only: its tokens die with it, and instances behind one load balancer
   * need the same key).
   */
  sessionJwtKey?: string | undefined
  /**
   * The `iss` of session JWTs: the backend's public URL (required in production by the CLI). Never
   * taken from a request. Default `SESSION_JWT_DEFAULTS.issuer`, http://localhost:8787 (the dev
   * stack's backend); `createAppServer`'s default is the URL it listens on.
   */
  sessionJwtIssuer?: string | undefined
  /** The `aud` of session JWTs, which the app's services check. Default `SESSION_JWT_DEFAULTS.audience`, 'latchkey-app'. */
  sessionJwtAudience?: string | undefined
  /** How long an access JWT lasts, 60 to 3600 seconds. Default 300. */
  accessTokenSeconds?: number | undefined
  /** The largest request body accepted, counted as it streams in. Default `LIMITS.bodyBytes` (64 KiB). */
  maxBodyBytes?: number | undefined
  /** Where each `POST /auth/*` and `DELETE /auth/*` outcome is recorded (refusals included). Default: the store's trail under the development audit key. */
  audit?: AuditTrail | undefined
  /** The bearer token of the admin API (`/admin/*`: webhook endpoints, the operator console at `GET /admin`). Without it the admin API answers 404. */
  adminToken?: string | undefined
  /**
   * The ERC-7677 paymaster service at `POST /paymaster` (`pm_getPaymasterStubData`,
   * `pm_getPaymasterData`): the key the paymaster contracts trust (a secret) and the operator's
   * policy (paymaster/policy.ts). Without it there is no `/paymaster` (404).
   */
  paymaster?: PaymasterSettings | undefined
}

/** The paymaster service's settings. */
export type PaymasterSettings = {
  /** 0x and 64 hex digits: signs each sponsorship and quote. */
  signerPrivateKey: `0x${string}`
  policy: PaymasterPolicyInput
  /** How often each chain's settlement runs (`createAppServer` only), in ms. Default 5,000. */
  settleIntervalMs?: number | undefined
}

/** Where the ERC-7677 paymaster service answers. */
export const PAYMASTER_PATH = '/paymaster'

/** The paymaster service of `options.paymaster` on the store's database (its policy checked: throws one line). */
export function paymasterFor(options: Pick<ServerAppOptions, 'paymaster' | 'appName' | 'now' | 'logger'>, store: Store, audit: AuditTrail): Paymaster {
  const settings = options.paymaster!
  return createPaymaster({
    policy: parsePaymasterPolicy(settings.policy),
    signerPrivateKey: settings.signerPrivateKey,
    // The store's database holds the paymaster's tables among the others.
    database: store.database as unknown as Database<PaymasterSchema>,
    audit,
    appName: options.appName,
    isUserWallet: async (address) => (await store.accountByAddress(address)) !== undefined,
    now: options.now,
    logger: options.logger,
    settleIntervalMs: settings.settleIntervalMs,
    webhooks: { enqueue: (trx, events, at) => store.webhooks.enqueue(trx as never, events, at), queued: () => store.webhooksQueued() },
  })
}

/** Routes whose credential is a refresh token in the body, not the cookie. */
const BEARER_PATHS = new Set(['/auth/token/refresh', '/auth/token/revoke'])

export { ServerError } from './errors.js'
export { LIMITS, type PerIpLimits, SESSION_COOKIE } from './internal/context.js'
export { SIWE_COOKIE, SIWE_TIMES, type SiweChain } from './internal/siwe.js'
export { WALLET_NAME } from './internal/wallet.js'
export { OAUTH_PROVIDERS, type OAuthProviderConfig, type OAuthProviderName, oauthNonce } from './routes/oauth.js'

/**
 * The app backend as a Hono app. It holds the parent organization's API key and is the only place
 * that creates sub-organizations, starts email sign-in and recovery, and registers session keys;
 * the browser never sees that key. Any wallet signs in with Ethereum (SIWE) into the same kind of
 * session. The routes are listed in the package README.
 *
 * @example
 * const app = createServerApp({ store: openStore(':memory:'), kmsUrl, organizationId, apiPublicKey, apiPrivateKey, sessionSignerPublicKey, appName: 'Demo', allowedOrigins: ['http://localhost:5173'], chains: [{ id: 31337, rpcUrl: 'http://127.0.0.1:8545' }] })
 */
export function createServerApp(options: ServerAppOptions, internal: { paymaster?: Paymaster | undefined } = {}) {
  const context = createRouteContext(options)
  const oauth = createOAuth(options.oauth ?? {}, context.now, options.store)
  // Discovery and keys are fetched now, so that the first social sign-in does not wait for them.
  void oauth.warm()
  const app = new Hono()

  // First, so that every request is counted (and, with traces on, spanned) by its route template.
  const observeRoutes = routeObserver(options.metrics, { tracing: tracingOn() })
  if (observeRoutes) app.use(observeRoutes)
  if (options.metrics) app.use('/auth/*', signInMetrics(options.metrics))

  app.use('*', async (c, next) => {
    const origin = c.req.header('origin')
    const allowed = origin !== undefined && options.allowedOrigins.includes(origin)
    if (c.req.method === 'OPTIONS') {
      if (!allowed) return c.body(null, 403)
      return c.body(null, 204, {
        'access-control-allow-origin': origin,
        'access-control-allow-credentials': 'true',
        'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
        'access-control-allow-headers': 'content-type',
        'access-control-max-age': '600',
        vary: 'origin',
      })
    }
    await next()
    if (allowed) {
      c.res.headers.set('access-control-allow-origin', origin)
      c.res.headers.set('access-control-allow-credentials', 'true')
      c.res.headers.append('vary', 'origin')
    }
    return undefined
  })

  // CSRF and login CSRF: see sameOrigin. Exempt: the provider's form post (no cookie read or set;
  // its state names an allowed page), and refresh tokens sent without a cookie (by a service or an
  // app, not a browser page: the token in the body is the credential).
  app.use(
    '*',
    sameOrigin(
      options.allowedOrigins,
      (c) =>
        c.req.path === OAUTH_CALLBACK_PATH ||
        (BEARER_PATHS.has(c.req.path) && c.req.header('cookie') === undefined) ||
        // The admin API's credential is its bearer token, which a page on another site cannot send.
        c.req.path.startsWith(ADMIN_PREFIX) ||
        // The paymaster reads no cookie: bundlers and services call it as well as pages.
        c.req.path === PAYMASTER_PATH,
    ),
  )
  const audit = options.audit ?? createServerAudit(options.store, { logger: options.logger })
  // Before the body limit, so that its refusals are recorded too; events carry the wall clock, not `now`.
  app.use('/auth/*', auditAuth(audit, context.ipOf))
  app.use('*', bodyLimit(options.maxBodyBytes ?? LIMITS.bodyBytes))

  app.onError((error, c) => {
    if (error instanceof ServerError) {
      if (error.retryAfterSeconds) c.header('retry-after', String(error.retryAfterSeconds))
      return c.json({ error: { code: error.code, message: error.message, ...(error.kms ? { kms: error.kms } : {}) } }, error.status)
    }
    if (options.logger) options.logger.error({ err: error }, `unexpected error: ${error.message}`)
    else console.error(error)
    return c.json({ error: { code: 'internal', message: 'Something went wrong on the server' } }, 500)
  })

  // What the browser's embedded wallet needs to talk to the kms itself: nothing secret.
  app.get('/auth/config', async (c) => {
    // Each configured social sign-in with where the browser starts it; one whose issuer is down is left out.
    const social = await Promise.all(
      oauth.configured.map(async (name) => {
        const endpoints = await oauth.discover(name).catch(() => undefined)
        if (!endpoints) return undefined
        const config = oauth.config(name)!
        const formPost = responseModeOf(name, config) === 'form_post'
        return [
          name,
          {
            // A provider of the operator's own (not Google or Apple) says what to call it.
            ...((OAUTH_PROVIDERS as readonly string[]).includes(name) ? {} : { displayName: oauth.displayName(name) }),
            clientId: config.clientId,
            authorizationEndpoint: endpoints.authorization_endpoint,
            ...(formPost
              ? { responseMode: 'form_post' as const, redirectUri: config.redirectUri ?? `${new URL(c.req.url).origin}${OAUTH_CALLBACK_PATH}` }
              : {}),
          },
        ] as const
      }),
    )
    const available = social.filter((entry) => entry !== undefined)
    return c.json({
      organizationId: options.organizationId,
      kmsUrl: options.publicKmsUrl ?? options.kmsUrl,
      ...(options.framesUrl ? { framesUrl: options.framesUrl } : {}),
      ...(available.length ? { oauth: Object.fromEntries(available) } : {}),
      ...(options.guests ? { guests: true } : {}),
    })
  })
  app.post('/auth/email/start', emailStart(context))
  app.post('/auth/email/verify', emailVerify(context))
  app.post('/auth/passkey/signup/start', passkeySignupStart(context))
  app.post('/auth/passkey/signup', passkeySignup(context))
  app.post('/auth/login', login(context))
  app.post('/auth/oauth', oauthSignIn(context, oauth))
  app.post(OAUTH_CALLBACK_PATH, oauthFormPost(options.allowedOrigins))
  if (options.guests) app.post('/auth/guest', guest(context))
  app.post('/auth/recovery/start', recoveryStart(context))
  app.get('/auth/nonce', nonce(context))
  app.post('/auth/siwe', siwe(context))
  app.post('/auth/cacao', cacao(context))
  app.get('/auth/user', user(context))
  app.post('/auth/user/link/email/start', linkEmailStart(context))
  app.post('/auth/user/link/email', linkEmail(context))
  app.post('/auth/user/link/oauth', linkOAuth(context, oauth))
  app.post('/auth/user/link/wallet', linkWallet(context))
  app.post('/auth/user/link/passkey', linkPasskey(context))
  app.delete('/auth/user/logins/:id', unlink(context))
  app.get('/auth/session', session(context))
  app.post('/auth/signout', signOut(context))
  app.post('/auth/token', issueToken(context))
  app.post('/auth/token/refresh', refreshToken(context))
  app.post('/auth/token/revoke', revokeToken(context))
  app.get('/.well-known/jwks.json', jwks(context))
  const paymaster = internal.paymaster ?? (options.paymaster ? paymasterFor(options, options.store, audit) : undefined)
  if (paymaster)
    app.post(PAYMASTER_PATH, async (c) => {
      // A flood is refused before it is read, checked or audited: the audit trail records decisions, not floods.
      const wait = await context.limits.paymasterPerIp(context.ipOf(c))
      if (wait !== undefined) {
        c.header('retry-after', String(wait))
        const message = `Too many paymaster requests from this network; try again in ${wait} s`
        return c.json({ jsonrpc: '2.0', id: null, error: { code: PAYMASTER_ERROR_CODES.rate, message, data: { reason: 'rate' } } }, 429)
      }
      return c.json(await paymaster.handle(await c.req.json().catch(() => undefined)))
    })
  if (options.adminToken !== undefined)
    app.route(
      '/admin',
      adminRoutes({
        token: options.adminToken,
        store: options.store,
        audit,
        ipOf: context.ipOf,
        now: context.now,
        kms: context.kms,
        organizationId: options.organizationId,
        context,
        oauth,
        onError: (error) => (options.logger ? options.logger.error({ err: error }, `unexpected error: ${(error as Error).message}`) : console.error(error)),
      }),
    )
  return app
}
