import { randomBytes } from 'node:crypto'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, onTestFinished, test } from 'vitest'
import { createRelay, memoryStore, type Relay, RelayErrorCode, type RelayStore, redisStore, type StorageQuotas, sqliteStore } from '../src/index.js'
import { connectClient } from './client.js'
import { redisUrl } from './redis.js'

// Storage quotas on every store: a publish that would pass one is refused with -32015 and stores
// nothing; what expired is released at the next prune.

const topic = () => randomBytes(32).toString('hex')
let prefixes = 0
const stores: [string, (quotas: StorageQuotas) => Promise<RelayStore>][] = [
  ['memory', async (quotas) => memoryStore({ quotas })],
  ['sqlite', async (quotas) => sqliteStore(join(await mkdtemp(join(tmpdir(), 'latchkey-relay-quota-')), 'relay.db'), { quotas })],
  ['redis', async (quotas) => redisStore(await redisUrl(), { prefix: `quota${process.pid}:${++prefixes}:`, quotas })],
]

/** A base64 message of `size` bytes, unique by `index`. */
const payload = (size: number, index: number) => `${index.toString(36).padStart(6, '0')}${randomBytes(size).toString('base64')}`.slice(0, size)

/** A message of 4 bytes, unique by `index` (below 36⁴). */
const tiny = (index: number) => index.toString(36).padStart(4, '0')

/** The outcome of a publish: true, or the JSON-RPC error's code and message. */
const outcome = (promise: Promise<unknown>) =>
  promise.then(
    (result) => result,
    (error: Error & { code?: number }) => ({ code: error.code, message: error.message }),
  )

let relay: Relay
let store: RelayStore
let clock = Date.now()
afterEach(async () => {
  await relay.stop()
  await store.close()
})

async function start(makeStore: (quotas: StorageQuotas) => Promise<RelayStore>, quotas: StorageQuotas) {
  clock = Date.now()
  store = await makeStore(quotas)
  relay = createRelay({ port: await getFreePort(), store, now: () => clock })
  await relay.start()
}

