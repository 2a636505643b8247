import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair } from '../src/index.js'
import { POLICY_DENIED_MESSAGE } from '../src/policies/engine.js'
import { type ApiKeyPair, post, startKms } from './harness.js'

// A read-write session is a credential of the user it is for. Without a policy a user may start
// one only for themselves; another user's needs a policy, and another root user's the root quorum
// (security review H3: a plain user became root, one root defeated a 2-of-2 quorum).

let harness: Awaited<ReturnType<typeof startKms>>
beforeAll(async () => {
  harness = await startKms()
})
afterAll(() => harness.kms.stop())

const implicitDeny = (policyEvaluations: { policyId: string; outcome: string }[] = []) => ({
  code: 7,
  message: POLICY_DENIED_MESSAGE,
  details: [{ '@type': 'type.googleapis.com/errors.v1.PolicyEnginePermissionError', message: 'No policies evaluated to outcome: Allow', policyEvaluations }],
})

const sessionRequest = (organizationId: string, userId?: string) => ({
  type: 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2' as const,
  timestampMs: harness.timestampMs(),
  organizationId,
  parameters: { targetPublicKey: generateApiKeyPair().apiPublicKey, ...(userId ? { userId } : {}), expirationSeconds: '900' },
})

type Organization = { organizationId: string; reader: ReturnType<typeof harness.client> }

async function keyCount({ organizationId, reader }: Organization, userId: string) {
  return (await reader.getApiKeys({ organizationId, userId })).apiKeys.length
}

async function activityCount({ organizationId, reader }: Organization) {
  return (await reader.getActivities({ organizationId, paginationOptions: { limit: '100' } })).activities.length
}

/**
 * An organization of its own (root quorum of one) with a second, non-root user holding an API key
 * that never expires. A top-level one: in a sub-organization every key expires, and an expiring
 * key meets the fresh-verification rule (policies/freshVerification.ts) before the default
 * permissions this file is about.
 */
