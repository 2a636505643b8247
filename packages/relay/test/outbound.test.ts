import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Socket } from 'node:net'
import { getFreePort } from '@latchkey/devnet'
import { afterEach, describe, expect, test } from 'vitest'
import { createRelay, memoryStore, type Relay, RelayCloseCode, type RelayLimits } from '../src/index.js'
import { connectClient, type Push } from './client.js'

// What the relay holds for a client that does not keep up: bytes its socket has not taken, pushes
// it has not acknowledged. Past either cap it is closed as a slow consumer; a client that reads
// gets a backlog of any size.

const topic = () => randomBytes(32).toString('hex')
/** A base64 message of `size` bytes, unique by `index`. */
const payload = (size: number, index: number) => `${index.toString(36).padStart(6, '0')}${randomBytes(size).toString('base64')}`.slice(0, size)
type Client = Awaited<ReturnType<typeof connectClient>>
/** The TCP socket under a client's WebSocket: paused, the client reads nothing more. */
const tcpOf = (client: Client) => (client.socket as unknown as { _socket: Socket })._socket

/** A field of /proc/sys/net/ipv4/<name> (min, default, max), or 4 MiB where there is none. */
function kernelBuffer(name: string, field: number): number {
  try {
    return Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[field]) || 4 * 1024 * 1024
  } catch {
    return 4 * 1024 * 1024
  }
}

let relay: Relay
afterEach(() => relay.stop())

async function start(limits: RelayLimits) {
  // No storage quota: these tests store tens of MiB on one topic.
  const store = memoryStore({ quotas: { maxStoredBytes: 0, maxStoredBytesPerTopic: 0, maxStoredBytesPerClient: 0 } })
  relay = createRelay({ port: await getFreePort(), store, limits })
  await relay.start()
}

