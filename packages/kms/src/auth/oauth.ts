import { createHash, randomUUID } from 'node:crypto'
import { z } from 'zod'
import { type ActivityTable, userIn } from '../activities/table.js'
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
import { alreadyExists, invalid, notFound } from '../errors.js'
import { listOf } from '../lists.js'
import { ids, parse, targetPublicKey, uint64 } from '../params.js'
import { mapSeries } from '../sequence.js'

// OAuth: OIDC identities registered for users, and sign-in with an OIDC token of one of them.
//
// A token is believed only once it verifies against its issuer's keys (JWKS) as one of the
// issuers and audiences this service is configured to trust (./oidc.ts): signature, issuer,
// audience and expiry. To sign in (oauth, oauth_login) its nonce must also be the SHA-256 of the
// key the credential goes to, so a token handed to one browser signs in no other key, and the
// identity must be registered for a user of the organization. Finding the sub-organizations of
// an identity (list_suborgs by OIDC_TOKEN) verifies the token the same way, without the nonce.

/** The nonce an OIDC token must carry to sign in the holder of `publicKey`: hex SHA-256 of the key's hex. */
export const nonceFor = (publicKey: string) => createHash('sha256').update(publicKey).digest('hex')

/** An OAuth provider to register: from an OIDC token (verified), or from its claims (trusted as the caller gives them, as Turnkey does). */
export const oauthProviderParams = z
  .object({
    providerName: z.string().min(1).max(256),
    oidcToken: z.string().min(1).optional(),
    oidcClaims: z.object({ iss: z.string().min(1), sub: z.string().min(1), aud: z.string().min(1) }).optional(),
  })
  .refine((provider) => (provider.oidcToken === undefined) !== (provider.oidcClaims === undefined), 'give either oidcToken or oidcClaims')

/** The identity (issuer, audience, subject) a provider registers; a token's once it verifies. */
export async function oauthIdentity(
  context: ActivityContext,
  provider: z.infer<typeof oauthProviderParams>,
): Promise<{ issuer: string; audience: string; subject: string }> {
  if (provider.oidcClaims) return { issuer: provider.oidcClaims.iss, audience: provider.oidcClaims.aud, subject: provider.oidcClaims.sub }
  const claims = await context.oidc.verify(provider.oidcToken!, context.now())
  return { issuer: claims.iss, audience: claims.aud[0]!, subject: claims.sub }
}

/** Stores OAuth providers for a user of `organizationId` (default: the caller's); refused when a token does not verify or an identity is registered in the organization already. */
export async function insertOauthProviders(
  context: ActivityContext,
  userId: string,
  providers: readonly z.infer<typeof oauthProviderParams>[],
  organizationId = context.caller.organizationId,
): Promise<string[]> {
  const { db, now } = context
  // Every token verified before anything is written.
  const identities = await mapSeries(providers, (provider) => oauthIdentity(context, provider))
  return await mapSeries(identities, async (identity, index) => {
    if (await db.oauthProviderByIdentity(organizationId, identity.issuer, identity.audience, identity.subject))
      throw alreadyExists(`the OAuth identity ${identity.subject} of ${identity.issuer} is already registered in organization ${organizationId}`)
    const id = randomUUID()
    await db.insertOauthProvider({
      id,
      user_id: userId,
      organization_id: organizationId,
      name: providers[index]!.providerName,
      ...identity,
      created_at: now(),
    })
    return id
  })
}

/** The user an OIDC token signs in: checked as described at the top of this file. */
async function userOfToken(context: ActivityContext, oidcToken: string, publicKey: string) {
  const { db, caller, now } = context
  const claims = await context.oidc.verify(oidcToken, now())
  if (claims.nonce !== nonceFor(publicKey)) throw invalid('the OIDC token nonce must be the hex SHA-256 of the public key the credential is for')
  for (const audience of claims.aud) {
    const provider = await db.oauthProviderByIdentity(caller.organizationId, claims.iss, audience, claims.sub)
    if (provider) return provider.user_id
  }
  throw notFound(`no user in organization ${caller.organizationId} has the OAuth identity ${claims.sub} of ${claims.iss}`)
}

/** Drops a user's earlier OAuth credentials (`invalidateExisting`). */
const invalidateOauthKeys = (context: ActivityContext, userId: string) => invalidateKeys(context.db, userId, 'CREDENTIAL_TYPE_OAUTH_KEY_P256')

