import { z } from 'zod'
import type { ActivityContext } from '../context.js'
import { ids, notFound, parse } from '../params.js'
import { featureView } from '../views.js'
import { type ActivityTable, failedPrecondition, userIn } from './table.js'

// The organization itself: its name, features, root quorum, and (for a sub-organization) its end.

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

/** Refuses to drop keys that were never exported, unless the request says so (`deleteWithoutExport`). */
export function refuseUnexported(what: readonly { exported: number; label: string }[], deleteWithoutExport: boolean | undefined) {
  const unexported = what.filter((item) => item.exported !== 1)
  if (unexported.length && !deleteWithoutExport)
    throw failedPrecondition(
      `${unexported.map((item) => item.label).join(', ')} ${unexported.length === 1 ? 'has' : 'have'} not been exported: export first, or set deleteWithoutExport`,
    )
}

export const ORGANIZATION_ACTIVITIES: ActivityTable = {
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
      const input = parse(z.object({ threshold: z.number().int().min(1), userIds: ids('user') }), params)
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
