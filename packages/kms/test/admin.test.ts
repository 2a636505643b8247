import { randomBytes } from 'node:crypto'
import { p256 } from '@noble/curves/p256'
import { sha256 } from '@noble/hashes/sha2'
import { verifySessionJwtSignature } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { Turnkey } from '@turnkey/sdk-server'
import { WebauthnStamper } from '@turnkey/webauthn-stamper'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair, UNKNOWN_KEY_MESSAGE } from '../src/index.js'
import { POLICY_DENIED_MESSAGE } from '../src/policies/engine.js'
import { rpId, softwareAuthenticator, useAuthenticator } from './authenticator.js'
import { post, startKms } from './harness.js'

// Users, API keys, passkeys, tags, policies, invitations, sessions and the organization itself,
// driven by the official @turnkey/http client (and @turnkey/sdk-server for policies) against a kms
// on loopback. Each refusal is checked for its exact error and for having written nothing.

let harness: Awaited<ReturnType<typeof startKms>>
beforeAll(async () => {
  harness = await startKms()
})
afterAll(() => harness.kms.stop())

const p256Key = (keys: ReturnType<typeof generateApiKeyPair>, apiKeyName: string) => ({
  apiKeyName,
  publicKey: keys.apiPublicKey,
  curveType: 'API_KEY_CURVE_P256' as const,
  // A sub-organization's keys all expire (credentials.ts refuseKeyLifetimes).
  expirationSeconds: '3600',
})

/** A sub-organization plus a second, non-root user "alice" holding her own key. */
async function withAlice() {
  const { timestampMs, client } = harness
  const sub = await harness.subOrganization({ email: `root-${randomBytes(4).toString('hex')}@example.test` })
  const aliceKeys = generateApiKeyPair()
  const { activity } = await sub.client.createUsers({
    type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
    timestampMs: timestampMs(),
    organizationId: sub.organizationId,
    parameters: {
      users: [
        {
          userName: 'alice',
          userEmail: 'alice@example.test',
          apiKeys: [p256Key(aliceKeys, 'alice key')],
          authenticators: [],
          oauthProviders: [],
          userTags: [],
        },
      ],
    },
  })
  return { ...sub, aliceId: activity.result.createUsersResult!.userIds[0]!, alice: client(aliceKeys) }
}

async function userCount(organizationId: string) {
  return (await harness.backend.getUsers({ organizationId })).users.length
}

