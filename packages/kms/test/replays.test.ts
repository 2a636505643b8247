import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair } from '../src/index.js'
import { POLICY_DENIED_MESSAGE } from '../src/policies/engine.js'
import { ethereumAccount, post, startKms } from './harness.js'

// The same body bytes name the same activity, and a resubmission answers it; but only to a caller
// who may run it: another user of the organization who replays the bytes without the permission
// gets the refusal, not the first submission's result (security review L10).

let harness: Awaited<ReturnType<typeof startKms>>
beforeAll(async () => {
  harness = await startKms()
})
afterAll(() => harness.kms.stop())

const implicitDeny = {
  code: 7,
  message: POLICY_DENIED_MESSAGE,
  details: [
    { '@type': 'type.googleapis.com/errors.v1.PolicyEnginePermissionError', message: 'No policies evaluated to outcome: Allow', policyEvaluations: [] },
  ],
}

/** A sub-organization whose root user has a wallet, and a second user with no policy. */
async function withPlainUser() {
  const sub = await harness.subOrganization()
  const plainKeys = generateApiKeyPair()
  await sub.client.createUsers({
    type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
    timestampMs: harness.timestampMs(),
    organizationId: sub.organizationId,
    parameters: {
      users: [
        {
          userName: 'plain',
          apiKeys: [{ apiKeyName: 'plain', publicKey: plainKeys.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '3600' }],
          authenticators: [],
          oauthProviders: [],
          userTags: [],
        },
      ],
    },
  })
  return { ...sub, plainKeys }
}

describe('resubmitted bytes', () => {
  test('error: another user replaying a signature request’s exact bytes gets the refusal, not the signature', async () => {
    const sub = await withPlainUser()
    const body = {
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { signWith: sub.address, payload: '0x1901', encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
    }
    const first = await post(harness.kms, sub.keys, '/public/v1/submit/sign_raw_payload', body)
    expect(first.status).toBe(200)
    expect(await post(harness.kms, sub.plainKeys, '/public/v1/submit/sign_raw_payload', body)).toEqual({ status: 403, body: implicitDeny })
    // Its submitter still gets it back.
    expect(await post(harness.kms, sub.keys, '/public/v1/submit/sign_raw_payload', body)).toEqual(first)
  })

  test('error: another user replaying a wallet creation’s exact bytes gets the refusal, not the wallet', async () => {
    const sub = await withPlainUser()
    const body = {
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { walletName: 'Replayed', accounts: [ethereumAccount] },
    }
    const first = await post(harness.kms, sub.keys, '/public/v1/submit/create_wallet', body)
    expect(first.status).toBe(200)
    expect(await post(harness.kms, sub.plainKeys, '/public/v1/submit/create_wallet', body)).toEqual({ status: 403, body: implicitDeny })
    expect(await post(harness.kms, sub.keys, '/public/v1/submit/create_wallet', body)).toEqual(first)
  })
})
