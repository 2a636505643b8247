import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Kysely } from 'kysely'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair } from '../src/index.js'
import { MAX_ACCOUNTS_PER_WALLET } from '../src/lists.js'
import { connect, type TestDatabase, testDatabase } from './database.js'
import { ethereumAccount, post, startKms } from './harness.js'

// Every list in a request has a maximum (src/lists.ts): a request beyond it is refused as a bad
// parameter before any work, and writes nothing (security review M4: one create_wallet of 1,900
// accounts held the event loop for 5.6 s).

let harness: Awaited<ReturnType<typeof startKms>>
// A file, not :memory:, so a second connection can fill a wallet without deriving 1,000 keys.
const dir = mkdtempSync(join(tmpdir(), 'latchkey-kms-lists-'))
let database: TestDatabase
beforeAll(async () => {
  database = await testDatabase(join(dir, 'kms.db'))
  harness = await startKms(database)
})
afterAll(async () => {
  await harness.kms.stop()
  rmSync(dir, { recursive: true, force: true })
})

const accounts = (count: number, from = 0) => Array.from({ length: count }, (_, index) => ({ ...ethereumAccount, path: `m/44'/60'/0'/0/${from + index}` }))
const apiKey = (index: number) => ({ apiKeyName: `key ${index}`, publicKey: generateApiKeyPair().apiPublicKey, curveType: 'API_KEY_CURVE_P256' as const })

