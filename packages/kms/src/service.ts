import { randomBytes, randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import { getRequestListener } from '@hono/node-server'
import { closeGracefully, createHttpObserver, type HttpObserver, type InflightRequest, type Logger, type Metrics } from '@latchkey/service'
import { createAuditTrail } from '@latchkey/service/database'
import { p256 } from '@noble/curves/p256'
import { createKmsApp, DEFAULT_WEBAUTHN } from './app.js'
import type { OidcIssuer } from './auth/oidc.js'
import { batchExecutor } from './batchExecutor.js'
import { type Db, isPostgresUrl, openDatabase } from './db.js'
import { alreadyExists } from './errors.js'
import { createFramesApp } from './frames/app.js'
import type { FrameChain, FramePaymaster } from './frames/pages.js'
import { outboxMetrics } from './http/metrics.js'
import { createRateLimiter, DEFAULT_RATE_LIMITS, type RateLimits } from './http/rateLimit.js'
import type { StageProfile } from './http/stages.js'
import { envKek, type Kek } from './keyring/kek.js'
import { createKeyring } from './keyring/keyring.js'
import { devInbox, type Mailer } from './mail.js'
import { mfaCodePublicKey } from './mfa/codeKey.js'
import { mfaSettings } from './mfa/enforce.js'
import { createOutbox } from './outbox.js'
import { SMTP_URL_VARIABLE, type SmtpOptions, smtpMailer } from './smtp.js'
import type { WebauthnConfig } from './webauthn.js'

export type KmsOptions = {
  /** Default 8090. */
  port?: number | undefined
  /** Default `127.0.0.1`. */
  host?: string | undefined
  /** SQLite file; default in memory (unless `databaseUrl` or DATABASE_URL names PostgreSQL). */
  databasePath?: string | undefined
  /**
   * PostgreSQL instead of SQLite: a postgres:// URL. Default: DATABASE_URL, when it is one and no
   * `databasePath` is given. The tables are created on first start.
   */
  databaseUrl?: string | undefined
  /**
   * 32 bytes: the KEK that wraps the data keys, unless `kek` is given; with `kek`, it still opens
   * rows sealed before data keys existed (until `keys rewrap` moved them). Default: random, so
   * nothing sealed outlives the process.
   */
  masterKey?: Uint8Array | undefined
  /** The key-encryption key that wraps the data keys (keyring/kek.ts): an HSM's (pkcs11Kek). Default: `envKek(masterKey)`. */
  kek?: Kek | undefined
  /** How often the data keys are read again (a key made by `keys rotate` elsewhere); a new key seals after two intervals. Default 5000 ms. */
  keyRefreshMs?: number | undefined
  /** Relying party ids and origins passkeys may come from. Default: `localhost`, http://localhost:5173. */
  webauthn?: WebauthnConfig | undefined
  /**
   * The OpenID issuers whose ID tokens `oauth`, `oauth_login` and OAuth providers accept, each with
   * the app client ids (audiences) it may issue them for; verified against the issuer's JWKS.
   * Default: none, so every OIDC token is refused (`latchkey-kms` defaults to the devnet's local provider).
   */
  oidcIssuers?: readonly OidcIssuer[] | undefined
  /** Where sign-in emails go. Default: SMTP when `smtp` or LATCHKEY_SMTP_URL is set, else the dev inbox at /dev/mailbox. */
  mailer?: Mailer | undefined
  /** Send mail through this SMTP server (unless `mailer` is given). Default: LATCHKEY_SMTP_URL, if set. */
  smtp?: SmtpOptions | undefined
  /** P-256 private key (hex) that signs export and import bundles. Default: random. */
  signerPrivateKey?: string | undefined
  /**
   * The signer's next key while it rotates (after the swap, its previous one), uncompressed hex:
   * the frames and the read-only session check accept it too (deploy/ROTATION.md).
   */
  nextSignerPublicKey?: string | undefined
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
   * Second factors the kms enforces: `required`, the actions that need one (`sign-in`, `export`,
   * `add-login`, `add-key`, `grant`, `tx-over:<wei>`; default none), and `graceSeconds`, how long a
   * verified factor counts (default 900). Once a user has enrolled a factor, export and new logins,
   * keys and sessions always need it.
   */
  mfa?: { required?: readonly string[] | undefined; graceSeconds?: number | undefined } | undefined
  /**
   * The contracts a sub-organization's EIP-7702 authorizations may delegate to (the batch
   * executor); any other, and chain id 0, is refused. Default: none, so every delegation is refused.
   * With frames served it names one contract, which is also the consent frame's executor.
   */
  eip7702Delegates?: readonly string[] | undefined
  /** Clock in unix ms; tests move it to expire keys. */
  now?: (() => number) | undefined
  /**
   * How often the outbox sends what is due (mail that could not be sent right after its activity
   * committed). Default 5000 ms; 0: only when `sendDueMail()` is called.
   */
  mailRetryIntervalMs?: number | undefined
  /** Serve the auth, recovery, export and import frames from their own origin. Default: no frames. */
  frames?: FramesOptions | undefined
  /**
   * Where to log (pino): one line per request with its request id, and unexpected errors; never a
   * stamp, a body or a query string. Default: no request log, unexpected errors on the console.
   */
  logger?: Logger | undefined
  /** 32 bytes: the key of the audit trail's keyed hashes of IPs and emails. Default: the fixed development key. */
  auditKey?: Uint8Array | undefined
  /** Also append each audit event, once stored, to this file as a JSON line. */
  auditLogFile?: string | undefined
  /**
   * Activities' rate limits per API key and per organization, in units per window (an activity is
   * 1 unit, plus 10 per account it derives), shared by every instance on the database; `false`
   * turns them off. Default: DEFAULT_RATE_LIMITS (20,000 per key and 40,000 per organization per 10 s).
   */
  rateLimits?: RateLimits | false | undefined
  /**
   * Page origins whose browsers may read the service's answers (CORS), or '*' for any. Default:
   * the passkey origins, the frames' origin and the frames' parent origins.
   */
  corsOrigins?: readonly string[] | '*' | undefined
  /** Origins added to the default CORS list (an app whose page calls the kms, where it is not the passkey origin). Ignored with `corsOrigins`. */
  extraCorsOrigins?: readonly string[] | undefined
  /**
   * Prometheus metrics (`latchkey-kms --metrics-port`): requests by route, database transactions,
   * activities by type and status, policy denials, the outbox's backlog. Default: nothing counted.
   */
  metrics?: Metrics | undefined
  /** Times each submission's stages (http/stages.ts): bench:kms's profile. Default: nothing timed. */
  stageProfile?: StageProfile | undefined
}

export type FramesOptions = {
  /** Default 8091. */
  port?: number | undefined
  /**
   * Host name in `framesUrl` and address to listen on. Default `localhost`: 127.0.0.1 and ::1, so
   * the frames are a secure context (WebCrypto) over plain http.
   */
  host?: string | undefined
  /** Origins allowed to embed the frames and open their channel, e.g. `http://localhost:5173`. */
  parentOrigins: readonly string[]
  /**
   * The chains the consent frame decodes and simulates transactions on (`{ id, rpcUrl }`); its CSP
   * lets it reach these RPC origins and nothing else. Default none: it reviews no transaction.
   */
  chains?: readonly FrameChain[] | undefined
  /**
   * The batch executor the consent frame signs for.
   *
   * @deprecated The kms's `eip7702Delegates` names it (one setting for the kms's rule and the frame).
   * Given alone, it feeds both; given with a different `eip7702Delegates`, createKms throws.
   */
  executor?: string | undefined
  /**
   * The app's paymasters per chain (`{ chainId, kind: 'sponsor' | 'token', address }`): the consent
   * frame shows a UserOperation's fee as "sponsored by APP", in the token, or, for any other
   * paymaster, as paid by a paymaster the app did not configure. Default none.
   */
  paymasters?: readonly FramePaymaster[] | undefined
  /** The app's name the consent frame shows for a sponsored fee. Default none: "sponsored by the app". */
  appName?: string | undefined
}

/** An organization with no parent, its first user and that user's API key. */
export type ParentOrganization = { organizationId: string; userId: string; apiKeyId: string }

/**
 * The key-management service as a start/stop instance (the shape of prool), over its Hono app.
 *
 * @example
 * const kms = createKms({ port: 8090, databasePath: '.latchkey/kms.db', masterKey })
 * // or, shared by several instances: createKms({ databaseUrl: 'postgres://latchkey@db.internal/kms', masterKey })
 * await kms.start()
 * const parent = kms.createParentOrganization({ name: 'Latchkey dev', userName: 'backend', publicKey })
 */
export function createKms(options: KmsOptions = {}) {
  const host = options.host ?? '127.0.0.1'
  const port = options.port ?? 8090
  const masterKey = options.masterKey ?? randomBytes(32)
  if (masterKey.length !== 32) throw new Error('masterKey must be 32 bytes')
  // Before anything opens: conflicting executor settings are refused with nothing to close.
  const executor = batchExecutor({
    delegates: options.eip7702Delegates,
    deprecatedExecutor: options.frames?.executor,
    framesServed: options.frames !== undefined,
  })
  // Refused before anything opens, like the executor: an unknown action or a bad grace window.
  mfaSettings(options.mfa?.required, options.mfa?.graceSeconds)
  const now = options.now ?? Date.now
  const db: Db = openDatabase(databaseLocation(options), { metrics: options.metrics })
  if (options.metrics) outboxMetrics(options.metrics, db, now)
  // Rows are sealed by data keys, which the KEK wraps; the keys load before the service listens.
  const keyring = createKeyring({
    store: db,
    kek: options.kek ?? envKek(masterKey),
    legacyKey: options.kek && !options.masterKey ? undefined : masterKey,
    refreshMs: options.keyRefreshMs,
    // Activation is timed on the wall clock, shared with `keys rotate` in other processes, not on the service's clock.
  })
  const signerPrivateKey = options.signerPrivateKey ?? Buffer.from(p256.utils.randomPrivateKey()).toString('hex')
  const signerPublicKey = Buffer.from(p256.getPublicKey(signerPrivateKey, false)).toString('hex')
  const smtpUrl = options.smtp?.url ?? process.env[SMTP_URL_VARIABLE]
  const mailer = options.mailer ?? (smtpUrl ? smtpMailer({ url: smtpUrl, from: options.smtp?.from, requireTLS: options.smtp?.requireTLS }) : undefined)
  const outbox = createOutbox({ db, mailer: mailer ?? devInbox(db, now), masterKey: keyring, now, logger: options.logger })
  const audit = createAuditTrail({
    service: 'kms',
    storage: db.auditStorage,
    key: options.auditKey,
    logFile: options.auditLogFile,
    now,
    logger: options.logger,
  })
  const rateLimiter =
    options.rateLimits === false
      ? undefined
      : createRateLimiter({ db, limits: options.rateLimits ?? DEFAULT_RATE_LIMITS, now, audit, stages: options.stageProfile })
  const framesOrigin = options.frames ? `http://${options.frames.host ?? 'localhost'}:${options.frames.port ?? 8091}` : undefined
  const corsOrigins = options.corsOrigins ?? [
    ...new Set([
      ...(options.webauthn ?? DEFAULT_WEBAUTHN).origins,
      ...(framesOrigin ? [framesOrigin] : []),
      ...(options.frames?.parentOrigins ?? []),
      ...(options.extraCorsOrigins ?? []),
    ]),
  ]
  const app = createKmsApp({
    audit,
    db,
    masterKey: keyring,
    signerPrivateKey,
    nextSignerPublicKey: options.nextSignerPublicKey,
    now,
    mailer,
    outbox,
    webauthn: options.webauthn,
    oidcIssuers: options.oidcIssuers,
    maxCredentialSeconds: options.maxCredentialSeconds,
    freshVerificationSeconds: options.freshVerificationSeconds,
    mfa: options.mfa,
    eip7702Delegates: executor.delegates,
    logger: options.logger,
    rateLimits: options.rateLimits,
    rateLimiter,
    corsOrigins,
    metrics: options.metrics,
    stageProfile: options.stageProfile,
  })
  const framesApp = options.frames
    ? createFramesApp({
        signerPublicKey,
        nextSignerPublicKey: options.nextSignerPublicKey,
        parentOrigins: options.frames.parentOrigins,
        chains: options.frames.chains,
        executor: executor.framesExecutor,
        paymasters: options.frames.paymasters,
        appName: options.frames.appName,
        mfaCodePublicKey: mfaCodePublicKey(signerPrivateKey),
      })
    : undefined
  const framesHost = options.frames?.host ?? 'localhost'
  const framesPort = options.frames?.port ?? 8091
  // Request ids, the request log, /healthz and /readyz (the database answers, the data keys are unwrapped, the KEK answers) on the API and the frames.
  const observer = createHttpObserver({
    logger: options.logger,
    ready: async () => {
      await db.ping()
      await keyring.ready()
    },
  })
  const opened = async () => {
    await db.ping()
    await keyring.load()
  }
  let server: Server | undefined
  let framesServers: Server[] = []

  return {
    name: 'kms',
    host,
    port,
    url: `http://${host}:${port}`,
    app,
    /** The frames' origin, e.g. http://localhost:8091 (pages at /auth, /recovery, /export, /import), when `frames` is set. */
    framesUrl: framesApp ? `http://${framesHost.includes(':') ? `[${framesHost}]` : framesHost}:${framesPort}` : undefined,
    /** The frames' Hono app, when `frames` is set. */
    framesApp,
    /** Uncompressed hex; also served at SIGNER_PATH. */
    signerPublicKey,
    async start() {
      if (server) return
      // Migrated, and the data keys unwrapped, before the first request is accepted.
      await opened()
      const api = await listen(observer, app.fetch, host, port)
      try {
        framesServers = framesApp ? await listenFrames(observer, framesApp.fetch, framesHost, framesPort) : []
      } catch (error) {
        await closeServer(api)
        throw error
      }
      server = api
      if (options.mailRetryIntervalMs !== 0) outbox.start(options.mailRetryIntervalMs ?? 5000)
    },
    /**
     * Stops accepting connections at once, resolves once every request in flight is answered,
     * then closes the database.
     */
    async stop() {
      const running = [...(server ? [server] : []), ...framesServers]
      server = undefined
      framesServers = []
      await closeGracefully(running, observer)
      await outbox.stop()
      rateLimiter?.flush()
      await audit.settled()
      await keyring.close()
      await db.close()
    },
    /** Resolves once the database answers, its tables migrated; rejects with why it cannot be opened. `start()` also unwraps the data keys. */
    ready: () => db.ping(),
    /** The key hierarchy: data keys wrapped by the KEK (`latchkey-kms keys …`). */
    keyring,
    /** The store, for the operator's commands (`keys`, `verify-backup`). */
    db,
    /** Requests not yet answered, oldest first. */
    inflight: (): InflightRequest[] => observer.inflight(),
    /** Walks the audit chain: `{intact: true, count}`, or the first row whose sequence, link or hash does not match. */
    verifyAudit: () => db.verifyAudit(),
    /** Whether the database holds this organization (a deleted database does not). */
    hasOrganization: async (organizationId: string) => (await db.organization(organizationId)) !== undefined,
    /**
     * Sends the mail that is due from the outbox now, rather than at the next tick of its timer;
     * answers how many went out.
     */
    sendDueMail: () => outbox.sendDue(),
    /** The outbox: mail not sent yet (pending, with its tries and last error) or refused for good (failed). */
    async outbox() {
      return (await db.outbox()).map((row) => ({
        to: row.to_address,
        status: row.status as 'pending' | 'failed',
        attempts: row.attempts,
        lastError: row.last_error,
      }))
    },
    /**
     * The organization with no parent whose root user holds the API key `publicKey`, if any: how
     * `latchkey-kms init-organization` stays idempotent.
     */
    async parentOrganizationOf(publicKey: string): Promise<(ParentOrganization & { name: string }) | undefined> {
      const apiKey = await db.apiKeyByPublicKey(publicKey)
      const organization = apiKey && (await db.organization(apiKey.organization_id))
      if (!apiKey || !organization || organization.parent_id !== null) return undefined
      return { organizationId: organization.id, name: organization.name, userId: apiKey.user_id, apiKeyId: apiKey.id }
    },
    /**
     * Creates an organization with no parent (the app backend's), its first user and an API key
     * for that user. Not an API call: the hosted service does this at sign-up.
     */
    async createParentOrganization(parameters: { name: string; userName: string; publicKey: string; apiKeyName?: string }): Promise<ParentOrganization> {
      const at = now()
      const ids = { organizationId: randomUUID(), userId: randomUUID(), apiKeyId: randomUUID() }
      await db.transaction(async (db) => {
        const taken = await db.apiKeyByPublicKey(parameters.publicKey)
        if (taken) throw alreadyExists(`the API key ${parameters.publicKey} is already registered, in organization ${taken.organization_id}`)
        await db.insertOrganization({ id: ids.organizationId, name: parameters.name, parent_id: null, root_quorum_threshold: 1, created_at: at })
        await db.insertUser({ id: ids.userId, organization_id: ids.organizationId, name: parameters.userName, email: null, created_at: at })
        await db.insertApiKey({
          id: ids.apiKeyId,
          user_id: ids.userId,
          organization_id: ids.organizationId,
          name: parameters.apiKeyName ?? 'root',
          public_key: parameters.publicKey,
          curve: 'API_KEY_CURVE_P256',
          credential_type: 'CREDENTIAL_TYPE_API_KEY_P256',
          expires_at: null,
          created_at: at,
          verified_at: null,
          created_by_api_key_id: null,
        })
      })
      return ids
    },
  }
}

export type Kms = ReturnType<typeof createKms>

/** The environment variable naming a PostgreSQL database for the kms (and the server). */
export const DATABASE_URL_VARIABLE = 'DATABASE_URL'

/** Where the kms keeps its tables: an explicit option first, then DATABASE_URL, then SQLite in memory. */
function databaseLocation(options: KmsOptions) {
  if (options.databaseUrl !== undefined) {
    if (!isPostgresUrl(options.databaseUrl)) throw new Error(`databaseUrl must be a postgres:// or postgresql:// URL`)
    return options.databaseUrl
  }
  if (options.databasePath !== undefined) return options.databasePath
  const fromEnvironment = process.env[DATABASE_URL_VARIABLE]
  return fromEnvironment && isPostgresUrl(fromEnvironment) ? fromEnvironment : ':memory:'
}

/**
 * Listens for the frames on `host`; `localhost` means 127.0.0.1 and, where the machine has IPv6,
 * ::1, so every client's idea of localhost reaches the frames and nothing else.
 */
async function listenFrames(observer: HttpObserver, fetch: (request: Request) => Response | Promise<Response>, host: string, port: number): Promise<Server[]> {
  const addresses =
    host === 'localhost'
      ? [
          { address: '127.0.0.1', required: true },
          { address: '::1', required: false },
        ]
      : [{ address: host, required: true }]
  const servers: Server[] = []
  for (const { address, required } of addresses) {
    try {
      servers.push(await listen(observer, fetch, address, port))
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (!required && (code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT')) continue
      await Promise.all(servers.map(closeServer))
      throw error
    }
  }
  return servers
}

/** A Hono app's fetch on `host:port`, behind the observer (request ids, the request log, health). */
async function listen(observer: HttpObserver, fetch: (request: Request) => Response | Promise<Response>, host: string, port: number): Promise<Server> {
  const server = createServer(observer.listener(getRequestListener(fetch)))
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  observer.track(server)
  return server
}

const closeServer = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()))
