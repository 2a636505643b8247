#!/usr/bin/env node
/**
 * `latchkey-kms`: the key-management service on its own, for self-hosting, and its one-off
 * commands (`init-organization`, `generate-keys`, `audit verify`, `migrate status|up`). Settings by flag or environment variable
 * (`latchkey-kms --help`), JSON logs on standard output, `GET /healthz` and `GET /readyz`, a
 * graceful stop on SIGTERM or SIGINT. The package README has the details.
 */
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import {
  auditSettings,
  auditVerifyCommand,
  baseSettings,
  custom,
  hexBytes,
  integer,
  type Logger,
  list,
  origin,
  port,
  runService,
  SettingsError,
  secret,
  secretUrl,
  settingLabel,
  text,
  withoutCredentials,
} from '@latchkey/service'
import { migrationCommands } from '@latchkey/service/database'
import { p256 } from '@noble/curves/p256'
import { isAddress } from 'viem'
import type { OidcIssuer } from './auth/oidc.js'
import { batchExecutor } from './batchExecutor.js'
import { DEFAULT_MAX_CREDENTIAL_SECONDS, MIN_MAX_CREDENTIAL_SECONDS } from './credentials.js'
import { KmsError } from './errors.js'
import { assertChain } from './frames/app.js'
import type { FrameChain, FramePaymaster } from './frames/pages.js'
import { DEFAULT_RATE_LIMITS } from './http/rateLimit.js'
import { backupSqlite, removeScratch, scratchCopy } from './keyring/backup.js'
import { keyStatus, REWRAP_DEFAULTS, rewrapRows, rotateDataKey, rotateKek, verifySealedRows } from './keyring/operations.js'
import { kekSetting, openKek } from './keyring/settings.js'
import { generateApiKeyPair } from './keys.js'
import { mfaSettings } from './mfa/enforce.js'
import { DEFAULT_MFA_GRACE_SECONDS } from './mfa/factors.js'
import { DEFAULT_FRESH_VERIFICATION_SECONDS } from './policies/freshVerification.js'
import { createKms } from './service.js'
import { smtpWithoutTls } from './smtp.js'
import { KMS_MIGRATIONS } from './storage/migrations.js'

const { version } = createRequire(import.meta.url)('../package.json') as { version: string }

/** The devnet's OpenID provider (`npm start`), playing Google and Apple for the demo's client id. */
const LOCAL_OIDC_ISSUERS = ['http://localhost:8092/google=latchkey-demo', 'http://localhost:8092/apple=latchkey-demo']

/** Where the kms keeps its tables: a SQLite file or PostgreSQL (the serve command and init-organization share them). */
const storeSettings = {
  db: text({
    flag: 'db',
    env: 'LATCHKEY_KMS_DB',
    valueName: '<path>',
    description: 'Keep the data in this SQLite file. Without a store setting: in memory (development only); production needs --db or DATABASE_URL.',
  }),
  databaseUrl: secretUrl({
    env: 'DATABASE_URL',
    fileFlag: 'database-url-file',
    protocols: ['postgres:', 'postgresql:'],
    description: 'Keep the data in PostgreSQL (postgres:// or postgresql://); several kms instances may share it. The tables are created on first start.',
  }),
}