describe('slow consumers', () => {
  test('error: a subscriber that stops reading is closed with 4009 once maxBufferedBytes wait for it, and its frames are dropped', async () => {
    await start({ maxBufferedBytes: 1024 * 1024, maxUnackedMessages: 0, maxUnackedBytes: 0 })
    const t = topic()
    let received = 0
    const reader = await connectClient(relay.url, { ack: false, onPush: () => received++ })
    await reader.request('irn_subscribe', { topic: t })
    tcpOf(reader).pause()
    const publisher = await connectClient(relay.url)
    // More than the sockets' buffers on both ends can hold (the kernel's largest send buffer, and
    // the receive buffer of a client that stopped reading, twice over) and the cap.
    const count = Math.ceil((2 * (kernelBuffer('tcp_wmem', 2) + kernelBuffer('tcp_rmem', 1)) + 1024 * 1024) / (512 * 1024))
    for (let index = 0; index < count; index++)
      expect(await publisher.request('irn_publish', { topic: t, message: payload(512 * 1024, index), ttl: 300, tag: 1 })).toBe(true)
    // The publisher's receipts left after the pushes: the relay has given up on the reader by now.
    tcpOf(reader).resume()
    expect(await reader.closed).toEqual({ code: RelayCloseCode.slowConsumer, reason: 'slow consumer: too many bytes unread' })
    expect(received).toBeLessThan(count)
    await expect.poll(() => relay.connections()).toBe(1)
  })

  test('behavior: a subscriber that reads gets a backlog 24 times maxBufferedBytes, then what was published meanwhile, in order', async () => {
    await start({ maxMessageBytes: 64 * 1024, maxBufferedBytes: 128 * 1024, maxUnackedMessages: 0, maxUnackedBytes: 0 })
    const t = topic()
    const publisher = await connectClient(relay.url)
    const backlog = Array.from({ length: 48 }, (_, index) => ({ topic: t, message: payload(64 * 1024, index), ttl: 300, tag: 1 }))
    for (const message of backlog) expect(await publisher.request('irn_publish', message)).toBe(true)
    const pushes: Push[] = []
    let done!: () => void
    const all = new Promise<void>((resolve) => (done = resolve))
    const reader = await connectClient(relay.url, {
      onPush: (push) => {
        pushes.push(push)
        if (pushes.length === backlog.length + 1) done()
      },
    })
    await reader.request('irn_subscribe', { topic: t })
    // Published while the backlog is still going out: it follows the backlog.
    const late = { topic: t, message: payload(100, 99), ttl: 300, tag: 1 }
    expect(await publisher.request('irn_publish', late)).toBe(true)
    await all
    expect(pushes.map((push) => push.params.data.message.slice(0, 6))).toEqual([...backlog, late].map((m) => m.message.slice(0, 6)))
    expect(relay.connections()).toBe(2)
  })

  /**
   * Four subscribers from this one address stop reading, and enough is published to fill both ends'
   * socket buffers and `fill` more for each. Answers how each was closed, once they read again.
   */
  async function stalledFromOneAddress(fill: number) {
    const t = topic()
    const readers = await Promise.all(Array.from({ length: 4 }, () => connectClient(relay.url, { ack: false })))
    for (const reader of readers) await reader.request('irn_subscribe', { topic: t })
    for (const reader of readers) tcpOf(reader).pause()
    const publisher = await connectClient(relay.url)
    const count = Math.ceil((2 * (kernelBuffer('tcp_wmem', 2) + kernelBuffer('tcp_rmem', 1)) + fill) / (512 * 1024))
    for (let index = 0; index < count; index++)
      expect(await publisher.request('irn_publish', { topic: t, message: payload(512 * 1024, index), ttl: 300, tag: 1 })).toBe(true)
    for (const reader of readers) tcpOf(reader).resume()
    return { closes: await Promise.all(readers.map((reader) => reader.closed)), publisher }
  }

  test('error: subscribers of one address that stop reading are closed with 4009 once together they pass maxBufferedBytesPerIp, none past its own cap', async () => {
    await start({ maxBufferedBytes: 2 * 1024 * 1024, maxBufferedBytesPerIp: 2 * 1024 * 1024, maxUnackedMessages: 0, maxUnackedBytes: 0 })
    const { closes } = await stalledFromOneAddress(1024 * 1024)
    expect(closes).toEqual(Array(4).fill({ code: RelayCloseCode.slowConsumer, reason: 'slow consumer: too many bytes unread from your address' }))
  })

  test('error: subscribers that stop reading are closed with 4009 once together they pass maxBufferedBytesTotal', async () => {
    await start({
      maxBufferedBytes: 2 * 1024 * 1024,
      maxBufferedBytesPerIp: 0,
      maxBufferedBytesTotal: 2 * 1024 * 1024,
      maxUnackedMessages: 0,
      maxUnackedBytes: 0,
    })
    const { closes } = await stalledFromOneAddress(1024 * 1024)
    expect(closes).toEqual(Array(4).fill({ code: RelayCloseCode.slowConsumer, reason: 'slow consumer: too many bytes unread on this relay' }))
  })

  test('behavior: a subscriber that reads is not closed for the bytes other connections of its address left unread', async () => {
    await start({ maxBufferedBytes: 2 * 1024 * 1024, maxBufferedBytesPerIp: 2 * 1024 * 1024, maxUnackedMessages: 0, maxUnackedBytes: 0 })
    const other = topic()
    const reader = await connectClient(relay.url)
    await reader.request('irn_subscribe', { topic: other })
    const { publisher } = await stalledFromOneAddress(1024 * 1024)
    for (let index = 0; index < 10; index++) {
      expect(await publisher.request('irn_publish', { topic: other, message: payload(100, index), ttl: 300, tag: 1 })).toBe(true)
      expect((await reader.nextPush()).params.data.message.slice(0, 6)).toBe(index.toString(36).padStart(6, '0'))
    }
    expect(await reader.request('irn_unsubscribe', { topic: other, id: 'x' })).toBe(true)
  })

  test('error: a subscriber that reads but never acks is closed with 4009 past maxUnackedMessages; a new connection is sent them all again', async () => {
    await start({ maxUnackedMessages: 5 })
    const t = topic()
    const seed = randomBytes(32).toString('hex')
    let received = 0
    const reader = await connectClient(relay.url, { seed, ack: false, onPush: () => received++ })
    await reader.request('irn_subscribe', { topic: t })
    const publisher = await connectClient(relay.url)
    const messages = Array.from({ length: 6 }, (_, index) => ({ topic: t, message: payload(100, index), ttl: 300, tag: 1 }))
    expect(await publisher.request('irn_batchPublish', { messages })).toBe(true)
    expect(await reader.closed).toEqual({ code: RelayCloseCode.slowConsumer, reason: 'slow consumer: too many messages unacknowledged' })
    expect(received).toBe(5)
    // Nothing is lost: a fetch (a reply, not pushes) finds them all unacknowledged.
    const again = await connectClient(relay.url, { seed })
    const { messages: fetched } = await again.request<{ messages: { message: string }[] }>('irn_batchFetchMessages', { topics: [t] })
    expect(fetched.map((m) => m.message)).toEqual(messages.map((m) => m.message))
  })

  test('error: a subscriber that never acks is closed with 4009 past maxUnackedBytes', async () => {
    await start({ maxUnackedBytes: 10_000 })
    const t = topic()
    let received = 0
    const reader = await connectClient(relay.url, { ack: false, onPush: () => received++ })
    await reader.request('irn_subscribe', { topic: t })
    const publisher = await connectClient(relay.url)
    for (let index = 0; index < 4; index++)
      expect(await publisher.request('irn_publish', { topic: t, message: payload(3000, index), ttl: 300, tag: 1 })).toBe(true)
    expect(await reader.closed).toEqual({ code: RelayCloseCode.slowConsumer, reason: 'slow consumer: too many messages unacknowledged' })
    expect(received).toBe(3)
  })

  test('behavior: a subscriber that acks is never closed for what it acknowledged', async () => {
    await start({ maxUnackedMessages: 2 })
    const t = topic()
    const reader = await connectClient(relay.url)
    await reader.request('irn_subscribe', { topic: t })
    const publisher = await connectClient(relay.url)
    for (let index = 0; index < 10; index++) {
      expect(await publisher.request('irn_publish', { topic: t, message: payload(100, index), ttl: 300, tag: 1 })).toBe(true)
      expect((await reader.nextPush()).params.data.message.slice(0, 6)).toBe(index.toString(36).padStart(6, '0'))
    }
    expect(await reader.request('irn_unsubscribe', { topic: t, id: 'x' })).toBe(true)
  })

  test('error: limits that cannot hold are refused when the relay is made', () => {
    expect(() => createRelay({ port: 0, limits: { maxMessageBytes: 1024 * 1024, maxBufferedBytes: 1024 * 1024 } })).toThrow(
      new RangeError('maxBufferedBytes must be at least twice maxMessageBytes and at least 65536'),
    )
    expect(() => createRelay({ port: 0, limits: { maxUnackedMessages: -1 } })).toThrow(new RangeError('maxUnackedMessages must be a whole number'))
    expect(() => createRelay({ port: 0, limits: { maxBufferedBytesPerIp: 1024 * 1024 } })).toThrow(
      new RangeError('maxBufferedBytesPerIp must be 0 (no cap) or at least maxBufferedBytes'),
    )
  })
})
