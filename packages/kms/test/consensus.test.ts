import { getFreePort } from '@latchkey/devnet'
import { p256 } from '@noble/curves/p256'
import { sha256 } from '@noble/hashes/sha2'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { generateApiKeyPair as apiKeyPair, createKms, type Kms } from '../src/index.js'
import { testDatabase } from './database.js'

// Root quorum: in a sub-organization of two root users that needs both, an activity waits in
// ACTIVITY_STATUS_CONSENSUS_NEEDED until the other approves (then it runs) or rejects it.

let kms: Kms
// Moved on by the test of lapsing approvals; every request stamps its time from it.
let clock = Date.now()
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

/** A fresh create_wallet request (its own timestamp) for one Ethereum account. */
const createWalletRequest = (organizationId: string, walletName: string) => ({
  type: 'ACTIVITY_TYPE_CREATE_WALLET' as const,
  timestampMs: String(clock + ++nonce),
  organizationId,
  parameters: {
    walletName,
    accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' } as const],
  },
})

const createWallet = (client: TurnkeyClient, organizationId: string, walletName: string) => client.createWallet(createWalletRequest(organizationId, walletName))

test('default: the activity waits for the second root user, whose approval runs it', async () => {
  const { organizationId, alice, bob } = await twoOfTwo()
  const { activity } = await createWallet(alice, organizationId, 'Shared')
  // The submitter's submission is her approval: she cannot vote again, bob can.
  expect([activity.status, activity.canApprove, activity.canReject, activity.votes.map((vote) => [vote.user.userName, vote.selection])]).toEqual([
    'ACTIVITY_STATUS_CONSENSUS_NEEDED',
    false,
    false,
    [['alice', 'VOTE_SELECTION_APPROVED']],
  ])
  expect((await bob.getActivity({ organizationId, activityId: activity.id })).activity).toMatchObject({ canApprove: true, canReject: true })
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

test('default: each vote lists the stamp it was cast with, which verifies over its message', async () => {
  const { organizationId, alice, bob } = await twoOfTwo()
  const request = createWalletRequest(organizationId, 'Stamped')
  const { activity } = await alice.createWallet(request)
  const approval = {
    type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY' as const,
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: { fingerprint: activity.fingerprint },
  }
  const approved = await bob.approveActivity(approval)
  const [submitted, seconded] = approved.activity.votes
  // The submission is the first vote, stamped over the submission; the approval over its own request.
  expect([JSON.parse(submitted!.message), JSON.parse(seconded!.message)]).toEqual([request, approval])
  expect(approved.activity.votes.map((vote) => [vote.user.userName, vote.scheme, vote.activityId])).toEqual([
    ['alice', 'SIGNATURE_SCHEME_TK_API_P256', activity.id],
    ['bob', 'SIGNATURE_SCHEME_TK_API_P256', activity.id],
  ])
  const { apiKeys: aliceKeys } = (await alice.getApiKeys({ organizationId, userId: submitted!.userId })) as { apiKeys: { credential: { publicKey: string } }[] }
  expect(submitted!.publicKey).toBe(aliceKeys[0]!.credential.publicKey)
  for (const vote of approved.activity.votes)
    expect(p256.verify(vote.signature, sha256(new TextEncoder().encode(vote.message)), vote.publicKey, { lowS: false, prehash: false })).toBe(true)
  // A signature over anything else does not verify.
  expect(p256.verify(seconded!.signature, sha256(new TextEncoder().encode(submitted!.message)), seconded!.publicKey, { lowS: false })).toBe(false)
})

test('behavior: approvals lapse 24 hours after the first vote; the activity keeps waiting, and its voters vote again', async () => {
  const { organizationId, alice, bob } = await twoOfTwo()
  const opened = clock
  const { activity } = await createWallet(alice, organizationId, 'Lapsed')
  const seen = async (client: TurnkeyClient) => {
    const { activity: read } = await client.getActivity({ organizationId, activityId: activity.id })
    return { status: read.status, votes: read.votes.map((vote) => vote.user.userName), canApprove: read.canApprove, canReject: read.canReject }
  }
  clock = opened + 24 * 60 * 60_000 - 1
  expect(await seen(alice)).toEqual({ status: 'ACTIVITY_STATUS_CONSENSUS_NEEDED', votes: ['alice'], canApprove: false, canReject: false })
  // The window closes 24 hours after the first vote: alice's approval no longer counts, and she may vote again.
  clock = opened + 24 * 60 * 60_000
  expect(await seen(alice)).toEqual({ status: 'ACTIVITY_STATUS_CONSENSUS_NEEDED', votes: [], canApprove: true, canReject: true })
  expect((await alice.getActivities({ organizationId, filterByStatus: ['ACTIVITY_STATUS_CONSENSUS_NEEDED'] })).activities.map((listed) => listed.id)).toContain(
    activity.id,
  )
  // Bob's approval alone is no quorum of two: it opens the next window, and nothing runs.
  const second = await vote(bob, organizationId, activity.fingerprint, 'approve')
  expect([second.activity.status, second.activity.votes.map((cast) => cast.user.userName)]).toEqual(['ACTIVITY_STATUS_CONSENSUS_NEEDED', ['bob']])
  expect((await bob.getWallets({ organizationId })).wallets).toEqual([])
  await expect(vote(bob, organizationId, activity.fingerprint, 'approve')).rejects.toThrow('Turnkey error 6: you have already voted on this activity')
  // Alice approves again within bob's window: both count, it runs once.
  clock += 60 * 60_000
  const ran = await vote(alice, organizationId, activity.fingerprint, 'approve')
  expect([ran.activity.status, ran.activity.votes.map((cast) => cast.user.userName)]).toEqual(['ACTIVITY_STATUS_COMPLETED', ['bob', 'alice']])
  expect((await bob.getWallets({ organizationId })).wallets.map((wallet) => wallet.walletName)).toEqual(['Lapsed'])
  // A settled activity keeps the votes that decided it, whenever it is read.
  clock += 48 * 60 * 60_000
  expect(await seen(bob)).toEqual({ status: 'ACTIVITY_STATUS_COMPLETED', votes: ['bob', 'alice'], canApprove: false, canReject: false })
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
          apiKeys: [{ apiKeyName: 'carol', publicKey: carolKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '3600' }],
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

// Policy consensus: an organization whose root user (threshold one) lets its other users act only
// when enough of them approve. The submitter's own submission is the first approval.

type Keys = ReturnType<typeof apiKeyPair>
const apiKey = (name: string, key: Keys) => ({
  apiKeyName: name,
  publicKey: key.apiPublicKey,
  curveType: 'API_KEY_CURVE_P256' as const,
  expirationSeconds: '3600',
})

/** A sub-organization with a root user and three ordinary users, alice and bob tagged `signer`, carol not; `policies` written by the root. */
async function team(
  policies: (ids: {
    alice: string
    bob: string
    carol: string
    signer: string
  }) => { policyName: string; effect: 'EFFECT_ALLOW' | 'EFFECT_DENY'; consensus?: string; condition?: string }[],
) {
  const keys = { root: apiKeyPair(), alice: apiKeyPair(), bob: apiKeyPair(), carol: apiKeyPair() }
  const client = (key: Keys) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(key))
  const { activity } = await client(parentKey).createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: String(clock),
    organizationId: parentOrganizationId,
    parameters: {
      subOrganizationName: `team ${keys.root.apiPublicKey}`,
      rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'root', apiKeys: [apiKey('root', keys.root)], authenticators: [], oauthProviders: [] }],
      wallet: {
        walletName: 'Main',
        accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
      },
    },
  })
  const created = activity.result.createSubOrganizationResultV8!
  const organizationId = created.subOrganizationId!
  const root = client(keys.root)
  const users = await root.createUsers({
    type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: {
      users: (['alice', 'bob', 'carol'] as const).map((name) => ({
        userName: name,
        apiKeys: [apiKey(name, keys[name])],
        authenticators: [],
        oauthProviders: [],
        userTags: [],
      })),
    },
  })
  const [alice, bob, carol] = users.activity.result.createUsersResult!.userIds as [string, string, string]
  const tag = await root.createUserTag({
    type: 'ACTIVITY_TYPE_CREATE_USER_TAG',
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: { userTagName: 'signer', userIds: [alice, bob] },
  })
  const signer = tag.activity.result.createUserTagResult!.userTagId
  const written = await root.createPolicies({
    type: 'ACTIVITY_TYPE_CREATE_POLICIES',
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: { policies: policies({ alice, bob, carol, signer }).map((policy) => ({ notes: '', ...policy })) },
  })
  return {
    organizationId,
    address: created.wallet!.addresses[0] as `0x${string}`,
    ids: { alice, bob, carol },
    policyIds: written.activity.result.createPoliciesResult!.policyIds,
    root,
    alice: client(keys.alice),
    bob: client(keys.bob),
    carol: client(keys.carol),
  }
}