async function withPlainUser() {
  const rootKeys = generateApiKeyPair()
  const root = await harness.kms.createParentOrganization({
    name: `support ${rootKeys.apiPublicKey.slice(2, 12)}`,
    userName: 'root',
    publicKey: rootKeys.apiPublicKey,
  })
  const client = harness.client(rootKeys)
  const plainKeys = generateApiKeyPair()
  const { activity } = await client.createUsers({
    type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
    timestampMs: harness.timestampMs(),
    organizationId: root.organizationId,
    parameters: {
      users: [
        {
          userName: 'support',
          apiKeys: [{ apiKeyName: 'support', publicKey: plainKeys.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
          authenticators: [],
          oauthProviders: [],
          userTags: [],
        },
      ],
    },
  })
  return {
    organizationId: root.organizationId,
    userId: root.userId,
    client,
    reader: client,
    plainKeys,
    plainUserId: activity.result.createUsersResult!.userIds[0]!,
  }
}

/** A sub-organization of two root users whose quorum needs both. */
async function twoOfTwo() {
  const [aliceKeys, bobKeys] = [generateApiKeyPair(), generateApiKeyPair()]
  const root = (userName: string, keys: ApiKeyPair) => ({
    userName,
    apiKeys: [{ apiKeyName: userName, publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256' as const }],
    authenticators: [],
    oauthProviders: [],
  })
  const { activity } = await harness.backend.createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: harness.timestampMs(),
    organizationId: harness.parent.organizationId,
    parameters: { subOrganizationName: `pair ${aliceKeys.apiPublicKey}`, rootQuorumThreshold: 2, rootUsers: [root('alice', aliceKeys), root('bob', bobKeys)] },
  })
  const result = activity.result.createSubOrganizationResultV8!
  const [aliceId, bobId] = result.rootUserIds as [string, string]
  return {
    organizationId: result.subOrganizationId!,
    reader: harness.backend,
    aliceId,
    bobId,
    aliceKeys,
    bobKeys,
    alice: harness.client(aliceKeys),
    bob: harness.client(bobKeys),
  }
}

describe('read-write sessions for another user', () => {
  test('error: a user with no policy cannot start a session for the root user, and so cannot become root; nothing is written', async () => {
    const sub = await withPlainUser()
    const [keysBefore, activitiesBefore] = [await keyCount(sub, sub.userId), await activityCount(sub)]
    expect(await post(harness.kms, sub.plainKeys, '/public/v1/submit/create_read_write_session', sessionRequest(sub.organizationId, sub.userId))).toEqual({
      status: 403,
      body: implicitDeny(),
    })
    expect([await keyCount(sub, sub.userId), await activityCount(sub)]).toEqual([keysBefore, activitiesBefore])
  })

  test('behavior: a user starts their own session without a policy, by naming themselves or no one', async () => {
    const sub = await withPlainUser()
    const plain = harness.client(sub.plainKeys)
    for (const request of [sessionRequest(sub.organizationId), sessionRequest(sub.organizationId, sub.plainUserId)]) {
      const { activity } = await plain.createReadWriteSession(request)
      expect([activity.status, activity.result.createReadWriteSessionResultV2!.userId]).toEqual(['ACTIVITY_STATUS_COMPLETED', sub.plainUserId])
    }
  })

  test('behavior: a policy grants another plain user’s session, but never a root user’s (that is the root quorum’s)', async () => {
    const sub = await withPlainUser()
    const other = await sub.client.createUsers({
      type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { users: [{ userName: 'other', apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }] },
    })
    const otherId = other.activity.result.createUsersResult!.userIds[0]!
    await sub.client.createPolicy({
      type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        policyName: 'support starts sessions',
        effect: 'EFFECT_ALLOW',
        consensus: `approvers.any(user, user.id == '${sub.plainUserId}')`,
        condition: "activity.type == 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2'",
        notes: '',
      },
    })
    const plain = harness.client(sub.plainKeys)
    const { activity } = await plain.createReadWriteSession(sessionRequest(sub.organizationId, otherId))
    expect([activity.status, activity.result.createReadWriteSessionResultV2!.userId]).toEqual(['ACTIVITY_STATUS_COMPLETED', otherId])
    const keysBefore = await keyCount(sub, sub.userId)
    expect(await post(harness.kms, sub.plainKeys, '/public/v1/submit/create_read_write_session', sessionRequest(sub.organizationId, sub.userId))).toEqual({
      status: 403,
      body: implicitDeny(),
    })
    expect(await keyCount(sub, sub.userId)).toBe(keysBefore)
  })

  test('error: in a 2-of-2 root quorum, one root user alone cannot start the other’s session, so cannot approve as them', async () => {
    const pair = await twoOfTwo()
    const keysBefore = await keyCount(pair, pair.bobId)
    const { activity } = await pair.alice.createReadWriteSession(sessionRequest(pair.organizationId, pair.bobId))
    expect([activity.status, activity.result]).toEqual(['ACTIVITY_STATUS_CONSENSUS_NEEDED', {}])
    // No key of bob's exists for alice to stamp with: her only vote is her own, already counted.
    expect(await keyCount(pair, pair.bobId)).toBe(keysBefore)
    await expect(
      pair.alice.approveActivity({
        type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY',
        timestampMs: harness.timestampMs(),
        organizationId: pair.organizationId,
        parameters: { fingerprint: activity.fingerprint },
      }),
    ).rejects.toThrow('Turnkey error 6: you have already voted on this activity')
    // The quorum decides: bob's approval runs it.
    const approved = await pair.bob.approveActivity({
      type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY',
      timestampMs: harness.timestampMs(),
      organizationId: pair.organizationId,
      parameters: { fingerprint: activity.fingerprint },
    })
    expect([approved.activity.status, approved.activity.result.createReadWriteSessionResultV2!.userId]).toEqual(['ACTIVITY_STATUS_COMPLETED', pair.bobId])
    expect(await keyCount(pair, pair.bobId)).toBe(keysBefore + 1)
  })
})