const settings = {
  ...baseSettings({ port: 8090 }),
  ...storeSettings,
  masterKey: secret({
    env: 'LATCHKEY_KMS_MASTER_KEY',
    fileFlag: 'master-key-file',
    production: 'required',
    convert: hexBytes(32),
    description:
      'The 32-byte key (64 hex characters) that wraps the data keys sealing wallets and keys at rest (--kek env), and opens rows sealed before data keys: keep it, or nothing sealed can be opened again. Without it: generated at start, so only an in-memory store is allowed.',
  }),
  kek: kekSetting(),
  keyRefreshMs: integer({
    flag: 'key-refresh-interval',
    env: 'LATCHKEY_KMS_KEY_REFRESH_MS',
    valueName: '<ms>',
    min: 50,
    max: 3_600_000,
    default: 5000,
    description:
      'How often the data keys are read again, so a key made by `keys rotate` is known to every instance; a new key seals after two intervals (and `keys rewrap` waits for that).',
  }),
  signerKey: secret({
    env: 'LATCHKEY_KMS_SIGNER_KEY',
    fileFlag: 'signer-key-file',
    production: 'required',
    convert: (text, label) => {
      const hex = text.trim().replace(/^0x/i, '')
      if (!/^[0-9a-fA-F]{64}$/.test(hex) || !p256.utils.isValidPrivateKey(hex))
        throw new SettingsError(`${label} must be a P-256 private key as 64 hex characters`)
      return hex.toLowerCase()
    },
    description:
      'The P-256 private key (64 hex characters) that signs export and import bundles and session tokens; backends and frames pin its public key. Without it: generated at start.',
  }),
  nextSignerPublicKey: custom({
    flag: 'next-signer-public-key',
    env: 'LATCHKEY_KMS_NEXT_SIGNER_PUBLIC_KEY',
    valueName: '<hex>',
    description:
      'While the signer key rotates: the other key (uncompressed P-256 hex), the next one before the swap and the previous one after it; the frames and read-only sessions accept it too (deploy/ROTATION.md).',
    convert: (text, label) => {
      const hex = text.trim().toLowerCase()
      if (!/^04[0-9a-f]{128}$/.test(hex))
        throw new SettingsError(`${label} must be an uncompressed P-256 public key (130 hex characters starting 04), got ${JSON.stringify(text)}`)
      return hex
    },
  }),
  smtpUrl: secretUrl({
    env: 'LATCHKEY_SMTP_URL',
    fileFlag: 'smtp-url-file',
    protocols: ['smtp:', 'smtps:'],
    production: 'required',
    description:
      'Send sign-in and recovery mail through this SMTP server: smtp://user:password@host:587 (STARTTLS, required in production) or smtps://…:465. Without it: the dev inbox at /dev/mailbox (development only).',
  }),
  mailFrom: text({ flag: 'mail-from', env: 'LATCHKEY_SMTP_FROM', description: 'The From header of mail. Default: Latchkey <no-reply@{SMTP host}>.' }),
  rpIds: list(
    text({
      flag: 'rp-id',
      env: 'LATCHKEY_KMS_RP_IDS',
      valueName: '<domain>',
      production: 'required',
      description: 'Relying party ids passkeys may be registered and used for: the domain of the app (e.g. app.example).',
    }),
    { default: ['localhost'] },
  ),
  passkeyOrigins: list(
    origin({
      flag: 'passkey-origin',
      env: 'LATCHKEY_KMS_PASSKEY_ORIGINS',
      production: 'required',
      description: 'Page origins passkey ceremonies may come from (e.g. https://app.example).',
    }),
    { default: ['http://localhost:5173'] },
  ),
  oidcIssuers: list(
    custom({
      flag: 'oidc-issuer',
      env: 'LATCHKEY_KMS_OIDC_ISSUERS',
      valueName: '<issuer>=<client id>',
      production: 'required',
      description:
        'An OpenID issuer whose ID tokens oauth and oauth_login accept, and an app client id (audience) they may be for, e.g. https://accounts.google.com=1234.apps.googleusercontent.com; repeat for more issuers or client ids. Tokens are verified against the issuer’s JWKS. Default: the devnet’s local provider (development only).',
      convert: oidcIssuerEntry,
    }),
    { default: LOCAL_OIDC_ISSUERS },
  ),
  maxCredentialSeconds: integer({
    flag: 'max-credential-lifetime',
    env: 'LATCHKEY_KMS_MAX_CREDENTIAL_SECONDS',
    valueName: '<seconds>',
    min: MIN_MAX_CREDENTIAL_SECONDS,
    max: 10 * 365 * 86_400,
    default: DEFAULT_MAX_CREDENTIAL_SECONDS,
    description:
      'The longest lifetime a session, sign-in credential (stamp_login, OTP, email, OAuth) or API key may be given; a longer expirationSeconds is refused, and a sub-organization’s API keys must have one.',
  }),
  freshVerificationSeconds: integer({
    flag: 'fresh-verification-window',
    env: 'LATCHKEY_KMS_FRESH_VERIFICATION_SECONDS',
    valueName: '<seconds>',
    min: 0,
    max: 86_400,
    default: DEFAULT_FRESH_VERIFICATION_SECONDS,
    description:
      'How long a credential from an email code (otp_auth, email_auth) counts as a fresh verification. In a sub-organization, export and new API keys, passkeys, sessions or logins from any other session credential need a passkey stamp.',
  }),
  mfaRequired: custom<readonly string[]>({
    flag: 'mfa-required',
    env: 'LATCHKEY_KMS_MFA_REQUIRED',
    valueName: '<action,…>',
    description:
      'The actions that need a second factor verified within the grace window, comma-separated: sign-in, export, add-login, add-key, grant, tx-over:<wei> (sign_transaction of a larger value). Whatever is listed, a user with a factor enrolled needs it for export and for new logins, keys and sessions. Default: only that.',
    convert: (text, label) => {
      const actions = text
        .split(',')
        .map((action) => action.trim())
        .filter(Boolean)
      try {
        mfaSettings(actions)
      } catch (error) {
        throw new SettingsError(`${label}: ${(error as Error).message.replace(/^mfa: /, '')}`)
      }
      return actions
    },
  }),
  mfaGraceSeconds: integer({
    flag: 'mfa-grace',
    env: 'LATCHKEY_KMS_MFA_GRACE_SECONDS',
    valueName: '<seconds>',
    min: 0,
    max: 86_400,
    default: DEFAULT_MFA_GRACE_SECONDS,
    description: 'How long a verified second factor counts for the actions that need one.',
  }),
  eip7702Delegates: list(
    custom({
      flag: 'eip7702-delegate',
      env: 'LATCHKEY_KMS_EIP7702_DELEGATES',
      valueName: '<address>',
      description:
        'The batch executor: the contract a sub-organization’s EIP-7702 authorizations may delegate to, and the one delegate and batch target the consent frame signs for. Any other, and chain id 0, is refused. Repeatable when no frames are served. Default: none, so every delegation in a sub-organization is refused and the frame signs no authorization or batch.',
      convert: delegateAddress,
    }),
  ),
  framesParentOrigins: list(
    origin({
      flag: 'frames-parent-origin',
      env: 'LATCHKEY_KMS_FRAMES_PARENT_ORIGINS',
      description: 'Serve the auth, recovery, export and import frames on their own port, embeddable by these origins only. Without it: no frames.',
    }),
  ),
  framesChains: list(
    custom({
      flag: 'frames-chain',
      env: 'LATCHKEY_KMS_FRAMES_CHAINS',
      valueName: '<chain id>=<rpc url>',
      description:
        'A chain the consent frame decodes and simulates transactions on, e.g. 31337=http://127.0.0.1:8545; repeat for more chains. The frame may connect to these RPC origins and no other. Without it: the frame reviews no transaction.',
      convert: frameChainEntry,
    }),
  ),
  framesPaymasters: list(
    custom({
      flag: 'frames-paymaster',
      env: 'LATCHKEY_KMS_FRAMES_PAYMASTERS',
      valueName: '<chain id>=<sponsor|token>:<address>',
      description:
        'A paymaster of the app, e.g. 31337=sponsor:0x… or 31337=token:0x…; repeat per chain and kind. The consent frame shows a UserOperation through it as "Network fee: sponsored by <app name>" or as its cost in the token, and any other paymaster with a warning. Default: none.',
      convert: framePaymasterEntry,
    }),
  ),
  framesAppName: text({
    flag: 'frames-app-name',
    env: 'LATCHKEY_KMS_FRAMES_APP_NAME',
    valueName: '<name>',
    description: 'The app’s name the consent frame shows for a sponsored fee ("sponsored by <name>"), never taken from the page. Default: "the app".',
  }),
  framesExecutor: custom({
    flag: 'frames-executor',
    env: 'LATCHKEY_KMS_FRAMES_EXECUTOR',
    valueName: '<address>',
    description:
      'Deprecated: --eip7702-delegate names the batch executor for the kms and the consent frame alike. Given alone, it sets both; given with a different --eip7702-delegate, the kms does not start.',
    convert: delegateAddress,
  }),
  corsOrigins: list(
    origin({
      flag: 'cors-origin',
      env: 'LATCHKEY_KMS_CORS_ORIGINS',
      description:
        'Page origins whose browsers may read the API’s answers, besides the passkey origins and the frames’ (an app whose page calls the kms from another origin).',
    }),
  ),
  rateLimitPerKey: integer({
    flag: 'rate-limit-per-key',
    env: 'LATCHKEY_KMS_RATE_LIMIT_PER_KEY',
    min: 0,
    max: 1_000_000_000,
    default: DEFAULT_RATE_LIMITS.perApiKey,
    valueName: '<units>',
    description:
      'Units of activity one API key or passkey may submit per 10 s, shared by every instance on the database: an activity is 1 unit, plus 10 per account it derives. Beyond: 429, code 8. 0 turns the limit off.',
  }),
  rateLimitPerOrganization: integer({
    flag: 'rate-limit-per-organization',
    env: 'LATCHKEY_KMS_RATE_LIMIT_PER_ORGANIZATION',
    min: 0,
    max: 1_000_000_000,
    default: DEFAULT_RATE_LIMITS.perOrganization,
    valueName: '<units>',
    description: 'Units of activity one organization may be submitted per 10 s (as --rate-limit-per-key counts them). 0 turns the limit off.',
  }),
  framesPort: port({ flag: 'frames-port', env: 'LATCHKEY_KMS_FRAMES_PORT', default: 8091, description: 'Port of the frames.' }),
  framesHost: text({
    flag: 'frames-host',
    env: 'LATCHKEY_KMS_FRAMES_HOST',
    valueName: '<address>',
    description: 'Address the frames listen on. Default: localhost (127.0.0.1 and ::1) when --host is 127.0.0.1, else --host.',
  }),
  ...auditSettings(),
}