const vote = (client: TurnkeyClient, organizationId: string, fingerprint: string, selection: 'approve' | 'reject') =>
  selection === 'approve'
    ? client.approveActivity({ type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY', timestampMs: String(clock + ++nonce), organizationId, parameters: { fingerprint } })
    : client.rejectActivity({ type: 'ACTIVITY_TYPE_REJECT_ACTIVITY', timestampMs: String(clock + ++nonce), organizationId, parameters: { fingerprint } })

/** The organization's wallet names, sorted (the test clock stands still, so creation order ties). */
const walletNames = async (client: TurnkeyClient, organizationId: string) =>
  (await client.getWallets({ organizationId })).wallets.map((wallet) => wallet.walletName).sort()

test('policy consensus: approvers.count() >= 2 waits with nothing written; a second user’s approval runs it once', async () => {
  const { organizationId, alice, bob, root, ids, policyIds } = await team(() => [
    {
      policyName: 'two approvers, with two credentials, create wallets',
      effect: 'EFFECT_ALLOW',
      consensus: 'approvers.count() >= 2 && credentials.count() >= 2',
      condition: "activity.resource == 'WALLET' && activity.action == 'CREATE'",
    },
  ])
  const request = createWalletRequest(organizationId, 'Team')
  const { activity } = await alice.createWallet(request)
  expect([activity.status, activity.canApprove, activity.votes.map((cast) => [cast.userId, cast.selection])]).toEqual([
    'ACTIVITY_STATUS_CONSENSUS_NEEDED',
    false,
    [[ids.alice, 'VOTE_SELECTION_APPROVED']],
  ])
  expect((await bob.getActivity({ organizationId, activityId: activity.id })).activity).toMatchObject({ canApprove: true, canReject: true })
  expect(activity.result).toEqual({})
  expect(await walletNames(root, organizationId)).toEqual(['Main'])
  // Waiting activities are found as Turnkey lists them.
  const waiting = await root.getActivities({ organizationId, filterByStatus: ['ACTIVITY_STATUS_CONSENSUS_NEEDED'] })
  expect(waiting.activities.map((listed) => listed.id)).toEqual([activity.id])
  // The same bytes again answer the same waiting activity; they do not add a second one.
  expect((await alice.createWallet(request)).activity).toMatchObject({ id: activity.id, status: 'ACTIVITY_STATUS_CONSENSUS_NEEDED' })

  const approved = await vote(bob, organizationId, activity.fingerprint, 'approve')
  expect(approved.activity).toMatchObject({ id: activity.id, status: 'ACTIVITY_STATUS_COMPLETED', canApprove: false })
  expect(approved.activity.votes.map((cast) => [cast.userId, cast.selection])).toEqual([
    [ids.alice, 'VOTE_SELECTION_APPROVED'],
    [ids.bob, 'VOTE_SELECTION_APPROVED'],
  ])
  // The policy engine decided twice: on the submission (its first vote) and on bob's approval.
  const [policyId] = policyIds as [string]
  const { policyEvaluations } = await root.getPolicyEvaluations({ organizationId, activityId: activity.id })
  expect(
    policyEvaluations.map(({ activityId, organizationId: organization, voteId, policyEvaluations: outcomes }) => ({
      activityId,
      organization,
      voteId,
      outcomes,
    })),
  ).toEqual([
    { activityId: activity.id, organization: organizationId, voteId: activity.votes[0]!.id, outcomes: [{ policyId, outcome: 'OUTCOME_DENY_IMPLICIT' }] },
    { activityId: activity.id, organization: organizationId, voteId: approved.activity.votes[1]!.id, outcomes: [{ policyId, outcome: 'OUTCOME_ALLOW' }] },
  ])
  const walletId = approved.activity.result.createWalletResult!.walletId
  expect(await walletNames(root, organizationId)).toEqual(['Main', 'Team'])
  expect((await root.getActivity({ organizationId, activityId: activity.id })).activity.result.createWalletResult!.walletId).toBe(walletId)
  // Resubmitted once it ran: the completed activity, still one wallet.
  expect((await alice.createWallet(request)).activity).toMatchObject({ id: activity.id, status: 'ACTIVITY_STATUS_COMPLETED' })
  expect(await walletNames(root, organizationId)).toEqual(['Main', 'Team'])
})

test('policy consensus: two approvals at once run the activity exactly once', async () => {
  const { organizationId, alice, bob, carol, root } = await team(() => [
    { policyName: 'two approvers', effect: 'EFFECT_ALLOW', consensus: 'approvers.count() >= 2', condition: "activity.resource == 'USER'" },
  ])
  // A user: nothing unique about one, so a second run would show as a second user.
  const { activity } = await alice.createUsers({
    type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: { users: [{ userName: 'Raced', apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }] },
  })
  expect(activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED')
  const answers = await Promise.allSettled([
    vote(bob, organizationId, activity.fingerprint, 'approve'),
    vote(carol, organizationId, activity.fingerprint, 'approve'),
  ])
  const completed = answers.filter((answer) => answer.status === 'fulfilled')
  expect(completed.length).toBeGreaterThanOrEqual(1)
  for (const answer of completed) expect(answer.value.activity).toMatchObject({ id: activity.id, status: 'ACTIVITY_STATUS_COMPLETED' })
  // A vote that came after the run finds it settled.
  for (const answer of answers.filter((answer) => answer.status === 'rejected'))
    expect(String(answer.reason)).toContain(`Turnkey error 9: activity ${activity.id} is ACTIVITY_STATUS_COMPLETED, not waiting for consensus`)
  expect((await root.getUsers({ organizationId })).users.filter((user) => user.userName === 'Raced')).toHaveLength(1)
})

test('policy consensus over tags: an untagged approval does not count; rejections end it once neither a policy nor the root quorum can pass it', async () => {
  const { organizationId, alice, bob, carol, root, ids } = await team(({ signer }) => [
    {
      policyName: 'two signers create wallets',
      effect: 'EFFECT_ALLOW',
      consensus: `approvers.filter(user, user.tags.contains('${signer}')).count() >= 2`,
      condition: "activity.resource == 'WALLET' && activity.action == 'CREATE'",
    },
  ])
  const { activity } = await createWallet(alice, organizationId, 'Signed')
  expect(activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED')
  expect((await vote(carol, organizationId, activity.fingerprint, 'approve')).activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED')
  // Bob, the other signer, refuses: no policy can pass it now, but the root user still could.
  expect((await vote(bob, organizationId, activity.fingerprint, 'reject')).activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED')
  const rejected = await vote(root, organizationId, activity.fingerprint, 'reject')
  expect(rejected.activity.status).toBe('ACTIVITY_STATUS_REJECTED')
  expect(rejected.activity.votes.map((cast) => [cast.userId, cast.selection])).toEqual([
    [ids.alice, 'VOTE_SELECTION_APPROVED'],
    [ids.carol, 'VOTE_SELECTION_APPROVED'],
    [ids.bob, 'VOTE_SELECTION_REJECTED'],
    [expect.any(String), 'VOTE_SELECTION_REJECTED'],
  ])
  expect(await walletNames(root, organizationId)).toEqual(['Main'])

  // Another one: the root user's approval is a quorum of root users, which no policy needs to allow.
  const second = await createWallet(bob, organizationId, 'Root approved')
  expect((await vote(root, organizationId, second.activity.fingerprint, 'approve')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  expect(await walletNames(root, organizationId)).toEqual(['Main', 'Root approved'])
})

test('policy consensus: an approval that makes a DENY apply is refused as Turnkey refuses, and writes nothing', async () => {
  const { organizationId, alice, bob, carol, root, policyIds, ids } = await team(({ carol }) => [
    { policyName: 'two approvers', effect: 'EFFECT_ALLOW', consensus: 'approvers.count() >= 2', condition: "activity.resource == 'WALLET'" },
    {
      policyName: 'not with carol',
      effect: 'EFFECT_DENY',
      consensus: `approvers.any(user, user.id == '${carol}')`,
      condition: "activity.resource == 'WALLET'",
    },
  ])
  const { activity } = await createWallet(alice, organizationId, 'Without carol')
  const [allow, deny] = policyIds as [string, string]
  // Each caller reads what their own vote could do: carol may reject but not approve, bob either, alice (voted) neither.
  const standing = async (client: TurnkeyClient) => {
    const { activity: read } = await client.getActivity({ organizationId, activityId: activity.id })
    const { activities } = await client.getActivities({ organizationId, filterByStatus: ['ACTIVITY_STATUS_CONSENSUS_NEEDED'] })
    const listed = activities.find((candidate) => candidate.id === activity.id)!
    expect([listed.canApprove, listed.canReject]).toEqual([read.canApprove, read.canReject])
    return [read.canApprove, read.canReject]
  }
  expect([await standing(carol), await standing(bob), await standing(alice), await standing(root)]).toEqual([
    [false, true],
    [true, true],
    [false, false],
    [true, true],
  ])
  const refused = await vote(carol, organizationId, activity.fingerprint, 'approve').then(
    () => undefined,
    (error: { code?: number; details?: unknown }) => error,
  )
  expect(refused).toMatchObject({
    code: 7,
    details: [
      {
        '@type': 'type.googleapis.com/errors.v1.PolicyEnginePermissionError',
        message: `The following policies denied this action: ${deny}`,
        policyEvaluations: [
          { policyId: allow, outcome: 'OUTCOME_ALLOW' },
          { policyId: deny, outcome: 'OUTCOME_DENY_EXPLICIT' },
        ],
      },
    ],
  })
  const still = (await root.getActivity({ organizationId, activityId: activity.id })).activity
  expect([still.status, still.votes.map((cast) => cast.userId)]).toEqual(['ACTIVITY_STATUS_CONSENSUS_NEEDED', [ids.alice]])
  expect((await vote(bob, organizationId, activity.fingerprint, 'approve')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  expect(await walletNames(root, organizationId)).toEqual(['Main', 'Without carol'])
})

test('policy consensus: no policy that more approvals could satisfy is a denial at once; a user of another organization cannot vote', async () => {
  const { organizationId, alice, root, policyIds } = await team(() => [
    { policyName: 'two approvers sign', effect: 'EFFECT_ALLOW', consensus: 'approvers.count() >= 2', condition: "activity.action == 'SIGN'" },
  ])
  const before = (await root.getActivities({ organizationId })).activities.length
  await expect(createWallet(alice, organizationId, 'Nobody could allow')).rejects.toMatchObject({
    code: 7,
    details: [{ message: 'No policies evaluated to outcome: Allow', policyEvaluations: [{ policyId: policyIds[0], outcome: 'OUTCOME_DENY_IMPLICIT' }] }],
  })
  expect((await root.getActivities({ organizationId })).activities).toHaveLength(before)

  const waiting = await alice.signRawPayload({
    type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
    timestampMs: String(clock + ++nonce),
    organizationId,
    parameters: {
      signWith: (await root.getWalletAccounts({ organizationId, walletId: (await root.getWallets({ organizationId })).wallets[0]!.walletId })).accounts[0]!
        .address,
      payload: '0x1901',
      encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
      hashFunction: 'HASH_FUNCTION_KECCAK256',
    },
  })
  expect(waiting.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED')
  const parent = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(parentKey))
  // The parent organization reads the activity, and is told it cannot vote on it.
  expect((await parent.getActivity({ organizationId, activityId: waiting.activity.id })).activity).toMatchObject({ canApprove: false, canReject: false })
  await expect(vote(parent, organizationId, waiting.activity.fingerprint, 'approve')).rejects.toThrow(
    'Turnkey error 7: only the organization’s own users vote on its activities',
  )
})
