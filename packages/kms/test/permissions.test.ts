import { Turnkey } from '@turnkey/sdk-server'
import { createAccount } from '@turnkey/viem'
import {
  keccak256,
  parseEther,
  recoverTransactionAddress,
  serializeSignature,
  serializeTransaction,
  serializeTypedData,
  type TransactionSerializableEIP1559,
  type TransactionSerializedEIP1559,
  type TypedDataDefinition,
  verifyTypedData,
} from 'viem'
import { hashAuthorization, recoverAddress, recoverAuthorizationAddress } from 'viem/utils'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair } from '../src/index.js'
import { POLICY_DENIED_MESSAGE } from '../src/policies/engine.js'
import { PERMIT_TYPES } from './fixtures/permit.js'
import { ethereumAccount, post, startKms } from './harness.js'

// Turnkey's permission model against a kms on loopback, driven by the official clients: what a
// parent organization may do in its sub-organizations, delegated access through a policy-limited
// user (set up as Turnkey's server-side guide does), and policies over activity types, resources
// and Ethereum transactions, typed data and EIP-7702 authorizations. Every denial is Turnkey's (403, code 7, PolicyEnginePermissionError)
// and writes nothing.

let harness: Awaited<ReturnType<typeof startKms>>
beforeAll(async () => {
  // Both contracts the EIP-7702 tests name are allowed delegates, so what refuses one here is the
  // policy, not the kms's own rule (readableSigning.test.ts).
  harness = await startKms({ eip7702Delegates: ['0xF5111459944dF032F3A0FFB2d273F6903FAF63F1', '0x000000000000000000000000000000000000dEaD'] })
})
afterAll(() => harness.kms.stop())

const RECIPIENT = '0x08d2b0a37f869ff76bacb5bab3278e26ab7067b7'
const OTHER = '0x000000000000000000000000000000000000dead'
const denial = (message: string, policyEvaluations: { policyId: string; outcome: string }[]) => ({
  code: 7,
  message: POLICY_DENIED_MESSAGE,
  details: [{ '@type': 'type.googleapis.com/errors.v1.PolicyEnginePermissionError', message, policyEvaluations }],
})
const implicitDeny = (policyEvaluations: { policyId: string; outcome: string }[] = []) => denial('No policies evaluated to outcome: Allow', policyEvaluations)

/** How many activities an organization has stored: a denial must not add one. */
async function activityCount(organizationId: string) {
  return (await harness.backend.getActivities({ organizationId, paginationOptions: { limit: '100' } })).activities.length
}

/**
 * A sub-organization set up for delegated access as Turnkey's server-side guide does: the end
 * user and a delegated user are both root users; the delegated user writes its policies, then
 * removes itself from the root quorum.
 */
