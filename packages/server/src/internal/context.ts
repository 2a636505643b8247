import { randomBytes } from 'node:crypto'
import type { Metrics } from '@latchkey/service'
import type { TurnkeyClient } from '@turnkey/http'
import type { Context } from 'hono'
import { deleteCookie, getCookie, setCookie } from 'hono/cookie'
import type { z } from 'zod'
import { ServerError } from '../errors.js'
import { noteEmail, noteSession } from '../middleware/audit.js'
import type { SessionKind, SessionRow, Store } from '../store.js'
import { createDelegatedAccess, type DelegatedAccess } from './delegated.js'
import { apiKeyStamper, KmsClient } from './kmsClient.js'
import { ACCESS_TOKEN_SECONDS, loadSessionJwtKeys, SESSION_JWT_DEFAULTS, type SessionJwtKey } from './sessionTokens.js'
import { createSiweConfig, type SiweChain, type SiweConfig } from './siwe.js'

/** The session cookie; its attributes are `cookieAttributes`. */
export const SESSION_COOKIE = '__Host-latchkey_session'

/**
 * Every cookie the backend sets. `__Host-` names with `Secure`, `Path=/` and no `Domain`: only
 * this host over TLS can set or overwrite them (a sibling subdomain cannot toss one in). `Secure`
 * always, whatever scheme the request arrived with, so no proxy in front can make it plain;
 * browsers take Secure cookies from http://localhost too. `SameSite=Strict`: the cookie is only
 * ever needed on the app page's own fetches, which are same-site; no flow reaches the backend by a
 * cross-site navigation that needs it (the provider's form post reads and sets none).
 *
 * @example
 * setCookie(c, SESSION_COOKIE, id, cookieAttributes(3600))
 */
export const cookieAttributes = (maxAgeSeconds: number) => ({ httpOnly: true, secure: true, sameSite: 'Strict', path: '/', maxAge: maxAgeSeconds }) as const

/** Clears a cookie `cookieAttributes` set (a `__Host-` cookie is only replaced with the same attributes). */
export const clearCookie = (c: Context, name: string) => deleteCookie(c, name, cookieAttributes(0))

/**
 * Requests each key may make per window: sign-in codes and recovery emails per email; sign-ins
 * (codes, passkey sign-ups, recoveries, logins that need a kms look-up) and SIWE nonces per IP;
 * session keys per signed-in session; tries of emailed codes per IP, per code, and per email in a
 * day (`dayMs`), so that guessing a six-digit code stays hopeless however many instances and
 * database connections answer at once (the kms's own three tries per code race on PostgreSQL).
 * `bodyBytes` caps every request body (the largest legitimate one, a SIWE message with an
 * EIP-6492 signature, is about 41 KB).
 */
export const LIMITS = {
  perEmail: 5,
  perIp: 30,
  noncesPerIp: 60,
  verifiesPerIp: 30,
  /** Paymaster decisions (ERC-7677 requests) per address per window: an operation takes two. */
  paymasterPerIp: 600,
  verifiesPerCode: 3,
  verifiesPerEmailPerDay: 20,
  /** Guest accounts per IP per window: each is a sub-organization with a wallet in the kms. */
  guestsPerIp: 10,
  /** Guest accounts per window from all networks together: a flood from many addresses stays bounded. */
  guests: 600,
  windowMs: 10 * 60_000,
  dayMs: 86_400_000,
  bodyBytes: 64 * 1024,
} as const

/** Per-IP limits in place of `LIMITS`' (`ServerAppOptions.limitsPerIp`). */
export type PerIpLimits = {
  readonly signIns?: number | undefined
  readonly nonces?: number | undefined
  readonly verifies?: number | undefined
  readonly paymaster?: number | undefined
  readonly guests?: number | undefined
}