function frameChainEntry(entry: string, label: string): FrameChain {
  const split = entry.indexOf('=')
  const id = Number(entry.slice(0, split).trim())
  const rpcUrl = entry.slice(split + 1).trim()
  try {
    return assertChain({ id, rpcUrl })
  } catch {
    throw new SettingsError(`${label} must look like 31337=http://127.0.0.1:8545 (a chain id and its http(s) RPC url), got ${JSON.stringify(entry)}`)
  }
}

function framePaymasterEntry(entry: string, label: string): FramePaymaster {
  const match = /^\s*(\d+)\s*=\s*(sponsor|token)\s*:\s*(0x[0-9a-fA-F]{40})\s*$/.exec(entry)
  if (!match)
    throw new SettingsError(`${label} must look like 31337=sponsor:0x… or 31337=token:0x… (a chain id, a kind and an address), got ${JSON.stringify(entry)}`)
  return { chainId: Number(match[1]), kind: match[2] as FramePaymaster['kind'], address: match[3]! }
}

function delegateAddress(entry: string, label: string): string {
  if (!isAddress(entry.trim(), { strict: false }))
    throw new SettingsError(`${label} must be an Ethereum address (0x and 40 hex digits), got ${JSON.stringify(entry)}`)
  return entry.trim()
}

