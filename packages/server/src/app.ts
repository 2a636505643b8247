import { randomBytes } from 'node:crypto'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { Hono } from 'hono'
import { deleteCookie, getCookie, setCookie } from 'hono/cookie'
import { z } from 'zod'
import type { SessionRow, Store } from './store.js'

export type ServerAppOptions = {
  store: Store
  /** The key-management API (our kms locally, Turnkey in production). */
  kmsUrl: string
  /** The parent organization the backend acts for, and its API key pair. */
  organizationId: string
  apiPublicKey: string
  apiPrivateKey: string
  /** Shown in sign-in emails. */
  appName: string
  /** Browser origins allowed to call with credentials (the demo's). */
  allowedOrigins: readonly string[]
  /** Clock in unix ms. */
  now?: (() => number) | undefined
  /** The client's IP, for per-IP limits; default: the socket's address, else "unknown". */
  ipOf?: ((request: Request, env: unknown) => string) | undefined
  /** Session length. Default 7 days. */
  sessionSeconds?: number | undefined
}

/** The session cookie: httpOnly, SameSite=Lax, Secure on https. */
export const SESSION_COOKIE = 'latchkey_session'
/** Sign-in codes each email may ask for per window, and each IP. */
export const LIMITS = { perEmail: 5, perIp: 30, windowMs: 10 * 60_000 } as const
/** What a new user's wallet is called (SPEC §9), and its first account. */
export const WALLET_NAME = 'Turnkey HD'
const ETHEREUM_ACCOUNT = { curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' } as const

/** An error answered as `{ error: { code, message } }` with its HTTP status. */
export class ServerError extends Error {
  override name = 'ServerError'
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 429 | 502,
    readonly code: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message)
  }
}

/** Fixed-window counters in memory: enough for one backend process. */
function limiter(limit: number, windowMs: number, now: () => number) {
  const windows = new Map<string, { startedAt: number; count: number }>()
  return (key: string): number | undefined => {
    const time = now()
    let window = windows.get(key)
    if (!window || time - window.startedAt >= windowMs) {
      if (windows.size > 100_000) windows.clear()
      window = { startedAt: time, count: 0 }
      windows.set(key, window)
    }
    window.count++
    // Seconds until the window ends, when over the limit.
    return window.count > limit ? Math.ceil((window.startedAt + windowMs - time) / 1000) : undefined
  }
}

const emailSchema = z.object({ email: z.email().max(254) })
const verifySchema = z.object({
  otpId: z.string().min(1).max(64),
  code: z.string().regex(/^[0-9A-Za-z]{6,9}$/, 'must be the 6 to 9 characters of the code'),
  targetPublicKey: z.string().regex(/^(?:0[23][0-9a-f]{64}|04[0-9a-f]{128})$/, 'must be a P-256 public key in hex'),
})

/**
 * The app backend as a Hono app. It holds the parent organization's API key and is the only place
 * that creates sub-organizations and starts email sign-in; the browser never sees that key.
 *
 * - `POST /auth/email/start` `{email}` → `{otpId}`: creates the user's sub-organization with an
 *   Ethereum wallet on first sign-in, and emails a code.
 * - `POST /auth/email/verify` `{otpId, code, targetPublicKey}` → `{credentialBundle, organizationId,
 *   userId, address}` and the session cookie.
 * - `GET /auth/session`, `POST /auth/signout`.
 *
 * @example
 * const app = createServerApp({ store: openStore(':memory:'), kmsUrl, organizationId, apiPublicKey, apiPrivateKey, appName: 'Demo', allowedOrigins: ['http://localhost:5173'] })
 */
