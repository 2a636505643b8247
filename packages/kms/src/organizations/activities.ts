import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import { type ActivityTable, refuseUnexported, userIn } from '../activities/table.js'
import { insertOauthProviders, oauthProviderParams } from '../auth/oauth.js'
import type { ActivityContext } from '../context.js'
import { insertApiKey, insertAuthenticator, refuseKeyLifetimes } from '../credentials.js'
import { alreadyExists, failedPrecondition, invalid, notFound, permissionDenied } from '../errors.js'
import { listOf, MAX_ACCOUNTS_PER_REQUEST, MAX_LIST_ITEMS } from '../lists.js'
import { apiKeyParams, authenticatorParams, ids, parse } from '../params.js'
import { featureView } from '../views.js'
import { accountParams, createWallet } from '../wallets/keys.js'
import { verifyRegistration } from '../webauthn.js'

// Organizations: a parent's sub-organizations (created with their root users and a first wallet),
// an organization's name, features, root quorum, and (for a sub-organization) its end.

/** Feature names the clients know. Features are stored and reported; this service does not act on them. */
export const FEATURE_NAMES = [
  'FEATURE_NAME_ROOT_USER_EMAIL_RECOVERY',
  'FEATURE_NAME_WEBAUTHN_ORIGINS',
  'FEATURE_NAME_EMAIL_AUTH',
  'FEATURE_NAME_EMAIL_RECOVERY',
  'FEATURE_NAME_WEBHOOK',
  'FEATURE_NAME_SMS_AUTH',
  'FEATURE_NAME_OTP_EMAIL_AUTH',
  'FEATURE_NAME_AUTH_PROXY',
  'FEATURE_NAME_SOLANA_RENT_PREFUND_ENABLED',
  'FEATURE_NAME_SWAP_CONFIG',
  'FEATURE_NAME_EARN_CONFIG',
] as const

const features = async (context: ActivityContext) => (await context.db.features(context.caller.organizationId)).map(featureView)

const createSubOrganization = z.object({
  subOrganizationName: z.string().min(1).max(256),
  rootQuorumThreshold: z.number().int().min(1),
  rootUsers: z
    .array(
      z.object({
        userName: z.string().min(1).max(256),
        userEmail: z.email().optional(),
        apiKeys: listOf(apiKeyParams, 'API keys').default([]),
        authenticators: listOf(authenticatorParams, 'authenticators').default([]),
        oauthProviders: listOf(oauthProviderParams, 'OAuth providers').default([]),
      }),
    )
    .min(1)
    .max(MAX_LIST_ITEMS, `at most ${MAX_LIST_ITEMS} root users in one request`),
  wallet: z
    .object({
      walletName: z.string().min(1),
      accounts: listOf(accountParams, 'accounts', MAX_ACCOUNTS_PER_REQUEST),
      mnemonicLength: z.number().int().optional(),
    })
    .optional(),
})

/** update_root_quorum's parameters, built once (a zod schema compiles its parser on first use). */
const updateRootQuorumParams = z.object({ threshold: z.number().int().min(1), userIds: ids('user') })

