import { type Logger, type Metrics, routeObserver, tracingOn } from '@latchkey/service'
import { type AuditTrail, createAuditTrail } from '@latchkey/service/database'
import { p256 } from '@noble/curves/p256'
import { Hono } from 'hono'
import { isAddress } from 'viem'
import { createOidcVerifier, type OidcIssuer } from './auth/oidc.js'
import { DEFAULT_MAX_CREDENTIAL_SECONDS, MIN_MAX_CREDENTIAL_SECONDS } from './credentials.js'
import type { Db } from './db.js'
import { activityView } from './envelope.js'
import { GrpcCode, KmsError, notFound } from './errors.js'
import { auditSubmissions } from './http/audit.js'
import { type Authenticated, authenticate } from './http/authenticate.js'
import { bodyLimit, DEFAULT_MAX_BODY_BYTES } from './http/bodyLimit.js'
import { cors } from './http/cors.js'
import { activityObserver } from './http/metrics.js'
import { createRateLimiter, DEFAULT_RATE_LIMITS, RateLimitedError, type RateLimiter, type RateLimits } from './http/rateLimit.js'
import type { StageProfile } from './http/stages.js'
import { devInbox, type Mailer, mailboxJson, mailboxPage } from './mail.js'
import { mfaSettings } from './mfa/enforce.js'
import { createOutbox, type Outbox } from './outbox.js'
import { own } from './own.js'
import { DEFAULT_FRESH_VERIFICATION_SECONDS } from './policies/freshVerification.js'
import { createQueries } from './resources.js'
import { activityRoutes } from './routes/activities.js'
import type { SealingKey } from './secrets.js'
import type { WebauthnConfig } from './webauthn.js'

export { TIMESTAMP_WINDOW_MS } from './routes/activities.js'

/** Passkeys of the local demo. */
export const DEFAULT_WEBAUTHN: WebauthnConfig = { rpIds: ['localhost'], origins: ['http://localhost:5173'] }

export type KmsAppOptions = {
  db: Db
  /** 32 bytes: seals wallet mnemonics and keys at rest. */
  masterKey: SealingKey
  /** P-256 private key (hex) that signs export and import bundles; its public key is published. */
  signerPrivateKey: string
  /**
   * The signer's next key while it rotates (or, after the swap, its previous one), uncompressed
   * hex: read-only session tokens it signed are accepted too, and it is published beside the signer.
   */
  nextSignerPublicKey?: string | undefined
  /** Relying party ids and origins passkeys may come from. Default: `localhost`, http://localhost:5173. */
  webauthn?: WebauthnConfig | undefined
  /** The OpenID issuers (and their client ids) whose ID tokens are believed. Default: none, so every OIDC token is refused. */
  oidcIssuers?: readonly OidcIssuer[] | undefined
  /** Where sign-in emails go (after the activity commits, through the outbox). Default: the dev inbox, served at /dev/mailbox. */
  mailer?: Mailer | undefined
  /** Clock in unix ms; tests move it to expire keys. */
  now?: (() => number) | undefined
  /**
   * The longest lifetime, in seconds, a session, sign-in credential or API key may be given
   * (`expirationSeconds` above it is refused); a sub-organization's API keys must have one.
   * Default 86400 (a day); at least 900.
   */
  maxCredentialSeconds?: number | undefined
  /**
   * How long, in seconds, a credential from an email code (otp_auth, email_auth) counts as a fresh
   * verification: in a sub-organization, export and new credentials or sessions from any other
   * session credential need a passkey stamp. Default 300.
   */
  freshVerificationSeconds?: number | undefined
  /**
   * Second factors the kms enforces (mfa/enforce.ts): the actions that need one (`sign-in`,
   * `export`, `add-login`, `add-key`, `grant`, `tx-over:<wei>`) and how long a verified factor
   * counts (default 900 s). Whatever is chosen, a user with a factor needs it for export and for
   * new logins, keys and sessions.
   */
  mfa?: { required?: readonly string[] | undefined; graceSeconds?: number | undefined } | undefined
  /**
   * The contracts a sub-organization's EIP-7702 authorizations may delegate to (the batch
   * executor); any other, and chain id 0, is refused. Default: none, so every delegation is refused.
   */
  eip7702Delegates?: readonly string[] | undefined
  /** Largest request body accepted, in bytes. Default 256 KiB. */
  maxBodyBytes?: number | undefined
  /** Where unexpected errors (answered 500) are logged. Default: the console. */
  logger?: Logger | undefined
  /** The outbox mail leaves through (its retries are the owner's to start). Default: one over `mailer`. */
  outbox?: Outbox | undefined
  /** Where every submission's outcome is recorded (refusals included). Default: the database's trail under the development audit key. */
  audit?: AuditTrail | undefined
  /**
   * Page origins whose browsers may read the service's answers (CORS), or '*' for any. Default:
   * the passkey origins (`webauthn.origins`); createKms adds the frames' origins.
   */
  corsOrigins?: readonly string[] | '*' | undefined
  /** Activities' rate limits per API key and per organization (http/rateLimit.ts); `false` turns them off. Default: DEFAULT_RATE_LIMITS. */
  rateLimits?: RateLimits | false | undefined
  /** The limiter itself, when its owner must flush it on stop (createKms); overrides `rateLimits`. */
  rateLimiter?: RateLimiter | undefined
  /** Counts requests by route, activities by type and status, and policy denials (http/metrics.ts). Default: nothing counted. */
  metrics?: Metrics | undefined
  /** Times each submission's stages (http/stages.ts; bench:kms's profile). Default: nothing timed, each hook a no-op. */
  stageProfile?: StageProfile | undefined
}

