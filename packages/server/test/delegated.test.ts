import { randomBytes } from 'node:crypto'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { Turnkey } from '@turnkey/sdk-server'
import { toPrefixedMessage } from 'viem'
import { describe, expect, test } from 'vitest'
import { DELEGATED_USER_PREFIX, delegatedKey, delegatedPolicies } from '../src/internal/delegated.js'
import { generateApiKeyPair, newEmail, softwareAuthenticator, useBackend } from './backend.js'

// Delegated access against a real kms that enforces Turnkey's permission model: every
// sub-organization the backend creates holds a policy-limited user with a key only the backend can
// derive; the parent organization's key may not write there; sign-out deletes the session's key
// through the delegated user, which may do what its policy allows and nothing else.

const { t, post, signedInByEmail, signedUpWithPasskey } = useBackend()

const POLICY_DENIED =
  "Turnkey error 7: You don't have sufficient permissions to take this action. Please add a policy granting this user permissions. Learn more at https://docs.turnkey.com/concepts/policies/quickstart."

/** The delegated user of a sub-organization, and a client holding its key. */
async function delegatedOf(organizationId: string) {
  const { users } = await t.backend.getUsers({ organizationId })
  const user = users.find((candidate) => candidate.userName.startsWith(DELEGATED_USER_PREFIX))!
  const keys = delegatedKey(t.backendKey.apiPrivateKey, user.userName.slice(DELEGATED_USER_PREFIX.length))
  return { user, keys, client: new TurnkeyClient({ baseUrl: t.kms.url }, new ApiKeyStamper(keys)) }
}

