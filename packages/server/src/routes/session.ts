import type { Context } from 'hono'
import { deleteCookie, getCookie } from 'hono/cookie'
import { currentSession, type RouteContext, SESSION_COOKIE } from '../internal/context.js'

/**
 * `GET /auth/session` → `{email, address, organizationId, userId, kind, expiresAt}` or 401.
 * `email` is null for an account that signed up with a passkey alone.
 *
 * @example
 * app.get('/auth/session', session(context))
 */
export const session = (context: RouteContext) => (c: Context) => {
  const row = currentSession(c, context)
  return c.json({
    email: row.email,
    address: row.address,
    organizationId: row.organization_id,
    userId: row.user_id,
    kind: row.kind,
    expiresAt: new Date(row.expires_at).toISOString(),
  })
}

/**
 * `POST /auth/signout` → 204: the session is deleted and the cookie cleared.
 *
 * @example
 * app.post('/auth/signout', signOut(context))
 */
export const signOut = (context: RouteContext) => (c: Context) => {
  const id = getCookie(c, SESSION_COOKIE)
  if (id) context.store.deleteSession(id)
  deleteCookie(c, SESSION_COOKIE, { path: '/' })
  return c.body(null, 204)
}