/**
 * The batch executor from --eip7702-delegate, or from the deprecated --frames-executor when that
 * is all that is given (with a warning); both given and different, or several delegates while the
 * frames are served: a settings error naming the flags.
 */
function executorOf(
  values: { eip7702Delegates: readonly string[]; framesExecutor: string | undefined; framesParentOrigins: readonly string[] },
  logger: Pick<Logger, 'warn'>,
) {
  let executor: ReturnType<typeof batchExecutor>
  try {
    executor = batchExecutor(
      { delegates: values.eip7702Delegates, deprecatedExecutor: values.framesExecutor, framesServed: values.framesParentOrigins.length > 0 },
      { delegates: settingLabel(settings.eip7702Delegates), deprecatedExecutor: settingLabel(settings.framesExecutor) },
    )
  } catch (error) {
    throw new SettingsError((error as Error).message)
  }
  if (values.framesExecutor !== undefined)
    logger.warn(
      `${settingLabel(settings.framesExecutor)} is deprecated: ${settingLabel(settings.eip7702Delegates)} names the batch executor for the kms and the consent frame`,
    )
  return executor
}

function oidcIssuerEntry(entry: string, label: string): string {
  const split = entry.lastIndexOf('=')
  const [issuer, clientId] = [entry.slice(0, split).trim(), entry.slice(split + 1).trim()]
  let parsed: URL | undefined
  try {
    parsed = new URL(issuer)
  } catch {
    parsed = undefined
  }
  if (split < 0 || !clientId || !parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:'))
    throw new SettingsError(`${label} must look like https://accounts.google.com=<client id>, got ${JSON.stringify(entry)}`)
  return `${issuer}=${clientId}`
}

/** `issuer=client id` entries as createKms takes them: one issuer with all its client ids. */
function oidcIssuersOf(entries: readonly string[]): OidcIssuer[] {
  const byIssuer = new Map<string, string[]>()
  for (const entry of entries) {
    const split = entry.lastIndexOf('=')
    const issuer = entry.slice(0, split)
    byIssuer.set(issuer, [...(byIssuer.get(issuer) ?? []), entry.slice(split + 1)])
  }
  return [...byIssuer].map(([issuer, audiences]) => ({ issuer, audiences: [...new Set(audiences)] }))
}

/** The store settings as createKms takes them; init-organization refuses to run without one. */
function storeOf(values: { db: string | undefined; databaseUrl: string | undefined }) {
  if (values.db !== undefined && values.databaseUrl !== undefined)
    throw new SettingsError(`choose one store, not ${settingLabel(storeSettings.db)} and ${settingLabel(storeSettings.databaseUrl)}`)
  if (values.databaseUrl !== undefined)
    return { options: { databaseUrl: values.databaseUrl }, name: `postgres ${withoutCredentials(values.databaseUrl)}`, persistent: true }
  if (values.db !== undefined) {
    const path = resolve(values.db)
    return { options: { databasePath: path }, name: `sqlite ${path}`, persistent: true }
  }
  return { options: { databasePath: ':memory:' }, name: 'memory', persistent: false }
}

/** createKms, with a store that cannot be opened said in one line. */
async function openKms(options: Parameters<typeof createKms>[0] & {}, storeName: string) {
  let kms: ReturnType<typeof createKms> | undefined
  try {
    kms = createKms(options)
    await kms.ready()
    return kms
  } catch (error) {
    await kms?.stop().catch(() => {})
    throw new Error(`could not open the store (${storeName}): ${(error as Error).message}`)
  }
}

/** Unwraps the data keys before anything listens: a KEK that does not unwrap them is a bad setting (exit 2, one line). */
async function loadKeys(kms: ReturnType<typeof createKms>, kekName: string) {
  try {
    await kms.keyring.load()
  } catch (error) {
    await kms.stop().catch(() => {})
    throw new SettingsError(`the data keys cannot be unwrapped with ${kekName}: ${(error as Error).message}`)
  }
}

/** The settings of the commands that open sealed rows: the store, and the keys as the kms has them. */
const keySettings = { ...storeSettings, masterKey: settings.masterKey, kek: settings.kek }
type KeyValues = { db: string | undefined; databaseUrl: string | undefined; masterKey: Uint8Array | undefined; kek: string | undefined }

/** Opens the store with the configured KEK and its data keys unwrapped, runs `work`, closes. */
async function withKeys<result>(command: string, values: KeyValues, work: (kms: ReturnType<typeof createKms>) => Promise<result>): Promise<result> {
  if (values.db === undefined && values.databaseUrl === undefined)
    throw new SettingsError(
      `${command} works on the kms's store: set ${settingLabel(storeSettings.db)} or ${settingLabel(storeSettings.databaseUrl)}, as the kms has them`,
    )
  const store = storeOf(values)
  const kek = await openKek(values.kek ?? 'env', values.masterKey, settingLabel(settings.masterKey))
  const kms = await openKms({ ...store.options, masterKey: values.masterKey, kek }, store.name)
  await loadKeys(kms, kek.id)
  try {
    return await work(kms)
  } finally {
    await kms.stop()
  }
}

const compressedPublicKey = (text: string, label: string) => {
  const hex = text.trim().toLowerCase()
  let valid = /^0[23][0-9a-f]{64}$/.test(hex)
  if (valid)
    try {
      p256.ProjectivePoint.fromHex(hex)
    } catch {
      valid = false
    }
  if (!valid) throw new SettingsError(`${label} must be a compressed P-256 public key (66 hex characters starting 02 or 03), got ${JSON.stringify(text)}`)
  return hex
}

const initOrganizationSettings = {
  ...storeSettings,
  name: text({ flag: 'name', env: 'LATCHKEY_ORGANIZATION_NAME', description: 'The organization’s name (required).' }),
  publicKey: custom({
    flag: 'public-key',
    env: 'LATCHKEY_API_PUBLIC_KEY',
    valueName: '<hex>',
    description: 'The backend’s API public key, compressed P-256 hex (required).',
    convert: compressedPublicKey,
  }),
  userName: text({ flag: 'user-name', default: 'app backend', description: 'Name of the organization’s first user, who holds the key.' }),
  apiKeyName: text({ flag: 'api-key-name', default: 'root', description: 'Name of the API key.' }),
}

/** `verify-backup <file>`: the file as its first argument too (the settings parser takes flags only). */
const argv = process.argv.slice(2)
if (argv[0] === 'verify-backup' && argv[1] !== undefined && !argv[1].startsWith('-')) argv.splice(1, 1, '--file', argv[1])

await runService({
  name: 'latchkey-kms',
  argv,
  version,
  summary:
    'A key-management service wire-compatible with the Turnkey API: stamped requests, organizations, wallets, signing, email and passkey sign-in. Optionally serves the auth, recovery, export and import frames on their own origin.',
  settings,
  production(_values, given) {
    return given.has('db') || given.has('databaseUrl') ? [] : [`a store: ${settingLabel(settings.db)} or ${settingLabel(settings.databaseUrl)}`]
  },
  notes: [
    'Health: GET /healthz answers 200 while the process runs; GET /readyz answers 200 when the database answers a query, else 503 with {"status":"unavailable","reason":…} (both on the frames port too).',
    'Set up: `latchkey-kms generate-keys` prints fresh keys; `latchkey-kms init-organization --name … --public-key …` creates the organization a backend acts for.',
  ],
  async start(values, { logger, production, metrics }) {
    const store = storeOf(values)
    if (store.persistent && !values.masterKey && (values.kek ?? 'env') === 'env')
      throw new SettingsError(
        `a persistent store (${store.name}) needs a master key that outlives the process: set ${settingLabel(settings.masterKey)} (\`latchkey-kms generate-keys\` makes one), or use no store setting to keep everything in memory`,
      )
    const smtpProblem = production && values.smtpUrl ? smtpWithoutTls(new URL(values.smtpUrl)) : undefined
    if (smtpProblem) throw new SettingsError(`${settingLabel(settings.smtpUrl)}: ${smtpProblem}`)
    const framesHost = values.framesHost ?? (values.host === '127.0.0.1' ? 'localhost' : values.host)
    const executor = executorOf(values, logger)
    // Without a master key or an HSM, the kms runs in memory with a key made for the process (development only).
    const kek = values.kek && values.kek !== 'env' ? await openKek(values.kek, values.masterKey, settingLabel(settings.masterKey)) : undefined
    const kms = await openKms(
      {
        ...store.options,
        port: values.port,
        host: values.host,
        masterKey: values.masterKey,
        kek,
        keyRefreshMs: values.keyRefreshMs,
        signerPrivateKey: values.signerKey,
        nextSignerPublicKey: values.nextSignerPublicKey,
        // In production, mail with codes goes over TLS only (STARTTLS required on smtp://).
        smtp: values.smtpUrl ? { url: values.smtpUrl, from: values.mailFrom, requireTLS: production } : undefined,
        webauthn: { rpIds: values.rpIds, origins: values.passkeyOrigins },
        oidcIssuers: oidcIssuersOf(values.oidcIssuers),
        maxCredentialSeconds: values.maxCredentialSeconds,
        freshVerificationSeconds: values.freshVerificationSeconds,
        mfa: { required: values.mfaRequired ?? [], graceSeconds: values.mfaGraceSeconds },
        eip7702Delegates: executor.delegates,
        extraCorsOrigins: values.corsOrigins,
        frames: values.framesParentOrigins.length
          ? {
              port: values.framesPort,
              host: framesHost,
              parentOrigins: values.framesParentOrigins,
              chains: values.framesChains,
              paymasters: values.framesPaymasters,
              appName: values.framesAppName,
            }
          : undefined,
        rateLimits: { perApiKey: values.rateLimitPerKey, perOrganization: values.rateLimitPerOrganization, windowMs: DEFAULT_RATE_LIMITS.windowMs },
        logger,
        metrics,
        auditKey: values.auditKey,
        auditLogFile: values.auditLogFile === undefined ? undefined : resolve(values.auditLogFile),
      },
      store.name,
    )
    await loadKeys(kms, kek?.id ?? 'the master key')
    try {
      await kms.start()
    } catch (error) {
      await kms.stop()
      throw error
    }
    const mail = values.smtpUrl ? `smtp ${withoutCredentials(values.smtpUrl)}` : 'dev inbox'
    logger.info(
      {
        url: kms.url,
        framesUrl: kms.framesUrl,
        store: store.name,
        mail,
        signerPublicKey: kms.signerPublicKey,
        passkeys: { rpIds: values.rpIds, origins: values.passkeyOrigins },
        oidcIssuers: oidcIssuersOf(values.oidcIssuers),
        production,
      },
      `kms listening on ${kms.url}${kms.framesUrl ? `, frames on ${kms.framesUrl}` : ''} (store: ${store.name}; mail: ${mail})`,
    )
    if (!values.masterKey) logger.warn('the master key was generated for this process: what it seals is lost when the process stops (development only)')
    if (!values.signerKey)
      logger.warn('the signer key was generated for this process: backends and frames must pin its new public key after each restart (development only)')
    if (values.oidcIssuers.join(',') === LOCAL_OIDC_ISSUERS.join(','))
      logger.warn(
        'OIDC tokens are trusted from the devnet’s local provider at http://localhost:8092 only (development only): set --oidc-issuer for Google or Apple',
      )
    if (!values.auditKey) logger.warn('the audit trail hashes IPs and emails with the fixed development key (development only)')
    if (!values.smtpUrl) logger.warn(`mail goes to the dev inbox at ${kms.url}/dev/mailbox, readable by anyone who reaches the kms (development only)`)
    return { stop: () => kms.stop(), inflight: () => kms.inflight() }
  },
  commands: {
    'init-organization': {
      summary: 'Create the organization (no parent) a backend acts for, its first user and API key; prints their ids as JSON. Idempotent.',
      settings: initOrganizationSettings,
      async run(values: {
        db: string | undefined
        databaseUrl: string | undefined
        name: string | undefined
        publicKey: string | undefined
        userName: string
        apiKeyName: string
      }) {
        if (values.name === undefined) throw new SettingsError(`${settingLabel(initOrganizationSettings.name)} is required`)
        if (values.publicKey === undefined) throw new SettingsError(`${settingLabel(initOrganizationSettings.publicKey)} is required`)
        if (values.db === undefined && values.databaseUrl === undefined)
          throw new SettingsError(
            `init-organization writes to the kms's store: set ${settingLabel(storeSettings.db)} or ${settingLabel(storeSettings.databaseUrl)}, as the kms has them`,
          )
        const store = storeOf(values)
        // Organizations, users and API keys are not sealed: no master key is needed to create them.
        const kms = await openKms({ ...store.options, masterKey: randomBytes(32) }, store.name)
        try {
          const existing = await kms.parentOrganizationOf(values.publicKey)
          if (existing) {
            if (existing.name !== values.name)
              throw new SettingsError(
                `the API key is already the key of organization ${existing.organizationId} ("${existing.name}"), not "${values.name}": use that organization, or a new key pair`,
              )
            return { ...existing, created: false }
          }
          const created = await kms.createParentOrganization({
            name: values.name,
            userName: values.userName,
            publicKey: values.publicKey,
            apiKeyName: values.apiKeyName,
          })
          return { organizationId: created.organizationId, name: values.name, userId: created.userId, apiKeyId: created.apiKeyId, created: true }
        } catch (error) {
          if (error instanceof KmsError) throw new SettingsError(error.message)
          throw error
        } finally {
          await kms.stop()
        }
      },
    },
    'audit verify': auditVerifyCommand(storeSettings, async (values: { db: string | undefined; databaseUrl: string | undefined }) => {
      if (values.db === undefined && values.databaseUrl === undefined)
        throw new SettingsError(
          `audit verify reads the kms's store: set ${settingLabel(storeSettings.db)} or ${settingLabel(storeSettings.databaseUrl)}, as the kms has them`,
        )
      const store = storeOf(values)
      // Nothing sealed is read: no master key is needed.
      const kms = await openKms({ ...store.options, masterKey: randomBytes(32) }, store.name)
      try {
        return await kms.verifyAudit()
      } finally {
        await kms.stop()
      }
    }),
    'keys status': {
      summary:
        'Print the KEK, the data keys (which is active, which this KEK unwraps) and how many sealed rows each data key holds (v1: the master key directly).',
      settings: keySettings,
      run: (values: KeyValues) => withKeys('keys status', values, (kms) => keyStatus(kms.db, kms.keyring)),
    },
    'keys rotate': {
      summary: 'Make a new data key, wrapped by the KEK; it seals new rows once every instance has read it (two --key-refresh-interval). Then run keys rewrap.',
      settings: keySettings,
      run: (values: KeyValues) => withKeys('keys rotate', values, (kms) => rotateDataKey(kms.db, kms.keyring)),
    },
    'keys rewrap': {
      summary:
        'Reseal every row that is not under the active data key (older data keys, or the master key before data keys) with it, online, in batches; run it again to resume after a stop.',
      settings: {
        ...keySettings,
        keyRefreshMs: settings.keyRefreshMs,
        batchSize: integer({ flag: 'batch-size', min: 1, max: 10_000, default: REWRAP_DEFAULTS.batchSize, description: 'Rows resealed per transaction.' }),
        dutyCycle: integer({
          flag: 'duty-cycle',
          min: 1,
          max: 100,
          default: REWRAP_DEFAULTS.dutyCycle * 100,
          valueName: '<percent>',
          description: 'The share of the time the rewrap works; it rests the rest, so instances keep signing at nearly their idle pace. 100: no rest.',
        }),
      },
      run: (values: KeyValues & { keyRefreshMs: number; batchSize: number; dutyCycle: number }) =>
        withKeys('keys rewrap', values, (kms) =>
          rewrapRows(kms.db, kms.keyring, {
            batchSize: values.batchSize,
            dutyCycle: values.dutyCycle / 100,
            onBatch: (progress) => process.stderr.write(`keys rewrap: ${progress.moved} rows resealed (${progress.table})\n`),
          }),
        ),
    },
    'keys rotate-kek': {
      summary:
        'Wrap every data key the current KEK (--kek, the master key) unwraps by another KEK (--to-kek, --to-master-key-file) instead; then restart the instances with the new one.',
      settings: {
        ...keySettings,
        toKek: kekSetting('to-kek', 'LATCHKEY_KMS_TO_KEK', 'The KEK to wrap the data keys by from now on'),
        toMasterKey: secret({
          env: 'LATCHKEY_KMS_TO_MASTER_KEY',
          fileFlag: 'to-master-key-file',
          convert: hexBytes(32),
          description: 'The new master key, for --to-kek env (64 hex characters).',
        }),
      },
      run: async (values: KeyValues & { toKek: string | undefined; toMasterKey: Uint8Array | undefined }) => {
        if (values.toKek === undefined && values.toMasterKey === undefined)
          throw new SettingsError('keys rotate-kek needs the new KEK: set --to-kek or --to-master-key-file')
        const next = await openKek(values.toKek ?? 'env', values.toMasterKey, '--to-master-key-file', '--to-kek')
        try {
          return await withKeys('keys rotate-kek', values, async (kms) => {
            if (next.id === kms.keyring.kek.id) throw new SettingsError(`the new KEK is the current one (${next.id})`)
            return rotateKek(kms.db, kms.keyring, next)
          })
        } finally {
          await next.close()
        }
      },
    },
    backup: {
      summary:
        'Copy the SQLite store to a new file, consistent while the kms writes (SQLite’s online backup); checks first that the configured key unwraps its data keys. PostgreSQL: see the README (pg_dump).',
      settings: { ...keySettings, to: text({ flag: 'to', valueName: '<file>', description: 'The backup file to write (must not exist).' }) },
      async run(values: KeyValues & { to: string | undefined }) {
        if (values.to === undefined) throw new SettingsError('backup needs --to <file>')
        if (values.databaseUrl !== undefined)
          throw new SettingsError('backup copies a SQLite store; back up PostgreSQL with pg_dump or pgBackRest (the kms README, "Backing up Latchkey")')
        const to = resolve(values.to)
        if (existsSync(to)) throw new SettingsError(`the backup file ${to} exists already: name a new file`)
        await withKeys('backup', values, async () => {})
        return backupSqlite(resolve(values.db ?? ''), to)
      },
    },
    'verify-backup': {
      summary: 'Open every sealed row of a backup (a SQLite file) with the configured key; exits 1 naming the first row that does not open.',
      settings: {
        masterKey: settings.masterKey,
        kek: settings.kek,
        file: text({ flag: 'file', valueName: '<file>', description: 'The backup (also as the first argument).' }),
      },
      async run(values: { masterKey: Uint8Array | undefined; kek: string | undefined; file: string | undefined }) {
        if (values.file === undefined) throw new SettingsError('verify-backup needs the backup file: latchkey-kms verify-backup <file>')
        const file = resolve(values.file)
        if (!existsSync(file)) throw new SettingsError(`the backup file ${file} does not exist`)
        const copy = await scratchCopy(file)
        try {
          const verdict = await withKeys('verify-backup', { db: copy, databaseUrl: undefined, masterKey: values.masterKey, kek: values.kek }, (kms) =>
            verifySealedRows(kms.db, kms.keyring),
          )
          if (!verdict.intact)
            throw new Error(
              `row ${verdict.failed.key} of ${verdict.failed.table}.${verdict.failed.column} does not open: ${verdict.failed.problem} (${verdict.opened} rows before it opened)`,
            )
          return { intact: true, opened: verdict.opened }
        } finally {
          await removeScratch(copy)
        }
      },
    },
    'generate-keys': {
      summary: 'Print a fresh master key, signer key pair and backend API key pair as JSON (hex), for the settings above and the backend.',
      settings: {},
      async run() {
        const signerPrivateKey = Buffer.from(p256.utils.randomPrivateKey()).toString('hex')
        const api = generateApiKeyPair()
        return {
          masterKey: randomBytes(32).toString('hex'),
          signerPrivateKey,
          signerPublicKey: Buffer.from(p256.getPublicKey(signerPrivateKey, false)).toString('hex'),
          apiPrivateKey: api.apiPrivateKey,
          apiPublicKey: api.apiPublicKey,
        }
      },
    },
    ...migrationCommands({
      service: 'kms',
      migrations: KMS_MIGRATIONS,
      storeSettings,
      locate: (values) => {
        const { options } = storeOf(values)
        return 'databaseUrl' in options ? options.databaseUrl : options.databasePath === ':memory:' ? undefined : options.databasePath
      },
      storeLabel: `${settingLabel(storeSettings.db)} or ${settingLabel(storeSettings.databaseUrl)}`,
    }),
  },
})
