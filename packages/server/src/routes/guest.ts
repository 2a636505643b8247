import type { Context } from 'hono'
import { z } from 'zod'
import { enforce, type RouteContext, readBody, startSession } from '../internal/context.js'
import { compressedP256Key, SESSION_KEY_SECONDS, sessionKeySeconds } from '../internal/schemas.js'
import { createAccountSubOrganization } from '../internal/subOrganization.js'
import { newLoginId } from '../store.js'

const guestSchema = z.strictObject({ sessionPublicKey: compressedP256Key, sessionSeconds: sessionKeySeconds.optional() })

/**
 * `POST /auth/guest` `{sessionPublicKey, sessionSeconds?}` → `{organizationId, userId, address,
 * sessionExpiresAt}` and the session cookie (kind `guest`): "Continue as guest". A sub-organization
 * with the 'Turnkey HD' wallet whose user has no login; its one credential is `sessionPublicKey`,
 * the consent frame's key (the page never holds it), for `sessionSeconds` (default the longest a
 * session key may live, `SESSION_KEY_SECONDS.max`: a guest cannot sign in again, so the wallet is
 * reachable while that key lives, in that browser). Linking a login (`/auth/user/link/*`) keeps the
 * wallet for good. Each guest is a kms sub-organization: counted per IP (`LIMITS.guestsPerIp`, and
 * as a sign-in) and from all networks together (`LIMITS.guests`), before the kms is called.
 *
 * @example
 * app.post('/auth/guest', guest(context))
 */
export const guest = (context: RouteContext) => async (c: Context) => {
  const { store, now } = context
  const input = await readBody(c.req.raw, guestSchema)
  const ip = context.ipOf(c)
  enforce(await context.limits.signInsPerIp(ip), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  enforce(await context.limits.guestsPerIp(ip), (minutes) => `Too many guest accounts from this network; try again in ${minutes} minutes`)
  enforce(await context.limits.guests('all'), (minutes) => `Too many guest accounts are being made; try again in ${minutes} minutes`)
  const seconds = input.sessionSeconds ?? SESSION_KEY_SECONDS.max
  const at = now()
  const created = await createAccountSubOrganization(context, `guest ${input.sessionPublicKey}`, {
    userName: 'Guest',
    apiKeys: [{ apiKeyName: 'guest session', publicKey: input.sessionPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: String(seconds) }],
    authenticators: [],
    oauthProviders: [],
  })
  const account = { organization_id: created.subOrganizationId, user_id: created.userId, address: created.address, email: null }
  // The user is known by this row until a login is linked (it is no way in: HIDDEN_LOGIN_KINDS).
  await store.recordLogin({
    id: newLoginId(),
    kind: 'guest',
    subject: created.subOrganizationId,
    organization_id: created.subOrganizationId,
    user_id: created.userId,
    address: created.address,
    label: 'Guest',
    kms_id: null,
    created_at: at,
  })
  const expiresAt = at + seconds * 1000
  await startSession(c, context, { ...account, session_public_key: input.sessionPublicKey }, 'guest', expiresAt)
  return c.json({
    organizationId: created.subOrganizationId,
    userId: created.userId,
    address: created.address,
    sessionExpiresAt: new Date(expiresAt).toISOString(),
  })
}
