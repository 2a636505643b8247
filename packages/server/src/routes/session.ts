import type { Context } from 'hono'
import { getCookie } from 'hono/cookie'
import { z } from 'zod'
import { clearCookie, type RouteContext, readBody, SESSION_COOKIE, sessionAnswer, validSession } from '../internal/context.js'
import { endSessionKeys } from '../revoke.js'

const signOutSchema = z.object({ everywhere: z.boolean().optional() })

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
 * `POST /auth/signout` `{everywhere?}` → 204: the session's key is deleted in the kms (through the
 * backend's delegated user), then the session and the cookie. With `everywhere: true` every API key
 * of the user is deleted in the kms, and every session of the account here: no browser of theirs
 * stamps again until it signs in. Until the kms has deleted the keys nothing is ended (a kms
 * refusal or outage answers its error, and the user can try again); an account whose delegated
 * user its owner removed signs out with its keys left to the owner.
 *
 * @example
 * app.post('/auth/signout', signOut(context))
 */
export const signOut = (context: RouteContext) => async (c: Context) => {
  // A body is optional: `{}` and none both sign out of this browser only.
  const empty = c.req.raw.body === null || c.req.header('content-length') === '0'
  const { everywhere } = empty ? {} : await readBody(c.req.raw, signOutSchema)
  const id = getCookie(c, SESSION_COOKIE)
  if (id) {
    // Read first, so that the audit event names who signed out.
    const session = await validSession(c, context)
    const { organization_id: organizationId, user_id: userId, session_public_key: publicKey } = session ?? {}
    if (organizationId && userId && (everywhere || publicKey))
      await endSessionKeys(context, { organizationId, userId, publicKeys: everywhere ? undefined : [publicKey!] })
    if (everywhere && organizationId) await context.store.deleteSessionsOf(organizationId)
    else await context.store.deleteSession(id)
  }
  clearCookie(c, SESSION_COOKIE)
  return c.body(null, 204)
}