type PolicyInput = { policyName: string; effect?: 'EFFECT_ALLOW' | 'EFFECT_DENY'; consensus?: string; condition?: string }
async function delegatedSubOrganization(
  policies: (ids: { delegatedUserId: string; walletId: string; address: string; delegatedPublicKey: string }) => PolicyInput[],
) {
  const { backend, parent, client, timestampMs } = harness
  const endUserKeys = generateApiKeyPair()
  const delegatedKeys = generateApiKeyPair()
  const { activity } = await backend.createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: timestampMs(),
    organizationId: parent.organizationId,
    parameters: {
      subOrganizationName: `delegated ${delegatedKeys.apiPublicKey.slice(2, 12)}`,
      rootQuorumThreshold: 1,
      rootUsers: [
        {
          userName: 'end user',
          apiKeys: [{ apiKeyName: 'end user', publicKey: endUserKeys.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
          authenticators: [],
          oauthProviders: [],
        },
        {
          userName: 'delegated',
          apiKeys: [{ apiKeyName: 'delegated', publicKey: delegatedKeys.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
          authenticators: [],
          oauthProviders: [],
        },
      ],
      wallet: { walletName: 'Main', accounts: [ethereumAccount] },
    },
  })
  const result = activity.result.createSubOrganizationResultV8!
  const [endUserId, delegatedUserId] = result.rootUserIds as [string, string]
  const organizationId = result.subOrganizationId!
  const walletId = result.wallet!.walletId
  const delegated = client(delegatedKeys)
  const created = await delegated.createPolicies({
    type: 'ACTIVITY_TYPE_CREATE_POLICIES',
    timestampMs: timestampMs(),
    organizationId,
    parameters: {
      policies: policies({ delegatedUserId, walletId, address: result.wallet!.addresses[0]!, delegatedPublicKey: delegatedKeys.apiPublicKey }).map(
        (policy) => ({ notes: '', ...policy, effect: policy.effect ?? 'EFFECT_ALLOW' }),
      ),
    },
  })
  await delegated.updateRootQuorum({
    type: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
    timestampMs: timestampMs(),
    organizationId,
    parameters: { threshold: 1, userIds: [endUserId] },
  })
  return {
    organizationId,
    endUserId,
    delegatedUserId,
    walletId,
    address: result.wallet!.addresses[0] as `0x${string}`,
    policyIds: created.activity.result.createPoliciesResult!.policyIds,
    endUser: client(endUserKeys),
    endUserKeys,
    delegated,
    delegatedKeys,
  }
}

describe('a parent organization in its sub-organizations', () => {
  test('reads them and starts sign-ins there, and nothing else; a refusal writes nothing', async () => {
    const { backend, timestampMs, parentKey, kms } = harness
    const sub = await harness.subOrganization({ email: 'parent-reads@example.test' })
    // Queries: the parent has read access.
    expect((await backend.getWallets({ organizationId: sub.organizationId })).wallets).toHaveLength(1)
    // The activities Turnkey lets a parent start for a sub-organization.
    const { activity } = await backend.initOtpAuth({
      type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { otpType: 'OTP_TYPE_EMAIL', contact: 'parent-reads@example.test', appName: 'Latchkey' },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    const before = await activityCount(sub.organizationId)
    // Anything else is denied as Turnkey denies it.
    for (const [path, type, parameters] of [
      ['/public/v1/submit/create_wallet', 'ACTIVITY_TYPE_CREATE_WALLET', { walletName: 'parent made', accounts: [ethereumAccount] }],
      [
        '/public/v1/submit/create_api_keys',
        'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
        { userId: sub.userId, apiKeys: [{ apiKeyName: 'parent made', publicKey: generateApiKeyPair().apiPublicKey, curveType: 'API_KEY_CURVE_P256' }] },
      ],
      [
        '/public/v1/submit/sign_raw_payload',
        'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
        { signWith: sub.address, payload: '0x1900', encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
      ],
      ['/public/v1/submit/update_root_quorum', 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM', { threshold: 1, userIds: [sub.userId] }],
    ] as const) {
      const refused = await post(kms, parentKey, path, { type, timestampMs: timestampMs(), organizationId: sub.organizationId, parameters })
      expect(refused, type).toEqual({ status: 403, body: implicitDeny() })
    }
    expect(await activityCount(sub.organizationId)).toBe(before)
    expect((await backend.getWallets({ organizationId: sub.organizationId })).wallets).toHaveLength(1)
    expect((await backend.getApiKeys({ organizationId: sub.organizationId, userId: sub.userId })).apiKeys).toHaveLength(1)
  })

  test('a policy in the sub-organization grants the parent nothing: its users are not the sub-organization’s', async () => {
    const sub = await harness.subOrganization()
    await sub.client.createPolicy({
      type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { policyName: 'everything for everyone', effect: 'EFFECT_ALLOW', condition: 'true', notes: '' },
    })
    const refused = await post(harness.kms, harness.parentKey, '/public/v1/submit/create_wallet', {
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { walletName: 'parent made', accounts: [ethereumAccount] },
    })
    expect(refused).toEqual({ status: 403, body: implicitDeny() })
  })
})

describe('delegated access', () => {
  test('the delegated user does what its policy allows, and nothing else; it cannot take the root quorum back', async () => {
    const sub = await delegatedSubOrganization(({ delegatedUserId }) => [
      {
        policyName: 'session keys',
        consensus: `approvers.any(user, user.id == '${delegatedUserId}')`,
        condition: "activity.type == 'ACTIVITY_TYPE_CREATE_API_KEYS_V2'",
      },
    ])
    expect((await sub.endUser.getOrganization({ organizationId: sub.organizationId })).organizationData.rootQuorum).toEqual({
      threshold: 1,
      userIds: [sub.endUserId],
    })
    const sessionKey = generateApiKeyPair()
    const { activity } = await sub.delegated.createApiKeys({
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        userId: sub.endUserId,
        apiKeys: [{ apiKeyName: 'session', publicKey: sessionKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '900' }],
      },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    // Why it ran, as Turnkey tells it: the policy engine's one decision, on a submission that cast no vote.
    const { policyEvaluations } = await sub.endUser.getPolicyEvaluations({ organizationId: sub.organizationId, activityId: activity.id })
    expect(policyEvaluations).toEqual([
      {
        id: expect.any(String),
        activityId: activity.id,
        organizationId: sub.organizationId,
        voteId: '',
        policyEvaluations: [{ policyId: sub.policyIds[0], outcome: 'OUTCOME_ALLOW' }],
        createdAt: activity.createdAt,
      },
    ])
    // A root user's activity bypasses the policies: the engine made no decision on it.
    const rootWallet = await sub.endUser.createWallet({
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { walletName: 'root', accounts: [ethereumAccount] },
    })
    expect((await sub.endUser.getPolicyEvaluations({ organizationId: sub.organizationId, activityId: rootWallet.activity.id })).policyEvaluations).toEqual([])
    // The key it registered is the end user's: it stamps as them.
    expect((await harness.client(sessionKey).getWhoami({ organizationId: sub.organizationId })).userId).toBe(sub.endUserId)

    const before = await activityCount(sub.organizationId)
    const evaluations = [{ policyId: sub.policyIds[0]!, outcome: 'OUTCOME_DENY_IMPLICIT' }]
    const createWallet = {
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { walletName: 'not allowed', accounts: [ethereumAccount] },
    }
    expect(await post(harness.kms, sub.delegatedKeys, '/public/v1/submit/create_wallet', createWallet)).toEqual({
      status: 403,
      body: implicitDeny(evaluations),
    })
    // Root quorum activities: no policy grants them.
    expect(
      await post(harness.kms, sub.delegatedKeys, '/public/v1/submit/update_root_quorum', {
        type: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { threshold: 1, userIds: [sub.endUserId, sub.delegatedUserId] },
      }),
    ).toEqual({ status: 403, body: implicitDeny() })
    expect(await activityCount(sub.organizationId)).toBe(before)
    expect((await sub.endUser.getWallets({ organizationId: sub.organizationId })).wallets).toHaveLength(2)

    // The same bytes, once a policy allows them, run: the denial kept no fingerprint.
    await sub.endUser.createPolicy({
      type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        policyName: 'wallets',
        effect: 'EFFECT_ALLOW',
        consensus: `approvers.any(user, user.id == '${sub.delegatedUserId}')`,
        condition: "activity.resource == 'WALLET' && activity.action == 'CREATE'",
        notes: '',
      },
    })
    const allowed = await post(harness.kms, sub.delegatedKeys, '/public/v1/submit/create_wallet', createWallet)
    expect(allowed.status).toBe(200)
    expect((await sub.endUser.getWallets({ organizationId: sub.organizationId })).wallets).toHaveLength(3)
  })

  test('activity.kind matches every version of one activity; a time window is refused when written', async () => {
    const sub = await delegatedSubOrganization(({ delegatedUserId }) => [
      { policyName: 'wallets only', consensus: `approvers.any(user, user.id == '${delegatedUserId}')`, condition: "activity.kind == 'CREATE_WALLET'" },
    ])
    const wallet = await sub.delegated.createWallet({
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { walletName: 'by kind', accounts: [ethereumAccount] },
    })
    expect(wallet.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    // Another kind on the same resource and action (CREATE_WALLET_ACCOUNTS) is not allowed.
    const before = await activityCount(sub.organizationId)
    expect(
      await post(harness.kms, sub.delegatedKeys, '/public/v1/submit/create_wallet_accounts', {
        type: 'ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { walletId: wallet.activity.result.createWalletResult!.walletId, accounts: [{ ...ethereumAccount, path: "m/44'/60'/0'/0/1" }] },
      }),
    ).toEqual({ status: 403, body: implicitDeny([{ policyId: sub.policyIds[0]!, outcome: 'OUTCOME_DENY_IMPLICIT' }]) })
    expect(await activityCount(sub.organizationId)).toBe(before)

    const policies = await sub.endUser.getPolicies({ organizationId: sub.organizationId })
    await expect(
      sub.endUser.createPolicy({
        type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: {
          policyName: 'March only',
          effect: 'EFFECT_ALLOW',
          condition: "activity.kind == 'SIGN_TRANSACTION'",
          notes: '',
          time: "time.now >= Timestamp('2026-03-01T00:00:00Z') && time.now < Timestamp('2026-04-01T00:00:00Z')",
        },
      }),
    ).rejects.toThrow('Turnkey error 3: invalid policy time: time-based policies (the `time` field) are not supported by this service')
    expect(await sub.endUser.getPolicies({ organizationId: sub.organizationId })).toEqual(policies)
  })

  test('a user manages their own credentials without a policy, unless one denies it (deny wins)', async () => {
    const sub = await delegatedSubOrganization(({ delegatedUserId }) => [
      { policyName: 'anything', consensus: `approvers.any(user, user.id == '${delegatedUserId}')`, condition: 'true' },
    ])
    const ownKey = () => ({
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        userId: sub.delegatedUserId,
        apiKeys: [{ apiKeyName: 'own', publicKey: generateApiKeyPair().apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '3600' }],
      },
    })
    expect((await post(harness.kms, sub.delegatedKeys, '/public/v1/submit/create_api_keys', ownKey())).status).toBe(200)
    // Even a policy that allows everything does not reach what only the root quorum decides.
    expect(
      await post(harness.kms, sub.delegatedKeys, '/public/v1/submit/update_root_quorum', {
        type: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { threshold: 1, userIds: [sub.delegatedUserId] },
      }),
    ).toEqual({ status: 403, body: implicitDeny() })
    const deny = await sub.endUser.createPolicy({
      type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { policyName: 'no new credentials', effect: 'EFFECT_DENY', condition: "activity.resource == 'CREDENTIAL'", notes: '' },
    })
    const denyId = deny.activity.result.createPolicyResult!.policyId
    const keysBefore = (await sub.endUser.getApiKeys({ organizationId: sub.organizationId, userId: sub.delegatedUserId })).apiKeys.length
    expect(await post(harness.kms, sub.delegatedKeys, '/public/v1/submit/create_api_keys', ownKey())).toEqual({
      status: 403,
      body: denial(`The following policies denied this action: ${denyId}`, [
        { policyId: sub.policyIds[0]!, outcome: 'OUTCOME_ALLOW' },
        { policyId: denyId, outcome: 'OUTCOME_DENY_EXPLICIT' },
      ]),
    })
    expect((await sub.endUser.getApiKeys({ organizationId: sub.organizationId, userId: sub.delegatedUserId })).apiKeys).toHaveLength(keysBefore)
    // The root user, a quorum of one, is not held to policies.
    expect(
      (
        await post(harness.kms, sub.endUserKeys, '/public/v1/submit/create_api_keys', {
          ...ownKey(),
          parameters: { ...ownKey().parameters, userId: sub.endUserId },
        })
      ).status,
    ).toBe(200)
  })

  test("behavior: a signature's policies see its wallet account, that account's wallet, its user and the API key that stamped it", async () => {
    const allowed = ({ delegatedUserId, walletId, address, delegatedPublicKey }: { [id: string]: string }, label: string) => ({
      policyName: 'the main wallet, by the delegated key',
      consensus: `approvers.any(user, user.id == '${delegatedUserId}' && user.alias == 'delegated' && user.email == '' && user.tags.count() == 0) && credentials.any(credential, credential.public_key == '${delegatedPublicKey}' && credential.type == 'CREDENTIAL_TYPE_API_KEY_P256' && credential.user_id == '${delegatedUserId}')`,
      condition: `wallet_account.address == '${address}' && wallet.id == '${walletId}' && wallet.label == '${label}' && wallet.exported == false && wallet.imported == false`,
    })
    const sign = (sub: Awaited<ReturnType<typeof delegatedSubOrganization>>) =>
      post(harness.kms, sub.delegatedKeys, '/public/v1/submit/sign_raw_payload', {
        type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: {
          signWith: sub.address.toLowerCase(),
          payload: '0x1901',
          encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
          hashFunction: 'HASH_FUNCTION_KECCAK256',
        },
      })
    const main = await delegatedSubOrganization((ids) => [allowed(ids, 'Main')])
    const signed = await sign(main)
    expect([signed.status, (signed.body['activity'] as { status: string }).status]).toEqual([200, 'ACTIVITY_STATUS_COMPLETED'])
    // The same policy for a wallet of another name does not apply.
    const other = await delegatedSubOrganization((ids) => [allowed(ids, 'Other')])
    expect(await sign(other)).toEqual({ status: 403, body: implicitDeny([{ policyId: other.policyIds[0]!, outcome: 'OUTCOME_DENY_IMPLICIT' }]) })
  })

  test("behavior: a signer's tags, given after the key, reach the policies; the key read for the policies is the one that signs", async () => {
    const { timestampMs } = harness
    // Only a policy on a tag the delegated user does not have yet.
    const sub = await delegatedSubOrganization(({ walletId }) => [{ policyName: 'no one yet', consensus: 'false', condition: `wallet.id == '${walletId}'` }])
    const tag = await sub.endUser.createUserTag({
      type: 'ACTIVITY_TYPE_CREATE_USER_TAG',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userTagName: 'signers', userIds: [sub.delegatedUserId] },
    })
    const tagId = tag.activity.result.createUserTagResult!.userTagId
    const policy = await sub.endUser.createPolicy({
      type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        policyName: 'tagged signers',
        effect: 'EFFECT_ALLOW',
        consensus: `approvers.any(user, user.tags.contains('${tagId}'))`,
        condition: `wallet_account.address == '${sub.address}'`,
        notes: '',
      },
    })
    const policyId = policy.activity.result.createPolicyResult!.policyId
    const hash = keccak256('0x190102')
    const sign = () =>
      post(harness.kms, sub.delegatedKeys, '/public/v1/submit/sign_raw_payload', {
        type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
        timestampMs: timestampMs(),
        organizationId: sub.organizationId,
        parameters: {
          signWith: sub.address.toLowerCase(),
          payload: '0x190102',
          encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
          hashFunction: 'HASH_FUNCTION_KECCAK256',
        },
      })
    const signed = await sign()
    expect(signed.body).toMatchObject({ activity: { status: 'ACTIVITY_STATUS_COMPLETED' } })
    const { r, s, v } = (signed.body['activity'] as { result: { signRawPayloadResult: { r: string; s: string; v: string } } }).result.signRawPayloadResult
    expect(await recoverAddress({ hash, signature: serializeSignature({ r: `0x${r}`, s: `0x${s}`, v: BigInt(`0x${v}`) + 27n }) })).toBe(sub.address)
    // Untagged, the same user is refused by the same policy.
    await sub.endUser.updateUserTag({
      type: 'ACTIVITY_TYPE_UPDATE_USER_TAG',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userTagId: tagId, addUserIds: [], removeUserIds: [sub.delegatedUserId] },
    })
    expect(await sign()).toEqual({
      status: 403,
      body: implicitDeny([
        { policyId: sub.policyIds[0]!, outcome: 'OUTCOME_DENY_IMPLICIT' },
        { policyId, outcome: 'OUTCOME_DENY_IMPLICIT' },
      ]),
    })
  })

  test('consensus: a policy for another approver does not let this user act', async () => {
    const sub = await delegatedSubOrganization(({ walletId }) => [
      { policyName: 'someone else', consensus: "approvers.any(user, user.id == 'not-the-delegated-user')", condition: `wallet.id == '${walletId}'` },
    ])
    const refused = await post(harness.kms, sub.delegatedKeys, '/public/v1/submit/sign_raw_payload', {
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { signWith: sub.address, payload: '0x1901', encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
    })
    expect(refused).toEqual({ status: 403, body: implicitDeny([{ policyId: sub.policyIds[0]!, outcome: 'OUTCOME_DENY_IMPLICIT' }]) })
  })
})

describe('policies over Ethereum transactions', () => {
  const transaction = (overrides: Partial<TransactionSerializableEIP1559> = {}) =>
    serializeTransaction({
      type: 'eip1559',
      chainId: 31337,
      nonce: 0,
      to: RECIPIENT,
      value: parseEther('0.5'),
      maxFeePerGas: 2_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      gas: 21_000n,
      ...overrides,
    }).slice(2)

  test('eth.tx.to, value and chain_id and the wallet decide; a DENY on the calldata wins', async () => {
    const sub = await delegatedSubOrganization(({ delegatedUserId, walletId }) => [
      {
        policyName: 'pay the recipient, on the local chain, up to 1 ether, from the main wallet',
        consensus: `approvers.any(user, user.id == '${delegatedUserId}')`,
        condition: `wallet.id == '${walletId}' && eth.tx.to == '${RECIPIENT.toUpperCase().replace('0X', '0x')}' && eth.tx.value <= 1000000000000000000 && eth.tx.chain_id == 31337`,
      },
      // A DENY fails closed: `eth.tx.data[0..10]` errors on empty calldata, so the guard settles it first.
      { policyName: 'no ERC-20 transfers', effect: 'EFFECT_DENY', condition: "eth.tx.data != '0x' && eth.tx.data[0..10] == '0xa9059cbb'" },
    ])
    // A second client: @turnkey/sdk-server, as a backend would use it.
    const sdk = new Turnkey({
      apiBaseUrl: harness.kms.url,
      apiPublicKey: sub.delegatedKeys.apiPublicKey,
      apiPrivateKey: sub.delegatedKeys.apiPrivateKey,
      defaultOrganizationId: sub.organizationId,
    }).apiClient()
    const sign = (unsignedTransaction: string) => sdk.signTransaction({ signWith: sub.address, type: 'TRANSACTION_TYPE_ETHEREUM', unsignedTransaction })
    const { signedTransaction } = await sign(transaction())
    expect(await recoverTransactionAddress({ serializedTransaction: `0x${signedTransaction}` as TransactionSerializedEIP1559 })).toBe(sub.address)

    const [allow, deny] = sub.policyIds as [string, string]
    const before = await activityCount(sub.organizationId)
    for (const [label, unsigned] of [
      ['another recipient', transaction({ to: OTHER })],
      ['too much', transaction({ value: parseEther('2') })],
      ['another chain', transaction({ chainId: 1 })],
    ] as const) {
      const error = await sign(unsigned).then(
        () => undefined,
        (caught: { code?: number; details?: unknown }) => caught,
      )
      expect(error, label).toMatchObject({
        code: 7,
        details: [
          {
            message: 'No policies evaluated to outcome: Allow',
            policyEvaluations: [
              { policyId: allow, outcome: 'OUTCOME_DENY_IMPLICIT' },
              // Empty calldata: the guard settles the DENY as not applying.
              { policyId: deny, outcome: 'OUTCOME_DENY_IMPLICIT' },
            ],
          },
        ],
      })
    }
    const transfer = transaction({ data: `0xa9059cbb${'00'.repeat(64)}` })
    await expect(sign(transfer)).rejects.toMatchObject({
      code: 7,
      details: [
        {
          message: `The following policies denied this action: ${deny}`,
          policyEvaluations: [
            { policyId: allow, outcome: 'OUTCOME_ALLOW' },
            { policyId: deny, outcome: 'OUTCOME_DENY_EXPLICIT' },
          ],
        },
      ],
    })
    expect(await activityCount(sub.organizationId)).toBe(before)
  })

  test('a policy naming a field that does not exist is refused when written, and not stored', async () => {
    const sub = await harness.subOrganization()
    const write = (condition: string) =>
      sub.client.createPolicy({
        type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { policyName: 'p', effect: 'EFFECT_ALLOW', condition, notes: '' },
      })
    await expect(write("eth.tx.recipient == '0x1'")).rejects.toThrow(
      'Turnkey error 3: invalid policy condition: Expression cannot be evaluated: field does not exist: recipient',
    )
    await expect(write("eth.tx.to == '0x1' &&")).rejects.toThrow(/^Turnkey error 3: invalid policy condition: Expression cannot be evaluated: /)
    expect((await sub.client.getPolicies({ organizationId: sub.organizationId })).policies).toEqual([])
  })
})

describe('policies over typed data and EIP-7702 authorizations', () => {
  const TOKEN = '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48'
  const EXECUTOR = '0xF5111459944dF032F3A0FFB2d273F6903FAF63F1'
  const permit = (message: { spender?: `0x${string}`; value?: bigint }, domainName = 'USD Coin') =>
    ({
      domain: { name: domainName, version: '2', chainId: 31337n, verifyingContract: TOKEN },
      // @turnkey/viem sends serializeTypedData's JSON, which keeps the domain only when its type is given (as eth_signTypedData_v4 payloads do).
      types: PERMIT_TYPES,
      primaryType: 'Permit',
      message: { owner: RECIPIENT, spender: RECIPIENT, value: 500_000n, nonce: 0n, deadline: 2_000_000_000n, ...message },
    }) as const satisfies TypedDataDefinition

  test('eth.eip_712 (primary type, domain, message by key) and eth.eip_7702_authorization decide; a DENY on the message wins; a refusal writes nothing', async () => {
    const sub = await delegatedSubOrganization(({ delegatedUserId }) => [
      {
        policyName: 'USDC permits to the recipient, up to a million units, on the local chain',
        consensus: `approvers.any(user, user.id == '${delegatedUserId}')`,
        condition: `activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2' && activity.params.encoding == 'PAYLOAD_ENCODING_EIP712' && eth.eip_712.primary_type == 'Permit' && eth.eip_712.domain.name == 'USD Coin' && eth.eip_712.domain.chain_id == 31337 && eth.eip_712.domain.verifying_contract == '${TOKEN}' && eth.eip_712.message['value'] <= 1000000`,
      },
      {
        // Written as Turnkey's example writes it, with the numbers quoted.
        policyName: 'delegate to the executor, on the local chain, first nonce',
        consensus: `approvers.any(user, user.id == '${delegatedUserId}')`,
        condition: `eth.eip_7702_authorization.address == '${EXECUTOR}' && eth.eip_7702_authorization.chain_id == '31337' && eth.eip_7702_authorization.nonce == '0' && activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2'`,
      },
      // A DENY fails closed: guarded by the encoding, it leaves EIP-7702 authorizations (no eth.eip_712) alone.
      {
        policyName: 'no permits to the dead address',
        effect: 'EFFECT_DENY',
        condition: `activity.params.encoding == 'PAYLOAD_ENCODING_EIP712' && eth.eip_712.message['spender'] == '${OTHER}'`,
      },
    ])
    const [permits, delegation, deny] = sub.policyIds as [string, string, string]
    // @turnkey/viem over the delegated user's key, as a backend signs with it.
    // (It types the client as its own nested @turnkey/http's; the wire is the same.)
    const account = await createAccount({
      client: sub.delegated as unknown as Parameters<typeof createAccount>[0]['client'],
      organizationId: sub.organizationId,
      signWith: sub.address,
    })
    const allowed = permit({})
    const signature = await account.signTypedData(allowed)
    expect(await verifyTypedData({ ...allowed, address: sub.address, signature })).toBe(true)
    const authorization = await account.signAuthorization!({ contractAddress: EXECUTOR, chainId: 31337, nonce: 0 })
    expect(await recoverAuthorizationAddress({ authorization })).toBe(sub.address)

    const before = await activityCount(sub.organizationId)
    // Every refused request is answered as Turnkey answers, and none leaves an activity behind.
    const refusal = (promise: Promise<unknown>) =>
      promise.then(
        () => 'signed',
        (error: Error) => error.message,
      )
    const implicit = (outcomes: [string, string, string]) =>
      `Failed to sign: Turnkey error 7: ${POLICY_DENIED_MESSAGE} (Details: ${JSON.stringify(
        implicitDeny([
          { policyId: permits, outcome: outcomes[0] },
          { policyId: delegation, outcome: outcomes[1] },
          { policyId: deny, outcome: outcomes[2] },
        ]).details,
      )})`
    // Typed data fill eth.eip_712 only: a clause on the authorization errors, and the other way round.
    for (const [label, typed] of [
      ['too much', permit({ value: 1_000_001n })],
      ['another token', permit({}, 'Dai Stablecoin')],
    ] as const)
      expect(await refusal(account.signTypedData(typed)), label).toContain(implicit(['OUTCOME_DENY_IMPLICIT', 'OUTCOME_ERROR', 'OUTCOME_DENY_IMPLICIT']))
    for (const [label, request] of [
      ['another contract', { contractAddress: OTHER, chainId: 31337, nonce: 0 }],
      ['another chain', { contractAddress: EXECUTOR, chainId: 1, nonce: 0 }],
      ['another nonce', { contractAddress: EXECUTOR, chainId: 31337, nonce: 1 }],
    ] as const)
      expect(await refusal(account.signAuthorization!(request)), label).toContain(implicit(['OUTCOME_ERROR', 'OUTCOME_DENY_IMPLICIT', 'OUTCOME_DENY_IMPLICIT']))
    const denied = await refusal(account.signTypedData(permit({ spender: OTHER })))
    expect(denied).toContain(`The following policies denied this action: ${deny}`)
    expect(denied).toContain(
      JSON.stringify([
        { policyId: permits, outcome: 'OUTCOME_ALLOW' },
        { policyId: delegation, outcome: 'OUTCOME_ERROR' },
        { policyId: deny, outcome: 'OUTCOME_DENY_EXPLICIT' },
      ]),
    )
    expect(await activityCount(sub.organizationId)).toBe(before)
  })

  test('eth.tx.authorization_list: each delegation of a type-4 transaction is visible to policies, which may narrow the kms’s delegates', async () => {
    const sub = await delegatedSubOrganization(({ delegatedUserId }) => [
      {
        policyName: 'type-4 transactions delegate to the executor on the local chain only',
        consensus: `approvers.any(user, user.id == '${delegatedUserId}')`,
        condition: `activity.type == 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2' && eth.tx.authorization_list.count() > 0 && eth.tx.authorization_list.all(a, a.address == '${EXECUTOR.toLowerCase()}' && a.chain_id == 31337)`,
      },
    ])
    const delegating = (address: `0x${string}`) =>
      serializeTransaction({
        type: 'eip7702',
        chainId: 31337,
        nonce: 0,
        to: sub.address,
        maxFeePerGas: 2_000_000_000n,
        maxPriorityFeePerGas: 1_000_000_000n,
        gas: 100_000n,
        authorizationList: [{ address, chainId: 31337, nonce: 1, r: `0x${'00'.repeat(31)}01`, s: `0x${'00'.repeat(31)}01`, yParity: 0 }],
      }).slice(2)
    const sign = (address: `0x${string}`) =>
      post(harness.kms, sub.delegatedKeys, '/public/v1/submit/sign_transaction', {
        type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { signWith: sub.address, unsignedTransaction: delegating(address), type: 'TRANSACTION_TYPE_ETHEREUM' },
      })
    expect((await sign(EXECUTOR)).status).toBe(200)
    // OTHER is an allowed delegate of this kms (beforeAll): the policy is what refuses it.
    expect((await sign(OTHER as `0x${string}`)).status).toBe(403)
  })

  test('sign_raw_payloads: each payload fills eth.eip_712 or eth.eip_7702_authorization and must be allowed on its own; a refused batch writes nothing', async () => {
    const sub = await delegatedSubOrganization(({ delegatedUserId }) => [
      {
        policyName: 'batches of USDC permits up to a million units',
        consensus: `approvers.any(user, user.id == '${delegatedUserId}')`,
        condition: `activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS' && eth.eip_712.primary_type == 'Permit' && eth.eip_712.message['value'] <= 1000000`,
      },
      {
        policyName: 'batches of delegations to the executor',
        consensus: `approvers.any(user, user.id == '${delegatedUserId}')`,
        condition: `activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS' && eth.eip_7702_authorization.address == '${EXECUTOR}'`,
      },
      // A DENY fails closed: guarded by the encoding, it leaves EIP-7702 authorizations (no eth.eip_712) alone.
      {
        policyName: 'no permits to the dead address',
        effect: 'EFFECT_DENY',
        condition: `activity.params.encoding == 'PAYLOAD_ENCODING_EIP712' && eth.eip_712.message['spender'] == '${OTHER}'`,
      },
    ])
    const [permits, delegations, deny] = sub.policyIds as [string, string, string]
    const sign = (encoding: 'PAYLOAD_ENCODING_EIP712' | 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION', payloads: string[]) =>
      sub.delegated.signRawPayloads({
        type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { signWith: sub.address, payloads, encoding, hashFunction: 'HASH_FUNCTION_NO_OP' },
      })
    const typed = (definition: TypedDataDefinition) => serializeTypedData(definition as Parameters<typeof serializeTypedData>[0])
    const authorization = (contractAddress: string, nonce: number) => JSON.stringify({ address: contractAddress, chainId: 31337, nonce })
    const signatureHex = ({ r, s, v }: { r: string; s: string; v: string }) => `0x${r}${s}${v === '00' ? '1b' : '1c'}` as const

    const small = permit({ value: 1n })
    const signed = await sign('PAYLOAD_ENCODING_EIP712', [typed(permit({})), typed(small)])
    const [first, second] = signed.activity.result.signRawPayloadsResult!.signatures!
    expect(await verifyTypedData({ ...permit({}), address: sub.address, signature: signatureHex(first!) })).toBe(true)
    expect(await verifyTypedData({ ...small, address: sub.address, signature: signatureHex(second!) })).toBe(true)
    const delegated = await sign('PAYLOAD_ENCODING_EIP7702_AUTHORIZATION', [authorization(EXECUTOR, 0), authorization(EXECUTOR, 1)])
    const recovered = await recoverAddress({
      hash: hashAuthorization({ contractAddress: EXECUTOR, chainId: 31337, nonce: 1 }),
      signature: signatureHex(delegated.activity.result.signRawPayloadsResult!.signatures![1]!),
    })
    expect(recovered).toBe(sub.address)

    const before = await activityCount(sub.organizationId)
    const refusal = (promise: Promise<unknown>) =>
      promise.then(
        () => undefined,
        (error: { code?: number; details?: unknown }) => ({ code: error.code, details: error.details }),
      )
    // One payload no policy allows refuses the batch, with that payload's evaluations.
    expect(await refusal(sign('PAYLOAD_ENCODING_EIP712', [typed(permit({})), typed(permit({ value: 1_000_001n }))]))).toEqual({
      code: 7,
      details: implicitDeny([
        { policyId: permits, outcome: 'OUTCOME_DENY_IMPLICIT' },
        { policyId: delegations, outcome: 'OUTCOME_ERROR' },
        { policyId: deny, outcome: 'OUTCOME_DENY_IMPLICIT' },
      ]).details,
    })
    expect(await refusal(sign('PAYLOAD_ENCODING_EIP712', [typed(permit({ spender: OTHER })), typed(permit({}))]))).toEqual({
      code: 7,
      details: denial(`The following policies denied this action: ${deny}`, [
        { policyId: permits, outcome: 'OUTCOME_ALLOW' },
        { policyId: delegations, outcome: 'OUTCOME_ERROR' },
        { policyId: deny, outcome: 'OUTCOME_DENY_EXPLICIT' },
      ]).details,
    })
    expect(await refusal(sign('PAYLOAD_ENCODING_EIP7702_AUTHORIZATION', [authorization(EXECUTOR, 2), authorization(OTHER, 0)]))).toMatchObject({
      code: 7,
      details: [{ message: 'No policies evaluated to outcome: Allow' }],
    })
    expect(await activityCount(sub.organizationId)).toBe(before)
  })
})