/** What the routes share; built once per app by `createRouteContext`. @internal */
export type RouteContext = {
  store: Store
  /**
   * The parent organization's client: it creates sub-organizations, reads them and starts sign-ins
   * in them (what Turnkey lets a parent do); anything else there goes through `delegated`.
   */
  kms: TurnkeyClient
  /** Delegated access: the policy-limited user the backend holds in each sub-organization it creates. */
  delegated: DelegatedAccess
  /** The kms base url, for clients stamped by a user's own credential. */
  kmsUrl: string
  organizationId: string
  appName: string
  sessionSignerPublicKey: string | readonly string[] | undefined
  now: () => number
  /** Session length in seconds. */
  sessionSeconds: number
  siwe: SiweConfig
  /**
   * Session JWTs for other services: the keys (loaded or generated once; the first signs, all are
   * published), issuer, audience, lifetime.
   */
  jwt: { keys: () => Promise<readonly [SessionJwtKey, ...SessionJwtKey[]]>; issuer: string; audience: string; accessSeconds: number }
  limits: {
    codesPerEmail: (key: string) => Promise<number | undefined>
    recoveriesPerEmail: (key: string) => Promise<number | undefined>
    signInsPerIp: (key: string) => Promise<number | undefined>
    noncesPerIp: (key: string) => Promise<number | undefined>
    paymasterPerIp: (key: string) => Promise<number | undefined>
    verifiesPerIp: (key: string) => Promise<number | undefined>
    verifiesPerCode: (key: string) => Promise<number | undefined>
    verifiesPerEmailPerDay: (key: string) => Promise<number | undefined>
    guestsPerIp: (key: string) => Promise<number | undefined>
    /** Every guest counts here, under one key. */
    guests: (key: string) => Promise<number | undefined>
  }
  ipOf: (c: Context) => string
}

/**
 * Fixed-window counters in the store, so every instance on one database enforces one limit: each
 * call counts one request for `key` and answers the seconds to wait when over `limit`, else
 * undefined. `name` keeps one limiter's keys apart from another's. `windowMs` is at most a day.
 */
export function limiter(
  store: Pick<Store, 'countRequest' | 'deleteRateLimitsBefore'>,
  name: string,
  limit: number,
  windowMs: number,
  now: () => number,
  /** Told of each request over the limit (the metrics' rate-limit hits). */
  onLimited?: () => void,
) {
  if (windowMs > LIMITS.dayMs) throw new Error(`a rate limit window is at most a day, not ${windowMs} ms`)
  let sweptAt = now()
  return async (key: string): Promise<number | undefined> => {
    const time = now()
    // Windows long past are dropped now and then (by whichever instance comes first), not on every
    // request; every limiter shares the table, so only windows older than the longest (a day) go.
    if (time - sweptAt >= windowMs) {
      sweptAt = time
      await store.deleteRateLimitsBefore(time - LIMITS.dayMs)
    }
    const window = await store.countRequest(`${name}:${key}`, windowMs, time)
    if (window.count <= limit) return undefined
    onLimited?.()
    return Math.max(1, Math.ceil((window.windowStartedAt + windowMs - time) / 1000))
  }
}

/** Throws 429 with Retry-After when `wait` (from a limiter) says so. */
export function enforce(wait: number | undefined, message: (minutes: number) => string) {
  if (wait) throw new ServerError(429, 'rate_limited', message(Math.ceil(wait / 60)), wait)
}

/** A JSON body checked by `schema`; the first problem is the error. */
export async function readBody<schema extends z.ZodType>(request: Request, schema: schema): Promise<z.infer<schema>> {
  let json: unknown
  try {
    json = await request.json()
  } catch (error) {
    // The body limit fails the read itself (413), mid-stream.
    if (error instanceof ServerError) throw error
    throw new ServerError(400, 'invalid_json', 'The request body must be JSON')
  }
  const parsed = schema.safeParse(json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    throw new ServerError(400, 'invalid_request', `${issue.path.join('.') || 'body'}: ${issue.message}`)
  }
  noteEmail(request, (parsed.data as { email?: unknown } | null)?.email)
  return parsed.data
}

