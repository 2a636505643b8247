import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { generateApiKeyPair as apiKeyPair, createKms, type Kms } from '../src/index.js'
import { testDatabase } from './database.js'

// Root quorum: in a sub-organization of two root users that needs both, an activity waits in
// ACTIVITY_STATUS_CONSENSUS_NEEDED until the other approves (then it runs) or rejects it.

let kms: Kms
const clock = Date.now()
let nonce = 0
const parentKey = apiKeyPair()
let parentOrganizationId: string

beforeAll(async () => {
  kms = createKms({ port: await getFreePort(), now: () => clock, ...(await testDatabase()) })
  await kms.start()
  parentOrganizationId = (await kms.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })).organizationId
})
afterAll(() => kms.stop())

async function twoOfTwo() {
  const [aliceKey, bobKey] = [apiKeyPair(), apiKeyPair()]
  const root = (name: string, key: ReturnType<typeof apiKeyPair>) => ({
    userName: name,
    apiKeys: [{ apiKeyName: name, publicKey: key.apiPublicKey, curveType: 'API_KEY_CURVE_P256' as const }],
    authenticators: [],
    oauthProviders: [],
  })
  const { activity } = await new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(parentKey)).createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: String(clock),
    organizationId: parentOrganizationId,
    parameters: { subOrganizationName: `pair ${aliceKey.apiPublicKey}`, rootQuorumThreshold: 2, rootUsers: [root('alice', aliceKey), root('bob', bobKey)] },
  })
  const organizationId = activity.result.createSubOrganizationResultV8!.subOrganizationId!
  const client = (keys: ReturnType<typeof apiKeyPair>) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(keys))
  return { organizationId, alice: client(aliceKey), bob: client(bobKey) }
}

const createWallet = (client: TurnkeyClient, organizationId: string, walletName: string) =>
  client.createWallet({
    type: 'ACTIVITY_TYPE_CREATE_WALLET',
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: {
      walletName,
      accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
    },
  })

test('default: the activity waits for the second root user, whose approval runs it', async () => {
  const { organizationId, alice, bob } = await twoOfTwo()
  const { activity } = await createWallet(alice, organizationId, 'Shared')
  expect([activity.status, activity.canApprove, activity.votes.map((vote) => [vote.user.userName, vote.selection])]).toEqual([
    'ACTIVITY_STATUS_CONSENSUS_NEEDED',
    true,
    [['alice', 'VOTE_SELECTION_APPROVED']],
  ])
  expect((await bob.getWallets({ organizationId })).wallets).toEqual([])

  const approved = await bob.approveActivity({
    type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY',
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: { fingerprint: activity.fingerprint },
  })
  expect(approved.activity.id).toBe(activity.id)
  expect(approved.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  expect(approved.activity.result.createWalletResult!.addresses).toHaveLength(1)
  expect((await alice.getWallets({ organizationId })).wallets.map((wallet) => wallet.walletName)).toEqual(['Shared'])
  expect((await alice.getActivity({ organizationId, activityId: activity.id })).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
})

test('behavior: a rejection ends it; it cannot then be approved, and no one votes twice', async () => {
  const { organizationId, alice, bob } = await twoOfTwo()
  const { activity } = await createWallet(alice, organizationId, 'Refused')
  await expect(
    alice.approveActivity({
      type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY',
      timestampMs: String(clock + ++nonce),
      organizationId,
      parameters: { fingerprint: activity.fingerprint },
    }),
  ).rejects.toThrow('Turnkey error 6: you have already voted on this activity')
  const rejected = await bob.rejectActivity({
    type: 'ACTIVITY_TYPE_REJECT_ACTIVITY',
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: { fingerprint: activity.fingerprint },
  })
  expect(rejected.activity.status).toBe('ACTIVITY_STATUS_REJECTED')
  await expect(
    bob.approveActivity({
      type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY',
      timestampMs: String(clock + ++nonce),
      organizationId,
      parameters: { fingerprint: activity.fingerprint },
    }),
  ).rejects.toThrow(`Turnkey error 9: activity ${activity.id} is ACTIVITY_STATUS_REJECTED, not waiting for consensus`)
  expect((await alice.getWallets({ organizationId })).wallets).toEqual([])
})

test('error: an approval that can no longer run leaves the activity FAILED with the reason', async () => {
  const { organizationId, alice, bob } = await twoOfTwo()
  const first = await createWallet(alice, organizationId, 'Twice')
  const second = await createWallet(bob, organizationId, 'Twice')
  await bob.approveActivity({
    type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY',
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: { fingerprint: first.activity.fingerprint },
  })
  const failed = await alice.approveActivity({
    type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY',
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: { fingerprint: second.activity.fingerprint },
  })
  expect([failed.activity.status, failed.activity.failure]).toEqual([
    'ACTIVITY_STATUS_FAILED',
    { code: 6, message: 'a wallet named "Twice" already exists', details: [] },
  ])
})

test('error: a user outside the root quorum cannot vote, and does not count toward a rejection', async () => {
  const { organizationId, alice, bob } = await twoOfTwo()
  // Carol joins as an ordinary user (that too needs both roots).
  const carolKey = apiKeyPair()
  const added = await alice.createUsers({
    type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: {
      users: [
        {
          userName: 'carol',
          apiKeys: [{ apiKeyName: 'carol', publicKey: carolKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
          authenticators: [],
          oauthProviders: [],
          userTags: [],
        },
      ],
    },
  })
  await bob.approveActivity({
    type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY',
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: { fingerprint: added.activity.fingerprint },
  })
  const carol = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(carolKey))
  const { activity } = await createWallet(alice, organizationId, 'Roots only')
  await expect(
    carol.approveActivity({
      type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY',
      timestampMs: String(clock + ++nonce),
      organizationId,
      parameters: { fingerprint: activity.fingerprint },
    }),
  ).rejects.toThrow('Turnkey error 7: only root users vote on activities that need the root quorum')
  expect((await alice.getActivity({ organizationId, activityId: activity.id })).activity).toMatchObject({
    status: 'ACTIVITY_STATUS_CONSENSUS_NEEDED',
    votes: [expect.objectContaining({ selection: 'VOTE_SELECTION_APPROVED' })],
  })
  expect((await alice.getWallets({ organizationId })).wallets.map((wallet) => wallet.walletName)).not.toContain('Roots only')
})