export const OAUTH_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2: {
    op: 'create_oauth_providers',
    intentKey: 'createOauthProvidersIntentV2',
    resultKey: 'createOauthProvidersResultV2',
    async run(params, context) {
      const input = parse(z.object({ userId: z.string().min(1), oauthProviders: listOf(oauthProviderParams, 'OAuth providers').min(1) }), params)
      const user = await userIn(context, input.userId)
      return { providerIds: await context.db.transaction(async () => await insertOauthProviders(context, user.id, input.oauthProviders)) }
    },
  },
  ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS: {
    op: 'delete_oauth_providers',
    intentKey: 'deleteOauthProvidersIntent',
    resultKey: 'deleteOauthProvidersResult',
    async run(params, context) {
      const input = parse(z.object({ userId: z.string().min(1), providerIds: ids('provider') }), params)
      const { db, caller } = context
      const user = await userIn(context, input.userId)
      for (const providerId of input.providerIds)
        if ((await db.oauthProvider(providerId, caller.organizationId))?.user_id !== user.id)
          throw notFound(`OAuth provider ${providerId} not found for user ${user.id}`)
      await db.transaction(async () => {
        for (const providerId of input.providerIds) await db.deleteOauthProvider(providerId)
      })
      return { providerIds: input.providerIds }
    },
  },
  ACTIVITY_TYPE_OAUTH: {
    op: 'oauth',
    intentKey: 'oauthIntent',
    resultKey: 'oauthResult',
    async run(params, context) {
      const input = parse(
        z.object({
          oidcToken: z.string().min(1),
          targetPublicKey,
          apiKeyName: z.string().min(1).max(256).optional(),
          expirationSeconds: uint64.optional(),
          invalidateExisting: z.boolean().optional(),
        }),
        params,
      )
      refuseLongLifetime(context, input.expirationSeconds)
      const userId = await userOfToken(context, input.oidcToken, input.targetPublicKey)
      const credential = await prepareCredential(input.targetPublicKey)
      const apiKeyId = await context.db.transaction(async () => {
        if (input.invalidateExisting) await invalidateOauthKeys(context, userId)
        return await registerCredential(context, credential, {
          userId,
          credentialType: 'CREDENTIAL_TYPE_OAUTH_KEY_P256',
          name: input.apiKeyName,
          expirationSeconds: input.expirationSeconds,
          verifiedAt: inheritedVerification(context.caller, userId),
        })
      })
      return { userId, apiKeyId, credentialBundle: credential.credentialBundle }
    },
  },
  ACTIVITY_TYPE_OAUTH_LOGIN: {
    op: 'oauth_login',
    intentKey: 'oauthLoginIntent',
    resultKey: 'oauthLoginResult',
    async run(params, context) {
      const input = parse(
        z.object({
          oidcToken: z.string().min(1),
          publicKey: z.string().regex(/^0[23][0-9a-f]{64}$/, 'must be a compressed P-256 public key in lowercase hex'),
          expirationSeconds: uint64.optional(),
          invalidateExisting: z.boolean().optional(),
        }),
        params,
      )
      refuseLongLifetime(context, input.expirationSeconds)
      const { db, caller, now } = context
      const userId = await userOfToken(context, input.oidcToken, input.publicKey)
      const seconds = Number(input.expirationSeconds ?? DEFAULT_SESSION_SECONDS)
      await db.transaction(async () => {
        if (input.invalidateExisting) await invalidateOauthKeys(context, userId)
        await insertApiKey(
          db,
          userId,
          caller.organizationId,
          { apiKeyName: `oauth login ${new Date(now()).toISOString()}`, publicKey: input.publicKey, expirationSeconds: String(seconds) },
          now(),
          { credentialType: 'CREDENTIAL_TYPE_OAUTH_KEY_P256', verifiedAt: inheritedVerification(caller, userId) },
        )
      })
      const claims = {
        exp: Math.floor(now() / 1000) + seconds,
        public_key: input.publicKey,
        session_type: 'SESSION_TYPE_READ_WRITE',
        user_id: userId,
        organization_id: caller.organizationId,
      }
      return { session: sessionJwt(claims, context.signerPrivateKey) }
    },
  },
}
