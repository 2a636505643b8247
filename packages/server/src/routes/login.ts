import { createHash } from 'node:crypto'
import type { Context } from 'hono'
import { z } from 'zod'
import { ServerError } from '../errors.js'
import { callKms, enforce, type RouteContext, readBody, startSession } from '../internal/context.js'
import { PASSKEY_CREDENTIAL, verifySessionJwt } from '../internal/sessionJwt.js'
import type { KnownAccount } from '../store.js'

const loginSchema = z.object({
  session: z
    .string()
    .max(8192)
    .regex(/^[\w-]+\.[\w-]+\.[\w-]+$/, 'must be a session JWT'),
  // A `kind` the client sends is ignored (stripped): the JWT decides.
})

const spent = () => new ServerError(401, 'invalid_session', 'This session token has already signed in; sign in again')
const foreign = () => new ServerError(401, 'unknown_organization', 'The session token is for an organization this app does not manage')

/**
 * `POST /auth/login` `{session}` → `{organizationId, userId, address}` and the session cookie.
 * `session` is the JWT the kms's stamp_login returned to the browser. The server, not the client,
 * decides the session: kind `passkey` for the full length when the JWT says a passkey stamped it,
 * else kind `recovery` (a recovery credential, a session key, or a JWT that does not say) ending
 * with the JWT's `exp`. It must be signed by the session signer,
 * unexpired, read-write, not used here before, and for one of this backend's sub-organizations. A
 * sub-organization this backend did not record is accepted when the parent organization's key can
 * read its wallet.
 *
 * @example
 * app.post('/auth/login', login(context))
 */
export const login = (context: RouteContext) => async (c: Context) => {
  const input = await readBody(c.req.raw, loginSchema)
  const claims = await verifySessionJwt(input.session, context.sessionSignerPublicKey, context.now())
  // Keyed by the signed part: an ECDSA signature can be rewritten into another valid one.
  const digest = createHash('sha256')
    .update(input.session.slice(0, input.session.lastIndexOf('.')))
    .digest('base64url')
  if (claims.organization_id === context.organizationId) throw foreign()
  let account = await context.store.accountByOrganization(claims.organization_id)
  if (!account) {
    // A spent token must not cost kms calls; a known account needs no look-up, and the spend below decides.
    if (await context.store.sessionTokenSpent(digest)) throw spent()
    account = await lookUp(c, context, claims.organization_id, claims.user_id)
  }
  // Spent as it is written: two requests racing with one token, on any instances, sign in once.
  if (!(await context.store.spendSessionToken(digest, claims.exp * 1000))) throw spent()
  // The JWT names the user who signed in; the sub-organization may hold more than its root user.
  // Only a passkey's login is a full session; any other credential's ends with its JWT.
  const passkey = claims.credential_type === PASSKEY_CREDENTIAL
  const session = await startSession(
    c,
    context,
    { ...account, user_id: claims.user_id, session_public_key: claims.public_key },
    passkey ? 'passkey' : 'recovery',
    passkey ? undefined : claims.exp * 1000,
  )
  return c.json({ organizationId: session.organization_id, userId: session.user_id, address: session.address })
}

/** A sub-organization created elsewhere: the parent organization's key must be able to read it. */
async function lookUp(c: Context, context: RouteContext, organizationId: string, userId: string): Promise<KnownAccount> {
  enforce(await context.limits.signInsPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  const refusedAsForeign = async <result>(work: () => Promise<result>) => {
    try {
      return await callKms(work)
    } catch (error) {
      throw error instanceof ServerError && error.code === 'kms_refused' ? foreign() : error
    }
  }
  const [{ accounts }, { user }] = await Promise.all([
    refusedAsForeign(() => context.kms.getWalletAccounts({ organizationId })),
    refusedAsForeign(() => context.kms.getUser({ organizationId, userId })),
  ])
  const ethereum = accounts.find((account) => account.addressFormat === 'ADDRESS_FORMAT_ETHEREUM')
  if (!ethereum) throw new ServerError(404, 'account_not_found', 'Account not found: the organization has no Ethereum wallet account')
  return { organization_id: organizationId, user_id: userId, address: ethereum.address, email: user.userEmail ?? null }
}