/** Calls the kms; its refusals reach the browser as 400 (403 for a policy denial) with the kms's message, outages as 502. */
export async function callKms<result>(work: () => Promise<result>): Promise<result> {
  try {
    return await work()
  } catch (error) {
    if (error instanceof ServerError) throw error
    const message = (error as Error).message
    const refused = /^Turnkey error (\d+): (.*?)(?: \(Details: .*\))?$/s.exec(message)
    if (refused) throw new ServerError(refused[1] === '8' ? 429 : refused[1] === '7' ? 403 : 400, 'kms_refused', refused[2]!)
    throw new ServerError(502, 'kms_unavailable', 'The key-management service is unavailable')
  }
}

/** Who a session is for: an account, or (SIWE) an address with its chain and wallet kind. */
export type SessionSubject = Pick<SessionRow, 'email' | 'organization_id' | 'user_id' | 'address'> &
  Partial<Pick<SessionRow, 'chain_id' | 'wallet_kind' | 'session_public_key'>>

/** Starts a browser session for `subject`: a row and the httpOnly cookie. `until` caps its end (unix ms). */
export async function startSession(c: Context, context: RouteContext, subject: SessionSubject, kind: SessionKind, until?: number): Promise<SessionRow> {
  const at = context.now()
  const expiresAt = Math.min(at + context.sessionSeconds * 1000, until ?? Number.POSITIVE_INFINITY)
  const session: SessionRow = {
    id: randomBytes(32).toString('base64url'),
    email: subject.email,
    organization_id: subject.organization_id,
    user_id: subject.user_id,
    address: subject.address,
    kind,
    chain_id: subject.chain_id ?? null,
    wallet_kind: subject.wallet_kind ?? null,
    session_public_key: subject.session_public_key ?? null,
    expires_at: expiresAt,
    created_at: at,
  }
  await context.store.insertSession(session)
  noteSession(c.req.raw, session)
  setCookie(c, SESSION_COOKIE, session.id, cookieAttributes(Math.floor((expiresAt - at) / 1000)))
  return session
}

/** The unexpired session the cookie names, or undefined. */
export async function validSession(c: Context, context: RouteContext): Promise<SessionRow | undefined> {
  const id = getCookie(c, SESSION_COOKIE)
  const session = id ? await context.store.session(id) : undefined
  if (!session || session.expires_at <= context.now()) return undefined
  noteSession(c.req.raw, session)
  return session
}

/** The session the cookie names, or 401 (for routes that need one). */
export async function currentSession(c: Context, context: RouteContext): Promise<SessionRow> {
  const session = await validSession(c, context)
  if (!session) throw new ServerError(401, 'signed_out', 'Not signed in')
  return session
}

/**
 * A session as `GET /auth/session` and sign-in answer it; SIWE sessions add `chainId` and `walletKind`.
 *
 * @example
 * return c.json(sessionAnswer(await currentSession(c, context)))
 */
export function sessionAnswer(row: SessionRow) {
  return {
    email: row.email,
    address: row.address,
    organizationId: row.organization_id,
    userId: row.user_id,
    kind: row.kind,
    ...(row.kind === 'siwe' ? { chainId: row.chain_id, walletKind: row.wallet_kind } : {}),
    expiresAt: new Date(row.expires_at).toISOString(),
  }
}