for (const [storeName, makeStore] of stores)
  describe(`storage quotas on the ${storeName} store`, () => {
    test("error: the review's flood (8 self-made client ids, 160 messages of 500 KiB for 30 days) stops at the relay's byte budget", async () => {
      const budget = 32 * 1024 * 1024
      await start(makeStore, { maxStoredBytes: budget })
      const accepted: number[] = []
      const refusals = new Set<string>()
      for (let client = 0; client < 8; client++) {
        const flooder = await connectClient(relay.url)
        const t = topic()
        let count = 0
        for (let index = 0; index < 20; index++) {
          const result = await outcome(flooder.request('irn_publish', { topic: t, message: payload(500 * 1024, index), ttl: 30 * 86_400, tag: 1 }))
          if (result === true) count++
          else refusals.add(JSON.stringify(result))
        }
        accepted.push(count)
        await flooder.close()
      }
      // 65 messages of 512,000 bytes and 256 of overhead fit in 32 MiB (Redis counts each record's ~100 bytes more: still 65).
      expect(accepted).toEqual([20, 20, 20, 5, 0, 0, 0, 0])
      expect([...refusals]).toEqual([
        JSON.stringify({ code: RelayErrorCode.quotaExceeded, message: 'Storage quota exceeded: the relay holds at most 33554432 bytes of messages' }),
      ])
    })

    test('error: refuses a publish past the topic quota, stores nothing of it, and other topics go on', async () => {
      // A message of 400 bytes counts 656 (Redis: ~750, its record): two fit in 1600, a third does not.
      await start(makeStore, { maxStoredBytesPerTopic: 1600 })
      const alice = await connectClient(relay.url)
      const [full, other] = [topic(), topic()]
      expect(await alice.request('irn_publish', { topic: full, message: payload(400, 1), ttl: 300, tag: 1 })).toBe(true)
      expect(await alice.request('irn_publish', { topic: full, message: payload(400, 2), ttl: 300, tag: 1 })).toBe(true)
      expect(await outcome(alice.request('irn_publish', { topic: full, message: payload(400, 3), ttl: 300, tag: 1 }))).toEqual({
        code: RelayErrorCode.quotaExceeded,
        message: 'Storage quota exceeded: a topic holds at most 1600 bytes of messages',
      })
      expect((await store.list(full, clock)).map((m) => m.message.slice(0, 6))).toEqual(['000001', '000002'])
      expect(await alice.request('irn_publish', { topic: other, message: payload(400, 4), ttl: 300, tag: 1 })).toBe(true)
      // Publishing a stored message again stores nothing new: not refused.
      const again = (await store.list(full, clock))[0]!.message
      expect(await alice.request('irn_publish', { topic: full, message: again, ttl: 300, tag: 1 })).toBe(true)
    })

    test("error: refuses a publish past the client's quota over all its topics", async () => {
      await start(makeStore, { maxStoredBytesPerClient: 1600 })
      const [alice, bob] = [await connectClient(relay.url), await connectClient(relay.url)]
      const t = topic()
      expect(await alice.request('irn_publish', { topic: topic(), message: payload(400, 1), ttl: 300, tag: 1 })).toBe(true)
      expect(await alice.request('irn_publish', { topic: topic(), message: payload(400, 2), ttl: 300, tag: 1 })).toBe(true)
      expect(await outcome(alice.request('irn_publish', { topic: t, message: payload(400, 3), ttl: 300, tag: 1 }))).toEqual({
        code: RelayErrorCode.quotaExceeded,
        message: "Storage quota exceeded: a client's messages take at most 1600 bytes",
      })
      expect(await store.list(t, clock)).toEqual([])
      expect(await bob.request('irn_publish', { topic: t, message: payload(400, 4), ttl: 300, tag: 1 })).toBe(true)
    })

    test('behavior: expired messages release their bytes at the next prune', async () => {
      await start(makeStore, { maxStoredBytesPerTopic: 1600 })
      const alice = await connectClient(relay.url)
      const t = topic()
      expect(await alice.request('irn_publish', { topic: t, message: payload(900, 1), ttl: 10, tag: 1 })).toBe(true)
      expect(await outcome(alice.request('irn_publish', { topic: t, message: payload(900, 2), ttl: 10, tag: 1 }))).toMatchObject({
        code: RelayErrorCode.quotaExceeded,
      })
      clock += 11_000
      await store.prune(clock)
      expect(await alice.request('irn_publish', { topic: t, message: payload(900, 3), ttl: 10, tag: 1 })).toBe(true)
    })

    test('error: a batch publish past a quota is refused whole: none of it is stored', async () => {
      await start(makeStore, { maxStoredBytesPerTopic: 1600 })
      const alice = await connectClient(relay.url)
      const t = topic()
      const messages = [1, 2, 3].map((index) => ({ topic: t, message: payload(400, index), ttl: 300, tag: 1 }))
      expect(await outcome(alice.request('irn_batchPublish', { messages }))).toEqual({
        code: RelayErrorCode.quotaExceeded,
        message: 'Storage quota exceeded: a topic holds at most 1600 bytes of messages',
      })
      expect(await store.list(t, clock)).toEqual([])
      expect(await alice.request('irn_batchPublish', { messages: messages.slice(0, 2) })).toBe(true)
    })

    test('behavior: messages of a batch already stored, or twice in it, count once: the batch is not refused for them', async () => {
      await start(makeStore, { maxStoredBytesPerTopic: 1600 })
      const alice = await connectClient(relay.url)
      const t = topic()
      const [one, two, three] = [1, 2, 3].map((index) => ({ topic: t, message: payload(400, index), ttl: 300, tag: 1 }))
      expect(await alice.request('irn_batchPublish', { messages: [one, two] })).toBe(true)
      // Counted as new, these four would pass the quota.
      expect(await alice.request('irn_batchPublish', { messages: [one, two, two, one] })).toBe(true)
      expect((await store.list(t, clock)).map((m) => m.message.slice(0, 6))).toEqual(['000001', '000002'])
      expect(await outcome(alice.request('irn_batchPublish', { messages: [one, three] }))).toEqual({
        code: RelayErrorCode.quotaExceeded,
        message: 'Storage quota exceeded: a topic holds at most 1600 bytes of messages',
      })
    })

    test('error: every message counts 256 bytes beyond its text: four 4-byte messages pass a topic quota of 1000 bytes', async () => {
      await start(makeStore, { maxStoredBytesPerTopic: 1000 })
      const alice = await connectClient(relay.url)
      const t = topic()
      const messages = [1, 2, 3, 4].map((index) => ({ topic: t, message: tiny(index), ttl: 300, tag: 1 }))
      expect(await outcome(alice.request('irn_batchPublish', { messages }))).toEqual({
        code: RelayErrorCode.quotaExceeded,
        message: 'Storage quota exceeded: a topic holds at most 1000 bytes of messages',
      })
      expect(await store.list(t, clock)).toEqual([])
    })

    test("error: refuses a publish past the topic's message quota, however small, storing nothing of it", async () => {
      await start(makeStore, { maxStoredMessagesPerTopic: 3 })
      const alice = await connectClient(relay.url)
      const [full, other] = [topic(), topic()]
      for (const index of [1, 2, 3]) expect(await alice.request('irn_publish', { topic: full, message: tiny(index), ttl: 300, tag: 1 })).toBe(true)
      const refusal = { code: RelayErrorCode.quotaExceeded, message: 'Storage quota exceeded: a topic holds at most 3 messages' }
      expect(await outcome(alice.request('irn_publish', { topic: full, message: tiny(4), ttl: 300, tag: 1 }))).toEqual(refusal)
      // A batch with room for one of its two on a topic is refused whole.
      expect(await alice.request('irn_publish', { topic: other, message: tiny(5), ttl: 300, tag: 1 })).toBe(true)
      expect(await alice.request('irn_publish', { topic: other, message: tiny(6), ttl: 300, tag: 1 })).toBe(true)
      const batch = [7, 8].map((index) => ({ topic: other, message: tiny(index), ttl: 300, tag: 1 }))
      expect(await outcome(alice.request('irn_batchPublish', { messages: batch }))).toEqual(refusal)
      expect((await store.list(full, clock)).map((m) => m.message)).toEqual([1, 2, 3].map(tiny))
      expect((await store.list(other, clock)).map((m) => m.message)).toEqual([5, 6].map(tiny))
      // Publishing a stored message again stores nothing new: not refused.
      expect(await alice.request('irn_publish', { topic: full, message: tiny(1), ttl: 300, tag: 1 })).toBe(true)
      expect(await alice.request('irn_publish', { topic: other, message: tiny(9), ttl: 300, tag: 1 })).toBe(true)
    })

    test("default: a topic holds at most 1000 messages: the review's 200 batches of 500 tiny messages stop at the second", async () => {
      await start(makeStore, {})
      const alice = await connectClient(relay.url)
      const t = topic()
      const batch = (from: number) => Array.from({ length: 500 }, (_, index) => ({ topic: t, message: tiny(from + index), ttl: 300, tag: 1 }))
      expect(await alice.request('irn_batchPublish', { messages: batch(0) })).toBe(true)
      expect(await alice.request('irn_batchPublish', { messages: batch(500) })).toBe(true)
      expect(await outcome(alice.request('irn_batchPublish', { messages: batch(1000) }))).toEqual({
        code: RelayErrorCode.quotaExceeded,
        message: 'Storage quota exceeded: a topic holds at most 1000 messages',
      })
      expect(await outcome(alice.request('irn_publish', { topic: t, message: tiny(1000), ttl: 300, tag: 1 }))).toMatchObject({
        code: RelayErrorCode.quotaExceeded,
      })
      expect(await store.list(t, clock)).toHaveLength(1000)
    })
  })