export const ORGANIZATION_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7: {
    op: 'create_sub_organization',
    intentKey: 'createSubOrganizationIntentV7',
    resultKey: 'createSubOrganizationResultV7',
    run: runCreateSubOrganization,
  },
  ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8: {
    op: 'create_sub_organization',
    intentKey: 'createSubOrganizationIntentV8',
    resultKey: 'createSubOrganizationResultV8',
    run: runCreateSubOrganization,
  },
  ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE: {
    op: 'set_organization_feature',
    intentKey: 'setOrganizationFeatureIntent',
    resultKey: 'setOrganizationFeatureResult',
    async run(params, context) {
      const input = parse(z.object({ name: z.enum(FEATURE_NAMES), value: z.string().max(4096).default('') }), params)
      await context.db.transaction(async () => await context.db.setFeature(context.caller.organizationId, input.name, input.value))
      return { features: await features(context) }
    },
  },
  ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE: {
    op: 'remove_organization_feature',
    intentKey: 'removeOrganizationFeatureIntent',
    resultKey: 'removeOrganizationFeatureResult',
    async run(params, context) {
      const input = parse(z.object({ name: z.enum(FEATURE_NAMES) }), params)
      const { db, caller } = context
      if (!(await db.features(caller.organizationId)).some((feature) => feature.name === input.name))
        throw notFound(`feature ${input.name} is not set in organization ${caller.organizationId}`)
      await db.transaction(async () => await db.removeFeature(caller.organizationId, input.name))
      return { features: await features(context) }
    },
  },
  ACTIVITY_TYPE_UPDATE_ROOT_QUORUM: {
    op: 'update_root_quorum',
    intentKey: 'updateRootQuorumIntent',
    resultKey: 'updateRootQuorumResult',
    async run(params, context) {
      const input = parse(updateRootQuorumParams, params)
      const { db, caller } = context
      for (const userId of input.userIds) await userIn(context, userId)
      if (input.threshold > input.userIds.length)
        throw failedPrecondition(`a threshold of ${input.threshold} cannot be met by ${input.userIds.length} root users`)
      await db.transaction(async () => {
        await db.setRootQuorumMembers(caller.organizationId, input.userIds)
        await db.setRootQuorumThreshold(input.threshold, caller.organizationId)
      })
      return {}
    },
  },
  ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME: {
    op: 'update_organization_name',
    intentKey: 'updateOrganizationNameIntent',
    resultKey: 'updateOrganizationNameResult',
    async run(params, context) {
      const { organizationName } = parse(z.object({ organizationName: z.string().min(1).max(256) }), params)
      await context.db.transaction(async () => await context.db.renameOrganization(organizationName, context.caller.organizationId))
      return { organizationId: context.caller.organizationId, organizationName }
    },
  },
  ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION: {
    op: 'delete_sub_organization',
    intentKey: 'deleteSubOrganizationIntent',
    resultKey: 'deleteSubOrganizationResult',
    async run(params, context) {
      const input = parse(z.object({ deleteWithoutExport: z.boolean().optional() }), params ?? {})
      const { db, caller } = context
      const organization = (await db.organization(caller.organizationId))!
      if (!organization.parent_id)
        throw failedPrecondition(`organization ${organization.id} is not a sub-organization: a parent organization is not deleted through the API`)
      refuseUnexported(
        [
          ...(await db.wallets(organization.id)).map((wallet) => ({ exported: wallet.exported, label: `wallet ${wallet.id}` })),
          ...(await db.privateKeys(organization.id)).map((key) => ({ exported: key.exported, label: `private key ${key.id}` })),
        ],
        input.deleteWithoutExport,
      )
      await db.transaction(async () => await db.deleteOrganization(organization.id))
      return { subOrganizationUuid: organization.id }
    },
  },
}

async function runCreateSubOrganization(params: unknown, context: ActivityContext) {
  const input = parse(createSubOrganization, params)
  // The parent organization's own placement: a key without an expiry may be its (a backend's
  // delegated-access user); one with an expiry stays within the maximum.
  for (const [index, user] of input.rootUsers.entries()) refuseKeyLifetimes(context, user.apiKeys, `rootUsers.${index}.apiKeys`, false)
  const { db, caller, now } = context
  // Every passkey is verified before anything is written.
  const passkeys = await Promise.all(
    input.rootUsers.map((user) =>
      Promise.all(user.authenticators.map(async (authenticator) => ({ authenticator, verified: await verifyRegistration(authenticator, context.webauthn) }))),
    ),
  )
  for (const { verified } of passkeys.flat())
    if (await db.authenticatorByCredential(verified.credentialId)) throw alreadyExists(`credential ${verified.credentialId} is already registered`)
  const parent = await db.organization(caller.organizationId)
  if (!parent) throw notFound(`organization ${caller.organizationId} not found`)
  if (parent.parent_id) throw permissionDenied('a sub-organization cannot create sub-organizations')
  if (input.rootQuorumThreshold > input.rootUsers.length) throw invalid('rootQuorumThreshold is larger than the number of root users')
  const subOrganizationId = randomUUID()
  const at = now()
  await db.insertOrganization({
    id: subOrganizationId,
    name: input.subOrganizationName,
    parent_id: parent.id,
    root_quorum_threshold: input.rootQuorumThreshold,
    created_at: at,
  })
  const rootUserIds: string[] = []
  for (const [index, user] of input.rootUsers.entries()) {
    const userId = randomUUID()
    await db.insertUser({ id: userId, organization_id: subOrganizationId, name: user.userName, email: user.userEmail ?? null, created_at: at })
    for (const key of user.apiKeys) await insertApiKey(db, userId, subOrganizationId, key, at)
    for (const { authenticator, verified } of passkeys[index]!) await insertAuthenticator(db, userId, subOrganizationId, authenticator, verified, at)
    // Their tokens are verified (auth/oidc.ts); a refused one rolls the whole activity back.
    await insertOauthProviders(context, userId, user.oauthProviders, subOrganizationId)
    rootUserIds.push(userId)
  }
  const wallet = input.wallet
    ? await createWallet(context, subOrganizationId, input.wallet.walletName, input.wallet.accounts, input.wallet.mnemonicLength)
    : undefined
  return { subOrganizationId, rootUserIds, ...(wallet ? { wallet } : {}) }
}
