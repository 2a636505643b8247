import type { TurnkeyClient } from '@turnkey/http'
import { incompleteAnswer } from '../errors.js'
import { callKms, type RouteContext } from './context.js'
import { ETHEREUM_ACCOUNT, WALLET_NAME } from './wallet.js'

/** The end user of a new sub-organization, as create_sub_organization V8 takes a root user. */
export type EndUser = Parameters<TurnkeyClient['createSubOrganization']>[0]['parameters']['rootUsers'][number]

/** A sub-organization made for one account: its id, the end user's id and the wallet's first address. */
export type AccountSubOrganization = { subOrganizationId: string; userId: string; address: string }

/**
 * Creates the sub-organization of a new account: `endUser` and the backend's delegated user as
 * root users, the 'Turnkey HD' Ethereum wallet; then the delegated user limits itself and leaves
 * the root quorum (`delegated.limit`).
 *
 * Until that step succeeds the delegated user is a root user (security review L15). If it fails,
 * the sub-organization is deleted, as the delegated user, while it still may: no sub-organization
 * is left with the backend as a root user, and a retry starts clean (nothing was stored either).
 *
 * @example
 * const { subOrganizationId, userId, address } = await createAccountSubOrganization(context, address, endUser)
 */
export async function createAccountSubOrganization(context: RouteContext, name: string, endUser: EndUser): Promise<AccountSubOrganization> {
  const delegated = context.delegated.newUser()
  const { activity } = await callKms(() =>
    context.kms.createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(context.now()),
      organizationId: context.organizationId,
      parameters: {
        subOrganizationName: name,
        rootQuorumThreshold: 1,
        rootUsers: [endUser, delegated.rootUser],
        wallet: { walletName: WALLET_NAME, accounts: [ETHEREUM_ACCOUNT] },
      },
    }),
  )
  const result = activity.result.createSubOrganizationResultV8
  const subOrganizationId = result?.subOrganizationId
  const rootUserIds = result?.rootUserIds
  const userId = rootUserIds?.[0]
  const address = result?.wallet?.addresses[0]
  try {
    if (!subOrganizationId || !rootUserIds || !userId || !address) throw incompleteAnswer()
    await callKms(() => delegated.limit(subOrganizationId, rootUserIds))
  } catch (error) {
    if (subOrganizationId) await discard(context, subOrganizationId)
    throw error
  }
  return { subOrganizationId, userId, address }
}

/**
 * Deletes a sub-organization nobody uses yet, as the delegated user (a root user until limited).
 * Best effort: the caller's error is the one that counts; a delegated user that did leave the
 * root quorum (the answer of a step that succeeded was lost) may not delete, and is no root user.
 */
async function discard(context: RouteContext, subOrganizationId: string): Promise<void> {
  try {
    const client = await context.delegated.client(subOrganizationId)
    await client.deleteSubOrganization({
      type: 'ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION',
      timestampMs: String(context.now()),
      organizationId: subOrganizationId,
      parameters: { deleteWithoutExport: true },
    })
  } catch {
    // Nothing more to do here: the account was not stored, so nothing points at this sub-organization.
  }
}