describe('delegated access', () => {
  for (const [kind, signUp] of [
    ['passkey', () => signedUpWithPasskey({ email: newEmail() })],
    ['email', () => signedInByEmail(newEmail())],
  ] as const)
    test(`default: every ${kind} sign-up leaves the end user the only root user, and the delegated user its two policies`, async () => {
      const account = await signUp()
      const { organizationData } = await t.backend.getOrganization({ organizationId: account.organizationId })
      expect(organizationData.rootQuorum).toEqual({ threshold: 1, userIds: [account.userId] })
      const delegated = await delegatedOf(account.organizationId)
      expect(delegated.user.apiKeys.map((key) => key.credential.publicKey)).toEqual([delegated.keys.apiPublicKey])
      const { policies } = await t.backend.getPolicies({ organizationId: account.organizationId })
      expect(policies.map(({ effect, consensus, condition }) => ({ effect, consensus, condition }))).toEqual(
        delegatedPolicies(account.userId, delegated.user.userId).map(({ effect, consensus, condition }) => ({ effect, consensus, condition })),
      )
    })

  test('behavior: the parent organization’s key may neither register nor delete a key in the sub-organization; sign-out deletes, as the delegated user', async () => {
    const account = await signedUpWithPasskey()
    const key = generateApiKeyPair()
    await expect(
      t.backend.createApiKeys({
        type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
        timestampMs: String(++t.clock),
        organizationId: account.organizationId,
        parameters: { userId: account.userId, apiKeys: [{ apiKeyName: 'direct', publicKey: key.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }] },
      }),
    ).rejects.toThrow(POLICY_DENIED)
    const { apiKeys } = await t.backend.getApiKeys({ organizationId: account.organizationId, userId: account.userId })
    await expect(
      t.backend.deleteApiKeys({
        type: 'ACTIVITY_TYPE_DELETE_API_KEYS',
        timestampMs: String(++t.clock),
        organizationId: account.organizationId,
        parameters: { userId: account.userId, apiKeyIds: apiKeys.map((apiKey) => apiKey.apiKeyId) },
      }),
    ).rejects.toThrow(POLICY_DENIED)
    expect((await post('/auth/signout', {}, { cookie: account.cookie })).status).toBe(204)
    const { activities } = await t.backend.getActivities({ organizationId: account.organizationId, filterByType: ['ACTIVITY_TYPE_DELETE_API_KEYS'] })
    // One deletion, completed: not the parent's (refused above), so the delegated user's.
    expect(activities.map((activity) => activity.status)).toEqual(['ACTIVITY_STATUS_COMPLETED'])
    expect((await t.backend.getApiKeys({ organizationId: account.organizationId, userId: account.userId })).apiKeys).toEqual([])
  })

  test('error: the delegated user can do nothing else (@turnkey/sdk-server as its client): no wallet, no signature, no way back into the root quorum', async () => {
    const account = await signedUpWithPasskey()
    const { keys, user } = await delegatedOf(account.organizationId)
    const sdk = new Turnkey({ apiBaseUrl: t.kms.url, ...keys, defaultOrganizationId: account.organizationId }).apiClient()
    const { wallets } = await sdk.getWallets()
    const denied = { code: 7, details: [{ message: 'No policies evaluated to outcome: Allow' }] }
    await expect(sdk.createWallet({ walletName: 'not allowed', accounts: [] })).rejects.toMatchObject(denied)
    await expect(
      sdk.signRawPayload({
        signWith: account.address,
        payload: toPrefixedMessage('hello'),
        encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
        hashFunction: 'HASH_FUNCTION_KECCAK256',
      }),
    ).rejects.toMatchObject(denied)
    await expect(sdk.updateRootQuorum({ threshold: 1, userIds: [account.userId, user.userId] })).rejects.toMatchObject(denied)
    expect((await sdk.getWallets()).wallets).toEqual(wallets)
    expect((await t.backend.getOrganization({ organizationId: account.organizationId })).organizationData.rootQuorum).toEqual({
      threshold: 1,
      userIds: [account.userId],
    })
  })

  test('error: with only the backend’s key, no key without an expiry or over 86400 s for the end user, none for another user, no OAuth claims; a 900 s key still works', async () => {
    const account = await signedUpWithPasskey()
    const { client } = await delegatedOf(account.organizationId)
    const createKey = (userId: string, expirationSeconds?: string) =>
      client.createApiKeys({
        type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
        timestampMs: String(++t.clock),
        organizationId: account.organizationId,
        parameters: {
          userId,
          apiKeys: [
            {
              apiKeyName: 'stolen',
              publicKey: generateApiKeyPair().apiPublicKey,
              curveType: 'API_KEY_CURVE_P256',
              ...(expirationSeconds ? { expirationSeconds } : {}),
            },
          ],
        },
      })
    const keysBefore = (await t.backend.getApiKeys({ organizationId: account.organizationId, userId: account.userId })).apiKeys.length
    await expect(createKey(account.userId)).rejects.toThrow(POLICY_DENIED)
    await expect(createKey(account.userId, '86401')).rejects.toThrow(POLICY_DENIED)
    await expect(createKey('another-user', '900')).rejects.toThrow(POLICY_DENIED)
    await expect(
      client.createOauthProviders({
        type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
        timestampMs: String(++t.clock),
        organizationId: account.organizationId,
        parameters: {
          userId: account.userId,
          oauthProviders: [{ providerName: 'google', oidcClaims: { iss: 'https://accounts.google.com', sub: 'attacker', aud: 'app' } }],
        },
      }),
    ).rejects.toThrow(POLICY_DENIED)
    expect((await t.backend.getApiKeys({ organizationId: account.organizationId, userId: account.userId })).apiKeys).toHaveLength(keysBefore)
    expect((await createKey(account.userId, '900')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  })

  test('error: the backend’s key adds no way in: no passkey and no email for the end user (their own key does, in the consent frame); it may only remove the email', async () => {
    const account = await signedUpWithPasskey({ email: newEmail() })
    const { client, user } = await delegatedOf(account.organizationId)
    const at = () => String(++t.clock)
    const { user: before } = await t.backend.getUser({ organizationId: account.organizationId, userId: account.userId })
    for (const userId of [account.userId, user.userId, 'another-user'])
      await expect(
        client.updateUserEmail({
          type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
          timestampMs: at(),
          organizationId: account.organizationId,
          parameters: { userId, userEmail: 'attacker@example.test' },
        }),
      ).rejects.toThrow(POLICY_DENIED)
    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    await expect(
      client.createAuthenticators({
        type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
        timestampMs: at(),
        organizationId: account.organizationId,
        parameters: {
          userId: account.userId,
          authenticators: [{ authenticatorName: 'attacker', challenge, attestation: authenticator.register(challenge) as never }],
        },
      }),
    ).rejects.toThrow(POLICY_DENIED)
    await expect(
      client.deleteAuthenticators({
        type: 'ACTIVITY_TYPE_DELETE_AUTHENTICATORS',
        timestampMs: at(),
        organizationId: account.organizationId,
        parameters: { userId: 'another-user', authenticatorIds: ['none'] },
      }),
    ).rejects.toThrow(POLICY_DENIED)
    const { user: after } = await t.backend.getUser({ organizationId: account.organizationId, userId: account.userId })
    expect(after.userEmail).toBe(before.userEmail)
    expect(after.authenticators).toHaveLength(before.authenticators.length)
    // For the end user it may remove the email (an unlinked email login), and only that.
    const done = await client.updateUserEmail({
      type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
      timestampMs: at(),
      organizationId: account.organizationId,
      parameters: { userId: account.userId, userEmail: '' },
    })
    expect(done.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect((await t.backend.getUser({ organizationId: account.organizationId, userId: account.userId })).user.userEmail ?? null).toBe(null)
  })

  test('behavior: an account whose sub-organization has no delegated user still signs out; its keys are left to its owner', async () => {
    const account = await signedUpWithPasskey()
    const delegated = await delegatedOf(account.organizationId)
    // The end user removes the backend's delegated user from their sub-organization.
    const endUser = new TurnkeyClient({ baseUrl: t.kms.url }, new ApiKeyStamper(account.sessionKey))
    await endUser.deleteUsers({
      type: 'ACTIVITY_TYPE_DELETE_USERS',
      timestampMs: String(++t.clock),
      organizationId: account.organizationId,
      parameters: { userIds: [delegated.user.userId] },
    })
    // A fresh app over the same store: nothing cached about the sub-organization.
    const fresh = (await import('../src/index.js')).createServerApp(t.options)
    const response = await fresh.request('/auth/signout', {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json', origin: 'http://localhost:5173', cookie: account.cookie },
    })
    expect(response.status).toBe(204)
    expect(await (await fresh.request('/auth/session', { headers: { cookie: account.cookie } })).json()).toBeNull()
    const { apiKeys } = await t.backend.getApiKeys({ organizationId: account.organizationId, userId: account.userId })
    expect(apiKeys.map((apiKey) => apiKey.credential.publicKey)).toContain(account.sessionKey.apiPublicKey)
  })
})