describe('storage quotas on Redis: a publish of several messages is checked whole, in the script that stores it', () => {
  /** A relay on Redis with these quotas, and what its usage hash (every node's counts) holds. */
  async function startOnRedis(quotas: StorageQuotas) {
    const url = await redisUrl()
    const prefix = `quota${process.pid}:${++prefixes}:`
    await start(async () => redisStore(url, { prefix, quotas }), quotas)
    const reader = new Redis(url)
    onTestFinished(() => void reader.disconnect())
    return { usage: () => reader.hgetall(`${prefix}usage`) }
  }
  // Messages of 400 bytes count ~750 on Redis (the record and 256): with a quota of 2600, three fit and a fourth does not.
  const quota = 2600
  const message = (t: string, index: number) => ({ topic: t, message: payload(400, index), ttl: 300, tag: 1 })
  const cases: [string, StorageQuotas, (first: string) => string[], string][] = [
    [
      "the topic's",
      { maxStoredBytesPerTopic: quota },
      (first) => [first, first, first],
      'Storage quota exceeded: a topic holds at most 2600 bytes of messages',
    ],
    [
      "the client's",
      { maxStoredBytesPerClient: quota },
      () => [topic(), topic(), topic()],
      "Storage quota exceeded: a client's messages take at most 2600 bytes",
    ],
    ["the relay's", { maxStoredBytes: quota }, () => [topic(), topic(), topic()], 'Storage quota exceeded: the relay holds at most 2600 bytes of messages'],
  ]
  for (const [scope, quotas, topics, refusal] of cases)
    test(`error: an irn_batchPublish that reaches ${scope} quota at its last message stores none of it and counts nothing`, async () => {
      const { usage } = await startOnRedis(quotas)
      const alice = await connectClient(relay.url)
      const first = topic()
      expect(await alice.request('irn_publish', { topic: first, message: payload(400, 0), ttl: 300, tag: 1 })).toBe(true)
      const before = await usage()
      const record = Number(before.g)
      expect([3 * record <= quota, 4 * record > quota]).toEqual([true, true])
      const batchTopics = topics(first)
      const messages = batchTopics.map((t, index) => message(t, index + 1))
      expect(await outcome(alice.request('irn_batchPublish', { messages }))).toEqual({ code: RelayErrorCode.quotaExceeded, message: refusal })
      expect(await usage()).toEqual(before)
      expect((await store.list(first, clock)).map((m) => m.message.slice(0, 6))).toEqual(['000000'])
      for (const t of batchTopics) if (t !== first) expect(await store.list(t, clock)).toEqual([])
      // What fits of it is taken: the refusal left no count behind.
      expect(await alice.request('irn_batchPublish', { messages: messages.slice(0, 2) })).toBe(true)
    })

  test('error: a wc_approveSession whose settlement would pass the quota stores neither message', async () => {
    const { usage } = await startOnRedis({ maxStoredBytesPerClient: quota })
    const wallet = await connectClient(relay.url)
    expect(await wallet.request('irn_publish', { topic: topic(), message: payload(400, 0), ttl: 300, tag: 1 })).toBe(true)
    expect(await wallet.request('irn_publish', { topic: topic(), message: payload(400, 1), ttl: 300, tag: 1 })).toBe(true)
    const before = await usage()
    const [pairingTopic, sessionTopic] = [topic(), topic()]
    const approval = { sessionTopic, pairingTopic, sessionProposalResponse: payload(400, 2), sessionSettlementRequest: payload(400, 3), ttl: 300 }
    expect(await outcome(wallet.request('wc_approveSession', approval))).toEqual({
      code: RelayErrorCode.quotaExceeded,
      message: "Storage quota exceeded: a client's messages take at most 2600 bytes",
    })
    expect(await usage()).toEqual(before)
    expect([await store.list(pairingTopic, clock), await store.list(sessionTopic, clock)]).toEqual([[], []])
  })
})

