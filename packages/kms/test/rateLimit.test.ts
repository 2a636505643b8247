import { randomBytes } from 'node:crypto'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type AuditEventRow, createAuditTrail } from '@latchkey/service/database'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createKmsApp } from '../src/app.js'
import { type Db, openDatabase } from '../src/db.js'
import { createRateLimiter } from '../src/http/rateLimit.js'
import { generateApiKeyPair, type Kms } from '../src/index.js'
import { connect, testDatabase } from './database.js'
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

describe('a flood, refused from memory', () => {
  /** The real store, with every statement it is asked for counted. */
  function countingStore(db: Db) {
    const calls: string[] = []
    const spy = new Proxy(db, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown
        if (name === 'auditStorage') return { ...db.auditStorage, transaction: (work: never) => (calls.push('audit'), db.auditStorage.transaction(work)) }
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          calls.push(String(name))
          return (value as (...args: unknown[]) => unknown).apply(target, args)
        }
      },
    })
    return { spy, calls }
  }

  test("behavior: a key over its window is refused before any statement, its refusals summarised in one audit event; another key's signing is still served", async () => {
    // The organizations come from one instance; a second instance on the same database, its store counted, takes the flood.
    const database = await testDatabase(join(await mkdtemp(join(tmpdir(), 'latchkey-kms-flood-')), 'kms.db'))
    const masterKey = randomBytes(32)
    const harness = await startKms({ ...database, masterKey, rateLimits: false })
    const store = openDatabase('databaseUrl' in database ? database.databaseUrl : database.databasePath)
    const { spy, calls } = countingStore(store)
    const audit = createAuditTrail({ service: 'kms', storage: store.auditStorage, key: new Uint8Array(32) })
    const limiter = createRateLimiter({ db: spy, limits: { perApiKey: 12, perOrganization: 0, windowMs: 60_000 }, now: () => harness.clock.now, audit })
    const app = createKmsApp({
      db: spy,
      // The first instance's data keys: its rows are sealed by them, not by the master key itself.
      masterKey: harness.kms.keyring,
      signerPrivateKey: randomBytes(32).toString('hex'),
      now: () => harness.clock.now,
      audit,
      rateLimiter: limiter,
    })
    const submit = async (keys: Keys, organizationId: string, type: string, parameters: object) => {
      const text = JSON.stringify({ type, timestampMs: harness.timestampMs(), organizationId, parameters })
      const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(keys).stamp(text)
      const response = await app.request(`/public/v1/submit/${type === 'ACTIVITY_TYPE_CREATE_WALLET' ? 'create_wallet' : 'sign_raw_payload'}`, {
        method: 'POST',
        body: text,
        headers: { [stampHeaderName]: stampHeaderValue },
      })
      return { status: response.status, body: (await response.json()) as Record<string, unknown> }
    }
    try {
      const flooder = await harness.subOrganization()
      const signer = await harness.subOrganization()
      const flood = (name: string) => submit(flooder.keys, flooder.organizationId, 'ACTIVITY_TYPE_CREATE_WALLET', { walletName: name, accounts: [] })
      for (let index = 0; index < 12; index++) expect((await flood(`wallet ${index}`)).status).toBe(200)
      // The store says the window is full: refused (and audited) as any refusal is.
      expect(await flood('over')).toEqual({ status: 429, body: { code: 8, message: 'rate limit exceeded for this API key: retry in 60 s', details: [] } })
      await audit.settled()
      calls.length = 0
      const refusals = await Promise.all(Array.from({ length: 20 }, (_, index) => flood(`flood ${index}`)))
      expect(refusals.map((refusal) => refusal.status)).toEqual(Array(20).fill(429))
      expect(refusals[0]!.body['message']).toBe('rate limit exceeded for this API key: retry in 60 s')
      expect(calls).toEqual([])

      const signed = await submit(signer.keys, signer.organizationId, 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', {
        signWith: signer.address,
        payload: `0x19${'11'.repeat(32)}`,
        encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
        hashFunction: 'HASH_FUNCTION_KECCAK256',
      })
      expect(signed.status).toBe(200)
      expect(calls).toContain('countRequest')

      limiter.flush()
      await audit.settled()
      const connection = connect(database)
      try {
        const events = (
          await sql<AuditEventRow>`select * from kms_audit_events where credential = ${flooder.keys.apiPublicKey} and outcome = 'refused' order by seq`.execute(
            connection.kysely,
          )
        ).rows
        expect(events.map((event) => [event.action, event.reason])).toEqual([
          ['ACTIVITY_TYPE_CREATE_WALLET', '8 rate limit exceeded for this API key: retry in 60 s'],
          ['RATE_LIMITED', `8 rate limit exceeded for this API key: 20 more submissions refused until ${new Date(harness.clock.now + 60_000).toISOString()}`],
        ])
      } finally {
        await connection.close()
      }
    } finally {
      await harness.kms.stop()
      await audit.settled()
      await store.close()
    }
  })
})