/** Where the service publishes its bundle signer's public key (uncompressed hex). */
export const SIGNER_PATH = '/.well-known/latchkey-kms-signer.json'

/**
 * The key-management API as a Hono app: `POST /public/v1/query/{op}` and
 * `POST /public/v1/submit/{op}`, each stamped, answered with the Turnkey wire shapes. CORS, the
 * body limit and authentication are middleware; errors are mapped once, in `onError`.
 *
 * @example
 * const app = createKmsApp({ db: openDatabase(':memory:'), masterKey, signerPrivateKey })
 * const response = await app.request('/public/v1/query/whoami', { method: 'POST', body, headers: { 'X-Stamp': stamp } })
 */
export function createKmsApp(options: KmsAppOptions): Hono<{ Variables: Authenticated }> {
  const { db, masterKey } = options
  const now = options.now ?? Date.now
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const maxCredentialSeconds = options.maxCredentialSeconds ?? DEFAULT_MAX_CREDENTIAL_SECONDS
  if (!Number.isSafeInteger(maxCredentialSeconds) || maxCredentialSeconds < MIN_MAX_CREDENTIAL_SECONDS)
    throw new Error(`maxCredentialSeconds must be a whole number of seconds, at least ${MIN_MAX_CREDENTIAL_SECONDS}`)
  const freshVerificationSeconds = options.freshVerificationSeconds ?? DEFAULT_FRESH_VERIFICATION_SECONDS
  if (!Number.isSafeInteger(freshVerificationSeconds) || freshVerificationSeconds < 0)
    throw new Error('freshVerificationSeconds must be a whole number of seconds')
  const mfa = mfaSettings(options.mfa?.required, options.mfa?.graceSeconds)
  const eip7702Delegates = new Set(
    (options.eip7702Delegates ?? []).map((address) => {
      if (!isAddress(address, { strict: false })) throw new Error(`eip7702Delegates: ${address} is not an address`)
      return address.toLowerCase()
    }),
  )
  const mailer = options.mailer ?? devInbox(db, now)
  const webauthn = options.webauthn ?? DEFAULT_WEBAUTHN
  const oidc = createOidcVerifier(options.oidcIssuers ?? [])
  // The issuers' keys are fetched now, so that the first social sign-in does not wait for them.
  void oidc.warm()
  const outbox = options.outbox ?? createOutbox({ db, mailer, masterKey, now, logger: options.logger })
  const app = new Hono<{ Variables: Authenticated }>()

  // The key that signs export and import bundles, for apps and frames to pin.
  const signerPublicKey = Buffer.from(p256.getPublicKey(options.signerPrivateKey, false)).toString('hex')

  // Errors are mapped here once: the catalogue's own as they are, anything else a logged 500.
  app.onError((error) => {
    const known = error instanceof KmsError ? error : new KmsError(GrpcCode.internal, 'internal error')
    if (!(error instanceof KmsError)) {
      if (options.logger) options.logger.error({ err: error }, `unexpected error: ${error.message}`)
      else console.error(error)
    }
    const headers: Record<string, string> = error instanceof RateLimitedError ? { 'Retry-After': String(error.retryAfterSeconds) } : {}
    return Response.json(known.toJSON(), { status: known.status, headers })
  })
  app.notFound(() => Response.json(notFound('no such endpoint').toJSON(), { status: 404 }))

  // The profile's clock starts before anything else a submission meets, and stops after its audit event.
  const stages = options.stageProfile
  if (stages)
    app.use('/public/v1/submit/*', async (_c, next) => {
      stages.begin()
      await next()
      stages.end('http')
    })

  // First, so that every request is counted (and, with traces on, spanned) by its route template.
  const observeRoutes = routeObserver(options.metrics, { tracing: tracingOn() })
  if (observeRoutes) app.use(observeRoutes)

  app.use('*', cors(options.corsOrigins ?? webauthn.origins))
  const nextSignerPublicKey = options.nextSignerPublicKey?.toLowerCase()
  app.get(SIGNER_PATH, (c) => c.json(nextSignerPublicKey ? { signerPublicKey, nextSignerPublicKey } : { signerPublicKey }))

  // The dev inbox, only when mail is not going out by SMTP.
  if (!options.mailer) {
    app.get('/dev/mailbox.json', async (c) => c.json(await mailboxJson(db)))
    app.get('/dev/mailbox', async (c) => c.html(await mailboxPage(db)))
  }

  // Every API call: its body read within the limit as it streams, then its stamp verified over those bytes.
  const guard = [
    bodyLimit(maxBodyBytes),
    authenticate({ db, signerPublicKeys: nextSignerPublicKey ? [signerPublicKey, nextSignerPublicKey] : [signerPublicKey], webauthn, now, stages }),
  ] as const
  app.use('/public/v1/query/*', ...guard)
  // Every submission's outcome goes to the audit trail, its authentication's refusals included.
  const audit = options.audit ?? createAuditTrail({ service: 'kms', storage: db.auditStorage, now, logger: options.logger })
  const limiter =
    options.rateLimiter ??
    (options.rateLimits === false ? undefined : createRateLimiter({ db, limits: options.rateLimits ?? DEFAULT_RATE_LIMITS, now, audit, stages }))
  // A credential known to be over its window is refused first, before its body is read or its stamp verified.
  if (limiter) app.use('/public/v1/submit/*', limiter.gate)
  app.use('/public/v1/submit/*', auditSubmissions(audit, stages), ...guard)
  if (limiter) app.use('/public/v1/submit/*', limiter.count)
  const observeActivities = activityObserver(options.metrics, { tracing: tracingOn() })
  if (observeActivities) app.use('/public/v1/submit/*', observeActivities)

  app.route(
    '/public/v1/submit',
    activityRoutes({
      db,
      outbox,
      masterKey,
      signerPrivateKey: options.signerPrivateKey,
      webauthn,
      oidc,
      maxCredentialSeconds,
      freshVerificationSeconds,
      mfa,
      eip7702Delegates,
      now,
      stages,
    }),
  )

  const QUERIES = createQueries({
    db,
    envelope: (row, caller) => activityView(db, row, { caller, now: now() }),
    signerPrivateKey: options.signerPrivateKey,
    oidc,
    now,
  })
  app.post('/public/v1/query/:op', async (c) => {
    const { body, caller } = c.var
    const query = own(QUERIES, c.req.param('op'))
    if (!query) throw notFound(`unknown query ${c.req.param('op')}`)
    return c.json(await query(body, caller))
  })

  return app
}
