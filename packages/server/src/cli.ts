#!/usr/bin/env node
/**
 * `latchkey-server`: the app backend on its own, for self-hosting. Settings by flag or
 * environment variable (`latchkey-server --help`), JSON logs on standard output, `GET /healthz`
 * and `GET /readyz`, a graceful stop on SIGTERM or SIGINT. The package README has the details.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import {
  auditSettings,
  auditVerifyCommand,
  baseSettings,
  custom,
  integer,
  list,
  origin,
  runService,
  SettingsError,
  secret,
  secretUrl,
  settingLabel,
  text,
  toggle,
  url,
  withoutCredentials,
} from '@latchkey/service'
import { migrationCommands } from '@latchkey/service/database'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { getPublicKey } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { APPLE_CLIENT_SECRET_SECONDS, APPLE_ISSUER, appleClientSecret } from './appleClientSecret.js'
import { createServerAudit, verifyServerAudit } from './audit.js'
import { createDelegatedAccess } from './internal/delegated.js'
import { ACCESS_TOKEN_SECONDS, SESSION_JWT_DEFAULTS, sessionJwtKeyTexts } from './internal/sessionTokens.js'
import type { SiweChain } from './internal/siwe.js'
import { narrowDelegatedPolicies } from './narrowDelegated.js'
import { parsePaymasterPolicy } from './paymaster/policy.js'
import { revokeSessions } from './revoke.js'
import { OAUTH_CALLBACK_PATH, type OAuthProviderConfig, type OAuthProviderName } from './routes/oauth.js'
import { createAppServer } from './service.js'
import { openStore, SERVER_MIGRATIONS, type Store, WEBHOOK_RETENTION_MS } from './store.js'
import { sinceOf } from './webhooks/since.js'

const { version } = createRequire(import.meta.url)('../package.json') as { version: string }

const hexKey = (pattern: RegExp, what: string) => (text: string, label: string) => {
  const hex = text.trim().toLowerCase()
  if (!pattern.test(hex)) throw new SettingsError(`${label} must be ${what}, got ${JSON.stringify(text)}`)
  return hex
}

const GOOGLE_ISSUER = 'https://accounts.google.com'

/** Where the backend keeps its tables (the serve command and the one-off commands share them). */
const storeSettings = {
  db: text({
    flag: 'db',
    env: 'LATCHKEY_SERVER_DB',
    valueName: '<path>',
    description:
      'Keep accounts and sessions in this SQLite file (one instance). Without it or DATABASE_URL: in memory (development only); production needs one of them.',
  }),
  databaseUrl: secretUrl({
    env: 'DATABASE_URL',
    fileFlag: 'database-url-file',
    protocols: ['postgres:', 'postgresql:'],
    description:
      'Keep accounts and sessions in PostgreSQL (postgres://user:password@host:5432/db), shared by every backend instance; migrations run at start. Instead of --db.',
  }),
}

