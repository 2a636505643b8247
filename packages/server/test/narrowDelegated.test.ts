import type { AuditEventRow } from '@latchkey/service/database'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { sql } from 'kysely'
import { describe, expect, test } from 'vitest'
import { createServerAudit, verifyServerAudit } from '../src/audit.js'
import { createDelegatedAccess, DELEGATED_USER_PREFIX, delegatedKey, delegatedPolicies } from '../src/internal/delegated.js'
import { narrowDelegatedPolicies } from '../src/narrowDelegated.js'
import { generateApiKeyPair, newEmail, useBackend } from './backend.js'

// `latchkey-server delegated narrow` against a real kms: a sub-organization made before the
// delegated policy was narrowed (security review M3) still lets the backend's key link trusted OIDC
// claims (and make keys for any user); the command gives it the narrow policies, once, in a dry run
// changes nothing, and records each change in the audit trail (the store on SQLite, and on
// PostgreSQL in the PostgreSQL run).

const { t, signedInByEmail } = useBackend()

const POLICY_DENIED =
  "Turnkey error 7: You don't have sufficient permissions to take this action. Please add a policy granting this user permissions. Learn more at https://docs.turnkey.com/concepts/policies/quickstart."

const events = async () => (await sql<AuditEventRow>`select * from server_audit_events order by seq`.execute(t.store.database.db)).rows

/**
 * A sub-organization as the backend made them before M3: the delegated user's one wide policy
 * (create_api_keys and create_oauth_providers, any user, any parameters), then the end user alone
 * in the root quorum.
 */
async function accountBeforeM3() {
  const delegated = createDelegatedAccess({ kms: t.backend, kmsUrl: t.kms.url, delegationSecret: t.backendKey.apiPrivateKey, now: () => ++t.clock })
  const { rootUser } = delegated.newUser()
  const endUserKey = generateApiKeyPair()
  const created = await t.backend.createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: String(++t.clock),
    organizationId: t.parentOrganizationId,
    parameters: {
      subOrganizationName: newEmail(),
      rootQuorumThreshold: 1,
      rootUsers: [
        {
          userName: 'end user',
          apiKeys: [{ apiKeyName: 'passkey stand-in', publicKey: endUserKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
          authenticators: [],
          oauthProviders: [],
        },
        rootUser,
      ],
    },
  })
  const { subOrganizationId, rootUserIds } = created.activity.result.createSubOrganizationResultV8!
  const [endUserId, delegatedUserId] = rootUserIds as [string, string]
  const organizationId = subOrganizationId!
  const client = new TurnkeyClient(
    { baseUrl: t.kms.url },
    new ApiKeyStamper(delegatedKey(t.backendKey.apiPrivateKey, rootUser.userName.slice(DELEGATED_USER_PREFIX.length))),
  )
  await client.createPolicies({
    type: 'ACTIVITY_TYPE_CREATE_POLICIES',
    timestampMs: String(++t.clock),
    organizationId,
    parameters: {
      policies: [
        {
          policyName: 'Latchkey backend: session keys and OAuth links',
          effect: 'EFFECT_ALLOW',
          consensus: `approvers.any(user, user.id == '${delegatedUserId}')`,
          condition: "activity.type in ['ACTIVITY_TYPE_CREATE_API_KEYS_V2', 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2']",
          notes: 'The backend registers browser session keys and links OAuth identities; nothing else.',
        },
      ],
    },
  })
  await client.updateRootQuorum({
    type: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
    timestampMs: String(++t.clock),
    organizationId,
    parameters: { threshold: 1, userIds: [endUserId] },
  })
  return { organizationId, endUserId, delegatedUserId, endUserKey, client }
}

/** What the backend's key alone attempts: linking an OAuth identity it names by trusted claims, no ID token, to the end user (then it signs in as them). */
const trustedClaims = (account: Awaited<ReturnType<typeof accountBeforeM3>>) =>
  account.client.createOauthProviders({
    type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
    timestampMs: String(++t.clock),
    organizationId: account.organizationId,
    parameters: {
      userId: account.endUserId,
      oauthProviders: [{ providerName: 'google', oidcClaims: { iss: 'https://accounts.google.com', sub: `attacker ${t.clock}`, aud: 'app' } }],
    },
  })

