import type { Context } from 'hono'
import { getCookie } from 'hono/cookie'
import { clearCookie, type RouteContext, SESSION_COOKIE, sessionAnswer, validSession } from '../internal/context.js'

/**
 * `GET /auth/session` → `{email, address, organizationId, userId, kind, expiresAt}` (SIWE sessions
 * also `chainId` and `walletKind`), or 200 `null` when signed out. `email` is null for an account
 * that signed up with a passkey alone; `organizationId` and `userId` are null for a SIWE session of
 * a wallet this backend did not create.
 *
 * Signed out is an answer, not an error: every signed-out page load asks, and a 4xx there is
 * printed by the browser as a failed resource load. A cookie naming an ended session is cleared.
 *
 * @example
 * app.get('/auth/session', session(context))
 */
export const session = (context: RouteContext) => async (c: Context) => {
  const current = await validSession(c, context)
  if (current) return c.json(sessionAnswer(current))
  if (getCookie(c, SESSION_COOKIE) !== undefined) clearCookie(c, SESSION_COOKIE)
  return c.json(null)
}

/**
 * `POST /auth/signout` → 204: the session is deleted and the cookie cleared.
 *
 * @example
 * app.post('/auth/signout', signOut(context))
 */
export const signOut = (context: RouteContext) => async (c: Context) => {
  const id = getCookie(c, SESSION_COOKIE)
  if (id) {
    // Read first, so that the audit event names who signed out.
    await validSession(c, context)
    await context.store.deleteSession(id)
  }
  clearCookie(c, SESSION_COOKIE)
  return c.body(null, 204)
}