const settings = {
  ...baseSettings({ port: 8787 }),
  ...storeSettings,
  kmsUrl: url({
    flag: 'kms-url',
    env: 'LATCHKEY_KMS_URL',
    protocols: ['http:', 'https:'],
    default: 'http://127.0.0.1:8090',
    production: 'required',
    description: 'The key-management API the backend calls (latchkey-kms, or https://api.turnkey.com).',
  }),
  publicKmsUrl: url({
    flag: 'public-kms-url',
    env: 'LATCHKEY_PUBLIC_KMS_URL',
    protocols: ['http:', 'https:'],
    description: 'The key-management API as browsers reach it, published at GET /auth/config. Default: --kms-url.',
  }),
  framesUrl: url({
    flag: 'frames-url',
    env: 'LATCHKEY_FRAMES_URL',
    protocols: ['http:', 'https:'],
    description: 'Where browsers load the kms frames (export, import, recovery), published at GET /auth/config.',
  }),
  organizationId: text({
    flag: 'organization-id',
    env: 'LATCHKEY_ORGANIZATION_ID',
    valueName: '<id>',
    description: 'The parent organization the backend acts for, as `latchkey-kms init-organization` printed it (required).',
  }),
  apiPublicKey: custom({
    flag: 'api-public-key',
    env: 'LATCHKEY_API_PUBLIC_KEY',
    valueName: '<hex>',
    description: 'The parent organization’s API public key, compressed P-256 hex (required).',
    convert: hexKey(/^0[23][0-9a-f]{64}$/, 'a compressed P-256 public key (66 hex characters starting 02 or 03)'),
  }),
  apiPrivateKey: secret({
    env: 'LATCHKEY_API_PRIVATE_KEY',
    fileFlag: 'api-private-key-file',
    description: 'The private key of --api-public-key, 64 hex characters (required).',
    convert: (text, label) => hexKey(/^[0-9a-f]{64}$/, 'a P-256 private key as 64 hex characters')(text.replace(/^0x/i, ''), label),
  }),
  delegationSecret: secret({
    env: 'LATCHKEY_DELEGATION_SECRET',
    fileFlag: 'delegation-secret-file',
    description:
      'What the delegated users’ keys in each account derive from, 64 hex characters. Default: the API private key, as every account made without it; set it to that key before rotating the API key, or existing accounts lose delegated access.',
    convert: (text, label) => {
      const hex = text.trim().replace(/^0x/i, '').toLowerCase()
      // Never echoed: it is a secret.
      if (!/^[0-9a-f]{64}$/.test(hex)) throw new SettingsError(`${label} must be 64 hex characters`)
      return hex
    },
  }),
  sessionSignerPublicKey: list(
    custom({
      flag: 'session-signer-public-key',
      env: 'LATCHKEY_SESSION_SIGNER_PUBLIC_KEY',
      valueName: '<hex>',
      description:
        'The key that signs session JWTs, uncompressed P-256 hex: latchkey-kms’s signerPublicKey; while it rotates, its signer and next key (repeatable, the variable comma-separated). Default: Turnkey’s production notarizer key.',
      convert: hexKey(/^04[0-9a-f]{128}$/, 'an uncompressed P-256 public key (130 hex characters starting 04)'),
    }),
  ),
  appName: text({ flag: 'app-name', env: 'LATCHKEY_APP_NAME', default: 'Latchkey', valueName: '<name>', description: 'Shown in sign-in and recovery emails.' }),
  allowedOrigins: list(
    origin({
      flag: 'allowed-origin',
      env: 'LATCHKEY_ALLOWED_ORIGINS',
      production: 'required',
      description: 'Browser origins allowed to call with credentials (CORS); a SIWE message’s URI must have one. No wildcard.',
    }),
    { default: ['http://localhost:5173'] },
  ),
  siweDomains: list(
    text({
      flag: 'siwe-domain',
      env: 'LATCHKEY_SIWE_DOMAINS',
      valueName: '<host[:port]>',
      description: 'Domains a SIWE message may be for. Default: the hosts of --allowed-origin.',
    }),
  ),
  chains: list(
    custom({
      flag: 'chain',
      env: 'LATCHKEY_CHAINS',
      valueName: '<chainId>=<rpcUrl>',
      description:
        'A chain SIWE messages may name, with the RPC its signatures are verified through, e.g. 1=https://rpc.example (never logged). Default: none.',
      convert: (entry, label): SiweChain => {
        const split = entry.indexOf('=')
        const [id, rpcUrl] = [entry.slice(0, split), entry.slice(split + 1)]
        if (split < 0 || !/^[1-9]\d{0,15}$/.test(id))
          throw new SettingsError(`${label} must look like 1=https://rpc.example, got ${JSON.stringify(withoutCredentials(entry))}`)
        let parsed: URL | undefined
        try {
          parsed = new URL(rpcUrl)
        } catch {
          parsed = undefined
        }
        if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
          throw new SettingsError(`${label}: the RPC of chain ${id} must be an http:// or https:// URL`)
        return { id: Number(id), rpcUrl }
      },
      secretsOf: (chain) => [chain.rpcUrl],
    }),
  ),
  sessionSeconds: integer({
    flag: 'session-seconds',
    env: 'LATCHKEY_SESSION_SECONDS',
    min: 60,
    max: 31_536_000,
    default: 604_800,
    valueName: '<seconds>',
    description: 'How long a browser session (the cookie) lasts.',
  }),
  sessionJwtKey: secret({
    env: 'LATCHKEY_SESSION_JWT_KEY',
    fileFlag: 'session-jwt-key-file',
    production: 'required',
    description:
      'The P-256 private keys of session JWTs (POST /auth/token), PKCS#8 PEM or private JWKs: one key, or several (PEM blocks one after another, a JSON array or a JWK Set) while rotating; the first signs, all are published in the JWKS; every instance needs the same list. Without it: a key generated at start (development only).',
    convert: (text, label) => {
      const refused = new SettingsError(`${label} must be a P-256 private key (PKCS#8 PEM or a private JWK), or a list of them`)
      let texts: string[]
      try {
        texts = sessionJwtKeyTexts(text)
      } catch {
        throw refused
      }
      const thumbprints = texts.map((keyText) => {
        let key: KeyObject | undefined
        try {
          key = keyText.startsWith('{') ? createPrivateKey({ key: JSON.parse(keyText), format: 'jwk' }) : createPrivateKey(keyText)
        } catch {
          key = undefined
        }
        if (key?.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw refused
        return createPublicKey(key).export({ format: 'der', type: 'spki' }).toString('hex')
      })
      if (thumbprints.length === 0) throw refused
      if (new Set(thumbprints).size !== thumbprints.length) throw new SettingsError(`${label} lists a key twice`)
      return text.trim()
    },
  }),
  adminToken: secret({
    env: 'LATCHKEY_ADMIN_TOKEN',
    fileFlag: 'admin-token-file',
    description:
      'The bearer token of the admin API (/admin/*: webhook endpoints, the operator console at GET /admin), at least 32 characters, for the app’s servers and operators only. Without it the admin API answers 404.',
    convert: (text, label) => {
      const token = text.trim()
      if (token.length < 32 || /\s/.test(token)) throw new SettingsError(`${label} must be at least 32 characters, without spaces`)
      return token
    },
  }),
  webhookTimeout: integer({
    flag: 'webhook-timeout',
    env: 'LATCHKEY_WEBHOOK_TIMEOUT',
    min: 1,
    max: 60,
    default: 10,
    valueName: '<seconds>',
    description:
      'How long a webhook endpoint has to answer before the delivery is tried again. A delivery whose instance died mid-send is sent again, with its webhook-id, by any instance this long plus 5 s after it was claimed.',
  }),
  sessionJwtIssuer: url({
    flag: 'session-jwt-issuer',
    env: 'LATCHKEY_SESSION_JWT_ISSUER',
    protocols: ['http:', 'https:'],
    production: 'required',
    description:
      'The iss claim of session JWTs: the backend’s public URL, as verifiers expect it (never taken from a request’s Host). Default: the URL the backend listens on (development only).',
  }),
  sessionJwtAudience: text({
    flag: 'session-jwt-audience',
    env: 'LATCHKEY_SESSION_JWT_AUDIENCE',
    valueName: '<audience>',
    default: SESSION_JWT_DEFAULTS.audience,
    description: 'The aud claim of session JWTs, which the app’s services check.',
  }),
  accessTokenSeconds: integer({
    flag: 'access-token-seconds',
    env: 'LATCHKEY_ACCESS_TOKEN_SECONDS',
    min: ACCESS_TOKEN_SECONDS.min,
    max: ACCESS_TOKEN_SECONDS.max,
    default: ACCESS_TOKEN_SECONDS.default,
    valueName: '<seconds>',
    description: 'How long a session JWT lasts; its refresh token lasts as long as the session.',
  }),
  googleClientId: text({
    flag: 'google-client-id',
    env: 'LATCHKEY_GOOGLE_CLIENT_ID',
    valueName: '<id>',
    description: '"Continue with Google": the app’s OAuth client id (…apps.googleusercontent.com). Without it: no Google sign-in.',
  }),
  googleClientSecret: secret({
    env: 'LATCHKEY_GOOGLE_CLIENT_SECRET',
    fileFlag: 'google-client-secret-file',
    description: 'The secret of --google-client-id, for the code exchange (Google web clients have one; required in production with Google).',
  }),
  googleIssuer: url({
    flag: 'google-issuer',
    env: 'LATCHKEY_GOOGLE_ISSUER',
    protocols: ['http:', 'https:'],
    default: GOOGLE_ISSUER,
    description: 'The issuer playing Google, e.g. the devnet’s http://localhost:8092/google (development only: production takes https only).',
  }),
  appleClientId: text({
    flag: 'apple-client-id',
    env: 'LATCHKEY_APPLE_CLIENT_ID',
    valueName: '<services id>',
    description: '"Continue with Apple": the app’s Services ID (com.example.web). Without it: no Apple sign-in.',
  }),
  appleTeamId: text({
    flag: 'apple-team-id',
    env: 'LATCHKEY_APPLE_TEAM_ID',
    valueName: '<team id>',
    description: 'The Apple Developer team id: the issuer of the client-secret JWT (required in production with Apple).',
  }),
  appleKeyId: text({
    flag: 'apple-key-id',
    env: 'LATCHKEY_APPLE_KEY_ID',
    valueName: '<key id>',
    description: 'The id of the Sign in with Apple key that signs the client-secret JWT (required in production with Apple).',
  }),
  applePrivateKey: secret({
    env: 'LATCHKEY_APPLE_PRIVATE_KEY',
    fileFlag: 'apple-private-key-file',
    description:
      'The Sign in with Apple key (the .p8 file, P-256 PKCS#8 PEM): signs the client secret Apple’s code exchange takes, an ES256 JWT renewed before it expires (required in production with Apple).',
  }),
  appleClientSecretSeconds: integer({
    flag: 'apple-client-secret-seconds',
    env: 'LATCHKEY_APPLE_CLIENT_SECRET_SECONDS',
    min: APPLE_CLIENT_SECRET_SECONDS.min,
    max: APPLE_CLIENT_SECRET_SECONDS.max,
    default: APPLE_CLIENT_SECRET_SECONDS.default,
    valueName: '<seconds>',
    description: 'How long each Apple client secret lives (at most six months); a new one is signed once half of it has passed.',
  }),
  appleIssuer: url({
    flag: 'apple-issuer',
    env: 'LATCHKEY_APPLE_ISSUER',
    protocols: ['http:', 'https:'],
    default: APPLE_ISSUER,
    description: 'The issuer playing Apple, e.g. the devnet’s http://localhost:8092/apple (development only: production takes https only).',
  }),
  oauthRedirectUri: url({
    flag: 'oauth-redirect-uri',
    env: 'LATCHKEY_OAUTH_REDIRECT_URI',
    protocols: ['http:', 'https:'],
    description: `Where Apple posts its answer (form_post), registered with Apple as the Return URL: this backend’s public ${OAUTH_CALLBACK_PATH}. Default: ${OAUTH_CALLBACK_PATH} on the origin the browser reached the backend at.`,
  }),
  paymasterPolicy: text({
    flag: 'paymaster-policy',
    env: 'LATCHKEY_PAYMASTER_POLICY',
    valueName: '<file.json>',
    description:
      'The ERC-7677 paymaster service at POST /paymaster: the operator’s sponsorship policy (chains, targets, daily budgets in wei, gas cap; the README’s "Paymaster" section). Needs the paymaster signer key. Without it: no paymaster.',
  }),
  paymasterSignerKey: secret({
    env: 'LATCHKEY_PAYMASTER_SIGNER_KEY',
    fileFlag: 'paymaster-signer-key-file',
    description: 'The secp256k1 key (0x and 64 hex digits) whose signatures the sponsor and token paymaster contracts accept.',
    convert: (text, label) => {
      const key = text.trim().toLowerCase()
      if (!/^0x[0-9a-f]{64}$/.test(key)) throw new SettingsError(`${label} must be 0x and 64 hex digits`)
      return key as `0x${string}`
    },
  }),
  trustProxy: toggle({
    flag: 'trust-proxy',
    env: 'LATCHKEY_TRUST_PROXY',
    description:
      'Behind a reverse proxy that terminates TLS: the scheme from X-Forwarded-Proto (the default OAuth callback URL; cookies are Secure either way) and the client address from the last X-Forwarded-For entry (per-IP limits). Only with a proxy that sets both.',
  }),
  guests: toggle({
    flag: 'guests',
    env: 'LATCHKEY_GUESTS',
    description:
      '"Continue as guest": POST /auth/guest creates a wallet with no login (each a kms sub-organization, rate limited), and GET /auth/config says guests: true so the connect modal offers it. Off: that route answers 404.',
  }),
  ...auditSettings(),
}

/** The paymaster's policy file, checked, with its signer key; both or neither (one line on a bad file). */
async function paymasterOf(values: Values) {
  const [policyFlag, keyFlag] = [settingLabel(settings.paymasterPolicy), settingLabel(settings.paymasterSignerKey)]
  if (values.paymasterPolicy === undefined) {
    if (values.paymasterSignerKey !== undefined) throw new SettingsError(`${keyFlag} is given without ${policyFlag}`)
    return undefined
  }
  if (values.paymasterSignerKey === undefined) throw new SettingsError(`${policyFlag} needs ${keyFlag}`)
  let input: unknown
  try {
    input = JSON.parse(await readFile(resolve(values.paymasterPolicy), 'utf8'))
  } catch (error) {
    throw new SettingsError(`${policyFlag}: could not read ${values.paymasterPolicy} as JSON: ${(error as Error).message.split('\n')[0]}`)
  }
  try {
    return { policy: parsePaymasterPolicy(input), signerPrivateKey: values.paymasterSignerKey }
  } catch (error) {
    throw new SettingsError(`${policyFlag}: ${(error as Error).message}`)
  }
}

type Values = { [key in keyof typeof settings]: ReturnType<(typeof settings)[key]['fallback']> }

/**
 * The social sign-ins the settings turn on (a provider is on with its client id), checked before
 * anything starts: the settings of a provider that is off are refused rather than ignored, and
 * production takes only https issuers and what the real providers need for the code exchange
 * (Google's client secret; Apple's team id, key id and key, which sign its client secret).
 */
async function oauthOf(values: Values, production: boolean): Promise<Record<OAuthProviderName, OAuthProviderConfig>> {
  const label = (key: keyof typeof settings) => settingLabel(settings[key])
  const oauth: Record<OAuthProviderName, OAuthProviderConfig> = {}
  const requireFor = (provider: string, clientId: keyof typeof settings, keys: readonly (keyof typeof settings)[]) => {
    for (const key of keys)
      if (values[key] !== undefined && values[clientId] === undefined)
        throw new SettingsError(`${label(key)} is for ${provider} sign-in: give ${label(clientId)} too`)
  }
  requireFor('Google', 'googleClientId', ['googleClientSecret'])
  requireFor('Apple', 'appleClientId', ['appleTeamId', 'appleKeyId', 'applePrivateKey', 'oauthRedirectUri'])
  const productionIssuer = (key: 'googleIssuer' | 'appleIssuer') => {
    if (production && new URL(values[key]).protocol !== 'https:')
      throw new SettingsError(`refusing a development issuer in production (NODE_ENV=production): ${label(key)} must be https://, got ${values[key]}`)
  }
  if (values.googleClientId !== undefined) {
    productionIssuer('googleIssuer')
    if (production && values.googleClientSecret === undefined)
      throw new SettingsError(`refusing Google sign-in without its client secret in production (NODE_ENV=production): set ${label('googleClientSecret')}`)
    oauth.google = { issuer: values.googleIssuer, clientId: values.googleClientId, clientSecret: values.googleClientSecret }
  }
  if (values.appleClientId !== undefined) {
    productionIssuer('appleIssuer')
    const signing = [values.appleTeamId, values.appleKeyId, values.applePrivateKey]
    if (signing.some((value) => value !== undefined) && signing.some((value) => value === undefined))
      throw new SettingsError(`Apple's client secret needs all of ${label('appleTeamId')}, ${label('appleKeyId')} and ${label('applePrivateKey')}`)
    if (production && signing.includes(undefined))
      throw new SettingsError(
        `refusing Apple sign-in without its client-secret key in production (NODE_ENV=production): set ${label('appleTeamId')}, ${label('appleKeyId')} and ${label('applePrivateKey')}`,
      )
    let clientSecret: (() => Promise<string>) | undefined
    if (values.applePrivateKey !== undefined)
      try {
        clientSecret = await appleClientSecret({
          clientId: values.appleClientId,
          teamId: values.appleTeamId!,
          keyId: values.appleKeyId!,
          privateKey: values.applePrivateKey,
          lifetimeSeconds: values.appleClientSecretSeconds,
        })
      } catch {
        throw new SettingsError(`${label('applePrivateKey')} must be the Sign in with Apple key: a P-256 private key in PKCS#8 PEM (the .p8 file)`)
      }
    oauth.apple = { issuer: values.appleIssuer, clientId: values.appleClientId, clientSecret, redirectUri: values.oauthRedirectUri }
  }
  return oauth
}

/** The store a one-off command works on; refused without one (an in-memory store holds nothing to work on). */
async function openCommandStore(values: { db: string | undefined; databaseUrl: string | undefined }, command: string): Promise<Store> {
  if (values.db === undefined && values.databaseUrl === undefined)
    throw new SettingsError(
      `${command} works on the backend's store: set ${settingLabel(storeSettings.db)} or ${settingLabel(storeSettings.databaseUrl)}, as the backend has them`,
    )
  if (values.db !== undefined && values.databaseUrl !== undefined)
    throw new SettingsError(`give ${settingLabel(storeSettings.db)} or ${settingLabel(storeSettings.databaseUrl)}, not both`)
  const url = values.databaseUrl ?? resolve(values.db!)
  try {
    return await openStore(url)
  } catch (error) {
    throw new Error(`could not open the store (${url.includes('://') ? 'postgres' : `sqlite ${url}`}): ${(error as Error).message}`)
  }
}

const replaySettings = {
  ...storeSettings,
  since: text({
    flag: 'since',
    valueName: '<time>',
    description: `Replay events from this moment on: an ISO 8601 time (2026-11-28T08:00:00Z) or a span ago (30m, 6h, 2d); events are kept ${WEBHOOK_RETENTION_MS / 86_400_000} days.`,
  }),
}

const revokeSettings = {
  ...storeSettings,
  kmsUrl: settings.kmsUrl,
  organizationId: settings.organizationId,
  apiPublicKey: settings.apiPublicKey,
  apiPrivateKey: settings.apiPrivateKey,
  delegationSecret: settings.delegationSecret,
  ...auditSettings(),
  email: text({ flag: 'email', valueName: '<email>', description: 'End the sessions of the account with this email.' }),
  address: text({
    flag: 'address',
    valueName: '<0x…>',
    description: 'End every session of this address (and the sessions of the account whose wallet it is).',
  }),
  organization: text({ flag: 'organization', valueName: '<id>', description: 'End the sessions of the account of this sub-organization.' }),
}

const narrowSettings = {
  ...storeSettings,
  kmsUrl: settings.kmsUrl,
  organizationId: settings.organizationId,
  apiPublicKey: settings.apiPublicKey,
  apiPrivateKey: settings.apiPrivateKey,
  delegationSecret: settings.delegationSecret,
  ...auditSettings(),
  dryRun: toggle({ flag: 'dry-run', description: 'Print what would change in each sub-organization, and change nothing.' }),
}

/**
 * Runs a one-off command as the backend acts in the kms: its store, its audit trail, the parent
 * organization's client and the delegated user of each sub-organization; closes them after.
 */
async function withDelegatedAccess<result>(
  values: Omit<RevokeValues, 'email' | 'address' | 'organization'>,
  command: string,
  work: (access: {
    store: Store
    audit: ReturnType<typeof createServerAudit>
    kms: TurnkeyClient
    delegated: ReturnType<typeof createDelegatedAccess>
  }) => Promise<result>,
): Promise<result> {
  for (const key of ['organizationId', 'apiPublicKey', 'apiPrivateKey'] as const)
    if (values[key] === undefined) throw new SettingsError(`${settingLabel(revokeSettings[key])} is required, as the backend has it`)
  const store = await openCommandStore(values, command)
  const audit = createServerAudit(store, { key: values.auditKey, logFile: values.auditLogFile === undefined ? undefined : resolve(values.auditLogFile) })
  try {
    const keys = { apiPublicKey: values.apiPublicKey!, apiPrivateKey: values.apiPrivateKey! }
    const kms = new TurnkeyClient({ baseUrl: values.kmsUrl }, new ApiKeyStamper(keys))
    const delegated = createDelegatedAccess({ kms, kmsUrl: values.kmsUrl, delegationSecret: values.delegationSecret ?? keys.apiPrivateKey, now: Date.now })
    return await work({ store, audit, kms, delegated })
  } finally {
    await audit.settled()
    await store.close()
  }
}

type NarrowValues = Omit<RevokeValues, 'email' | 'address' | 'organization'> & { dryRun: boolean }

type RevokeValues = {
  db: string | undefined
  databaseUrl: string | undefined
  kmsUrl: string
  organizationId: string | undefined
  apiPublicKey: string | undefined
  apiPrivateKey: string | undefined
  delegationSecret: string | undefined
  auditKey: Uint8Array | undefined
  auditLogFile: string | undefined
  email: string | undefined
  address: string | undefined
  organization: string | undefined
}

await runService({
  name: 'latchkey-server',
  version,
  summary:
    'The app’s own backend: email and passkey sign-in through the key-management service, Sign-In with Ethereum for any wallet, sub-organizations with embedded wallets, session keys, email recovery, session cookies, rate limits.',
  settings,
  production: (_values, given) =>
    given.has('db') || given.has('databaseUrl') ? [] : [`${settingLabel(settings.db)} or ${settingLabel(settings.databaseUrl)}`],
  notes: [
    'Health: GET /healthz answers 200 while the process runs; GET /readyz answers 200 when the store answers a query, else 503 with {"status":"unavailable","reason":…}.',
    'A browser session is a random id in the store, sent as an httpOnly cookie; the session JWTs other services verify are signed with --session-jwt-key-file and published at GET /.well-known/jwks.json.',
  ],
  async start(values, { logger, production, metrics }) {
    const oauth = await oauthOf(values, production)
    if (values.databaseUrl !== undefined && values.db !== undefined)
      throw new SettingsError(`give ${settingLabel(settings.db)} or ${settingLabel(settings.databaseUrl)}, not both`)
    for (const key of ['organizationId', 'apiPublicKey', 'apiPrivateKey'] as const)
      if (values[key] === undefined)
        throw new SettingsError(`${settingLabel(settings[key])} is required (\`latchkey-kms generate-keys\` and \`latchkey-kms init-organization\` give them)`)
    const [apiPublicKey, apiPrivateKey] = [values.apiPublicKey!, values.apiPrivateKey!]
    let derived: string
    try {
      derived = Buffer.from(getPublicKey(apiPrivateKey, true)).toString('hex')
    } catch {
      throw new SettingsError(`${settingLabel(settings.apiPrivateKey)} is not a valid P-256 private key`)
    }
    if (derived !== apiPublicKey)
      throw new SettingsError(`${settingLabel(settings.apiPrivateKey)} is not the private key of ${settingLabel(settings.apiPublicKey)}`)
    const paymaster = await paymasterOf(values)
    const databaseUrl = values.databaseUrl ?? (values.db === undefined ? ':memory:' : resolve(values.db))
    let store: Store
    try {
      store = await openStore(databaseUrl, {
        metrics,
        onRetry: ({ attempt, error }) => logger.warn({ attempt, err: error }, 'database transaction conflicted; running it again'),
      })
    } catch (error) {
      const where = databaseUrl.includes('://') ? 'postgres' : `sqlite ${databaseUrl}`
      throw new Error(`could not open the store (${where}): ${(error as Error).message}`)
    }
    const storeName = store.description
    let server: ReturnType<typeof createAppServer>
    try {
      server = createAppServer({
        port: values.port,
        host: values.host,
        store,
        kmsUrl: values.kmsUrl,
        publicKmsUrl: values.publicKmsUrl,
        framesUrl: values.framesUrl,
        organizationId: values.organizationId!,
        apiPublicKey,
        apiPrivateKey,
        delegationSecret: values.delegationSecret,
        sessionSignerPublicKey: values.sessionSignerPublicKey.length ? values.sessionSignerPublicKey : undefined,
        appName: values.appName,
        allowedOrigins: values.allowedOrigins,
        siweDomains: values.siweDomains.length ? values.siweDomains : undefined,
        chains: values.chains,
        sessionSeconds: values.sessionSeconds,
        trustProxy: values.trustProxy,
        guests: values.guests,
        sessionJwtKey: values.sessionJwtKey,
        sessionJwtIssuer: values.sessionJwtIssuer,
        sessionJwtAudience: values.sessionJwtAudience,
        accessTokenSeconds: values.accessTokenSeconds,
        oauth,
        logger,
        metrics,
        auditKey: values.auditKey,
        auditLogFile: values.auditLogFile === undefined ? undefined : resolve(values.auditLogFile),
        adminToken: values.adminToken,
        webhookTimeoutMs: values.webhookTimeout * 1000,
        paymaster,
      })
    } catch (error) {
      await store.close()
      throw error
    }
    try {
      await server.start()
    } catch (error) {
      await server.stop()
      throw error
    }
    logger.info(
      {
        url: server.url,
        store: storeName,
        kmsUrl: withoutCredentials(values.kmsUrl),
        organizationId: values.organizationId,
        allowedOrigins: values.allowedOrigins,
        chains: values.chains.map((chain) => chain.id),
        oauth: Object.fromEntries(Object.entries(oauth).map(([name, config]) => [name, { issuer: config.issuer, clientId: config.clientId }])),
        trustProxy: values.trustProxy,
        paymaster: paymaster ? paymaster.policy.chains.map((chain) => chain.chainId) : undefined,
      },
      `server listening on ${server.url} (store: ${storeName}; kms: ${withoutCredentials(values.kmsUrl)})`,
    )
    if (values.db === undefined && values.databaseUrl === undefined)
      logger.warn('accounts and sessions are kept in memory and lost when the process stops (development only)')
    if (values.sessionJwtKey === undefined)
      logger.warn('session JWTs are signed with a key generated at start: they stop verifying when the process stops (development only)')
    if (values.auditKey === undefined) logger.warn('the audit trail hashes IPs and emails with the fixed development key (development only)')
    return { stop: () => server.stop(), inflight: () => server.inflight() }
  },
  commands: {
    ...migrationCommands({
      service: 'server',
      migrations: SERVER_MIGRATIONS,
      storeSettings,
      locate: (values) => {
        if (values.db !== undefined && values.databaseUrl !== undefined)
          throw new SettingsError(`give ${settingLabel(storeSettings.db)} or ${settingLabel(storeSettings.databaseUrl)}, not both`)
        return values.databaseUrl ?? (values.db === undefined ? undefined : resolve(values.db))
      },
      storeLabel: `${settingLabel(storeSettings.db)} or ${settingLabel(storeSettings.databaseUrl)}`,
    }),
    'audit verify': auditVerifyCommand(storeSettings, async (values: { db: string | undefined; databaseUrl: string | undefined }) => {
      const store = await openCommandStore(values, 'audit verify')
      try {
        return await verifyServerAudit(store)
      } finally {
        await store.close()
      }
    }),
    'webhooks replay': {
      summary:
        'Send webhook events again: every event since --since, to each endpoint that subscribes to it, with its original webhook-id (receivers drop what they already have). A running backend sends them within its next poll. Prints how many deliveries were queued.',
      settings: replaySettings,
      async run(values: { db: string | undefined; databaseUrl: string | undefined; since: string | undefined }) {
        if (values.since === undefined) throw new SettingsError(`${settingLabel(replaySettings.since)} is required`)
        const since = sinceOf(values.since, Date.now())
        const store = await openCommandStore(values, 'webhooks replay')
        try {
          return { since: new Date(since).toISOString(), queued: await store.webhooks.replay(since, Date.now()) }
        } finally {
          await store.close()
        }
      },
    },
    'delegated narrow': {
      summary:
        'Narrow the backend’s delegated policy in every sub-organization made before it was narrowed: session keys for the end user only, within a day, OAuth links by ID token only. Idempotent; --dry-run changes nothing; each change is an audit event. Prints each sub-organization’s outcome.',
      settings: narrowSettings,
      async run(values: NarrowValues) {
        return withDelegatedAccess(values, 'delegated narrow', ({ kms, delegated, audit }) =>
          narrowDelegatedPolicies({
            kms,
            kmsUrl: values.kmsUrl,
            parentOrganizationId: values.organizationId!,
            delegated,
            audit,
            now: Date.now,
            dryRun: values.dryRun,
          }),
        )
      },
    },
    'sessions revoke': {
      summary:
        'End one person’s sessions now: the backend’s browser sessions and refresh tokens, and the user’s session keys in the kms (through the delegated user). Prints what it ended.',
      settings: revokeSettings,
      async run(values: RevokeValues) {
        const chosen = (['email', 'address', 'organization'] as const).filter((key) => values[key] !== undefined)
        if (chosen.length !== 1)
          throw new SettingsError(
            `give exactly one of ${settingLabel(revokeSettings.email)}, ${settingLabel(revokeSettings.address)} or ${settingLabel(revokeSettings.organization)}`,
          )
        const target =
          values.email !== undefined
            ? { email: values.email }
            : values.address !== undefined
              ? { address: values.address }
              : { organization: values.organization! }
        return withDelegatedAccess(values, 'sessions revoke', ({ store, delegated, audit }) =>
          revokeSessions(target, { store, delegated, audit, now: Date.now }),
        )
      },
    },
  },
})