describe('users', () => {
  test('default: create_users V4 adds a user with a key, a tag and a phone number; the root quorum stays', async () => {
    const { timestampMs } = harness
    const sub = await harness.subOrganization()
    const tag = await sub.client.createUserTag({
      type: 'ACTIVITY_TYPE_CREATE_USER_TAG',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userTagName: 'ops', userIds: [] },
    })
    const userTagId = tag.activity.result.createUserTagResult!.userTagId
    const keys = generateApiKeyPair()
    const { activity } = await sub.client.createUsers({
      type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        users: [
          {
            userName: 'bob',
            userEmail: 'bob@example.test',
            userPhoneNumber: '+14155550100',
            apiKeys: [p256Key(keys, 'bob key')],
            authenticators: [],
            oauthProviders: [],
            userTags: [userTagId],
          },
        ],
      },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    const [userId] = activity.result.createUsersResult!.userIds
    const { user } = await sub.client.getUser({ organizationId: sub.organizationId, userId: userId! })
    expect(user).toMatchObject({
      userId,
      userName: 'bob',
      userEmail: 'bob@example.test',
      userPhoneNumber: '+14155550100',
      userTags: [userTagId],
      authenticators: [],
      oauthProviders: [],
    })
    expect(user.apiKeys.map((key) => [key.apiKeyName, key.credential.publicKey])).toEqual([['bob key', keys.apiPublicKey]])
    expect(await harness.client(keys).getWhoami({ organizationId: sub.organizationId })).toMatchObject({ userId, username: 'bob' })
    const { organizationData } = await sub.client.getOrganization({ organizationId: sub.organizationId })
    expect(organizationData.rootQuorum).toEqual({ threshold: 1, userIds: [sub.userId] })
    expect(organizationData.users!.map((each) => each.userName).sort()).toEqual(['bob', 'root'])
    expect((await sub.client.listUserTags({ organizationId: sub.organizationId })).userTags.map((each) => [each.tagName, each.tagType])).toEqual([
      ['ops', 'TAG_TYPE_USER'],
    ])
  })

  test('behavior: create_api_only_users makes users with API keys only', async () => {
    const sub = await harness.subOrganization()
    const keys = generateApiKeyPair()
    const { activity } = await sub.client.createApiOnlyUsers({
      type: 'ACTIVITY_TYPE_CREATE_API_ONLY_USERS',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        apiOnlyUsers: [{ userName: 'ci', userTags: [], apiKeys: [{ apiKeyName: 'ci key', publicKey: keys.apiPublicKey, expirationSeconds: '3600' }] }],
      },
    })
    const [userId] = activity.result.createApiOnlyUsersResult!.userIds
    expect(await harness.client(keys).getWhoami({ organizationId: sub.organizationId })).toMatchObject({ userId, username: 'ci' })
  })

  test('behavior: update_user changes the email that email sign-in goes to', async () => {
    const { backend, timestampMs, kms } = harness
    const sub = await harness.subOrganization({ email: 'before@example.test' })
    const { activity } = await sub.client.updateUser({
      type: 'ACTIVITY_TYPE_UPDATE_USER',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId, userEmail: 'after@example.test', userName: 'renamed', userTagIds: [] },
    })
    expect(activity.result.updateUserResult).toEqual({ userId: sub.userId })
    expect((await backend.getUser({ organizationId: sub.organizationId, userId: sub.userId })).user).toMatchObject({
      userName: 'renamed',
      userEmail: 'after@example.test',
    })
    const emailAuth = (email: string) =>
      backend.emailAuth({
        type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3',
        timestampMs: timestampMs(),
        organizationId: sub.organizationId,
        parameters: { email, targetPublicKey: generateApiKeyPair().apiPublicKey, emailCustomization: { appName: 'Latchkey' } },
      })
    expect((await emailAuth('after@example.test')).activity.result.emailAuthResult!.userId).toBe(sub.userId)
    await expect(emailAuth('before@example.test')).rejects.toThrow(
      `Turnkey error 5: no user with email before@example.test in organization ${sub.organizationId}`,
    )
    const inbox = (await (await fetch(`${kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string }[] }
    expect(inbox.messages[0]!.to).toBe('after@example.test')
  })

  test('behavior: update_user_email with an empty email removes it: email sign-in no longer finds the user', async () => {
    const { backend, timestampMs } = harness
    const sub = await harness.subOrganization({ email: 'leaving@example.test' })
    const { activity } = await sub.client.updateUserEmail({
      type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId, userEmail: '' },
    })
    expect(activity.result.updateUserEmailResult).toEqual({ userId: sub.userId })
    expect((await backend.getUser({ organizationId: sub.organizationId, userId: sub.userId })).user.userEmail ?? null).toBe(null)
    await expect(
      backend.emailAuth({
        type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3',
        timestampMs: timestampMs(),
        organizationId: sub.organizationId,
        parameters: { email: 'leaving@example.test', targetPublicKey: generateApiKeyPair().apiPublicKey, emailCustomization: { appName: 'Latchkey' } },
      }),
    ).rejects.toThrow(`Turnkey error 5: no user with email leaving@example.test in organization ${sub.organizationId}`)
  })

  test('error: a bad email, a taken email or an unknown tag is refused and no user is written', async () => {
    const { timestampMs } = harness
    const sub = await withAlice()
    const before = await userCount(sub.organizationId)
    const createUsers = (users: Parameters<TurnkeyClient['createUsers']>[0]['parameters']['users']) =>
      sub.client.createUsers({ type: 'ACTIVITY_TYPE_CREATE_USERS_V4', timestampMs: timestampMs(), organizationId: sub.organizationId, parameters: { users } })
    const user = (userName: string, more: object = {}) => ({ userName, apiKeys: [], authenticators: [], oauthProviders: [], userTags: [], ...more })
    await expect(createUsers([user('carol', { userEmail: 'not an email' })])).rejects.toThrow(
      'Turnkey error 3: invalid parameters: users.0.userEmail: Invalid email address (Details: [{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"users.0.userEmail","description":"Invalid email address"}]}])',
    )
    await expect(createUsers([user('carol'), user('dave', { userEmail: 'ALICE@example.test' })])).rejects.toThrow(
      `Turnkey error 6: a user with email ALICE@example.test already exists in organization ${sub.organizationId}`,
    )
    await expect(createUsers([user('carol'), user('dave', { userTags: ['no-such-tag'] })])).rejects.toThrow(
      `Turnkey error 5: user tag no-such-tag not found in organization ${sub.organizationId}`,
    )
    // Two users with the same new key: the second insert fails inside the transaction, the first is rolled back.
    const shared = generateApiKeyPair()
    await expect(createUsers([user('carol', { apiKeys: [p256Key(shared, 'a')] }), user('dave', { apiKeys: [p256Key(shared, 'b')] })])).rejects.toThrow(
      `Turnkey error 6: api key ${shared.apiPublicKey} is already registered`,
    )
    expect(await userCount(sub.organizationId)).toBe(before)
  })

  test('behavior: delete_users removes a user and their keys, whose stamps are then unknown', async () => {
    const sub = await withAlice()
    const { activity } = await sub.client.deleteUsers({
      type: 'ACTIVITY_TYPE_DELETE_USERS',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userIds: [sub.aliceId] },
    })
    expect(activity.result.deleteUsersResult).toEqual({ userIds: [sub.aliceId] })
    await expect(sub.alice.getWhoami({ organizationId: sub.organizationId })).rejects.toThrow(`Turnkey error 16: ${UNKNOWN_KEY_MESSAGE}`)
    expect(await userCount(sub.organizationId)).toBe(1)
  })

  test('error: the last root user and the requesting user are not deleted', async () => {
    const sub = await withAlice()
    const deleteUsers = (client: TurnkeyClient, userIds: string[]) =>
      client.deleteUsers({
        type: 'ACTIVITY_TYPE_DELETE_USERS',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { userIds },
      })
    await expect(deleteUsers(sub.client, [sub.userId])).rejects.toThrow(
      'Turnkey error 9: a user cannot delete themselves: the key that stamps this request would go with them',
    )
    // Alice is no root user: a policy lets her delete users, which still cannot take the last root user.
    await sub.client.createPolicy({
      type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        policyName: 'alice deletes users',
        effect: 'EFFECT_ALLOW',
        consensus: `approvers.any(user, user.id == '${sub.aliceId}')`,
        condition: "activity.type == 'ACTIVITY_TYPE_DELETE_USERS'",
        notes: '',
      },
    })
    await expect(deleteUsers(sub.alice, [sub.userId])).rejects.toThrow(
      `Turnkey error 9: cannot delete the last root user of organization ${sub.organizationId}`,
    )
    await expect(deleteUsers(sub.client, [sub.aliceId, 'no-such-user'])).rejects.toThrow(
      `Turnkey error 5: user no-such-user not found in organization ${sub.organizationId}`,
    )
    await expect(deleteUsers(sub.client, [sub.aliceId, sub.aliceId])).rejects.toThrow('Turnkey error 3: invalid parameters: userIds: a user is named twice')
    expect(await userCount(sub.organizationId)).toBe(2)
  })
})

describe('API keys and passkeys', () => {
  test('default: get_api_key, then delete_api_keys; the deleted key is unknown from then on', async () => {
    const { timestampMs, client } = harness
    const sub = await harness.subOrganization()
    const extra = generateApiKeyPair()
    const created = await sub.client.createApiKeys({
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId, apiKeys: [{ ...p256Key(extra, 'laptop'), expirationSeconds: '3600' }] },
    })
    const [apiKeyId] = created.activity.result.createApiKeysResult!.apiKeyIds
    expect((await sub.client.getApiKey({ organizationId: sub.organizationId, apiKeyId: apiKeyId! })).apiKey).toMatchObject({
      apiKeyId,
      apiKeyName: 'laptop',
      credential: { publicKey: extra.apiPublicKey, type: 'CREDENTIAL_TYPE_API_KEY_P256' },
    })
    await client(extra).getWhoami({ organizationId: sub.organizationId })
    const { activity } = await sub.client.deleteApiKeys({
      type: 'ACTIVITY_TYPE_DELETE_API_KEYS',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId, apiKeyIds: [apiKeyId!] },
    })
    expect(activity.result.deleteApiKeysResult).toEqual({ apiKeyIds: [apiKeyId] })
    await expect(client(extra).getWhoami({ organizationId: sub.organizationId })).rejects.toThrow(`Turnkey error 16: ${UNKNOWN_KEY_MESSAGE}`)
    await expect(sub.client.getApiKey({ organizationId: sub.organizationId, apiKeyId: apiKeyId! })).rejects.toThrow(
      `Turnkey error 5: API key ${apiKeyId} not found in organization ${sub.organizationId}`,
    )
  })

  test('error: a key cannot delete itself; an unknown key id deletes nothing', async () => {
    const { timestampMs, client } = harness
    const sub = await harness.subOrganization()
    const extra = generateApiKeyPair()
    await sub.client.createApiKeys({
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId, apiKeys: [{ ...p256Key(extra, 'spare'), expirationSeconds: '3600' }] },
    })
    const { apiKeys } = await sub.client.getApiKeys({ organizationId: sub.organizationId, userId: sub.userId })
    const [own, spare] = [apiKeys.find((key) => key.apiKeyName === 'root key')!, apiKeys.find((key) => key.apiKeyName === 'spare')!]
    const deleteApiKeys = (apiKeyIds: string[]) =>
      sub.client.deleteApiKeys({
        type: 'ACTIVITY_TYPE_DELETE_API_KEYS',
        timestampMs: timestampMs(),
        organizationId: sub.organizationId,
        parameters: { userId: sub.userId, apiKeyIds },
      })
    await expect(deleteApiKeys([spare.apiKeyId, own.apiKeyId])).rejects.toThrow(
      `Turnkey error 9: API key ${own.apiKeyId} stamps this request and cannot remove itself: stamp the request with another credential`,
    )
    await expect(deleteApiKeys([spare.apiKeyId, 'no-such-key'])).rejects.toThrow(`Turnkey error 5: API key no-such-key not found for user ${sub.userId}`)
    expect(await client(extra).getWhoami({ organizationId: sub.organizationId })).toMatchObject({ userId: sub.userId })
    // Another of the user's keys may delete it.
    await client(extra).deleteApiKeys({
      type: 'ACTIVITY_TYPE_DELETE_API_KEYS',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId, apiKeyIds: [own.apiKeyId] },
    })
    await expect(sub.client.getWhoami({ organizationId: sub.organizationId })).rejects.toThrow(`Turnkey error 16: ${UNKNOWN_KEY_MESSAGE}`)
  })

  test('default: get_authenticator and delete_authenticators; a passkey cannot delete itself', async () => {
    const { timestampMs, kms } = harness
    const sub = await harness.subOrganization()
    const passkey = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const created = await sub.client.createAuthenticators({
      type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId, authenticators: [{ authenticatorName: 'Laptop', challenge, attestation: passkey.register(challenge) }] },
    })
    const [authenticatorId] = created.activity.result.createAuthenticatorsResult!.authenticatorIds
    expect((await sub.client.getAuthenticator({ organizationId: sub.organizationId, authenticatorId: authenticatorId! })).authenticator).toMatchObject({
      authenticatorId,
      authenticatorName: 'Laptop',
      credentialId: passkey.credentialId,
      transports: ['AUTHENTICATOR_TRANSPORT_INTERNAL'],
    })
    expect(
      (await sub.client.getUser({ organizationId: sub.organizationId, userId: sub.userId })).user.authenticators.map((each) => each.authenticatorId),
    ).toEqual([authenticatorId])

    useAuthenticator(passkey)
    const withPasskey = new TurnkeyClient({ baseUrl: kms.url }, new WebauthnStamper({ rpId }))
    const deleteAuthenticators = (client: TurnkeyClient) =>
      client.deleteAuthenticators({
        type: 'ACTIVITY_TYPE_DELETE_AUTHENTICATORS',
        timestampMs: timestampMs(),
        organizationId: sub.organizationId,
        parameters: { userId: sub.userId, authenticatorIds: [authenticatorId!] },
      })
    await expect(deleteAuthenticators(withPasskey)).rejects.toThrow(
      `Turnkey error 9: authenticator ${authenticatorId} stamps this request and cannot remove itself: stamp the request with another credential`,
    )
    expect((await deleteAuthenticators(sub.client)).activity.result.deleteAuthenticatorsResult).toEqual({ authenticatorIds: [authenticatorId] })
    await expect(withPasskey.getWhoami({ organizationId: sub.organizationId })).rejects.toThrow(
      `Turnkey error 16: could not find credential ${passkey.credentialId}`,
    )
  })
})

describe('tags and policies', () => {
  test('default: a user tag is renamed, gains and loses users, and is deleted', async () => {
    const { timestampMs } = harness
    const sub = await withAlice()
    const base = { timestampMs: '', organizationId: sub.organizationId }
    const created = await sub.client.createUserTag({
      ...base,
      type: 'ACTIVITY_TYPE_CREATE_USER_TAG',
      timestampMs: timestampMs(),
      parameters: { userTagName: 'team', userIds: [sub.userId] },
    })
    const { userTagId } = created.activity.result.createUserTagResult!
    await sub.client.updateUserTag({
      ...base,
      type: 'ACTIVITY_TYPE_UPDATE_USER_TAG',
      timestampMs: timestampMs(),
      parameters: { userTagId, newUserTagName: 'admins', addUserIds: [sub.aliceId], removeUserIds: [sub.userId] },
    })
    expect((await sub.client.listUserTags({ organizationId: sub.organizationId })).userTags.map((tag) => tag.tagName)).toEqual(['admins'])
    expect((await sub.client.getUser({ organizationId: sub.organizationId, userId: sub.aliceId })).user.userTags).toEqual([userTagId])
    expect((await sub.client.getUser({ organizationId: sub.organizationId, userId: sub.userId })).user.userTags).toEqual([])
    const deleted = await sub.client.deleteUserTags({
      ...base,
      type: 'ACTIVITY_TYPE_DELETE_USER_TAGS',
      timestampMs: timestampMs(),
      parameters: { userTagIds: [userTagId] },
    })
    expect(deleted.activity.result.deleteUserTagsResult).toEqual({ userTagIds: [userTagId], userIds: [sub.aliceId] })
    expect((await sub.client.listUserTags({ organizationId: sub.organizationId })).userTags).toEqual([])
    expect((await sub.client.getUser({ organizationId: sub.organizationId, userId: sub.aliceId })).user.userTags).toEqual([])
  })

  test('error: a tag name in use, or an unknown user, is refused and nothing is written', async () => {
    const { timestampMs } = harness
    const sub = await harness.subOrganization()
    const createUserTag = (userTagName: string, userIds: string[]) =>
      sub.client.createUserTag({
        type: 'ACTIVITY_TYPE_CREATE_USER_TAG',
        timestampMs: timestampMs(),
        organizationId: sub.organizationId,
        parameters: { userTagName, userIds },
      })
    await createUserTag('team', [])
    await expect(createUserTag('team', [])).rejects.toThrow('Turnkey error 6: a user tag named "team" already exists')
    await expect(createUserTag('other', ['nobody'])).rejects.toThrow(`Turnkey error 5: user nobody not found in organization ${sub.organizationId}`)
    expect((await sub.client.listUserTags({ organizationId: sub.organizationId })).userTags.map((tag) => tag.tagName)).toEqual(['team'])
  })

  test('default: policies are stored, reported, updated and deleted (through @turnkey/sdk-server too)', async () => {
    const { timestampMs, kms } = harness
    const sub = await harness.subOrganization()
    const sdk = new Turnkey({
      apiBaseUrl: kms.url,
      apiPublicKey: sub.keys.apiPublicKey,
      apiPrivateKey: sub.keys.apiPrivateKey,
      defaultOrganizationId: sub.organizationId,
    }).apiClient()
    const { policyIds } = await sdk.createPolicies({
      policies: [
        {
          policyName: 'Allow signing',
          effect: 'EFFECT_ALLOW',
          condition: "activity.type == 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2'",
          consensus: "approvers.any(user, user.id == 'x')",
          notes: 'n',
        },
        { policyName: 'Deny exports', effect: 'EFFECT_DENY', condition: "activity.resource == 'WALLET'", notes: '' },
      ],
    })
    expect(policyIds).toHaveLength(2)
    expect((await sdk.getPolicies({})).policies.map((policy) => [policy.policyName, policy.effect, policy.condition])).toEqual([
      ['Allow signing', 'EFFECT_ALLOW', "activity.type == 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2'"],
      ['Deny exports', 'EFFECT_DENY', "activity.resource == 'WALLET'"],
    ])
    await sub.client.updatePolicy({
      type: 'ACTIVITY_TYPE_UPDATE_POLICY_V2',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { policyId: policyIds[0]!, policyName: 'Allow some signing', policyNotes: 'changed' },
    })
    expect((await sub.client.getPolicy({ organizationId: sub.organizationId, policyId: policyIds[0]! })).policy).toMatchObject({
      policyId: policyIds[0],
      policyName: 'Allow some signing',
      effect: 'EFFECT_ALLOW',
      notes: 'changed',
      consensus: "approvers.any(user, user.id == 'x')",
    })
    const single = await sub.client.createPolicy({
      type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { policyName: 'Third', effect: 'EFFECT_DENY', notes: '' },
    })
    const thirdId = single.activity.result.createPolicyResult!.policyId
    await sub.client.deletePolicy({
      type: 'ACTIVITY_TYPE_DELETE_POLICY',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { policyId: policyIds[1]! },
    })
    expect(await sdk.deletePolicies({ policyIds: [thirdId] })).toMatchObject({ policyIds: [thirdId] })
    expect((await sdk.getPolicies({})).policies.map((policy) => policy.policyId)).toEqual([policyIds[0]])
  })

  test('error: an unknown effect, or deleting an unknown policy, changes nothing', async () => {
    const sub = await harness.subOrganization()
    const { activity } = await sub.client.createPolicy({
      type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { policyName: 'Kept', effect: 'EFFECT_ALLOW', notes: '' },
    })
    const keptId = activity.result.createPolicyResult!.policyId
    await expect(
      sub.client.createPolicies({
        type: 'ACTIVITY_TYPE_CREATE_POLICIES',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: {
          policies: [
            { policyName: 'ok', effect: 'EFFECT_ALLOW', notes: '' },
            { policyName: 'bad', effect: 'EFFECT_MAYBE' as never, notes: '' },
          ],
        },
      }),
    ).rejects.toThrow('Turnkey error 3: invalid parameters: policies.1.effect: Invalid option: expected one of "EFFECT_ALLOW"|"EFFECT_DENY"')
    await expect(
      sub.client.deletePolicies({
        type: 'ACTIVITY_TYPE_DELETE_POLICIES',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { policyIds: [keptId, 'gone'] },
      }),
    ).rejects.toThrow(`Turnkey error 5: policy gone not found in organization ${sub.organizationId}`)
    expect((await sub.client.getPolicies({ organizationId: sub.organizationId })).policies.map((policy) => policy.policyId)).toEqual([keptId])
  })
})

describe('the organization', () => {
  test('default: features are set, reported and removed', async () => {
    const { timestampMs } = harness
    const sub = await harness.subOrganization()
    const base = { organizationId: sub.organizationId }
    const set = await sub.client.setOrganizationFeature({
      ...base,
      type: 'ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE',
      timestampMs: timestampMs(),
      parameters: { name: 'FEATURE_NAME_WEBAUTHN_ORIGINS', value: 'http://localhost:5173' },
    })
    expect(set.activity.result.setOrganizationFeatureResult).toEqual({ features: [{ name: 'FEATURE_NAME_WEBAUTHN_ORIGINS', value: 'http://localhost:5173' }] })
    await sub.client.setOrganizationFeature({
      ...base,
      type: 'ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE',
      timestampMs: timestampMs(),
      parameters: { name: 'FEATURE_NAME_EMAIL_AUTH', value: '' },
    })
    expect((await sub.client.getOrganizationConfigs(base)).configs).toEqual({
      features: [
        { name: 'FEATURE_NAME_EMAIL_AUTH', value: '' },
        { name: 'FEATURE_NAME_WEBAUTHN_ORIGINS', value: 'http://localhost:5173' },
      ],
      quorum: { threshold: 1, userIds: [sub.userId] },
    })
    const removed = await sub.client.removeOrganizationFeature({
      ...base,
      type: 'ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE',
      timestampMs: timestampMs(),
      parameters: { name: 'FEATURE_NAME_EMAIL_AUTH' },
    })
    expect(removed.activity.result.removeOrganizationFeatureResult).toEqual({
      features: [{ name: 'FEATURE_NAME_WEBAUTHN_ORIGINS', value: 'http://localhost:5173' }],
    })
    await expect(
      sub.client.removeOrganizationFeature({
        ...base,
        type: 'ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE',
        timestampMs: timestampMs(),
        parameters: { name: 'FEATURE_NAME_EMAIL_AUTH' },
      }),
    ).rejects.toThrow(`Turnkey error 5: feature FEATURE_NAME_EMAIL_AUTH is not set in organization ${sub.organizationId}`)
  })

  test('behavior: update_root_quorum makes two root users needed; then a root user cannot be deleted below the threshold', async () => {
    const { timestampMs } = harness
    const sub = await withAlice()
    const updated = await sub.client.updateRootQuorum({
      type: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { threshold: 2, userIds: [sub.userId, sub.aliceId] },
    })
    expect([updated.activity.status, updated.activity.result.updateRootQuorumResult]).toEqual(['ACTIVITY_STATUS_COMPLETED', {}])
    expect((await sub.client.getOrganization({ organizationId: sub.organizationId })).organizationData.rootQuorum).toEqual({
      threshold: 2,
      userIds: [sub.userId, sub.aliceId],
    })
    const waiting = await sub.client.createPolicy({
      type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { policyName: 'p', effect: 'EFFECT_ALLOW', notes: '' },
    })
    expect(waiting.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED')
    // Both root users approve deleting Alice: it runs, and fails with the reason, deleting nobody.
    const deletion = await sub.client.deleteUsers({
      type: 'ACTIVITY_TYPE_DELETE_USERS',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userIds: [sub.aliceId] },
    })
    expect(deletion.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED')
    const approved = await sub.alice.approveActivity({
      type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { fingerprint: deletion.activity.fingerprint },
    })
    expect([approved.activity.status, approved.activity.failure]).toEqual([
      'ACTIVITY_STATUS_FAILED',
      {
        code: 9,
        message: 'deleting these users would leave 1 root users, fewer than the root quorum threshold of 2: change the root quorum first (update_root_quorum)',
        details: [],
      },
    ])
    expect(await userCount(sub.organizationId)).toBe(2)
    // The parent organization is no root user of the sub-organization: it may not change its quorum.
    await expect(
      harness.backend.updateRootQuorum({
        type: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
        timestampMs: timestampMs(),
        organizationId: sub.organizationId,
        parameters: { threshold: 3, userIds: [sub.userId, sub.aliceId] },
      }),
    ).rejects.toThrow(`Turnkey error 7: ${POLICY_DENIED_MESSAGE}`)
    expect((await sub.client.getOrganization({ organizationId: sub.organizationId })).organizationData.rootQuorum).toEqual({
      threshold: 2,
      userIds: [sub.userId, sub.aliceId],
    })
  })

  test('behavior: update_organization_name renames it', async () => {
    const sub = await harness.subOrganization()
    const { activity } = await sub.client.updateOrganizationName({
      type: 'ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { organizationName: 'Renamed' },
    })
    expect(activity.result.updateOrganizationNameResult).toEqual({ organizationId: sub.organizationId, organizationName: 'Renamed' })
    expect((await sub.client.getWhoami({ organizationId: sub.organizationId })).organizationName).toBe('Renamed')
  })

  test('default: invitations are mailed, listed and deleted; an unknown sender sends and stores nothing', async () => {
    const { timestampMs, kms } = harness
    const sub = await harness.subOrganization()
    const invite = (senderUserId: string, receiverUserEmail: string) =>
      sub.client.createInvitations({
        type: 'ACTIVITY_TYPE_CREATE_INVITATIONS',
        timestampMs: timestampMs(),
        organizationId: sub.organizationId,
        parameters: { invitations: [{ receiverUserName: 'erin', receiverUserEmail, receiverUserTags: [], accessType: 'ACCESS_TYPE_WEB', senderUserId }] },
      })
    const { activity } = await invite(sub.userId, 'erin@example.test')
    const [invitationId] = activity.result.createInvitationsResult!.invitationIds
    const inbox = async () =>
      ((await (await fetch(`${kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; subject: string; text: string }[] }).messages
    expect((await inbox())[0]).toMatchObject({
      to: 'erin@example.test',
      subject: `root invited you to sub ${sub.keys.apiPublicKey.slice(2, 12)}`,
      text: expect.stringContaining(`Invitation: ${invitationId}`),
    })
    expect(
      (await sub.client.getOrganization({ organizationId: sub.organizationId })).organizationData.invitations!.map((each) => [
        each.invitationId,
        each.receiverEmail,
        each.status,
      ]),
    ).toEqual([[invitationId, 'erin@example.test', 'INVITATION_STATUS_CREATED']])
    await expect(invite('nobody', 'frank@example.test')).rejects.toThrow(`Turnkey error 5: user nobody not found in organization ${sub.organizationId}`)
    expect((await inbox()).some((mail) => mail.to === 'frank@example.test')).toBe(false)
    const deleted = await sub.client.deleteInvitation({
      type: 'ACTIVITY_TYPE_DELETE_INVITATION',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { invitationId: invitationId! },
    })
    expect(deleted.activity.result.deleteInvitationResult).toEqual({ invitationId })
    expect((await sub.client.getOrganization({ organizationId: sub.organizationId })).organizationData.invitations).toEqual([])
  })

  test('default: create_read_only_session returns a session token signed by the service and its expiry', async () => {
    const { clock, kms } = harness
    const sub = await harness.subOrganization()
    const { activity } = await sub.client.createReadOnlySession({
      type: 'ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {},
    })
    const result = activity.result.createReadOnlySessionResult!
    const expiry = Math.floor(clock.now / 1000) + 3600
    expect(result).toMatchObject({ organizationId: sub.organizationId, userId: sub.userId, username: 'root', sessionExpiry: String(expiry) })
    expect(await verifySessionJwtSignature(result.session, kms.signerPublicKey)).toBe(true)
    expect(JSON.parse(Buffer.from(result.session.split('.')[1]!, 'base64url').toString())).toEqual({
      exp: expiry,
      session_type: 'SESSION_TYPE_READ_ONLY',
      user_id: sub.userId,
      organization_id: sub.organizationId,
    })
  })

  test('behavior: the read-only session token, replayed in X-Session, answers queries only, until it expires', async () => {
    const { clock, kms } = harness
    const sub = await harness.subOrganization()
    const { activity } = await sub.client.createReadOnlySession({
      type: 'ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {},
    })
    const token = activity.result.createReadOnlySessionResult!.session
    const withSession = (path: string, body: unknown, session = token) =>
      fetch(`${kms.url}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'X-Session': session } }).then(async (response) => [
        response.status,
        await response.json(),
      ])
    expect(await withSession('/public/v1/query/whoami', { organizationId: sub.organizationId })).toEqual([
      200,
      expect.objectContaining({ organizationId: sub.organizationId, userId: sub.userId }),
    ])
    expect((await withSession('/public/v1/query/list_wallets', { organizationId: sub.organizationId }))[0]).toBe(200)
    // Activities need a stamp; nothing is written.
    const wallets = (await sub.client.getWallets({ organizationId: sub.organizationId })).wallets.length
    const submit = await withSession('/public/v1/submit/create_wallet', {
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { walletName: 'no', accounts: [] },
    })
    expect(submit).toEqual([403, expect.objectContaining({ code: 7, message: expect.stringContaining('a read-only session (X-Session) may only query') })])
    expect((await sub.client.getWallets({ organizationId: sub.organizationId })).wallets).toHaveLength(wallets)
    // A token changed after signing, and another organization, are refused.
    const [header, claims, signature] = token.split('.') as [string, string, string]
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(claims, 'base64url').toString()), session_type: 'SESSION_TYPE_READ_ONLY', user_id: 'someone-else' })).toString('base64url')}.${signature}`
    expect(await withSession('/public/v1/query/whoami', { organizationId: sub.organizationId }, forged)).toEqual([
      401,
      expect.objectContaining({ code: 16, message: 'invalid read-only session: not a session token this service issued' }),
    ])
    const other = await harness.subOrganization()
    expect((await withSession('/public/v1/query/whoami', { organizationId: other.organizationId }))[0]).toBe(401)
    // An hour later it no longer works.
    clock.now += 3601_000
    try {
      expect(await withSession('/public/v1/query/whoami', { organizationId: sub.organizationId })).toEqual([
        401,
        expect.objectContaining({ code: 16, message: 'read-only session expired' }),
      ])
    } finally {
      clock.now -= 3601_000
    }
  })

  test('behavior: list_activities filters by type and status, newest first, in pages', async () => {
    const { timestampMs } = harness
    const sub = await harness.subOrganization()
    for (const name of ['a', 'b', 'c'])
      await sub.client.createPolicy({
        type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
        timestampMs: timestampMs(),
        organizationId: sub.organizationId,
        parameters: { policyName: name, effect: 'EFFECT_ALLOW', notes: '' },
      })
    const list = (paginationOptions: { limit?: string; after?: string; before?: string }) =>
      sub.client.getActivities({
        organizationId: sub.organizationId,
        filterByType: ['ACTIVITY_TYPE_CREATE_POLICY_V3'],
        filterByStatus: ['ACTIVITY_STATUS_COMPLETED'],
        paginationOptions,
      })
    const names = (activities: Awaited<ReturnType<typeof list>>['activities']) => activities.map((activity) => activity.intent.createPolicyIntentV3!.policyName)
    const all = await list({})
    expect(names(all.activities)).toEqual(['c', 'b', 'a'])
    expect(names((await list({ limit: '2' })).activities)).toEqual(['c', 'b'])
    expect(names((await list({ limit: '2', after: all.activities[1]!.id })).activities)).toEqual(['a'])
    expect(names((await list({ before: all.activities[2]!.id })).activities)).toEqual(['c', 'b'])
    expect((await sub.client.getActivities({ organizationId: sub.organizationId, filterByStatus: ['ACTIVITY_STATUS_FAILED'] })).activities).toEqual([])
    await expect(list({ limit: '0' })).rejects.toThrow('Turnkey error 3: invalid parameters: paginationOptions.limit: limit must be between 1 and 100')
  })

  test('behavior: list_suborgs finds a sub-organization by name, email, user name, API key or address', async () => {
    const { backend, parent } = harness
    const email = `lookup-${randomBytes(4).toString('hex')}@example.test`
    const sub = await harness.subOrganization({ email })
    const find = async (filterType: string, filterValue: string) =>
      (await backend.getSubOrgIds({ organizationId: parent.organizationId, filterType, filterValue })).organizationIds
    expect(await find('EMAIL', email.toUpperCase())).toEqual([sub.organizationId])
    expect(await find('NAME', `sub ${sub.keys.apiPublicKey.slice(2, 12)}`)).toEqual([sub.organizationId])
    expect(await find('PUBLIC_KEY', sub.keys.apiPublicKey)).toEqual([sub.organizationId])
    expect(await find('WALLET_ACCOUNT_ADDRESS', sub.address.toLowerCase())).toEqual([sub.organizationId])
    expect(await find('EMAIL', 'nobody@example.test')).toEqual([])
    expect((await find('USERNAME', 'root')).length).toBeGreaterThan(1)
    const everything = (await backend.getSubOrgIds({ organizationId: parent.organizationId, paginationOptions: { limit: '100' } })).organizationIds
    expect(everything).toContain(sub.organizationId)
    await expect(find('COLOR', 'blue')).rejects.toThrow(
      'Turnkey error 3: unsupported filterType COLOR: use NAME, USERNAME, EMAIL, PHONE_NUMBER, CREDENTIAL_ID, PUBLIC_KEY, WALLET_ACCOUNT_ADDRESS, OIDC_TOKEN',
    )
  })

  test('default: get_attestation answers for the signer with a statement the signer key signed; other enclaves are 12', async () => {
    const { kms, parentKey, parent } = harness
    const answer = await post(kms, parentKey, '/public/v1/query/get_attestation', { organizationId: parent.organizationId, enclaveType: 'signer' })
    expect(answer.status).toBe(200)
    const document = JSON.parse(Buffer.from(answer.body['attestationDocument'] as string, 'base64').toString()) as { statement: string; signature: string }
    expect(JSON.parse(document.statement)).toEqual({
      format: 'latchkey-kms-attestation/v1',
      enclaveType: 'signer',
      role: 'signs export and import bundles',
      organizationId: parent.organizationId,
      publicKey: kms.signerPublicKey,
    })
    expect(p256.verify(document.signature, sha256(new TextEncoder().encode(document.statement)), kms.signerPublicKey)).toBe(true)
    expect(await post(kms, parentKey, '/public/v1/query/get_attestation', { organizationId: parent.organizationId, enclaveType: 'evm-parser' })).toEqual({
      status: 501,
      body: {
        code: 12,
        message: 'no attestation for enclave type evm-parser: this service runs no enclaves; it attests its signer key for signer and notarizer',
        details: [],
      },
    })
  })

  test('behavior: delete_sub_organization needs its wallets exported or deleteWithoutExport; then its keys are unknown', async () => {
    const { backend, parent, timestampMs } = harness
    const sub = await harness.subOrganization()
    const remove = (deleteWithoutExport?: boolean) =>
      sub.client.deleteSubOrganization({
        type: 'ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION',
        timestampMs: timestampMs(),
        organizationId: sub.organizationId,
        parameters: deleteWithoutExport === undefined ? {} : { deleteWithoutExport },
      })
    await expect(remove()).rejects.toThrow(`Turnkey error 9: wallet ${sub.walletId} has not been exported: export first, or set deleteWithoutExport`)
    expect(await sub.client.getWhoami({ organizationId: sub.organizationId })).toMatchObject({ userId: sub.userId })
    const { activity } = await remove(true)
    expect(activity.result.deleteSubOrganizationResult).toEqual({ subOrganizationUuid: sub.organizationId })
    await expect(sub.client.getWhoami({ organizationId: sub.organizationId })).rejects.toThrow(`Turnkey error 16: ${UNKNOWN_KEY_MESSAGE}`)
    expect(
      (await backend.getSubOrgIds({ organizationId: parent.organizationId, filterType: 'PUBLIC_KEY', filterValue: sub.keys.apiPublicKey })).organizationIds,
    ).toEqual([])
    await expect(
      backend.deleteSubOrganization({
        type: 'ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION',
        timestampMs: timestampMs(),
        organizationId: parent.organizationId,
        parameters: { deleteWithoutExport: true },
      }),
    ).rejects.toThrow(`Turnkey error 9: organization ${parent.organizationId} is not a sub-organization: a parent organization is not deleted through the API`)
  })
})

