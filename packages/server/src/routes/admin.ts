import { createHash, timingSafeEqual } from 'node:crypto'
import type { AuditTrail } from '@latchkey/service/database'
import type { TurnkeyClient } from '@turnkey/http'
import { type Context, Hono, type MiddlewareHandler } from 'hono'
import { z } from 'zod'
import { CONSOLE_CSS, CONSOLE_HEADERS, CONSOLE_HTML, CONSOLE_ICON, CONSOLE_JS } from '../console/page.js'
import { consoleRoutes } from '../console/routes.js'
import { ServerError } from '../errors.js'
import { type RouteContext, readBody } from '../internal/context.js'
import type { Store } from '../store.js'
import { WEBHOOK_EVENT_TYPES } from '../webhooks/events.js'
import { adminUsers } from './adminUsers.js'
import type { OAuth } from './oauth.js'

/** Where the admin API lives; the same-origin rule exempts it (its credential is a bearer token, never a cookie). */
export const ADMIN_PREFIX = '/admin/'

const endpointSchema = z.object({
  url: z
    .string()
    .max(2048)
    .refine((text) => URL.canParse(text) && ['http:', 'https:'].includes(new URL(text).protocol), 'must be an http:// or https:// URL'),
  eventTypes: z.array(z.enum(WEBHOOK_EVENT_TYPES)).min(1).max(WEBHOOK_EVENT_TYPES.length).optional(),
})

const digest = (text: string) => createHash('sha256').update(text).digest()

/**
 * The bearer token of the admin API, compared in constant time (through digests, so its length
 * leaks nothing either). A missing or wrong token is 401 and runs nothing.
 */
function adminToken(token: string): MiddlewareHandler {
  const expected = digest(token)
  return async (c, next) => {
    const given = /^Bearer (.+)$/.exec(c.req.header('authorization') ?? '')?.[1]
    if (given === undefined || !timingSafeEqual(digest(given), expected)) {
      c.header('www-authenticate', 'Bearer realm="latchkey-admin"')
      throw new ServerError(401, 'admin_unauthorized', 'The admin API needs the admin token as a bearer token')
    }
    return next()
  }
}

/** Records every admin call that may change something (not GET), refused ones too. */
function auditAdmin(trail: AuditTrail, ipOf: (c: Context) => string): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method === 'GET') return next()
    await next()
    const error = c.error instanceof ServerError ? c.error : undefined
    const failed = c.error !== undefined || c.res.status >= 400
    await trail.record({
      action: `${c.req.method} ${c.req.path}`,
      outcome: !failed ? 'completed' : (error?.status ?? c.res.status) >= 500 || (c.error && !error) ? 'failed' : 'refused',
      reason: error ? `${error.status} ${error.code}: ${error.message}` : failed ? String(c.res.status) : undefined,
      credential: 'admin token',
      ip: ipOf(c),
    })
  }
}

/**
 * The admin API (`/admin/*`), on its own bearer token (`LATCHKEY_ADMIN_TOKEN`), for the app's own
 * servers and operators (the console page sends the token itself; no cookie is read). Without a token configured it does not exist (404).
 * Webhook endpoints:
 * - `POST /admin/webhooks` `{url, eventTypes?}` → 201 `{id, url, eventTypes, createdAt, secret}`:
 *   the secret (`whsec_…`) is shown this once;
 * - `GET /admin/webhooks` → `{endpoints}`, without secrets;
 * - `DELETE /admin/webhooks/:id` → 204, its pending deliveries dropped;
 * - `GET /admin/webhooks/:id/deliveries` → the newest 100 deliveries and how each went.
 *
 * Users (adminUsers.ts): `POST /admin/users` and `POST /admin/users:batch` pregenerate wallets.
 *
 * The operator console: its page at `GET /admin` (with `/admin/console.js`, `.css` and `.svg`,
 * served without the token: they hold nothing secret, and the page asks for the token), and its
 * routes (console/routes.ts) on the token.
 *
 * @example
 * app.route('/admin', adminRoutes({ token, store, audit, ipOf, now, kms, organizationId, context, oauth }))
 */
export function adminRoutes(options: {
  token: string
  store: Store
  audit: AuditTrail
  ipOf: (c: Context) => string
  now: () => number
  /** The parent organization's client, and its id: the console reads sub-organizations and votes with it. */
  kms: TurnkeyClient
  organizationId: string
  /** The routes' context and the OAuth providers, for pregenerated users. */
  context: RouteContext
  oauth: OAuth
  /** Told of an unexpected error of one batch row (the others go on). */
  onError?: ((error: unknown) => void) | undefined
}) {
  const { store } = options
  const admin = new Hono()
  admin.use('*', auditAdmin(options.audit, options.ipOf))
  admin.get('/', (c) => c.html(CONSOLE_HTML, 200, CONSOLE_HEADERS))
  admin.get('/console.js', (c) => c.body(CONSOLE_JS, 200, { ...CONSOLE_HEADERS, 'content-type': 'text/javascript; charset=utf-8' }))
  admin.get('/console.css', (c) => c.body(CONSOLE_CSS, 200, { ...CONSOLE_HEADERS, 'content-type': 'text/css; charset=utf-8' }))
  admin.get('/console.svg', (c) => c.body(CONSOLE_ICON, 200, { ...CONSOLE_HEADERS, 'content-type': 'image/svg+xml' }))
  admin.use('*', adminToken(options.token))
  consoleRoutes(admin, { store, kms: options.kms, organizationId: options.organizationId, now: options.now })
  adminUsers(admin, { context: options.context, oauth: options.oauth, onError: options.onError })
  admin.post('/webhooks', async (c) => {
    const input = await readBody(c.req.raw, endpointSchema)
    const endpoint = await store.webhooks.createEndpoint({ url: input.url, eventTypes: input.eventTypes ?? null, at: options.now() })
    return c.json(endpoint, 201)
  })
  admin.get('/webhooks', async (c) => c.json({ endpoints: await store.webhooks.endpoints() }))
  admin.delete('/webhooks/:id', async (c) => {
    if (!(await store.webhooks.deleteEndpoint(c.req.param('id')))) throw unknownEndpoint()
    return c.body(null, 204)
  })
  admin.get('/webhooks/:id/deliveries', async (c) => {
    const id = c.req.param('id')
    if (!(await store.webhooks.endpoints()).some((endpoint) => endpoint.id === id)) throw unknownEndpoint()
    const rows = await store.webhooks.deliveries(id, 100)
    return c.json({
      deliveries: rows.map((row) => ({
        eventId: row.event_id,
        type: row.type,
        createdAt: Number(row.created_at),
        attempts: Number(row.attempts),
        status: row.delivered_at !== null ? 'delivered' : row.given_up_at !== null ? 'given_up' : 'pending',
        lastStatus: row.last_status,
        lastError: row.last_error,
        ...(row.delivered_at === null && row.given_up_at === null ? { nextAttemptAt: Number(row.next_attempt_at) } : {}),
      })),
    })
  })
  return admin
}

const unknownEndpoint = () => new ServerError(404, 'unknown_endpoint', 'No webhook endpoint has this id')
