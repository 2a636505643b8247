import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair, type Kms } from '../src/index.js'
import { ethereumAccount, startKms } from './harness.js'

// Activities' rate limits per API key and per organization (http/rateLimit.ts): counted in the
// store before the activity runs, refused beyond with 429 and Turnkey's error shape, nothing written.

type Harness = Awaited<ReturnType<typeof startKms>>
type Keys = ReturnType<typeof generateApiKeyPair>

/** Submits create_wallet (named `name`, with `accounts` accounts) stamped by `keys`: the status, the body and Retry-After. */
async function createWallet(harness: Harness, kms: Kms, keys: Keys, organizationId: string, name: string, accounts = 0) {
  const text = JSON.stringify({
    type: 'ACTIVITY_TYPE_CREATE_WALLET',
    timestampMs: harness.timestampMs(),
    organizationId,
    parameters: {
      walletName: name,
      accounts: Array.from({ length: accounts }, (_, index) => ({ ...ethereumAccount, path: `m/44'/60'/0'/0/${index}` })),
    },
  })
  const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(keys).stamp(text)
  const response = await fetch(`${kms.url}/public/v1/submit/create_wallet`, { method: 'POST', body: text, headers: { [stampHeaderName]: stampHeaderValue } })
  return { status: response.status, body: (await response.json()) as Record<string, unknown>, retryAfter: response.headers.get('retry-after') }
}

const walletNames = async (sub: Awaited<ReturnType<Harness['subOrganization']>>) =>
  (await sub.client.getWallets({ organizationId: sub.organizationId })).wallets.map((wallet) => wallet.walletName)

describe('per API key', () => {
  let harness: Harness
  beforeAll(async () => {
    harness = await startKms({ rateLimits: { perApiKey: 12, perOrganization: 0, windowMs: 60_000 } })
  })
  afterAll(() => harness.kms.stop())
  /** A sub-organization, made in a window of its own: making one costs the parent's key 11 units. */
  const fresh = async () => {
    harness.clock.now += 60_000
    return await harness.subOrganization()
  }

  test('error: beyond the limit an activity is refused with 429, Retry-After and code 8, and writes nothing; the next window admits it', async () => {
    const sub = await fresh()
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l'])
      expect((await createWallet(harness, harness.kms, sub.keys, sub.organizationId, name)).status).toBe(200)
    const refused = await createWallet(harness, harness.kms, sub.keys, sub.organizationId, 'over')
    expect(refused).toEqual({ status: 429, body: { code: 8, message: 'rate limit exceeded for this API key: retry in 60 s', details: [] }, retryAfter: '60' })
    expect(await walletNames(sub)).not.toContain('over')
    harness.clock.now += 60_000
    expect((await createWallet(harness, harness.kms, sub.keys, sub.organizationId, 'next window')).status).toBe(200)
  })

  test('behavior: an activity deriving accounts costs 1 unit plus 10 per account', async () => {
    const sub = await fresh()
    // 1 + 10 = 11 of the 12 units; one more account would be 11 more.
    expect((await createWallet(harness, harness.kms, sub.keys, sub.organizationId, 'one account', 1)).status).toBe(200)
    const refused = await createWallet(harness, harness.kms, sub.keys, sub.organizationId, 'second', 1)
    expect([refused.status, refused.body['message']]).toEqual([429, 'rate limit exceeded for this API key: retry in 60 s'])
    expect((await walletNames(sub)).sort()).toEqual(['Turnkey HD', 'one account'])
  })

  test('behavior: another key is counted apart', async () => {
    const first = await fresh()
    const second = await fresh()
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l'])
      expect((await createWallet(harness, harness.kms, first.keys, first.organizationId, name)).status).toBe(200)
    expect((await createWallet(harness, harness.kms, first.keys, first.organizationId, 'over')).status).toBe(429)
    expect((await createWallet(harness, harness.kms, second.keys, second.organizationId, 'other key')).status).toBe(200)
  })
})

describe('per organization', () => {
  let harness: Harness
  beforeAll(async () => {
    harness = await startKms({ rateLimits: { perApiKey: 0, perOrganization: 25, windowMs: 10_000 } })
  })
  afterAll(() => harness.kms.stop())

  test("error: the organization's keys share one count", async () => {
    const sub = await harness.subOrganization()
    // A second key of the same user: a different key, the same organization.
    const other = generateApiKeyPair()
    await sub.client.createApiKeys({
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        userId: sub.userId,
        apiKeys: [{ apiKeyName: 'other', publicKey: other.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '3600' }],
      },
    })
    // 1 unit for the key, then 11 for each wallet of one account: the third is over 25.
    expect((await createWallet(harness, harness.kms, sub.keys, sub.organizationId, 'one', 1)).status).toBe(200)
    expect((await createWallet(harness, harness.kms, other, sub.organizationId, 'two', 1)).status).toBe(200)
    const refused = await createWallet(harness, harness.kms, other, sub.organizationId, 'three', 1)
    expect(refused).toEqual({
      status: 429,
      body: { code: 8, message: `rate limit exceeded for organization ${sub.organizationId}: retry in 10 s`, details: [] },
      retryAfter: '10',
    })
    expect((await walletNames(sub)).sort()).toEqual(['Turnkey HD', 'one', 'two'])
  })
})
