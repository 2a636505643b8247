import { z } from 'zod'
import type { ActivityTable } from '../activities/table.js'
import type { ActivityContext } from '../context.js'
import {
  DEFAULT_SESSION_SECONDS,
  inheritedVerification,
  insertApiKey,
  invalidateKeys,
  prepareCredential,
  refuseLongLifetime,
  registerCredential,
  sessionJwt,
} from '../credentials.js'
import { notFound, permissionDenied } from '../errors.js'
import { parse, targetPublicKey } from '../params.js'

// Sessions: a read-write session key handed over in a bundle, a login with the client's own key
// (stamp_login, answered with a session JWT), and a read-only session JWT.

/** How long a read-only session lasts. */
export const READ_ONLY_SESSION_SECONDS = 3600

/** The type of the credential that stamped the request: an API key's, or a passkey's; null when none did (an approved activity run later). */
async function stampingCredentialType({ db, caller }: ActivityContext): Promise<string | null> {
  if (!caller.credential) return null
  const apiKey = await db.apiKeyByPublicKey(caller.credential)
  if (apiKey) return apiKey.credential_type
  return (await db.authenticatorByCredential(caller.credential)) ? 'CREDENTIAL_TYPE_WEBAUTHN_AUTHENTICATOR' : null
}

export const SESSION_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2: {
    op: 'create_read_write_session',
    intentKey: 'createReadWriteSessionIntentV2',
    resultKey: 'createReadWriteSessionResultV2',
    async run(params, context) {
      const input = parse(
        z.object({
          targetPublicKey,
          userId: z.string().optional(),
          apiKeyName: z.string().min(1).max(256).optional(),
          expirationSeconds: z.string().regex(/^\d+$/).optional(),
        }),
        params,
      )
      refuseLongLifetime(context, input.expirationSeconds)
      const { db, caller } = context
      const userId = input.userId ?? (caller.homeOrganizationId === caller.organizationId ? caller.userId : undefined)
      const user = userId ? await db.user(userId, caller.organizationId) : undefined
      if (!user) throw notFound(`user ${String(userId)} not found in organization ${caller.organizationId}`)
      const organization = (await db.organization(caller.organizationId))!
      // A fresh P-256 key for the session, handed over only inside the bundle.
      const credential = await prepareCredential(input.targetPublicKey)
      const bundle = credential.credentialBundle
      const apiKeyId = await registerCredential(context, credential, {
        userId: user.id,
        credentialType: 'CREDENTIAL_TYPE_READ_WRITE_SESSION_KEY_P256',
        name: input.apiKeyName,
        expirationSeconds: input.expirationSeconds,
        verifiedAt: inheritedVerification(caller, user.id),
      })
      return { organizationId: organization.id, organizationName: organization.name, userId: user.id, username: user.name, apiKeyId, credentialBundle: bundle }
    },
  },
  ACTIVITY_TYPE_STAMP_LOGIN: {
    op: 'stamp_login',
    intentKey: 'stampLoginIntent',
    resultKey: 'stampLoginResult',
    async run(params, context) {
      const input = parse(
        z.object({
          publicKey: z.string().regex(/^0[23][0-9a-f]{64}$/, 'must be a compressed P-256 public key in lowercase hex'),
          expirationSeconds: z.string().regex(/^\d+$/).optional(),
          invalidateExisting: z.boolean().optional(),
        }),
        params,
      )
      refuseLongLifetime(context, input.expirationSeconds)
      const { db, caller, now } = context
      if (caller.homeOrganizationId !== caller.organizationId)
        throw permissionDenied('stamp_login signs in a user of this organization: stamp it with their own passkey or key')
      const seconds = Number(input.expirationSeconds ?? DEFAULT_SESSION_SECONDS)
      if (input.invalidateExisting) await invalidateKeys(db, caller.userId, 'CREDENTIAL_TYPE_LOGIN')
      await insertApiKey(
        db,
        caller.userId,
        caller.organizationId,
        { apiKeyName: `login ${new Date(now()).toISOString()}`, publicKey: input.publicKey, expirationSeconds: String(seconds) },
        now(),
        { credentialType: 'CREDENTIAL_TYPE_LOGIN', verifiedAt: inheritedVerification(caller, caller.userId) },
      )
      // The session JWT the browser SDKs keep; signed like the hosted notarizer's (ES256 over a double SHA-256).
      const claims = {
        exp: Math.floor(now() / 1000) + seconds,
        public_key: input.publicKey,
        session_type: 'SESSION_TYPE_READ_WRITE',
        user_id: caller.userId,
        organization_id: caller.organizationId,
        // What stamped the login, so a backend gives a passkey's login a full session and any other
        // credential's (a recovery credential, a session key) one no longer than this JWT.
        credential_type: await stampingCredentialType(context),
      }
      return { session: sessionJwt(claims, context.signerPrivateKey) }
    },
  },
  ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION: {
    op: 'create_read_only_session',
    intentKey: 'createReadOnlySessionIntent',
    resultKey: 'createReadOnlySessionResult',
    async run(params, context) {
      parse(z.object({}), params ?? {})
      const { db, caller, now } = context
      const organization = (await db.organization(caller.organizationId))!
      const user = (await db.user(caller.userId, caller.homeOrganizationId))!
      const sessionExpiry = Math.floor(now() / 1000) + READ_ONLY_SESSION_SECONDS
      const session = sessionJwt(
        { exp: sessionExpiry, session_type: 'SESSION_TYPE_READ_ONLY', user_id: user.id, organization_id: organization.id },
        context.signerPrivateKey,
      )
      return {
        organizationId: organization.id,
        organizationName: organization.name,
        userId: user.id,
        username: user.name,
        session,
        sessionExpiry: String(sessionExpiry),
      }
    },
  },
}
