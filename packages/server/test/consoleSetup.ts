import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { expect } from 'vitest'
import { generateApiKeyPair, type useBackend } from './backend.js'

// What the operator console's tests share: pending approvals in the parent organization. A user
// of the parent ("bot") may create wallets there only with the backend's approval (a consensus
// policy), so each wallet it asks for waits for the backend's vote.

/**
 * Adds the bot and the policy to the parent organization (once per kms); answers the bot's client,
 * the backend's user id, and `pendingApproval(walletName)`: a new activity waiting for the vote.
 */
export async function parentApprovals(t: ReturnType<typeof useBackend>['t']) {
  const botKey = generateApiKeyPair()
  let stamped = 0
  const backendUserId = (await t.backend.getWhoami({ organizationId: t.parentOrganizationId })).userId
  await t.backend.createUsers({
    type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
    timestampMs: String(t.clock + ++stamped),
    organizationId: t.parentOrganizationId,
    parameters: {
      users: [
        {
          userName: 'bot',
          apiKeys: [{ apiKeyName: 'bot', publicKey: botKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
          authenticators: [],
          oauthProviders: [],
          userTags: [],
        },
      ],
    },
  })
  await t.backend.createPolicies({
    type: 'ACTIVITY_TYPE_CREATE_POLICIES',
    timestampMs: String(t.clock + ++stamped),
    organizationId: t.parentOrganizationId,
    parameters: {
      policies: [
        {
          policyName: 'the backend approves the bot’s wallets',
          effect: 'EFFECT_ALLOW',
          consensus: `approvers.any(user, user.id == '${backendUserId}')`,
          condition: "activity.resource == 'WALLET' && activity.action == 'CREATE'",
          notes: '',
        },
      ],
    },
  })
  const bot = new TurnkeyClient({ baseUrl: t.kms.url }, new ApiKeyStamper(botKey))
  return {
    bot,
    backendUserId,
    async pendingApproval(walletName: string) {
      const { activity } = await bot.createWallet({
        type: 'ACTIVITY_TYPE_CREATE_WALLET',
        timestampMs: String(t.clock + ++stamped),
        organizationId: t.parentOrganizationId,
        parameters: {
          walletName,
          accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
        },
      })
      expect(activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED')
      return activity
    },
  }
}