export function createServerApp(options: ServerAppOptions) {
  const { store } = options
  const now = options.now ?? Date.now
  const kms = new TurnkeyClient({ baseUrl: options.kmsUrl }, new ApiKeyStamper({ apiPublicKey: options.apiPublicKey, apiPrivateKey: options.apiPrivateKey }))
  const perEmail = limiter(LIMITS.perEmail, LIMITS.windowMs, now)
  const perIp = limiter(LIMITS.perIp, LIMITS.windowMs, now)
  const sessionSeconds = options.sessionSeconds ?? 7 * 86_400
  const app = new Hono()

  app.use('*', async (c, next) => {
    const origin = c.req.header('origin')
    const allowed = origin !== undefined && options.allowedOrigins.includes(origin)
    if (c.req.method === 'OPTIONS') {
      if (!allowed) return c.body(null, 403)
      return c.body(null, 204, {
        'access-control-allow-origin': origin,
        'access-control-allow-credentials': 'true',
        'access-control-allow-methods': 'GET, POST, OPTIONS',
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

  app.onError((error, c) => {
    if (error instanceof ServerError) {
      if (error.retryAfterSeconds) c.header('retry-after', String(error.retryAfterSeconds))
      return c.json({ error: { code: error.code, message: error.message } }, error.status)
    }
    console.error(error)
    return c.json({ error: { code: 'internal', message: 'Something went wrong on the server' } }, 500)
  })

  /** A JSON body checked by `schema`; the first problem is the error. */
  async function body<schema extends z.ZodType>(request: Request, schema: schema): Promise<z.infer<schema>> {
    let json: unknown
    try {
      json = await request.json()
    } catch {
      throw new ServerError(400, 'invalid_json', 'The request body must be JSON')
    }
    const parsed = schema.safeParse(json)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!
      throw new ServerError(400, 'invalid_request', `${issue.path.join('.') || 'body'}: ${issue.message}`)
    }
    return parsed.data
  }

  /** Calls the kms; its refusals reach the browser as 400 with the kms's message, outages as 502. */
  async function call<result>(work: () => Promise<result>): Promise<result> {
    try {
      return await work()
    } catch (error) {
      const message = (error as Error).message
      const refused = /^Turnkey error (\d+): (.*?)(?: \(Details: .*\))?$/s.exec(message)
      if (refused) throw new ServerError(refused[1] === '8' ? 429 : 400, 'kms_refused', refused[2]!)
      throw new ServerError(502, 'kms_unavailable', 'The key-management service is unavailable')
    }
  }

  const ipOf = (request: Request, env: unknown) =>
    options.ipOf?.(request, env) ?? (env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket?.remoteAddress ?? 'unknown'

  app.post('/auth/email/start', async (c) => {
    const email = (await body(c.req.raw, emailSchema)).email.toLowerCase()
    const waitIp = perIp(ipOf(c.req.raw, c.env))
    if (waitIp) throw new ServerError(429, 'rate_limited', `Too many sign-in attempts from this network; try again in ${Math.ceil(waitIp / 60)} minutes`, waitIp)
    const waitEmail = perEmail(email)
    if (waitEmail) throw new ServerError(429, 'rate_limited', `Too many codes sent to this email; try again in ${Math.ceil(waitEmail / 60)} minutes`, waitEmail)

    let account = store.account(email)
    if (!account) {
      // First sign-in: a sub-organization whose root user is this email, with an Ethereum wallet.
      const { activity } = await call(() =>
        kms.createSubOrganization({
          type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
          timestampMs: String(now()),
          organizationId: options.organizationId,
          parameters: {
            subOrganizationName: email,
            rootQuorumThreshold: 1,
            rootUsers: [{ userName: email, userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] }],
            wallet: { walletName: WALLET_NAME, accounts: [ETHEREUM_ACCOUNT] },
          },
        }),
      )
      const result = activity.result.createSubOrganizationResultV8
      if (!result?.subOrganizationId || !result.rootUserIds?.[0] || !result.wallet?.addresses[0]) throw new ServerError(502, 'kms_unavailable', 'The key-management service gave an incomplete answer')
      account = { email, organization_id: result.subOrganizationId, user_id: result.rootUserIds[0], address: result.wallet.addresses[0], created_at: now() }
      store.insertAccount(account)
    }
    const organizationId = account.organization_id
    const { activity } = await call(() =>
      kms.initOtpAuth({
        type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
        timestampMs: String(now()),
        organizationId,
        parameters: { otpType: 'OTP_TYPE_EMAIL', contact: email, appName: options.appName },
      }),
    )
    const otpId = activity.result.initOtpAuthResultV2?.otpId
    if (!otpId) throw new ServerError(502, 'kms_unavailable', 'The key-management service gave an incomplete answer')
    store.insertPendingCode({ otp_id: otpId, email, organization_id: organizationId, created_at: now() })
    return c.json({ otpId })
  })

  app.post('/auth/email/verify', async (c) => {
    const input = await body(c.req.raw, verifySchema)
    const pending = store.pendingCode(input.otpId)
    if (!pending) throw new ServerError(400, 'unknown_code', 'This code was not sent, or has been used; ask for a new one')
    const { activity } = await call(() =>
      kms.otpAuth({
        type: 'ACTIVITY_TYPE_OTP_AUTH',
        timestampMs: String(now()),
        organizationId: pending.organization_id,
        parameters: { otpId: input.otpId, otpCode: input.code, targetPublicKey: input.targetPublicKey },
      }),
    )
    const result = activity.result.otpAuthResult
    if (!result?.credentialBundle) throw new ServerError(502, 'kms_unavailable', 'The key-management service gave an incomplete answer')
    store.deletePendingCode(input.otpId)
    const account = store.account(pending.email)!
    const session: SessionRow = {
      id: randomBytes(32).toString('base64url'),
      email: account.email,
      organization_id: account.organization_id,
      user_id: account.user_id,
      address: account.address,
      kind: 'email',
      expires_at: now() + sessionSeconds * 1000,
      created_at: now(),
    }
    store.insertSession(session)
    setCookie(c, SESSION_COOKIE, session.id, {
      httpOnly: true,
      sameSite: 'Lax',
      secure: new URL(c.req.url).protocol === 'https:',
      path: '/',
      maxAge: sessionSeconds,
    })
    return c.json({ credentialBundle: result.credentialBundle, organizationId: account.organization_id, userId: account.user_id, address: account.address })
  })

  app.get('/auth/session', (c) => {
    const id = getCookie(c, SESSION_COOKIE)
    const session = id ? store.session(id) : undefined
    if (!session || session.expires_at <= now()) throw new ServerError(401, 'signed_out', 'Not signed in')
    return c.json({
      email: session.email,
      address: session.address,
      organizationId: session.organization_id,
      userId: session.user_id,
      kind: session.kind,
      expiresAt: new Date(session.expires_at).toISOString(),
    })
  })

  app.post('/auth/signout', (c) => {
    const id = getCookie(c, SESSION_COOKIE)
    if (id) store.deleteSession(id)
    deleteCookie(c, SESSION_COOKIE, { path: '/' })
    return c.body(null, 204)
  })

  return app
}
