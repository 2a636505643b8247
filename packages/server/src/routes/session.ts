import type { Context } from 'hono'
import { deleteCookie, getCookie } from 'hono/cookie'
import { currentSession, type RouteContext, SESSION_COOKIE, sessionAnswer } from '../internal/context.js'

/**
 * `GET /auth/session` → `{email, address, organizationId, userId, kind, expiresAt}` (SIWE sessions
 * also `chainId` and `walletKind`) or 401. `email` is null for an account that signed up with a
 * passkey alone; `organizationId` and `userId` are null for a SIWE session of a wallet this backend
 * did not create.
 *
 * @example
 * app.get('/auth/session', session(context))
 */
export const session = (context: RouteContext) => (c: Context) => c.json(sessionAnswer(currentSession(c, context)))

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
