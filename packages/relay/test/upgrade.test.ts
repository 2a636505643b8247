import { randomBytes } from 'node:crypto'
import { getFreePort } from '@latchkey/devnet'
import { Redis } from 'ioredis'
import { afterAll, expect, test } from 'vitest'
import { createRelay, type Relay, type RelayStore, redisStore } from '../src/index.js'
import { connectClient, type Push } from './client.js'
import { redisStoreV1 } from './fixtures/redisStoreV1.js'
import { redisUrl } from './redis.js'

// A rolling upgrade of the Redis fan-out notice: nodes of the released version (version 1 of the
// notice, run from the frozen copy of its store) and of this one share a Redis. Messages cross
// both ways while both run, none twice; the version 1 notice is published only while a version 1
// node listens.

const topic = () => randomBytes(32).toString('hex')
const started: { relay: Relay; store: RelayStore }[] = []

async function node(open: (url: string, options: { prefix: string }) => Promise<RelayStore>, prefix: string) {
  const store = await open(await redisUrl(), { prefix })
  const relay = createRelay({ port: await getFreePort(), store })
  await relay.start()
  const entry = { relay, store }
  started.push(entry)
  return {
    url: relay.url,
    async stop() {
      started.splice(started.indexOf(entry), 1)
      await relay.stop()
      await store.close()
    },
  }
}

afterAll(async () => {
  for (const { relay, store } of started) {
    await relay.stop()
    await store.close()
  }
})

/** A client that records its pushes and can wait for a condition on them. */
async function client(url: string) {
  const pushes: Push[] = []
  const waiting = new Set<() => void>()
  const connection = await connectClient(url, {
    onPush(push) {
      pushes.push(push)
      for (const check of [...waiting]) check()
    },
  })
  return Object.assign(connection, {
    messages: () => pushes.map((push) => push.params.data.message),
    received: (message: string) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (!pushes.some((push) => push.params.data.message === message)) return
          waiting.delete(check)
          resolve()
        }
        waiting.add(check)
        check()
      }),
  })
}

test('behavior: nodes of notice version 1 and version 2 on one Redis hear each other, each message once; version 1 notices only while a version 1 node listens', async () => {
  const prefix = `upgrade${process.pid}:`
  // A pattern subscriber sees every notice without being counted as a listener of either channel.
  const observer = new Redis(await redisUrl())
  const notices: { channel: string; text: string }[] = []
  await observer.psubscribe(`${prefix}published*`)
  observer.on('pmessage', (_pattern: string, channel: string, text: string) => notices.push({ channel, text }))
  /** Channels the notices holding `message` went out on, once everything published before this call has reached the observer. */
  const channelsOf = async (message: string) => {
    await observer.ping()
    return notices.filter((notice) => notice.text.includes(JSON.stringify(message))).map((notice) => notice.channel.slice(prefix.length))
  }
  try {
    const [a, b] = [await node(redisStore, prefix), await node(redisStore, prefix)]
    const [topicA, topicOld] = [topic(), topic()]
    const onA = await client(a.url)
    await onA.request('irn_subscribe', { topic: topicA })
    const onB = await client(b.url)

    // Version 2 alone: one notice, on its own channel.
    await onB.request('irn_publish', { topic: topicA, message: 'v2 only', ttl: 300, tag: 1 })
    await onA.received('v2 only')
    expect(await channelsOf('v2 only')).toEqual(['published:2'])

    // A version 1 node joins: messages cross both ways.
    const old = await node(redisStoreV1, prefix)
    const onOld = await client(old.url)
    await onOld.request('irn_subscribe', { topic: topicOld })
    await onB.request('irn_publish', { topic: topicOld, message: 'new to old', ttl: 300, tag: 1 })
    await onOld.received('new to old')
    expect(await channelsOf('new to old')).toEqual(['published:2', 'published'])
    await onOld.request('irn_publish', { topic: topicA, message: 'old to new', ttl: 300, tag: 1 })
    await onA.received('old to new')
    expect(await channelsOf('old to new')).toEqual(['published'])
    // Node A hears this one twice (both notices) and sends it once.
    await onB.request('irn_publish', { topic: topicA, message: 'new to new', ttl: 300, tag: 1 })
    await onA.received('new to new')
    expect(await channelsOf('new to new')).toEqual(['published:2', 'published'])

    // Each reads the other's stored messages: a subscriber new to the topic gets its backlog.
    const lateOld = await client(old.url)
    await lateOld.request('irn_subscribe', { topic: topicA })
    await lateOld.received('new to new')
    expect(lateOld.messages()).toEqual(['v2 only', 'old to new', 'new to new'])
    const lateNew = await client(b.url)
    await lateNew.request('irn_subscribe', { topic: topicA })
    await lateNew.received('new to new')
    expect(lateNew.messages()).toEqual(['v2 only', 'old to new', 'new to new'])

    // The version 1 node leaves: version 2 notices only again.
    await Promise.all([onOld.close(), lateOld.close(), lateNew.close()])
    await old.stop()
    await onB.request('irn_publish', { topic: topicA, message: 'after', ttl: 300, tag: 1 })
    await onA.received('after')
    expect(await channelsOf('after')).toEqual(['published:2'])
    // Once each, in publish order, on the subscriber that stayed on a version 2 node.
    await onA.request('irn_unsubscribe', { topic: '0'.repeat(64) })
    expect(onA.messages()).toEqual(['v2 only', 'old to new', 'new to new', 'after'])
    await Promise.all([onA.close(), onB.close()])
  } finally {
    observer.disconnect()
  }
})