describe('storage quotas on Redis, over several nodes', () => {
  test('behavior: two relays on one Redis share one count', async () => {
    const url = await redisUrl()
    const prefix = `quota${process.pid}:shared:`
    store = await redisStore(url, { prefix, quotas: { maxStoredBytesPerTopic: 1600 } })
    const other = await redisStore(url, { prefix, quotas: { maxStoredBytesPerTopic: 1600 } })
    relay = createRelay({ port: await getFreePort(), store })
    const second = createRelay({ port: await getFreePort(), store: other })
    await Promise.all([relay.start(), second.start()])
    try {
      const [alice, bob] = [await connectClient(relay.url), await connectClient(second.url)]
      const t = topic()
      // Records count ~100 bytes more than their message on Redis, and every message 256 more: 400 + 400 fit, a third does not.
      expect(await alice.request('irn_publish', { topic: t, message: payload(400, 1), ttl: 300, tag: 1 })).toBe(true)
      expect(await bob.request('irn_publish', { topic: t, message: payload(400, 2), ttl: 300, tag: 1 })).toBe(true)
      expect(await outcome(alice.request('irn_publish', { topic: t, message: payload(400, 3), ttl: 300, tag: 1 }))).toMatchObject({
        code: RelayErrorCode.quotaExceeded,
      })
      expect(await outcome(bob.request('irn_publish', { topic: t, message: payload(400, 4), ttl: 300, tag: 1 }))).toMatchObject({
        code: RelayErrorCode.quotaExceeded,
      })
    } finally {
      await second.stop()
      await other.close()
    }
  })
})
