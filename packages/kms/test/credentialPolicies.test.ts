import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair } from '../src/index.js'
import { POLICY_DENIED_MESSAGE } from '../src/policies/engine.js'
import { type ApiKeyPair, post, startKms } from './harness.js'

// Policies over what a credential activity gives (security review M3): create_api_keys exposes
// `activity.params.user_id` and each key's `expires` and `expiration_seconds` (only when it has
// one) in `activity.params.api_keys`; create_oauth_providers its `user_id` and whether each
// provider came with trusted `oidcClaims` (`activity.params.oauth_providers[i].has_oidc_claims`).

let harness: Awaited<ReturnType<typeof startKms>>
beforeAll(async () => {
  harness = await startKms()
})
afterAll(() => harness.kms.stop())

const denied = (policyEvaluations: { policyId: string; outcome: string }[]) => ({
  status: 403,
  body: {
    code: 7,
    message: POLICY_DENIED_MESSAGE,
    details: [{ '@type': 'type.googleapis.com/errors.v1.PolicyEnginePermissionError', message: 'No policies evaluated to outcome: Allow', policyEvaluations }],
  },
})

/** A sub-organization of an end user (root) and a delegated user (not root) limited by `condition`. */
async function delegatedWith(condition: (ids: { endUserId: string }) => string) {
  const [endUserKeys, delegatedKeys] = [generateApiKeyPair(), generateApiKeyPair()]
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
    parameters: {
      subOrganizationName: `delegated ${delegatedKeys.apiPublicKey}`,
      rootQuorumThreshold: 1,
      rootUsers: [root('end user', endUserKeys), root('delegated', delegatedKeys)],
    },
  })
  const result = activity.result.createSubOrganizationResultV8!
  const organizationId = result.subOrganizationId!
  const [endUserId, delegatedUserId] = result.rootUserIds as [string, string]
  const delegated = harness.client(delegatedKeys)
  const created = await delegated.createPolicies({
    type: 'ACTIVITY_TYPE_CREATE_POLICIES',
    timestampMs: harness.timestampMs(),
    organizationId,
    parameters: {
      policies: [
        {
          policyName: 'backend',
          effect: 'EFFECT_ALLOW',
          consensus: `approvers.any(user, user.id == '${delegatedUserId}')`,
          condition: condition({ endUserId }),
          notes: '',
        },
      ],
    },
  })
  await delegated.updateRootQuorum({
    type: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
    timestampMs: harness.timestampMs(),
    organizationId,
    parameters: { threshold: 1, userIds: [endUserId] },
  })
  return { organizationId, endUserId, delegatedUserId, delegatedKeys, policyId: created.activity.result.createPoliciesResult!.policyIds[0]! }
}

describe('activity.params of credential activities', () => {
  test('behavior: create_api_keys: a policy allows the end user’s keys that expire within an hour, and nothing else; refusals write nothing', async () => {
    const sub = await delegatedWith(
      ({ endUserId }) =>
        `activity.type == 'ACTIVITY_TYPE_CREATE_API_KEYS_V2' && activity.params.user_id == '${endUserId}' && activity.params.api_keys.all(key, key.expires && key.expiration_seconds <= 3600)`,
    )
    const createKeys = (userId: string, ...lifetimes: (string | undefined)[]) =>
      post(harness.kms, sub.delegatedKeys, '/public/v1/submit/create_api_keys', {
        type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: {
          userId,
          apiKeys: lifetimes.map((expirationSeconds, index) => ({
            apiKeyName: `key ${index}`,
            publicKey: generateApiKeyPair().apiPublicKey,
            curveType: 'API_KEY_CURVE_P256',
            ...(expirationSeconds ? { expirationSeconds } : {}),
          })),
        },
      })
    const keyCount = async () => (await harness.backend.getApiKeys({ organizationId: sub.organizationId, userId: sub.endUserId })).apiKeys.length
    expect((await createKeys(sub.endUserId, '900', '3600')).status).toBe(200)
    const before = await keyCount()
    // Every key is checked: one over the limit, or one without an expiry (its expiration_seconds does not exist), refuses the lot.
    expect(await createKeys(sub.endUserId, '900', '3601')).toEqual(denied([{ policyId: sub.policyId, outcome: 'OUTCOME_DENY_IMPLICIT' }]))
    expect(await createKeys(sub.endUserId, '900', undefined)).toEqual(denied([{ policyId: sub.policyId, outcome: 'OUTCOME_ERROR' }]))
    expect(await createKeys('another-user', '900')).toEqual(denied([{ policyId: sub.policyId, outcome: 'OUTCOME_DENY_IMPLICIT' }]))
    expect(await keyCount()).toBe(before)
  })

  test('error: create_oauth_providers: a policy refuses providers given as trusted oidcClaims', async () => {
    const sub = await delegatedWith(
      ({ endUserId }) =>
        `activity.type == 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2' && activity.params.user_id == '${endUserId}' && activity.params.oauth_providers.all(provider, provider.has_oidc_claims == false)`,
    )
    const claimed = await post(harness.kms, sub.delegatedKeys, '/public/v1/submit/create_oauth_providers', {
      type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        userId: sub.endUserId,
        oauthProviders: [{ providerName: 'google', oidcClaims: { iss: 'https://accounts.google.com', sub: 'victim', aud: 'app' } }],
      },
    })
    expect(claimed).toEqual(denied([{ policyId: sub.policyId, outcome: 'OUTCOME_DENY_IMPLICIT' }]))
    expect((await harness.backend.getOauthProviders({ organizationId: sub.organizationId, userId: sub.endUserId })).oauthProviders).toEqual([])
  })
})
