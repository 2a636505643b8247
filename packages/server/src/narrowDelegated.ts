import type { AuditTrail } from '@latchkey/service/database'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { generateP256KeyPair } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { DELEGATED_USER_PREFIX, type DelegatedAccess, delegatedPolicies } from './internal/delegated.js'

// Sub-organizations made before the delegated policy was narrowed (security review M3) keep the
// wide one: create_api_keys and create_oauth_providers for any user, with any expiry or none. The
// backend writes its delegated user's policies, so the backend's CLI narrows them
// (`latchkey-server delegated narrow`).
//
// The delegated user is no root user and its policies allow no policy change, so it acts through
// the end user once: it registers a 300-second key for the end user (which the wide policy, and
// the narrow one too, allow: the backend key can still do this, as the README says), writes the
// narrow policies and deletes the others as the end user, then deletes that key (the narrow
// policies allow it delete_api_keys). New policies are written before old ones go, so the
// delegated user is never left with none.

/** How long the key the command acts with as the end user lives, if deleting it fails: five minutes. */
const STEP_KEY_SECONDS = '300'

/** What `narrowDelegatedPolicies` found or did in one sub-organization. */
export type NarrowedOrganization = {
  organizationId: string
  /**
   * `narrow`: its delegated policies were the narrow ones already; `narrowed`: they are now;
   * `would narrow`: a dry run's finding; `skipped`: left alone, `reason` says why.
   */
  outcome: 'narrow' | 'narrowed' | 'would narrow' | 'skipped'
  reason?: string
  /** The policies written (names) and deleted (ids and names), or that a dry run would. */
  created?: string[]
  deleted?: { policyId: string; policyName: string }[]
}

export type NarrowOptions = {
  /** The parent organization's client (the backend's own key): it lists and reads the sub-organizations. */
  kms: TurnkeyClient
  kmsUrl: string
  parentOrganizationId: string
  delegated: DelegatedAccess
  audit: AuditTrail
  now: () => number
  /** Report what would change, and change nothing. */
  dryRun: boolean
}

type Policy = { policyId: string; policyName: string; effect: string; consensus?: string | undefined; condition?: string | undefined }

const sameRule = (a: Omit<Policy, 'policyId'>, b: Omit<Policy, 'policyId'>) =>
  a.policyName === b.policyName && a.effect === b.effect && (a.consensus ?? '') === (b.consensus ?? '') && (a.condition ?? '') === (b.condition ?? '')

/** Every sub-organization of the parent, a page of 100 at a time. */
async function subOrganizationIds(kms: TurnkeyClient, organizationId: string): Promise<string[]> {
  const ids: string[] = []
  for (;;) {
    const after = ids.at(-1)
    const { organizationIds } = await kms.getSubOrgIds({ organizationId, paginationOptions: { limit: '100', ...(after ? { after } : {}) } })
    ids.push(...organizationIds)
    if (organizationIds.length < 100) return ids
  }
}

/**
 * Narrows the delegated user's policies in every sub-organization of the parent to
 * `delegatedPolicies` (session keys for the end user within the backend's longest, OAuth links by
 * ID token only, revocation). Idempotent: a sub-organization whose policies are the narrow ones
 * already is left alone. `dryRun` reports and writes nothing. Each change is an audit event.
 *
 * @example
 * const report = await narrowDelegatedPolicies({ kms, kmsUrl, parentOrganizationId, delegated, audit, now: Date.now, dryRun: true })
 */
export async function narrowDelegatedPolicies(options: NarrowOptions): Promise<NarrowedOrganization[]> {
  const report: NarrowedOrganization[] = []
  for (const organizationId of await subOrganizationIds(options.kms, options.parentOrganizationId)) report.push(await narrowOne(organizationId, options))
  return report
}

async function narrowOne(organizationId: string, options: NarrowOptions): Promise<NarrowedOrganization> {
  const { kms, now } = options
  const [{ users }, { organizationData }, { policies }] = await Promise.all([
    kms.getUsers({ organizationId }),
    kms.getOrganization({ organizationId }),
    kms.getPolicies({ organizationId }),
  ])
  const delegatedUser = users.find((user) => user.userName.startsWith(DELEGATED_USER_PREFIX))
  if (!delegatedUser) return { organizationId, outcome: 'skipped', reason: 'no delegated user' }
  const roots = organizationData.rootQuorum?.userIds ?? []
  if (roots.includes(delegatedUser.userId)) return { organizationId, outcome: 'skipped', reason: 'the delegated user is a root user' }
  const [endUserId, ...others] = roots
  if (!endUserId || others.length) return { organizationId, outcome: 'skipped', reason: `${roots.length} root users, not one end user` }

  const consensus = `approvers.any(user, user.id == '${delegatedUser.userId}')`
  const wanted = delegatedPolicies(endUserId, delegatedUser.userId)
  const held = (policies as Policy[]).filter((policy) => policy.consensus === consensus)
  const created = wanted.filter((policy) => !held.some((existing) => sameRule(existing, policy)))
  const deleted = held.filter((existing) => !wanted.some((policy) => sameRule(existing, policy)))
  if (!created.length && !deleted.length) return { organizationId, outcome: 'narrow' }
  const change = {
    created: created.map((policy) => policy.policyName),
    deleted: deleted.map(({ policyId, policyName }) => ({ policyId, policyName })),
  }
  if (options.dryRun) return { organizationId, outcome: 'would narrow', ...change }

  let at = now()
  const timestampMs = () => String(at++)
  const delegatedClient = await options.delegated.client(organizationId)
  const step = generateP256KeyPair()
  const stepKey = { apiPublicKey: step.publicKey, apiPrivateKey: step.privateKey }
  const registered = await delegatedClient.createApiKeys({
    type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
    timestampMs: timestampMs(),
    organizationId,
    parameters: {
      userId: endUserId,
      apiKeys: [
        {
          apiKeyName: 'latchkey-server delegated narrow',
          publicKey: stepKey.apiPublicKey,
          curveType: 'API_KEY_CURVE_P256',
          expirationSeconds: STEP_KEY_SECONDS,
        },
      ],
    },
  })
  const stepKeyIds = registered.activity.result.createApiKeysResult?.apiKeyIds ?? []
  try {
    const asEndUser = new TurnkeyClient({ baseUrl: options.kmsUrl }, new ApiKeyStamper(stepKey))
    if (created.length)
      await asEndUser.createPolicies({ type: 'ACTIVITY_TYPE_CREATE_POLICIES', timestampMs: timestampMs(), organizationId, parameters: { policies: created } })
    if (deleted.length)
      await asEndUser.deletePolicies({
        type: 'ACTIVITY_TYPE_DELETE_POLICIES',
        timestampMs: timestampMs(),
        organizationId,
        parameters: { policyIds: deleted.map((policy) => policy.policyId) },
      })
  } finally {
    // The narrow policies let the delegated user delete the end user's keys. Should the policies
    // not have been written, that is refused; the key then lapses within 300 s, and the error that
    // stopped the change is the one reported.
    await delegatedClient
      .deleteApiKeys({
        type: 'ACTIVITY_TYPE_DELETE_API_KEYS',
        timestampMs: timestampMs(),
        organizationId,
        parameters: { userId: endUserId, apiKeyIds: stepKeyIds },
      })
      .catch(() => undefined)
  }
  await options.audit.record({
    action: 'delegated narrow',
    outcome: 'completed',
    actorUser: 'operator',
    target: { organization: organizationId, user: delegatedUser.userId },
    reason: `${created.length} policies written, ${deleted.length} deleted`,
  })
  return { organizationId, outcome: 'narrowed', ...change }
}