/** The parent organization's client, delegated access and the limiters. @internal */
export function createRouteContext(options: {
  store: Store
  kmsUrl: string
  organizationId: string
  apiPublicKey: string
  apiPrivateKey: string
  delegationSecret?: string | undefined
  appName: string
  sessionSignerPublicKey?: string | readonly string[] | undefined
  now?: (() => number) | undefined
  ipOf?: ((request: Request, env: unknown) => string) | undefined
  limitsPerIp?: PerIpLimits | undefined
  guestsPerWindow?: number | undefined
  sessionSeconds?: number | undefined
  allowedOrigins: readonly string[]
  siweDomains?: readonly string[] | undefined
  chains?: readonly SiweChain[] | undefined
  sessionJwtKey?: string | undefined
  sessionJwtIssuer?: string | undefined
  sessionJwtAudience?: string | undefined
  accessTokenSeconds?: number | undefined
  metrics?: Metrics | undefined
}): RouteContext {
  const now = options.now ?? Date.now
  let keys: Promise<readonly [SessionJwtKey, ...SessionJwtKey[]]> | undefined
  // Forwards the request id and the trace to the kms.
  const kms = new KmsClient({ baseUrl: options.kmsUrl }, apiKeyStamper({ apiPublicKey: options.apiPublicKey, apiPrivateKey: options.apiPrivateKey }))
  const rateLimited = options.metrics?.counter({
    name: 'latchkey_server_rate_limited_total',
    help: 'Requests refused by a rate limit, by limit (its name: codes-per-email, sign-ins-per-ip, …; never the email or address counted).',
    labelNames: ['limit'],
  })
  const limited = (name: string, limit: number, windowMs: number) =>
    limiter(options.store, name, limit, windowMs, now, rateLimited && (() => rateLimited.inc({ limit: name })))
  return {
    store: options.store,
    kms,
    delegated: createDelegatedAccess({ kms, kmsUrl: options.kmsUrl, delegationSecret: options.delegationSecret ?? options.apiPrivateKey, now }),
    kmsUrl: options.kmsUrl,
    organizationId: options.organizationId,
    appName: options.appName,
    sessionSignerPublicKey: options.sessionSignerPublicKey,
    now,
    sessionSeconds: options.sessionSeconds ?? 7 * 86_400,
    siwe: createSiweConfig(options),
    jwt: {
      keys: () => {
        keys ??= loadSessionJwtKeys(options.sessionJwtKey)
        return keys
      },
      // Configured, never the request's Host: a request cannot choose the issuer of its token.
      issuer: options.sessionJwtIssuer ?? SESSION_JWT_DEFAULTS.issuer,
      audience: options.sessionJwtAudience ?? SESSION_JWT_DEFAULTS.audience,
      accessSeconds: options.accessTokenSeconds ?? ACCESS_TOKEN_SECONDS.default,
    },
    limits: {
      codesPerEmail: limited('codes-per-email', LIMITS.perEmail, LIMITS.windowMs),
      recoveriesPerEmail: limited('recoveries-per-email', LIMITS.perEmail, LIMITS.windowMs),
      signInsPerIp: limited('sign-ins-per-ip', options.limitsPerIp?.signIns ?? LIMITS.perIp, LIMITS.windowMs),
      noncesPerIp: limited('nonces-per-ip', options.limitsPerIp?.nonces ?? LIMITS.noncesPerIp, LIMITS.windowMs),
      verifiesPerIp: limited('verifies-per-ip', options.limitsPerIp?.verifies ?? LIMITS.verifiesPerIp, LIMITS.windowMs),
      paymasterPerIp: limited('paymaster-per-ip', options.limitsPerIp?.paymaster ?? LIMITS.paymasterPerIp, LIMITS.windowMs),
      verifiesPerCode: limited('verifies-per-code', LIMITS.verifiesPerCode, LIMITS.windowMs),
      verifiesPerEmailPerDay: limited('verifies-per-email-per-day', LIMITS.verifiesPerEmailPerDay, LIMITS.dayMs),
      guestsPerIp: limited('guests-per-ip', options.limitsPerIp?.guests ?? LIMITS.guestsPerIp, LIMITS.windowMs),
      guests: limited('guests', options.guestsPerWindow ?? LIMITS.guests, LIMITS.windowMs),
    },
    ipOf: (c) =>
      options.ipOf?.(c.req.raw, c.env) ??
      (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket?.remoteAddress ??
      'unknown',
  }
}
