import { randomBytes } from 'node:crypto'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { signRelayJwt } from '@latchkey/walletconnect'
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest'
import { createRelay, memoryStore, type Relay, RelayCloseCode, RelayErrorCode, type RelayStore, redisStore, sqliteStore } from '../src/index.js'
import { connectClient } from './client.js'
import { freshRedisStore, redisUrl } from './redis.js'

const topic = () => randomBytes(32).toString('hex')
let relay: Relay
let clock = Date.now()

/** One request round trip: everything the relay sent this client before it has arrived. */
const barrier = (client: Awaited<ReturnType<typeof connectClient>>) => client.request('irn_unsubscribe', { topic: '0'.repeat(64), id: 'x' })

// The whole protocol suite runs on every store.
const stores: [string, () => Promise<RelayStore>][] = [
  ['memory', async () => memoryStore()],
  ['sqlite', async () => sqliteStore(join(await mkdtemp(join(tmpdir(), 'latchkey-relay-')), 'relay.db'))],
  ['redis', freshRedisStore],
]

for (const [storeName, makeStore] of stores)
  describe(`relay on the ${storeName} store`, () => {
    let store: RelayStore
    beforeEach(async () => {
      clock = Date.now()
      store = await makeStore()
      relay = createRelay({
        port: await getFreePort(),
        store,
        now: () => clock,
        limits: { maxMessageBytes: 1024, maxSubscriptions: 3, maxRequestsPerSecond: 50 },
      })
      await relay.start()
    })
    afterEach(async () => {
      await relay.stop()
      await store.close()
    })

    describe('auth', () => {
      test('default: a valid token connects', async () => {
        const client = await connectClient(relay.url)
        expect(client.opened).toBe(true)
        expect(relay.connections()).toBe(1)
        await client.close()
      })

      test('error: a bad token is closed with 4001 and the reason', async () => {
        const client = await connectClient(relay.url, { token: 'not-a-jwt' })
        expect(await client.closed).toEqual({ code: RelayCloseCode.unauthorized, reason: 'the token is not a JWT' })
      })

      test('error: an expired token is closed with 4001 and the reason', async () => {
        const seed = randomBytes(32).toString('hex')
        const token = signRelayJwt({ seed, aud: relay.url, iat: Math.floor(clock / 1000) - 2 * 86_400 })
        const client = await connectClient(relay.url, { token })
        expect(await client.closed).toEqual({ code: RelayCloseCode.unauthorized, reason: 'the token has expired' })
      })
    })

    describe('publish and subscribe', () => {
      test('default: a subscriber gets the message with the WalletConnect push shape, and its id', async () => {
        const alice = await connectClient(relay.url)
        const bob = await connectClient(relay.url)
        const t = topic()
        const subscriptionId = await bob.request<string>('irn_subscribe', { topic: t })
        expect(subscriptionId).toMatch(/^[0-9a-f]{64}$/)
        expect(await alice.request('irn_publish', { topic: t, message: 'hello', ttl: 300, tag: 1108, prompt: false })).toBe(true)
        const push = await bob.nextPush()
        expect(push.params).toEqual({ id: subscriptionId, data: { topic: t, message: 'hello', publishedAt: clock, tag: 1108, attestation: '' } })
      })

      test('behavior: never echoed to the publisher, even when it subscribes to the topic', async () => {
        const alice = await connectClient(relay.url)
        const t = topic()
        await alice.request('irn_subscribe', { topic: t })
        await alice.request('irn_publish', { topic: t, message: 'mine', ttl: 300, tag: 1 })
        await barrier(alice)
        expect(alice.unread()).toBe(0)
      })

      test('behavior: store-and-forward: a later subscriber gets what was published before, in order', async () => {
        const alice = await connectClient(relay.url)
        const t = topic()
        for (const message of ['one', 'two', 'three']) await alice.request('irn_publish', { topic: t, message, ttl: 300, tag: 1 })
        const bob = await connectClient(relay.url)
        await bob.request('irn_subscribe', { topic: t })
        const received = [await bob.nextPush(), await bob.nextPush(), await bob.nextPush()].map((p) => p.params.data.message)
        expect(received).toEqual(['one', 'two', 'three'])
      })

      test('behavior: publishes sent without waiting for their receipts are stored and delivered in order', async () => {
        const alice = await connectClient(relay.url)
        const bob = await connectClient(relay.url)
        const t = topic()
        await bob.request('irn_subscribe', { topic: t })
        const messages = Array.from({ length: 20 }, (_, index) => `m${index}`)
        const receipts = messages.map((message) => alice.request('irn_publish', { topic: t, message, ttl: 300, tag: 1 }))
        expect(await Promise.all(receipts)).toEqual(messages.map(() => true))
        const received = []
        for (const _ of messages) received.push((await bob.nextPush()).params.data.message)
        expect(received).toEqual(messages)
      })

      test('default: irn_batchPublish stores every message in order', async () => {
        const alice = await connectClient(relay.url)
        const t = topic()
        const messages = ['one', 'two', 'three'].map((message) => ({ topic: t, message, ttl: 300, tag: 1 }))
        expect(await alice.request('irn_batchPublish', { messages })).toBe(true)
        const bob = await connectClient(relay.url)
        await bob.request('irn_subscribe', { topic: t })
        const received = [await bob.nextPush(), await bob.nextPush(), await bob.nextPush()].map((p) => p.params.data.message)
        expect(received).toEqual(['one', 'two', 'three'])
      })

      test('behavior: acknowledged messages are not delivered again on resubscribe', async () => {
        const alice = await connectClient(relay.url)
        const seed = randomBytes(32).toString('hex')
        const t = topic()
        await alice.request('irn_publish', { topic: t, message: 'once', ttl: 300, tag: 1 })
        const bob = await connectClient(relay.url, { seed })
        await bob.request('irn_subscribe', { topic: t })
        expect((await bob.nextPush()).params.data.message).toBe('once')
        await barrier(bob) // the ack has been handled once the next request is answered
        await bob.close()
        const again = await connectClient(relay.url, { seed })
        await again.request('irn_batchSubscribe', { topics: [t] })
        await barrier(again)
        expect(again.unread()).toBe(0)
      })

      test('behavior: an unacknowledged message is delivered again after a reconnect', async () => {
        const alice = await connectClient(relay.url)
        const seed = randomBytes(32).toString('hex')
        const t = topic()
        await alice.request('irn_publish', { topic: t, message: 'retry me', ttl: 300, tag: 1 })
        const bob = await connectClient(relay.url, { seed, ack: false })
        await bob.request('irn_subscribe', { topic: t })
        expect((await bob.nextPush()).params.data.message).toBe('retry me')
        await bob.close()
        const again = await connectClient(relay.url, { seed })
        await again.request('irn_subscribe', { topic: t })
        expect((await again.nextPush()).params.data.message).toBe('retry me')
      })

      test('behavior: a message is kept for its TTL only', async () => {
        const alice = await connectClient(relay.url)
        const t = topic()
        await alice.request('irn_publish', { topic: t, message: 'short-lived', ttl: 10, tag: 1 })
        clock += 10_001
        const bob = await connectClient(relay.url)
        await bob.request('irn_subscribe', { topic: t })
        await barrier(bob)
        expect(bob.unread()).toBe(0)
      })

      test('behavior: the same message published twice is delivered once', async () => {
        const alice = await connectClient(relay.url)
        const bob = await connectClient(relay.url)
        const t = topic()
        await bob.request('irn_subscribe', { topic: t })
        await alice.request('irn_publish', { topic: t, message: 'dup', ttl: 300, tag: 1 })
        await alice.request('irn_publish', { topic: t, message: 'dup', ttl: 300, tag: 1 })
        expect((await bob.nextPush()).params.data.message).toBe('dup')
        await barrier(bob)
        expect(bob.unread()).toBe(0)
      })

      test('behavior: after unsubscribe nothing more arrives', async () => {
        const alice = await connectClient(relay.url)
        const bob = await connectClient(relay.url)
        const t = topic()
        await bob.request('irn_subscribe', { topic: t })
        await bob.request('irn_unsubscribe', { topic: t, id: 'x' })
        await alice.request('irn_publish', { topic: t, message: 'late', ttl: 300, tag: 1 })
        await barrier(bob)
        expect(bob.unread()).toBe(0)
      })

      test('behavior: irn_batchFetchMessages returns what this client has not acknowledged', async () => {
        const alice = await connectClient(relay.url)
        const bob = await connectClient(relay.url)
        const t = topic()
        await alice.request('irn_publish', { topic: t, message: 'fetched', ttl: 300, tag: 5 })
        const result = await bob.request<{ messages: { message: string; tag: number }[]; hasMore: boolean }>('irn_batchFetchMessages', { topics: [t] })
        expect(result).toMatchObject({ hasMore: false, messages: [{ topic: t, message: 'fetched', tag: 5, attestation: '' }] })
      })
    })

    describe('session methods', () => {
      test('default: wc_proposeSession subscribes the dapp to the pairing topic and publishes the proposal', async () => {
        const dapp = await connectClient(relay.url)
        const wallet = await connectClient(relay.url)
        const pairingTopic = topic()
        await wallet.request('irn_subscribe', { topic: pairingTopic })
        expect(await dapp.request('wc_proposeSession', { pairingTopic, sessionProposal: 'proposal', ttl: 300, correlationId: 1 })).toBe(true)
        expect((await wallet.nextPush()).params.data).toMatchObject({ topic: pairingTopic, message: 'proposal', tag: 1100 })
        // The answer on the pairing topic reaches the dapp without it ever calling irn_subscribe.
        const sessionTopic = topic()
        await wallet.request('wc_approveSession', {
          sessionTopic,
          pairingTopic,
          sessionProposalResponse: 'response',
          sessionSettlementRequest: 'settle',
          ttl: 300,
          correlationId: 1,
        })
        expect((await dapp.nextPush()).params.data).toMatchObject({ topic: pairingTopic, message: 'response', tag: 1101 })
        await dapp.request('irn_subscribe', { topic: sessionTopic })
        expect((await dapp.nextPush()).params.data).toMatchObject({ topic: sessionTopic, message: 'settle', tag: 1102 })
      })
    })

    describe('bad input', () => {
      const cases: [string, string, unknown, number, string][] = [
        [
          'a topic that is not 32 bytes of hex',
          'irn_subscribe',
          { topic: 'abc' },
          RelayErrorCode.invalidParams,
          'Invalid params: topic must be 32 bytes of lowercase hex',
        ],
        ['an unknown method', 'irn_teleport', {}, RelayErrorCode.methodNotFound, 'Method not found: irn_teleport'],
        [
          'a ttl out of range',
          'irn_publish',
          { topic: '1'.repeat(64), message: 'm', ttl: 5 },
          RelayErrorCode.invalidParams,
          'Invalid params: ttl must be whole seconds from 10 to 2592000',
        ],
        [
          'an empty message',
          'irn_publish',
          { topic: '1'.repeat(64), message: '', ttl: 300 },
          RelayErrorCode.invalidParams,
          'Invalid params: message must be a non-empty string',
        ],
        [
          'a message over the size limit',
          'irn_publish',
          { topic: '1'.repeat(64), message: 'x'.repeat(1025), ttl: 300 },
          RelayErrorCode.tooLarge,
          'Message too large: at most 1024 bytes',
        ],
      ]
      for (const [name, method, params, code, message] of cases)
        test(`error: ${name}`, async () => {
          const client = await connectClient(relay.url)
          await expect(client.request(method, params)).rejects.toMatchObject({ code, message })
          // The connection survives and nothing was stored.
          const t = topic()
          expect(await client.request('irn_subscribe', { topic: t })).toMatch(/^[0-9a-f]{64}$/)
          const other = await connectClient(relay.url)
          expect(await other.request('irn_batchFetchMessages', { topics: ['1'.repeat(64)] })).toEqual({ messages: [], hasMore: false })
        })

      test('error: an irn_batchPublish with one bad message stores none of them', async () => {
        const client = await connectClient(relay.url)
        const t = topic()
        const messages = [
          { topic: t, message: 'fine', ttl: 300 },
          { topic: t, message: 'bad ttl', ttl: 1 },
        ]
        await expect(client.request('irn_batchPublish', { messages })).rejects.toMatchObject({
          code: RelayErrorCode.invalidParams,
          message: 'Invalid params: ttl must be whole seconds from 10 to 2592000',
        })
        await expect(client.request('irn_batchPublish', { messages: 'not a list' })).rejects.toMatchObject({
          code: RelayErrorCode.invalidParams,
          message: 'Invalid params: messages must be a list of at most 500',
        })
        const other = await connectClient(relay.url)
        expect(await other.request('irn_batchFetchMessages', { topics: [t] })).toEqual({ messages: [], hasMore: false })
      })

      test('error: a refused irn_batchSubscribe subscribes none of its topics', async () => {
        const alice = await connectClient(relay.url)
        const bob = await connectClient(relay.url)
        const held = [topic(), topic()]
        await bob.request('irn_batchSubscribe', { topics: held })
        // Two held plus two new is over the limit of three: the whole batch is refused.
        const refused = [topic(), topic()]
        await expect(bob.request('irn_batchSubscribe', { topics: refused })).rejects.toMatchObject({
          code: RelayErrorCode.tooManySubscriptions,
          message: 'Too many subscriptions: at most 3 per connection',
        })
        await expect(bob.request('irn_batchSubscribe', { topics: [topic(), 'abc'] })).rejects.toMatchObject({ code: RelayErrorCode.invalidParams })
        for (const t of refused) await alice.request('irn_publish', { topic: t, message: `on ${t}`, ttl: 300, tag: 1 })
        await barrier(bob)
        expect(bob.unread()).toBe(0)
        // Nothing was taken from the limit either: one more topic fits, and its backlog arrives.
        await bob.request('irn_subscribe', { topic: refused[1] })
        expect((await bob.nextPush()).params.data.message).toBe(`on ${refused[1]}`)
      })

      test('error: a refused wc_proposeSession does not subscribe its sender to the pairing topic', async () => {
        const dapp = await connectClient(relay.url)
        const wallet = await connectClient(relay.url)
        const pairingTopic = topic()
        await expect(dapp.request('wc_proposeSession', { pairingTopic, sessionProposal: 'x'.repeat(1025), ttl: 300 })).rejects.toMatchObject({
          code: RelayErrorCode.tooLarge,
        })
        await expect(dapp.request('wc_proposeSession', { pairingTopic, sessionProposal: 'proposal', ttl: 1 })).rejects.toMatchObject({
          code: RelayErrorCode.invalidParams,
        })
        await wallet.request('irn_publish', { topic: pairingTopic, message: 'an answer to no proposal', ttl: 300, tag: 1101 })
        await barrier(dapp)
        expect(dapp.unread()).toBe(0)
        expect(await wallet.request('irn_batchFetchMessages', { topics: [pairingTopic] })).toEqual({ messages: [], hasMore: false })
      })

      test('error: a refused wc_approveSession neither subscribes the session topic nor publishes', async () => {
        const wallet = await connectClient(relay.url)
        const dapp = await connectClient(relay.url)
        const [pairingTopic, sessionTopic] = [topic(), topic()]
        await dapp.request('irn_subscribe', { topic: pairingTopic })
        await expect(
          wallet.request('wc_approveSession', { sessionTopic, pairingTopic, sessionProposalResponse: 'response', sessionSettlementRequest: '', ttl: 300 }),
        ).rejects.toMatchObject({ code: RelayErrorCode.invalidParams, message: 'Invalid params: message must be a non-empty string' })
        await dapp.request('irn_publish', { topic: sessionTopic, message: 'to no session', ttl: 300, tag: 1 })
        await barrier(wallet)
        await barrier(dapp)
        expect([wallet.unread(), dapp.unread()]).toEqual([0, 0])
      })

      test('error: frames that fail the schema are refused and change nothing', async () => {
        const client = await connectClient(relay.url)
        const cases: [unknown, number, string][] = [
          [{ id: 1, jsonrpc: '2.0', method: 'irn_subscribe', params: 'topic' }, RelayErrorCode.invalidParams, 'Invalid params: params must be an object'],
          [
            { id: 2, jsonrpc: '2.0', method: 'irn_batchSubscribe', params: { topics: 'x' } },
            RelayErrorCode.invalidParams,
            'Invalid params: topics must be a list of at most 500',
          ],
          [
            { id: 4, jsonrpc: '2.0', method: 'irn_publish', params: { topic: topic(), message: 7, ttl: 300 } },
            RelayErrorCode.invalidParams,
            'Invalid params: message must be a non-empty string',
          ],
          [{ id: 5, jsonrpc: '2.0', method: 'toString', params: {} }, RelayErrorCode.methodNotFound, 'Method not found: toString'],
          [{ id: 6, jsonrpc: '2.0', method: '__proto__', params: {} }, RelayErrorCode.methodNotFound, 'Method not found: __proto__'],
          [{ id: 7, jsonrpc: '2.0', method: 42 }, RelayErrorCode.invalidRequest, 'Invalid request: method is missing'],
          [
            { id: { nested: true }, jsonrpc: '2.0', method: 'irn_subscribe', params: {} },
            RelayErrorCode.invalidRequest,
            'Invalid request: id must be a number or a string',
          ],
        ]
        for (const [frame, code, message] of cases) {
          const reply = new Promise<{ error: { code: number; message: string } }>((resolve) =>
            client.socket.once('message', (data) => resolve(JSON.parse(data.toString()))),
          )
          client.socket.send(JSON.stringify(frame))
          expect((await reply).error).toEqual({ code, message })
        }
        // A stray answer to a push never sent is ignored.
        client.socket.send(JSON.stringify({ id: 999_999, jsonrpc: '2.0', result: true }))
        expect(await client.request('irn_subscribe', { topic: topic() })).toMatch(/^[0-9a-f]{64}$/)
      })

      test('error: a port in use rejects with EADDRINUSE and the running relay is untouched', async () => {
        const second = createRelay({ port: relay.port })
        await expect(second.start()).rejects.toMatchObject({ code: 'EADDRINUSE' })
        const client = await connectClient(relay.url)
        expect(client.opened).toBe(true)
      })

      test('error: a frame that is not JSON gets a parse error and the connection stays', async () => {
        const client = await connectClient(relay.url)
        const reply = new Promise<string>((resolve) => client.socket.once('message', (data) => resolve(data.toString())))
        client.socket.send('{nope')
        expect(JSON.parse(await reply)).toEqual({ id: null, jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the frame is not JSON' } })
        expect(await client.request('irn_subscribe', { topic: topic() })).toMatch(/^[0-9a-f]{64}$/)
      })

      test('error: more subscriptions than allowed', async () => {
        const client = await connectClient(relay.url)
        for (let i = 0; i < 3; i++) await client.request('irn_subscribe', { topic: topic() })
        await expect(client.request('irn_subscribe', { topic: topic() })).rejects.toMatchObject({
          code: RelayErrorCode.tooManySubscriptions,
          message: 'Too many subscriptions: at most 3 per connection',
        })
      })

      test('error: a flood of requests is refused and the connection closed with 4008', async () => {
        const client = await connectClient(relay.url)
        const t = topic()
        const results = await Promise.allSettled(Array.from({ length: 51 }, () => client.request('irn_subscribe', { topic: t })))
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(50)
        expect(results.at(-1)).toMatchObject({ status: 'rejected', reason: { code: RelayErrorCode.rateLimited } })
        expect(await client.closed).toEqual({ code: RelayCloseCode.policy, reason: 'rate limit exceeded' })
      })

      test('error: junk frames (not JSON, invalid envelopes, acks of nothing pushed) count against the rate: past it, closed with 4008', async () => {
        const client = await connectClient(relay.url)
        const junk = ['x', JSON.stringify({ jsonrpc: '2.0', method: 5 }), JSON.stringify({ id: 123_456, jsonrpc: '2.0', result: true })]
        for (let index = 0; index < 51; index++) client.socket.send(junk[index % junk.length]!)
        expect(await client.closed).toEqual({ code: RelayCloseCode.policy, reason: 'rate limit exceeded' })
      })

      test('behavior: acks of pushes in flight do not count against the rate', async () => {
        const [publisher, subscriber] = [await connectClient(relay.url), await connectClient(relay.url)]
        const t = topic()
        await subscriber.request('irn_subscribe', { topic: t })
        for (let batch = 0; batch < 6; batch++) {
          const messages = Array.from({ length: 10 }, (_, index) => ({ topic: t, message: `m${batch}-${index}`, ttl: 300, tag: 1 }))
          expect(await publisher.request('irn_batchPublish', { messages })).toBe(true)
        }
        // 60 pushes acked, more than the limit of 50, then a request within it.
        for (let index = 0; index < 60; index++) await subscriber.nextPush()
        expect(await barrier(subscriber)).toBe(true)
      })

      test('error: the rate limit counts a client over all its connections; a refused publish stores nothing', async () => {
        const seed = randomBytes(32).toString('hex')
        const [first, second] = [await connectClient(relay.url, { seed }), await connectClient(relay.url, { seed })]
        const t = topic()
        expect(await Promise.all(Array.from({ length: 30 }, () => first.request('irn_subscribe', { topic: t })))).toHaveLength(30)
        const results = await Promise.allSettled(
          Array.from({ length: 21 }, (_, index) => second.request('irn_publish', { topic: t, message: `m${index}`, ttl: 300, tag: 1 })),
        )
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(20)
        expect(results.at(-1)).toMatchObject({ status: 'rejected', reason: { code: RelayErrorCode.rateLimited } })
        expect(await second.closed).toEqual({ code: RelayCloseCode.policy, reason: 'rate limit exceeded' })
        // Another client has its own allowance, and finds the 20 publishes within the limit only.
        const other = await connectClient(relay.url)
        const { messages } = await other.request<{ messages: { message: string }[] }>('irn_batchFetchMessages', { topics: [t] })
        expect(messages.map((m) => m.message)).toEqual(Array.from({ length: 20 }, (_, index) => `m${index}`))
      })
    })
  })

test.each([-1, 100_001, Number.NaN])('error: coalesceMicros of %s is refused when the relay is made', (coalesceMicros) => {
  expect(() => createRelay({ port: 0, coalesceMicros })).toThrow(new RangeError('coalesceMicros must be between 0 and 100 000 µs'))
})

describe('coalescing', () => {
  /**
   * 200 publishes, one after another, through a relay made with `coalesceMicros`: turns of a frame
   * or two (a publish, an ack) back to back, sustained load that never fills a turn. Answers the
   * pushes' messages and the waits the relay slept.
   */
  async function burst(coalesceMicros: number | undefined) {
    const wait = vi.spyOn(Atomics, 'wait')
    const relay = createRelay({ port: await getFreePort(), coalesceMicros })
    await relay.start()
    try {
      const [publisher, subscriber] = [await connectClient(relay.url), await connectClient(relay.url)]
      const topic = randomBytes(32).toString('hex')
      await subscriber.request('irn_subscribe', { topic })
      for (let index = 0; index < 200; index++) await publisher.request('irn_publish', { topic, message: `m${index}`, ttl: 300, tag: 1 })
      const pushes = []
      for (let index = 0; index < 200; index++) pushes.push(await subscriber.nextPush())
      return { messages: pushes.map((push) => push.params.data.message), waits: wait.mock.calls.map((call) => call[3]) }
    } finally {
      wait.mockRestore()
      await relay.stop()
    }
  }
  const sent = Array.from({ length: 200 }, (_, index) => `m${index}`)

  test('default: under sustained small turns the relay sleeps 200 µs after them, and every message arrives once, in order', async () => {
    const { messages, waits } = await burst(undefined)
    expect(messages).toEqual(sent)
    // Hundreds of turns of a frame or two, back to back: the relay slept after some, only for 200 µs.
    expect(waits.length).toBeGreaterThan(0)
    expect(new Set(waits)).toEqual(new Set([0.2]))
  })

  test('behavior: with coalescing off (0 µs) the relay never sleeps, and every message still arrives once, in order', async () => {
    const { messages, waits } = await burst(0)
    expect(messages).toEqual(sent)
    expect(waits).toEqual([])
  })
})

test('behavior: with the sqlite store, a message waits across a relay restart', async () => {
  const path = join(await mkdtemp(join(tmpdir(), 'latchkey-relay-')), 'relay.db')
  const port = await getFreePort()
  const firstStore = sqliteStore(path)
  const first = createRelay({ port, store: firstStore })
  await first.start()
  const alice = await connectClient(first.url)
  const t = topic()
  await alice.request('irn_publish', { topic: t, message: 'still here', ttl: 300, tag: 1 })
  await first.stop()
  await firstStore.close()
  const second = createRelay({ port, store: sqliteStore(path) })
  await second.start()
  try {
    const bob = await connectClient(second.url)
    await bob.request('irn_subscribe', { topic: t })
    expect((await bob.nextPush()).params.data.message).toBe('still here')
  } finally {
    await second.stop()
  }
})

/** A memory store whose writes fail while `failing` is set, as a store whose disk is full; with or without batched commits. */
function failingStore(batched: boolean) {
  const { addToBatch, ...inner } = memoryStore()
  const state = { failing: true }
  const store: RelayStore = {
    ...inner,
    add: (message) => (state.failing ? Promise.reject(new Error('disk full')) : inner.add(message)),
    ...(batched && {
      addToBatch: (message) => (state.failing ? { added: undefined, committed: Promise.reject(new Error('disk full')) } : addToBatch!(message)),
    }),
  }
  return { store, state }
}

for (const batched of [true, false])
  test(`error: a store that cannot store a publish answers it with an internal error and pushes nothing; the relay goes on (${batched ? 'batched commits' : 'one add each'})`, async () => {
    const { store, state } = failingStore(batched)
    const failing = createRelay({ port: await getFreePort(), store })
    await failing.start()
    try {
      const alice = await connectClient(failing.url)
      const bob = await connectClient(failing.url)
      const t = topic()
      await bob.request('irn_subscribe', { topic: t })
      // Pipelined, as clients publish: each is answered, with the catalogue's error.
      const results = await Promise.allSettled(['one', 'two'].map((message) => alice.request('irn_publish', { topic: t, message, ttl: 300, tag: 1 })))
      for (const result of results) expect(result).toMatchObject({ status: 'rejected', reason: { code: RelayErrorCode.internal, message: 'Internal error' } })
      await barrier(bob)
      expect(bob.unread()).toBe(0)
      state.failing = false
      expect(await alice.request('irn_publish', { topic: t, message: 'three', ttl: 300, tag: 1 })).toBe(true)
      expect((await bob.nextPush()).params.data.message).toBe('three')
    } finally {
      await failing.stop()
    }
  })

for (const [storeName, makeStore] of stores)
  test(`behavior: frames of every length form arrive whole and in order, multi-byte and escaped text included (${storeName} store)`, async () => {
    // The relay frames its own writes: a push under 126 bytes is impossible (its envelope alone is
    // longer), so the sizes straddle the 16-bit and 64-bit length forms, in characters and in bytes.
    // Each store writes the messages in its own lines and reads them back as they were.
    const store = await makeStore()
    const relay = createRelay({ port: await getFreePort(), store, limits: { maxMessageBytes: 256 * 1024 } })
    await relay.start()
    try {
      const alice = await connectClient(relay.url)
      const bob = await connectClient(relay.url)
      const t = topic()
      await bob.request('irn_subscribe', { topic: t })
      const messages = [
        'a',
        'x'.repeat(65_300),
        'é'.repeat(32_700),
        '€😀"\\n'.repeat(9000),
        'y'.repeat(200_000),
        'quote " backslash \\ newline \n nul \u0000',
        'z',
      ]
      // Pipelined: several pushes of different sizes share one write.
      await Promise.all(messages.map((message) => alice.request('irn_publish', { topic: t, message, ttl: 300, tag: 1 })))
      const received: string[] = []
      for (const _ of messages) received.push((await bob.nextPush()).params.data.message)
      expect(received).toEqual(messages)
      // Stored as they came: a late subscriber reads the same texts.
      const carol = await connectClient(relay.url)
      const { messages: stored } = await carol.request<{ messages: { message: string }[] }>('irn_batchFetchMessages', { topics: [t] })
      expect(stored.map((m) => m.message)).toEqual(messages)
    } finally {
      await relay.stop()
      await store.close()
    }
  })

describe('several relay nodes on one Redis', () => {
  test('default: clients on different nodes hear each other once; stored messages and acks are shared', async () => {
    const url = await redisUrl()
    const prefix = `nodes${process.pid}:`
    const [storeA, storeB] = [await redisStore(url, { prefix }), await redisStore(url, { prefix })]
    const a = createRelay({ port: await getFreePort(), store: storeA })
    const b = createRelay({ port: await getFreePort(), store: storeB })
    await a.start()
    await b.start()
    try {
      const t = topic()
      const alice = await connectClient(a.url)
      const dave = await connectClient(b.url)
      await alice.request('irn_subscribe', { topic: t })
      await dave.request('irn_subscribe', { topic: t })

      // Published on B: alice (on A) gets it through the fan-out, dave (its publisher's node) locally.
      const bob = await connectClient(b.url)
      await bob.request('irn_publish', { topic: t, message: 'from B', ttl: 300, tag: 1 })
      // Published on A: A's own fan-out notice must not deliver it to alice a second time.
      const carol = await connectClient(a.url)
      await carol.request('irn_publish', { topic: t, message: 'from A', ttl: 300, tag: 1 })
      expect([(await alice.nextPush()).params.data.message, (await alice.nextPush()).params.data.message]).toEqual(['from B', 'from A'])
      expect([(await dave.nextPush()).params.data.message, (await dave.nextPush()).params.data.message]).toEqual(['from B', 'from A'])
      await barrier(alice)
      await carol.request('irn_publish', { topic: t, message: 'last', ttl: 300, tag: 1 })
      expect((await alice.nextPush()).params.data.message).toBe('last')
      expect(alice.unread()).toBe(0)

      // Alice moves to node B: what she acked on A is not sent again; a newcomer on B gets it all.
      await barrier(alice)
      await alice.close()
      const again = await connectClient(b.url, { seed: alice.seed })
      await again.request('irn_subscribe', { topic: t })
      await carol.request('irn_publish', { topic: t, message: 'after the move', ttl: 300, tag: 1 })
      expect((await again.nextPush()).params.data.message).toBe('after the move')
      const erin = await connectClient(b.url)
      await erin.request('irn_subscribe', { topic: t })
      const stored = [await erin.nextPush(), await erin.nextPush(), await erin.nextPush(), await erin.nextPush()]
      expect(stored.map((push) => push.params.data.message)).toEqual(['from B', 'from A', 'last', 'after the move'])
    } finally {
      await a.stop()
      await b.stop()
      await storeA.close()
      await storeB.close()
    }
  })

  test('error: the rate limit counts a client on every node: past it over two nodes, refused and closed with 4008', async () => {
    const url = await redisUrl()
    const prefix = `rate${process.pid}:`
    const [storeA, storeB] = [await redisStore(url, { prefix }), await redisStore(url, { prefix })]
    // One clock for both nodes, so every request falls in the same second.
    const fixed = Date.now()
    const settings = { now: () => fixed, limits: { maxRequestsPerSecond: 50 } }
    const a = createRelay({ port: await getFreePort(), store: storeA, ...settings })
    const b = createRelay({ port: await getFreePort(), store: storeB, ...settings })
    await a.start()
    await b.start()
    try {
      const seed = randomBytes(32).toString('hex')
      const [onA, onB] = [await connectClient(a.url, { seed }), await connectClient(b.url, { seed })]
      const t = topic()
      expect(await Promise.all(Array.from({ length: 30 }, () => onA.request('irn_subscribe', { topic: t })))).toHaveLength(30)
      const results = await Promise.allSettled(
        Array.from({ length: 21 }, (_, index) => onB.request('irn_publish', { topic: t, message: `m${index}`, ttl: 300, tag: 1 })),
      )
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(20)
      expect(results.at(-1)).toMatchObject({ status: 'rejected', reason: { code: RelayErrorCode.rateLimited } })
      expect(await onB.closed).toEqual({ code: RelayCloseCode.policy, reason: 'rate limit exceeded' })
      // The same client is past its limit on A too; another client on A is not.
      await expect(onA.request('irn_subscribe', { topic: t })).rejects.toMatchObject({ code: RelayErrorCode.rateLimited })
      const other = await connectClient(a.url)
      const { messages } = await other.request<{ messages: { message: string }[] }>('irn_batchFetchMessages', { topics: [t] })
      expect(messages.map((m) => m.message)).toEqual(Array.from({ length: 20 }, (_, index) => `m${index}`))
    } finally {
      await a.stop()
      await b.stop()
      await storeA.close()
      await storeB.close()
    }
  })
})
