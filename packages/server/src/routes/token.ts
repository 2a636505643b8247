import type { Context } from 'hono'
import { z } from 'zod'
import { ServerError } from '../errors.js'
import { currentSession, type RouteContext, readBody } from '../internal/context.js'
import { newRefreshToken, refreshTokenDigest, signAccessToken } from '../internal/sessionTokens.js'
import type { SessionRow } from '../store.js'

const refreshSchema = z.object({ refreshToken: z.string().regex(/^[\w-]{43}$/, 'must be a refresh token this backend issued') })

const refused = () => new ServerError(401, 'invalid_refresh_token', 'This refresh token is unknown, used, expired or signed out; sign in again')

/** An access JWT and, for sessions being handed to a client, the refresh token that renews it. */
async function tokens(c: Context, context: RouteContext, session: SessionRow, refresh: { token: string }) {
  const at = context.now()
  const { token, expiresAt } = await signAccessToken((await context.jwt.keys())[0], session, {
    issuer: context.jwt.issuer,
    audience: context.jwt.audience,
    seconds: context.jwt.accessSeconds,
    at,
  })
  c.header('cache-control', 'no-store')
  return c.json({
    accessToken: token,
    tokenType: 'Bearer',
    expiresAt: new Date(expiresAt).toISOString(),
    refreshToken: refresh.token,
    refreshExpiresAt: new Date(session.expires_at).toISOString(),
  })
}

/**
 * `POST /auth/token` (session cookie) → `{accessToken, tokenType, expiresAt, refreshToken,
 * refreshExpiresAt}`: a short-lived ES256 JWT of the signed-in session, whatever wallet signed in,
 * for the app's other services (verified against `GET /.well-known/jwks.json`), and a refresh
 * token that renews it until the session ends.
 *
 * @example
 * app.post('/auth/token', issueToken(context))
 */
export const issueToken = (context: RouteContext) => async (c: Context) => {
  const session = await currentSession(c, context)
  const refresh = newRefreshToken()
  await context.store.insertRefreshToken({ digest: refresh.digest, session_id: session.id, expires_at: session.expires_at, created_at: context.now() })
  return tokens(c, context, session, refresh)
}

/**
 * `POST /auth/token/refresh` `{refreshToken}` → the same answer as `POST /auth/token`, with a new
 * refresh token: each one works once. No cookie needed (mobile clients, other services). Refused
 * (401 `invalid_refresh_token`) once the session has signed out or expired; a refresh token used a
 * second time ends its session, since one of the two users of it is not its owner.
 *
 * @example
 * app.post('/auth/token/refresh', refreshToken(context))
 */
export const refreshToken = (context: RouteContext) => async (c: Context) => {
  const input = await readBody(c.req.raw, refreshSchema)
  const next = newRefreshToken()
  const at = context.now()
  const session = await context.store.rotateRefreshToken(refreshTokenDigest(input.refreshToken), { digest: next.digest, created_at: at }, at)
  if (!session) throw refused()
  return tokens(c, context, session, next)
}

/**
 * `POST /auth/token/revoke` `{refreshToken}` → 204: signs the token's session out (as
 * `POST /auth/signout` does for the cookie), so neither the cookie nor any refresh token of it
 * works again. An unknown token answers 204 too (RFC 7009).
 *
 * @example
 * app.post('/auth/token/revoke', revokeToken(context))
 */
export const revokeToken = (context: RouteContext) => async (c: Context) => {
  const input = await readBody(c.req.raw, refreshSchema)
  await context.store.revokeRefreshToken(refreshTokenDigest(input.refreshToken))
  return c.body(null, 204)
}

/**
 * `GET /.well-known/jwks.json` → `{keys: [publicJwk, ...]}`: every configured session JWT key, the
 * signing one first (ES256, `kid` its RFC 7638 thumbprint), for `createRemoteJWKSet` and any JOSE
 * library: a token signed by a key still listed verifies while a rotation overlaps.
 *
 * @example
 * app.get('/.well-known/jwks.json', jwks(context))
 */
export const jwks = (context: RouteContext) => async (c: Context) => {
  c.header('cache-control', 'public, max-age=300')
  return c.json({ keys: (await context.jwt.keys()).map((key) => key.publicJwk) })
}