const rules = (policies: readonly { policyName: string; effect: string; consensus?: string; condition?: string }[]) =>
  policies.map(({ policyName, effect, consensus, condition }) => ({ policyName, effect, consensus, condition }))

const narrow = (dryRun: boolean) =>
  narrowDelegatedPolicies({
    kms: t.backend,
    kmsUrl: t.kms.url,
    parentOrganizationId: t.parentOrganizationId,
    delegated: createDelegatedAccess({ kms: t.backend, kmsUrl: t.kms.url, delegationSecret: t.backendKey.apiPrivateKey, now: () => ++t.clock }),
    audit: createServerAudit(t.store),
    now: () => (t.clock += 10),
    dryRun,
  })

describe('delegated narrow', () => {
  test('error: in a sub-organization made before M3 the backend’s key links an identity by trusted claims; after the command that is refused, and the policies are the narrow ones', async () => {
    const account = await accountBeforeM3()
    expect((await trustedClaims(account)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    const wide = (await t.backend.getPolicies({ organizationId: account.organizationId })).policies

    const report = await narrow(false)
    expect(report.find((entry) => entry.organizationId === account.organizationId)).toEqual({
      organizationId: account.organizationId,
      outcome: 'narrowed',
      created: delegatedPolicies(account.endUserId, account.delegatedUserId).map((policy) => policy.policyName),
      deleted: [{ policyId: wide[0]!.policyId, policyName: 'Latchkey backend: session keys and OAuth links' }],
    })
    await expect(trustedClaims(account)).rejects.toThrow(POLICY_DENIED)
    expect(rules((await t.backend.getPolicies({ organizationId: account.organizationId })).policies)).toEqual(
      rules(delegatedPolicies(account.endUserId, account.delegatedUserId)),
    )
    // The key the command acted with as the end user is gone; the end user's own is left.
    const { apiKeys } = await t.backend.getApiKeys({ organizationId: account.organizationId, userId: account.endUserId })
    expect(apiKeys.map((key) => key.credential.publicKey)).toEqual([account.endUserKey.apiPublicKey])
    const { organizationData } = await t.backend.getOrganization({ organizationId: account.organizationId })
    expect(organizationData.rootQuorum).toEqual({ threshold: 1, userIds: [account.endUserId] })
  })

  test('behavior: a dry run reports and writes nothing; the run is recorded once; a second run finds every sub-organization narrow', async () => {
    const account = await accountBeforeM3()
    const current = await signedInByEmail(newEmail())
    const activities = async () => (await t.backend.getActivities({ organizationId: account.organizationId })).activities.length
    const [policiesBefore, activitiesBefore] = [(await t.backend.getPolicies({ organizationId: account.organizationId })).policies, await activities()]

    const dry = await narrow(true)
    expect(dry.find((entry) => entry.organizationId === account.organizationId)).toMatchObject({ outcome: 'would narrow' })
    expect(dry.find((entry) => entry.organizationId === current.organizationId)).toEqual({ organizationId: current.organizationId, outcome: 'narrow' })
    expect([(await t.backend.getPolicies({ organizationId: account.organizationId })).policies, await activities()]).toEqual([policiesBefore, activitiesBefore])
    expect((await events()).filter((event) => event.action === 'delegated narrow')).toEqual([])

    await narrow(false)
    const narrowed = (await events()).filter((event) => event.action === 'delegated narrow')
    expect(narrowed.map((event) => [event.outcome, event.actor_user, JSON.parse(event.target!).organization, event.reason])).toContainEqual([
      'completed',
      'operator',
      account.organizationId,
      '5 policies written, 1 deleted',
    ])
    const activitiesAfter = await activities()
    const again = await narrow(false)
    expect(again.filter((entry) => entry.outcome !== 'narrow' && entry.outcome !== 'skipped')).toEqual([])
    expect(await activities()).toBe(activitiesAfter)
    expect((await events()).filter((event) => event.action === 'delegated narrow')).toHaveLength(narrowed.length)
    expect(await verifyServerAudit(t.store)).toMatchObject({ intact: true })
  })
})