describe('wallets', () => {
  test('default: update_wallet renames, get_wallet_account finds by address or path, delete_wallets after export', async () => {
    const { timestampMs } = harness
    const sub = await harness.subOrganization()
    const base = { organizationId: sub.organizationId }
    await sub.client.updateWallet({
      ...base,
      type: 'ACTIVITY_TYPE_UPDATE_WALLET',
      timestampMs: timestampMs(),
      parameters: { walletId: sub.walletId, walletName: 'Main' },
    })
    expect((await sub.client.getWallet({ ...base, walletId: sub.walletId })).wallet.walletName).toBe('Main')
    const byAddress = await sub.client.getWalletAccount({ ...base, walletId: sub.walletId, address: sub.address.toLowerCase() })
    const byPath = await sub.client.getWalletAccount({ ...base, walletId: sub.walletId, path: "m/44'/60'/0'/0/0" })
    expect([byAddress.account.address, byPath.account.walletAccountId]).toEqual([sub.address, byAddress.account.walletAccountId])
    await expect(sub.client.getWalletAccount({ ...base, walletId: sub.walletId, path: "m/44'/60'/0'/0/9" })).rejects.toThrow(
      `Turnkey error 5: wallet ${sub.walletId} has no account at m/44'/60'/0'/0/9`,
    )

    const deleteWallets = (deleteWithoutExport?: boolean) =>
      sub.client.deleteWallets({
        ...base,
        type: 'ACTIVITY_TYPE_DELETE_WALLETS',
        timestampMs: timestampMs(),
        parameters: { walletIds: [sub.walletId], ...(deleteWithoutExport ? { deleteWithoutExport } : {}) },
      })
    await expect(deleteWallets()).rejects.toThrow(`Turnkey error 9: wallet ${sub.walletId} has not been exported: export first, or set deleteWithoutExport`)
    await sub.client.exportWallet({
      ...base,
      type: 'ACTIVITY_TYPE_EXPORT_WALLET',
      timestampMs: timestampMs(),
      parameters: { walletId: sub.walletId, targetPublicKey: generateApiKeyPair().apiPublicKey },
    })
    expect((await deleteWallets()).activity.result.deleteWalletsResult).toEqual({ walletIds: [sub.walletId] })
    expect((await sub.client.getWallets(base)).wallets).toEqual([])
    expect((await sub.client.getWalletAccounts(base)).accounts).toEqual([])
  })
})
