import { parseGwei, serializeTransaction } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair } from '../src/index.js'
import { POLICY_DENIED_MESSAGE } from '../src/policies/engine.js'
import { post, startKms } from './harness.js'

// A DENY policy that cannot be decided denies (security review L11): `eth.tx.chain_id == 1` on a
// transaction without a chain id. `&&` and `||` are settled by whichever side settles them, so a
// DENY guarded by `activity.type == …` still leaves other activities alone.

let harness: Awaited<ReturnType<typeof startKms>>
beforeAll(async () => {
  harness = await startKms()
})
afterAll(() => harness.kms.stop())

const RECIPIENT = '0x08d2b0a37f869ff76bacb5bab3278e26ab7067b7'

describe('a DENY policy whose condition errors', () => {
  test('error: denies: a transaction without a chain id is refused by a DENY on chain 1; nothing is written', async () => {
    const sub = await harness.subOrganization()
    const signerKeys = generateApiKeyPair()
    const created = await sub.client.createUsers({
      type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        users: [
          {
            userName: 'signer',
            apiKeys: [{ apiKeyName: 'signer', publicKey: signerKeys.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '3600' }],
            authenticators: [],
            oauthProviders: [],
            userTags: [],
          },
        ],
      },
    })
    const signerId = created.activity.result.createUsersResult!.userIds[0]!
    const policies = await sub.client.createPolicies({
      type: 'ACTIVITY_TYPE_CREATE_POLICIES',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        policies: [
          { policyName: 'the signer signs', effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${signerId}')`, condition: 'true', notes: '' },
          {
            policyName: 'never on mainnet',
            effect: 'EFFECT_DENY',
            condition: "activity.type == 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2' && eth.tx.chain_id == 1",
            notes: '',
          },
        ],
      },
    })
    const [allow, deny] = policies.activity.result.createPoliciesResult!.policyIds as [string, string]
    const sign = (chainId: number | undefined) =>
      post(harness.kms, signerKeys, '/public/v1/submit/sign_transaction', {
        type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: {
          signWith: sub.address,
          type: 'TRANSACTION_TYPE_ETHEREUM',
          unsignedTransaction: serializeTransaction({
            type: 'legacy',
            ...(chainId === undefined ? {} : { chainId }),
            nonce: 0,
            to: RECIPIENT,
            value: 1n,
            gas: 21_000n,
            gasPrice: parseGwei('1'),
          }).slice(2),
        },
      })
    const activities = async () =>
      (await harness.backend.getActivities({ organizationId: sub.organizationId, paginationOptions: { limit: '100' } })).activities.length
    const before = await activities()
    // A pre-EIP-155 transaction replays on every chain, mainnet included: eth.tx.chain_id does not exist, and the DENY holds.
    expect(await sign(undefined)).toEqual({
      status: 403,
      body: {
        code: 7,
        message: POLICY_DENIED_MESSAGE,
        details: [
          {
            '@type': 'type.googleapis.com/errors.v1.PolicyEnginePermissionError',
            message: `The following policies denied this action: ${deny}`,
            policyEvaluations: [
              { policyId: allow, outcome: 'OUTCOME_ALLOW' },
              { policyId: deny, outcome: 'OUTCOME_ERROR' },
            ],
          },
        ],
      },
    })
    expect(await activities()).toBe(before)
    expect((await sign(10)).status).toBe(200)
    expect((await sign(1)).status).toBe(403)
    // Another activity: the guard settles the DENY as not applying, though eth.tx does not exist.
    const wallet = await post(harness.kms, signerKeys, '/public/v1/submit/sign_raw_payload', {
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { signWith: sub.address, payload: '0x1901', encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
    })
    expect(wallet.status).toBe(200)
  })
})
