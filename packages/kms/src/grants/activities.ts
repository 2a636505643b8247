import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import { type ActivityTable, found, userIn } from '../activities/table.js'
import { GRANT_CREDENTIAL_TYPE } from '../credentials.js'
import { alreadyExists, GrpcCode, KmsError, notFound, UNKNOWN_KEY_MESSAGE } from '../errors.js'
import { apiKeyParams, parse } from '../params.js'
import { grantRefusal, parseGrant } from './rule.js'

// ERC-7715 grants, a Latchkey extension of the Turnkey API (Turnkey has no stateful spend rule): a
// dedicated API key of the user, bound to a rule the kms applies to everything that key stamps
// (grants/enforce.ts). Created by the user's own session once they approved the grant in the frame,
// and ended with that session: the grant's key names the API key whose stamp created it, and
// deleting that key (sign-out, delete_api_keys) deletes the grant's key, rule and ledger with it
// (migration 0011_grant_key_creators). A grant created by a passkey stamp, or run later once a
// consensus approved it, has no such key and lasts until it expires or is revoked.

const createGrant = z.object({
  userId: z.string().min(1),
  /** The grant's key: it expires with the grant, so no lifetime of its own is taken. */
  apiKey: apiKeyParams.omit({ expirationSeconds: true, curveType: true }),
  grant: z.unknown(),
})

export const GRANT_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT: {
    op: 'create_grant',
    intentKey: 'createGrantIntent',
    resultKey: 'createGrantResult',
    async run(params, context) {
      const { db, caller, now } = context
      const input = parse(createGrant, params)
      const at = now()
      const { rule, expiresAt } = parseGrant(input.grant, { now: at, maxSeconds: context.maxCredentialSeconds })
      await userIn(context, input.userId)
      const holder = await db.signingKeyByAddress(caller.organizationId, rule.account)
      if (holder.privateKeyId === undefined && !holder.account)
        throw notFound(`no wallet account with address ${rule.account} in organization ${caller.organizationId}`)
      // The key and its rule in the activity's transaction: both are written, or neither. The key
      // lapses exactly when the grant does.
      if (await db.apiKeyByPublicKey(input.apiKey.publicKey)) throw alreadyExists(`api key ${input.apiKey.publicKey} is already registered`)
      // A grant ends with its session at the latest: one asking to outlive the session that makes
      // it is refused, not shortened, so the app learns the expiry it can have.
      const session = caller.credential ? await db.apiKeyByPublicKey(caller.credential) : undefined
      if (session?.expires_at != null && expiresAt > session.expires_at)
        throw grantRefusal(
          GrpcCode.invalidArgument,
          'GRANT_EXPIRY_TOO_LONG',
          `invalid parameters: grant.expiry: must be at most ${Math.floor(session.expires_at / 1000)}, when the session that asks for it ends`,
        )
      // The session that stamps this, locked: a sign-out deleting it meanwhile (on any instance)
      // either finds the grant's key to delete, or has deleted the session, and nothing is made.
      if (caller.apiKeyId && !(await db.lockApiKey(caller.apiKeyId))) throw new KmsError(GrpcCode.unauthenticated, UNKNOWN_KEY_MESSAGE)
      const apiKeyId = randomUUID()
      await db.insertApiKey({
        id: apiKeyId,
        user_id: input.userId,
        organization_id: caller.organizationId,
        name: input.apiKey.apiKeyName,
        public_key: input.apiKey.publicKey,
        curve: 'API_KEY_CURVE_P256',
        credential_type: GRANT_CREDENTIAL_TYPE,
        expires_at: expiresAt,
        created_at: at,
        // A grant's key signs transactions only: it never counts as a verification.
        verified_at: null,
        created_by_api_key_id: caller.apiKeyId ?? null,
      })
      const grantId = randomUUID()
      await db.insertGrant({
        id: grantId,
        organization_id: caller.organizationId,
        user_id: input.userId,
        api_key_id: apiKeyId,
        chain_id: rule.chainId,
        account: rule.account,
        rule: JSON.stringify(rule),
        expires_at: expiresAt,
        created_at: at,
      })
      return { grantId, apiKeyId }
    },
  },
  ACTIVITY_TYPE_LATCHKEY_REVOKE_GRANT: {
    op: 'revoke_grant',
    intentKey: 'revokeGrantIntent',
    resultKey: 'revokeGrantResult',
    async run(params, context) {
      const { grantId } = parse(z.object({ grantId: z.string().min(1) }), params)
      const grant = found(await context.db.grant(grantId, context.caller.organizationId), 'grant', grantId, context.caller)
      // The rule and its ledger go with the key (on delete cascade).
      await context.db.deleteApiKey(grant.api_key_id)
      return { grantId }
    },
  },
}
