import { Redis } from 'ioredis'
import { afterAll, expect, test } from 'vitest'
import { redisStore } from '../src/index.js'
import { redisUrl } from './redis.js'

// What the Redis store leaves in Redis: every key still expires by itself, with the PEXPIREs and
// PTTLs the store now skips where the node knows better.

const HOUR = 3_600_000
const raw = new Redis(await redisUrl())
afterAll(() => raw.disconnect())
let prefixes = 0
const fresh = async () => {
  const prefix = `keys${process.pid}:${++prefixes}:`
  return { prefix, store: await redisStore(await redisUrl(), { prefix }) }
}
const message = (id: string, topic: string, lifetime: number) => {
  const now = Date.now()
  return { id, topic, message: `m-${id}`, tag: 1, publishedAt: now, expiresAt: now + lifetime, publisher: 'did:key:a' }
}

test('behavior: a topic list outlives each of its messages by an hour, also when the node skips its PEXPIRE or the list was deleted meanwhile', async () => {
  const { prefix, store } = await fresh()
  const list = `${prefix}t:topic`
  // At least this long left, give or take the test's own run time.
  const outlives = async (lifetime: number) => expect(await raw.pttl(list)).toBeGreaterThan(lifetime + HOUR - 60_000)
  await store.add(message('a', 'topic', 10 * 60_000))
  await outlives(10 * 60_000)
  // Within the slack after 'a': no PEXPIRE of its own, and the list still outlives it.
  await store.add(message('b', 'topic', 15 * 60_000))
  await outlives(15 * 60_000)
  // Past the slack: extended again.
  await store.add(message('c', 'topic', 3 * HOUR))
  await outlives(3 * HOUR)
  // Gone meanwhile (as after a prune elsewhere): the first message stored recreates it with an expiry.
  await raw.del(list)
  await store.add(message('d', 'topic', 15 * 60_000))
  await outlives(15 * 60_000)
  expect((await store.list('topic', Date.now())).map((m) => m.id)).toEqual(['d'])
  await store.close()
})

test('behavior: an ack given its message expiry lives as long as the message plus an hour; near the expiry it is checked against the record, and one for a message not stored is dropped', async () => {
  const { prefix, store } = await fresh()
  const stored = message('a', 'topic', 10 * 60_000)
  await store.add(stored)
  await store.ack('alice', 'a', stored.expiresAt, Date.now())
  expect(await store.isAcked('alice', 'a')).toBe(true)
  expect(await raw.pttl(`${prefix}a:a`)).toBeGreaterThan(10 * 60_000 + HOUR - 60_000)
  // Within a minute of its expiry: looked up, and dropped when not stored.
  const now = Date.now()
  await store.ack('alice', 'gone', now + 30_000, now)
  expect(await store.isAcked('alice', 'gone')).toBe(false)
  await store.close()
})
