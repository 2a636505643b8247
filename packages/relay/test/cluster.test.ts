import { randomBytes } from 'node:crypto'
import { getFreePort } from '@latchkey/devnet'
import { expect, test } from 'vitest'
import { type CliProcess, listening, startCli } from '../../service/test/cliProcess.js'
import { connectClient, type Push } from './client.js'
import { redisUrl } from './redis.js'

// Two latchkey-relay processes on one real Redis, as an operator scales out: publishers and
// subscribers on different nodes, subscribers moving between nodes under load, and one node killed
// with SIGKILL half-way.

const TOPICS = 8
const MESSAGES = 240
const BATCH = 10
/** A subscriber moves to another node after this many new messages on its socket. */
const MOVE_EVERY = 45

type Node = { name: string; url: string; process: CliProcess; alive: boolean }
type Client = Awaited<ReturnType<typeof connectClient>>

async function startNode(name: string, redis: string): Promise<Node> {
  const port = await getFreePort()
  const child = startCli('packages/relay/src/cli.ts', ['--port', String(port), '--redis', redis])
  await child.waitForLog(listening)
  return { name, url: `ws://127.0.0.1:${port}`, process: child, alive: true }
}

test('behavior: two nodes on one Redis, subscribers moving and a node killed: nothing acknowledged lost, nothing sent again after a stored ack, order kept, messages cross nodes', async () => {
  const redis = await redisUrl()
  const nodes = [await startNode('A', redis), await startNode('B', redis)]
  const other = (node: Node) => nodes.find((candidate) => candidate !== node && candidate.alive) ?? nodes.find((candidate) => candidate.alive)!

  const topics = Array.from({ length: TOPICS }, () => randomBytes(32).toString('hex'))
  const problems: string[] = []
  let receipted = 0
  let killed = false
  /** Called on every push: each waiting subscriber checks its condition. */
  const listeners = new Set<() => void>()
  const progress = () => {
    for (const listener of [...listeners]) listener()
  }

  /** Connects to `node`, or, when it is gone, to the node that is left. */
  async function connectTo(node: Node, options: Parameters<typeof connectClient>[1]): Promise<[Node, Client]> {
    for (let target = node; ; target = other(target)) {
      const client = await connectClient(target.url, options)
      if (client.opened) return [target, client]
    }
  }

  const publisherNodes = new Map<number, Node>()

  async function publisher(index: number) {
    const topic = topics[index]!
    const seed = randomBytes(32).toString('hex')
    let [node, client] = await connectTo(nodes[index % 2]!, { seed })
    publisherNodes.set(index, node)
    // Batches are resent from the first one without a receipt, as a real client retries: what was
    // stored before a kill is stored once (same message, same id), the rest in order after it.
    await allSubscribed
    for (let next = 0; next < MESSAGES; ) {
      // At most a few batches ahead of the subscriber, so the load lasts across its moves.
      await until(() => (subscribers[index]?.seen.size ?? 0) >= next - 4 * BATCH)
      const messages = Array.from({ length: BATCH }, (_, k) => ({ topic, message: `m${next + k}`, ttl: 300, tag: 1108 }))
      try {
        await client.request('irn_batchPublish', { messages })
        next += BATCH
        receipted += BATCH
        if (!killed && receipted >= (TOPICS * MESSAGES) / 2) {
          killed = true
          const victim = nodes[1]!
          victim.alive = false
          victim.process.child.kill('SIGKILL')
        }
      } catch {
        ;[node, client] = await connectTo(other(node), { seed })
        publisherNodes.set(index, node)
      }
    }
    await client.close()
  }

  type Subscriber = { firstSeen: number[]; seen: Set<number>; confirmed: Set<number>; crossed: number; moves: number; done: boolean }
  const subscribers: Subscriber[] = []
  let subscribed = 0
  let everyoneSubscribed!: () => void
  const allSubscribed = new Promise<void>((resolve) => (everyoneSubscribed = resolve))
  /** Resolves once `condition` holds, checked on every push. */
  const until = (condition: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!condition()) return
        listeners.delete(check)
        resolve()
      }
      listeners.add(check)
      check()
    })

  async function subscriber(index: number): Promise<void> {
    const topic = topics[index]!
    const seed = randomBytes(32).toString('hex')
    const state: Subscriber = { firstSeen: [], seen: new Set(), confirmed: new Set(), crossed: 0, moves: 0, done: false }
    subscribers[index] = state
    let finish!: () => void
    const finished = new Promise<void>((resolve) => (finish = resolve))
    let onSocket: number[] = []
    let node = nodes[(index + 1) % 2]!
    const onPush = (push: Push) => {
      const value = Number(push.params.data.message.slice(1))
      const socketName = `${node.name} socket ${state.moves}`
      // On one socket: every message once, in publish order.
      if (onSocket.length && value <= onSocket.at(-1)!) problems.push(`topic ${index}: ${socketName} got m${value} after m${onSocket.at(-1)}`)
      onSocket.push(value)
      if (state.confirmed.has(value)) problems.push(`topic ${index}: m${value} sent again after its ack was stored`)
      if (!state.seen.has(value)) {
        if (state.firstSeen.length && value < state.firstSeen.at(-1)!) problems.push(`topic ${index}: m${value} first arrived after m${state.firstSeen.at(-1)}`)
        state.firstSeen.push(value)
        state.seen.add(value)
      }
      if (publisherNodes.get(index) !== node) state.crossed++
      if (state.seen.size === MESSAGES) {
        state.done = true
        finish()
      }
      progress()
    }
    let client: Client
    ;[node, client] = await connectTo(node, { seed, onPush })
    await client.request('irn_subscribe', { topic })
    if (++subscribed === TOPICS) everyoneSubscribed()
    while (!state.done) {
      // Move once enough arrived here, or at once when this node died under us.
      const moved = await Promise.race([
        finished.then(() => false),
        client.closed.then(() => true),
        until(() => onSocket.length >= MOVE_EVERY).then(() => false),
      ])
      if (state.done) break
      if (!moved) {
        // A round trip after the acks: the node has stored every ack sent before it.
        const acked = [...state.seen]
        try {
          await client.request('irn_unsubscribe', { topic: '0'.repeat(64), id: 'barrier' })
          for (const value of acked) state.confirmed.add(value)
        } catch {
          // The node died before answering: those acks may be lost, and their messages come again.
        }
        await client.close()
      }
      state.moves++
      onSocket = []
      ;[node, client] = await connectTo(other(node), { seed, onPush })
      await client.request('irn_batchSubscribe', { topics: [topic] }).catch(() => undefined)
    }
    await client.close()
  }

  const done = Promise.all([...topics.map((_, index) => subscriber(index)), ...topics.map((_, index) => publisher(index))])
  // No progress for 20 s: report what is missing rather than wait for the test timeout.
  let stalled!: (error: Error) => void
  const stall = new Promise<never>((_, reject) => (stalled = reject))
  const arm = () =>
    setTimeout(
      () => stalled(new Error(`no progress for 20 s: ${subscribers.map((s) => s.seen.size).join(', ')} of ${MESSAGES} each; ${receipted} receipted`)),
      20_000,
    )
  let watchdog = arm()
  listeners.add(() => {
    clearTimeout(watchdog)
    watchdog = arm()
  })
  try {
    await Promise.race([done, stall])
  } finally {
    clearTimeout(watchdog)
    for (const node of nodes) if (node.alive) node.process.child.kill('SIGTERM')
  }

  expect(killed).toBe(true)
  expect(problems).toEqual([])
  // Every message each publisher got a receipt for reached its subscriber, across nodes.
  for (const state of subscribers) {
    expect(state.firstSeen).toEqual(Array.from({ length: MESSAGES }, (_, value) => value))
    expect(state.moves).toBeGreaterThan(0)
    expect(state.crossed).toBeGreaterThan(0)
  }
}, 120_000)