describe('list maxima', () => {
  test("error: the review's create_wallet of 1,900 accounts is refused and writes nothing", async () => {
    const sub = await harness.subOrganization()
    const activitiesBefore = (await sub.client.getActivities({ organizationId: sub.organizationId })).activities.length
    const answer = await post(harness.kms, sub.keys, '/public/v1/submit/create_wallet', {
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { walletName: 'flood', accounts: accounts(1900) },
    })
    expect(answer.status).toBe(400)
    expect(answer.body).toMatchObject({ code: 3, message: 'invalid parameters: accounts: at most 100 accounts in one request' })
    expect((await sub.client.getWallets({ organizationId: sub.organizationId })).wallets.map((wallet) => wallet.walletName)).toEqual(['Turnkey HD'])
    expect((await sub.client.getActivities({ organizationId: sub.organizationId })).activities).toHaveLength(activitiesBefore)
  })

  test('default: a create_wallet of 100 accounts is accepted', async () => {
    const sub = await harness.subOrganization()
    const { activity } = await sub.client.createWallet({
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { walletName: 'hundred', accounts: accounts(100) },
    })
    expect(activity.result.createWalletResult!.addresses).toHaveLength(100)
  })

  test('error: a wallet holds at most 1,000 accounts: the request beyond is refused', async () => {
    const sub = await harness.subOrganization()
    // The harness's wallet holds one account; the rest are stand-in rows (only their number counts here).
    const store = connect(database)
    try {
      const rows = Array.from({ length: MAX_ACCOUNTS_PER_WALLET - 1 }, (_, index) => ({
        id: randomUUID(),
        wallet_id: sub.walletId,
        organization_id: sub.organizationId,
        curve: 'CURVE_SECP256K1',
        path_format: 'PATH_FORMAT_BIP32',
        path: `m/44'/60'/0'/0/${index + 1}`,
        address_format: 'ADDRESS_FORMAT_ETHEREUM',
        address: `0x${(index + 1).toString(16).padStart(40, '0')}`,
        public_key: '02',
        created_at: Date.now(),
        sealed_private_key: 'stand-in',
      }))
      await (store.kysely as Kysely<{ wallet_accounts: (typeof rows)[number] }>).insertInto('wallet_accounts').values(rows).execute()
    } finally {
      await store.close()
    }
    await expect(
      sub.client.createWalletAccounts({
        type: 'ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { walletId: sub.walletId, accounts: accounts(1, MAX_ACCOUNTS_PER_WALLET) },
      }),
    ).rejects.toThrow(`Turnkey error 9: a wallet holds at most 1000 accounts: wallet ${sub.walletId} has 1000, and 1 more were asked for`)
  })

  test('error: create_wallet_accounts of 101 accounts is refused', async () => {
    const sub = await harness.subOrganization()
    const answer = await post(harness.kms, sub.keys, '/public/v1/submit/create_wallet_accounts', {
      type: 'ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { walletId: sub.walletId, accounts: accounts(101, 1) },
    })
    expect(answer.body).toMatchObject({ code: 3, message: 'invalid parameters: accounts: at most 100 accounts in one request' })
  })

  test("error: create_sub_organization's wallet of 101 accounts, 101 root users, or 101 keys of a root user is refused and creates nothing", async () => {
    const { backend, parent, timestampMs } = harness
    const before = (await backend.getSubOrgIds({ organizationId: parent.organizationId })).organizationIds.length
    const rootUser = (apiKeys: ReturnType<typeof apiKey>[]) => ({ userName: 'root', apiKeys, authenticators: [], oauthProviders: [] })
    const submit = (parameters: Record<string, unknown>) =>
      post(harness.kms, harness.parentKey, '/public/v1/submit/create_sub_organization', {
        type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
        timestampMs: timestampMs(),
        organizationId: parent.organizationId,
        parameters: { subOrganizationName: `too big ${timestampMs()}`, rootQuorumThreshold: 1, rootUsers: [rootUser([apiKey(0)])], ...parameters },
      })
    expect((await submit({ wallet: { walletName: 'w', accounts: accounts(101) } })).body).toMatchObject({
      code: 3,
      message: 'invalid parameters: wallet.accounts: at most 100 accounts in one request',
    })
    expect((await submit({ rootUsers: Array.from({ length: 101 }, () => rootUser([])) })).body).toMatchObject({
      code: 3,
      message: 'invalid parameters: rootUsers: at most 100 root users in one request',
    })
    expect((await submit({ rootUsers: [rootUser(Array.from({ length: 101 }, (_, index) => apiKey(index)))] })).body).toMatchObject({
      code: 3,
      message: 'invalid parameters: rootUsers.0.apiKeys: at most 100 API keys in one request',
    })
    expect((await backend.getSubOrgIds({ organizationId: parent.organizationId })).organizationIds).toHaveLength(before)
  })

  test('error: create_api_keys, create_users and create_authenticators beyond 100 items are refused', async () => {
    const sub = await harness.subOrganization()
    const submit = (op: string, type: string, parameters: Record<string, unknown>) =>
      post(harness.kms, sub.keys, `/public/v1/submit/${op}`, { type, timestampMs: harness.timestampMs(), organizationId: sub.organizationId, parameters })
    const keys = Array.from({ length: 101 }, (_, index) => apiKey(index))
    expect((await submit('create_api_keys', 'ACTIVITY_TYPE_CREATE_API_KEYS_V2', { userId: sub.userId, apiKeys: keys })).body).toMatchObject({
      code: 3,
      message: 'invalid parameters: apiKeys: at most 100 API keys in one request',
    })
    const users = Array.from({ length: 101 }, (_, index) => ({ userName: `u${index}`, apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }))
    expect((await submit('create_users', 'ACTIVITY_TYPE_CREATE_USERS_V4', { users })).body).toMatchObject({
      code: 3,
      message: 'invalid parameters: users: at most 100 users in one request',
    })
    const authenticator = {
      authenticatorName: 'a',
      challenge: 'c',
      attestation: { credentialId: 'x', clientDataJson: 'x', attestationObject: 'x', transports: [] },
    }
    expect(
      (await submit('create_authenticators', 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2', { userId: sub.userId, authenticators: Array(101).fill(authenticator) }))
        .body,
    ).toMatchObject({ code: 3, message: 'invalid parameters: authenticators: at most 100 authenticators in one request' })
    const { apiKeys } = await sub.client.getApiKeys({ organizationId: sub.organizationId, userId: sub.userId })
    expect(apiKeys).toHaveLength(1)
  })
})
