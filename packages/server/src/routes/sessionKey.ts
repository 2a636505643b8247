import type { Context } from 'hono'
import { z } from 'zod'
import { incompleteAnswer, ServerError } from '../errors.js'
import { callKms, currentSession, enforce, type RouteContext, readBody } from '../internal/context.js'
import { compressedP256Key, SESSION_KEY_SECONDS, sessionKeySeconds } from '../internal/schemas.js'

const sessionKeySchema = z.object({ publicKey: compressedP256Key, expirationSeconds: sessionKeySeconds.optional() })

/**
 * `POST /auth/session-key` `{publicKey, expirationSeconds?}` with the session cookie → `{apiKeyId,
 * expiresAt}`: the backend's delegated user in the session's sub-organization (its policy allows
 * create_api_keys, nothing it does not need) registers `publicKey` as an API key of the session's
 * user that expires after `expirationSeconds` (default 900), the same against our kms and hosted
 * Turnkey. How the browser starts a new session
 * key, without restoring, once its old one has expired (SPEC §4). A SIWE session of a wallet this
 * backend did not create has no user to register a key for: 403.
 *
 * @example
 * app.post('/auth/session-key', sessionKey(context))
 */
export const sessionKey = (context: RouteContext) => async (c: Context) => {
  const session = await currentSession(c, context)
  const { organization_id: organizationId, user_id: userId } = session
  if (organizationId === null || userId === null)
    throw new ServerError(403, 'no_embedded_wallet', "This session's wallet is not an embedded wallet of this app")
  const input = await readBody(c.req.raw, sessionKeySchema)
  enforce(await context.limits.sessionKeysPerSession(session.id), (minutes) => `Too many session keys for this session; try again in ${minutes} minutes`)
  const seconds = input.expirationSeconds ?? SESSION_KEY_SECONDS.default
  const at = context.now()
  // As the sub-organization's delegated user: the parent organization may not write there.
  const delegated = await callKms(() => context.delegated.client(organizationId))
  const { activity } = await callKms(() =>
    delegated.createApiKeys({
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      timestampMs: String(at),
      organizationId,
      parameters: {
        userId,
        apiKeys: [
          {
            apiKeyName: `session ${new Date(at).toISOString()}`,
            publicKey: input.publicKey,
            curveType: 'API_KEY_CURVE_P256',
            expirationSeconds: String(seconds),
          },
        ],
      },
    }),
  )
  const apiKeyId = activity.result.createApiKeysResult?.apiKeyIds[0]
  if (!apiKeyId) throw incompleteAnswer()
  return c.json({ apiKeyId, expiresAt: new Date(at + seconds * 1000).toISOString() })
}
