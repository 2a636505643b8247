import { hash } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import { getRequestListener } from '@hono/node-server'
import { createHttpObserver, type InflightRequest, type Logger, type Metrics, pathOf } from '@latchkey/service'
import { RelayAuthError, verifyRelayJwt } from '@latchkey/walletconnect'
import type { Hono } from 'hono'
import { integerLength, messageJsonBytes, writeInteger, writeMessageJson } from './bytes.js'
import { coalescer } from './coalesce.js'
import { verifyEd25519 } from './ed25519.js'
import { createRelayHttpApp, RelayErrorCode } from './http.js'
import { InFlight } from './inflight.js'
import { type ConnectionLimits, connectionGate } from './limits.js'
import { relayMetrics } from './metrics.js'
import { QuotaExceededError } from './quota.js'
import {
  ackSchema,
  firstIssue,
  isMethod,
  JSON_SAFE,
  type Method,
  methodParams,
  type ParamsOf,
  type PublishParams,
  plainAckId,
  plainPublish,
  readPlainPublish,
  requestSchema,
} from './schemas.js'
import { memoryStore, type NewMessage, type RelayStore, type StoredMessage } from './store.js'
import { acceptWebSockets, type ServerWebSocket, type WebSocketServer } from './websocket.js'

export { RelayErrorCode } from './http.js'

export type RelayLimits = ConnectionLimits & {
  /** Largest `message` accepted in a publish, in bytes. Default 512 KiB. */
  maxMessageBytes?: number | undefined
  /** Subscriptions one connection may hold. Default 1000. */
  maxSubscriptions?: number | undefined
  /**
   * Requests one client (its token's key) may send per second, over all its connections; on a
   * store several nodes share (Redis), over every node. Answers to our pushes do not count.
   * Default 200.
   */
  maxRequestsPerSecond?: number | undefined
  /**
   * Most messages in one `irn_batchFetchMessages` reply; past it the reply says `hasMore: true`
   * and the client's next fetch of the same topics continues after it. Default 100.
   */
  maxFetchMessages?: number | undefined
  /** Most message bytes in one `irn_batchFetchMessages` reply (one message always goes). Default 2 MiB. */
  maxFetchBytes?: number | undefined
}

export type RelayOptions = {
  port: number
  /** Default `127.0.0.1`. */
  host?: string | undefined
  /** Default: in memory. */
  store?: RelayStore | undefined
  /** The clock, unix ms. Tests move it to expire messages. */
  now?: (() => number) | undefined
  /** Ping interval; a connection that misses a pong is dropped. Default 30 000 ms. */
  heartbeatMs?: number | undefined
  /** Accepted token audiences; default any (localhost and 127.0.0.1 URLs differ). */
  audiences?: readonly string[] | undefined
  /**
   * Chain RPCs behind the JSON-RPC HTTP endpoint `POST /v1/?chainId=eip155:N&projectId=…`, by
   * CAIP-2 chain id (e.g. `{ 'eip155:31337': 'http://127.0.0.1:8545' }`).
   */
  rpc?: Readonly<Record<string, string>> | undefined
  /**
   * Project ids the JSON-RPC HTTP endpoint accepts: when given, a request without one of them is
   * refused (`RelayErrorCode.unknownProject`). Default: any, or none (a local relay).
   */
  projectIds?: readonly string[] | undefined
  /** How long a chain's RPC may take to answer the HTTP endpoint, in ms. Default 10 000. */
  upstreamTimeoutMs?: number | undefined
  /**
   * JSON-RPC requests one IP address may send the HTTP endpoint per second (each of a batch
   * counts); past it the request is refused (429, `RelayErrorCode.rateLimited`). Default 100; 0: none.
   */
  maxRpcRequestsPerSecond?: number | undefined
  limits?: RelayLimits | undefined
  /**
   * Under sustained load, how long the relay waits (sleeps) after a loop iteration that read few
   * frames, so that the next one reads more at once, in µs: fewer wake-ups, reads and callbacks per
   * message (about a fifth less CPU per message in `bench:relay`), for at most this much more
   * latency. A relay that is busy, or idle, never waits (see coalesce.ts). Default 200; 0 never waits.
   */
  coalesceMicros?: number | undefined
  /**
   * Where to log (pino): one line per HTTP request and per WebSocket connection when it closes,
   * each with its request id; never a token or a query string. Default: no logs.
   */
  logger?: Logger | undefined
  /**
   * Prometheus metrics (`latchkey-relay --metrics-port`): HTTP requests by route, open sockets,
   * subscriptions, publishes and deliveries. Default: nothing exposed.
   */
  metrics?: Metrics | undefined
}

export type Relay = {
  readonly name: string
  readonly host: string
  readonly port: number
  /** ws:// URL clients connect to. */
  readonly url: string
  /** The HTTP side (the JSON-RPC endpoint) as a Hono app: `app.request(...)` without a port. */
  readonly app: Hono
  start(): Promise<void>
  stop(): Promise<void>
  /** Connected clients, for tests and monitoring. */
  connections(): number
  /** HTTP requests not yet answered (WebSocket connections are not requests). */
  inflight(): InflightRequest[]
}

/**
 * A push, written into the outgoing buffer part by part: our keys from constant bytes, ids and
 * numbers as the relay holds them, and the message, most of the frame, as it is held. `text` is the
 * message between quotes when `quoted` (it is `JSON_SAFE`: base64, hex), else as JSON text already
 * (escaped here, or as a store holds it). The ids and the topic are hex: their length is their size.
 */
class Push {
  constructor(
    readonly id: number,
    readonly subscription: string,
    readonly message: StoredMessage,
    readonly text: string,
    readonly quoted: boolean,
  ) {}
}

/** The constant parts of a push's frame, around its id, subscription id, topic, message, publishedAt and tag. */
const PUSH_PARTS = [
  '{"id":',
  ',"jsonrpc":"2.0","method":"irn_subscription","params":{"id":"',
  '","data":{"topic":"',
  '","message":',
  ',"publishedAt":',
  ',"tag":',
  ',"attestation":""}}}',
].map((part) => Buffer.from(part))
const [PUSH_ID, PUSH_SUBSCRIPTION, PUSH_TOPIC, PUSH_MESSAGE, PUSH_PUBLISHED_AT, PUSH_TAG, PUSH_END] = PUSH_PARTS as [
  Buffer,
  Buffer,
  Buffer,
  Buffer,
  Buffer,
  Buffer,
  Buffer,
]
const PUSH_CONSTANT_BYTES = PUSH_PARTS.reduce((sum, part) => sum + part.length, 0)

const pushLength = (push: Push) =>
  PUSH_CONSTANT_BYTES +
  integerLength(push.id) +
  push.subscription.length +
  push.message.topic.length +
  (push.quoted ? messageJsonBytes(push.text, true) : Buffer.byteLength(push.text)) +
  integerLength(push.message.publishedAt) +
  integerLength(push.message.tag)

/** Writes a push's frame payload at `at`; answers where it ends. */
function writePush(buffer: Buffer, at: number, push: Push): number {
  const { message } = push
  buffer.set(PUSH_ID, at)
  at = writeInteger(buffer, at + PUSH_ID.length, push.id)
  buffer.set(PUSH_SUBSCRIPTION, at)
  at += PUSH_SUBSCRIPTION.length
  at += buffer.write(push.subscription, at, 'latin1')
  buffer.set(PUSH_TOPIC, at)
  at += PUSH_TOPIC.length
  at += buffer.write(message.topic, at, 'latin1')
  buffer.set(PUSH_MESSAGE, at)
  at += PUSH_MESSAGE.length
  at = push.quoted ? writeMessageJson(buffer, at, push.text, true) : at + buffer.write(push.text, at)
  buffer.set(PUSH_PUBLISHED_AT, at)
  at = writeInteger(buffer, at + PUSH_PUBLISHED_AT.length, message.publishedAt)
  buffer.set(PUSH_TAG, at)
  at = writeInteger(buffer, at + PUSH_TAG.length, message.tag)
  buffer.set(PUSH_END, at)
  return at + PUSH_END.length
}

/** Frames gathered for all connections that are written out at once, not at the end of the loop iteration. */
const OUT_AT_ONCE = 1000

/** WebSocket close codes: 4001 for a refused token, 4008 for abuse. */
export const RelayCloseCode = { unauthorized: 4001, policy: 4008 } as const

/** One topic a connection subscribed. */
type Subscription = {
  readonly connection: Connection
  /** The id clients compute themselves: sha256(topic ‖ clientId). */
  readonly id: string
  /** The `seq` of the last message of the topic this connection was sent or had no need of. */
  cursor: number
  /**
   * Live messages held while the stored backlog is read, sent after it; undefined once the
   * subscription is live. A topic's messages thus reach a connection once each, in `seq` order.
   */
  held: StoredMessage[] | undefined
}

type Connection = {
  socket: ServerWebSocket
  /** The TCP socket under the WebSocket (from the HTTP upgrade): a turn's frames leave on it in one write. */
  tcp: Socket
  clientId: string
  subscriptions: Map<string, Subscription>
  /** Pushed irn_subscription requests awaiting the client's ack, by request id. */
  inflight: InFlight<StoredMessage>
  alive: boolean
  /** Text frames to send at the end of this loop iteration (or sooner, see send), in order, in one write. */
  out: (string | Push)[]
  /** The request being handled and those queued behind it; the next starts when it settles. */
  queue: Promise<void>
  /** Requests in `queue` not yet settled: at 0 a publish is handled at once, without a promise. */
  pending: number
  /** Publishes taken and not yet answered. */
  unanswered: number
  /** Set once a request is refused for its rate: nothing after it is handled. */
  refused: boolean
  /** The client's count in the second `rateSecond`, kept here so a request is counted without a lookup. */
  rate: ClientRate | undefined
  rateSecond: number
  /** The last promise `store.ack` answered this connection: a commit's acks share one, followed once. */
  ackWrite: Promise<void> | undefined
  /** The refusal, sent and the socket closed once every publish before it is answered. */
  refusal: (() => void) | undefined
  /**
   * By topic, the `seq` of the last message an `irn_batchFetchMessages` reply that said `hasMore`
   * held: the next fetch continues after it. Dropped once a fetch of those topics is complete.
   */
  fetched: Map<string, number> | undefined
}

/**
 * A client's requests in one second: `count` on a store of this node alone; on a shared store,
 * what this node may still let through (`left`, then `spent` once the limit is reached over all
 * nodes, `taking` while the next part is asked for).
 */
type ClientRate = { count: number; left: number; spent: boolean; taking: Promise<void> | undefined }

/** A frame that is a request, its envelope checked; its params are checked when its turn comes. */
type Request = {
  id: number | string
  method: string
  params: unknown
  checked: PublishParams | undefined
  /** The publish's message is known to be `JSON_SAFE` (read from its bytes): not tested again. */
  jsonSafe?: true | undefined
}

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

/**
 * A WalletConnect-compatible relay: clients authenticate with an EdDSA JWT, subscribe to topics
 * and publish to them; each message is kept for its TTL, pushed to current subscribers (never
 * back to its publisher), flushed to new ones, in publish order, and not sent again after a
 * client acknowledged it. A refused request changes nothing.
 *
 * @example
 * const relay = createRelay({ port: 5555 })
 * await relay.start()
 */
export function createRelay(options: RelayOptions): Relay {
  const host = options.host ?? '127.0.0.1'
  const store = options.store ?? memoryStore()
  // A shared store (Redis) hands this node every stored message, its own included, in one ordered
  // stream; a local store's messages are pushed as `add` answers them, which is in order too.
  const shared = store.watch !== undefined
  const now = options.now ?? Date.now
  const maxMessageBytes = options.limits?.maxMessageBytes ?? 512 * 1024
  const maxSubscriptions = options.limits?.maxSubscriptions ?? 1000
  const maxRequestsPerSecond = options.limits?.maxRequestsPerSecond ?? 200
  const maxFetchMessages = options.limits?.maxFetchMessages ?? 100
  const maxFetchBytes = options.limits?.maxFetchBytes ?? 2 * 1024 * 1024
  const countShared = store.countRequests?.bind(store)
  const addToBatch = shared ? undefined : store.addToBatch?.bind(store)
  /**
   * Publishes awaiting the commit that holds them (`addToBatch`), a flat list of connection, request
   * id and the stored message (undefined for a copy of one stored before): a commit settles its
   * publishes with one callback, not a promise and two closures each.
   */
  let commitGroup: { committed: Promise<void>; entries: (Connection | number | string | StoredMessage | undefined)[] } | undefined
  /**
   * The current second's requests per client (a store of this node alone), or what this node may
   * still let through of each client's allowance (a shared store: taken a tenth of the limit at a
   * time, so Redis sees one count per tenth rather than one per request).
   */
  let rateWindow = { second: -1, clients: new Map<string, ClientRate>() }
  const allowanceChunk = Math.max(1, Math.floor(maxRequestsPerSecond / 10))
  /**
   * Each topic's subscriptions on this node. A list is replaced, never changed, when one is added or
   * dropped (rare beside the messages it serves): a fan-out walks the list it found, by index.
   */
  const subscribers = new Map<string, readonly Subscription[]>()
  const connections = new Map<ServerWebSocket, Connection>()
  /** The latest ack write not yet stored, by client id: reading a client's backlog waits for it. */
  const lastAcks = new Map<string, { write: Promise<void>; settled: Promise<void> }>()
  let server: Server | undefined
  let wss: WebSocketServer | undefined
  let timers: NodeJS.Timeout[] = []
  let unwatch: (() => Promise<void>) | undefined
  let nextRequestId = 1
  /** Connections with frames gathered this loop iteration, written out once the I/O callbacks have run. */
  let pendingOut: Connection[] = []
  /** Frames gathered since the last write-out: at OUT_AT_ONCE they leave without waiting for the iteration's end. */
  let pendingFrames = 0
  /** The byte lengths of the frames being written out, kept from one write to the next. */
  const lengths: number[] = []
  const { logger } = options
  const coalesceMicros = options.coalesceMicros ?? 200
  if (!(coalesceMicros >= 0 && coalesceMicros <= 100_000)) throw new RangeError('coalesceMicros must be between 0 and 100 000 µs')
  const turns = coalescer({ micros: coalesceMicros, flush: writeAll })
  const gate = connectionGate(options.limits)
  const app = createRelayHttpApp({
    rpc: options.rpc ?? {},
    projectIds: options.projectIds,
    upstreamTimeoutMs: options.upstreamTimeoutMs,
    maxRpcRequestsPerSecond: options.maxRpcRequestsPerSecond,
    metrics: options.metrics,
  })
  // Counted as plain numbers on the hot path; the metrics read them when scraped.
  const counts = { published: 0, delivered: 0 }
  if (options.metrics) relayMetrics(options.metrics, counts, () => connections.values())
  // GET /readyz: the store answers.
  const observer = createHttpObserver({ logger, ready: () => store.ping?.() })
  /** The id given to each WebSocket upgrade (echoed in its 101 response), for its log line. */
  const upgradeIds = new WeakMap<IncomingMessage, string>()

  function accept(socket: ServerWebSocket, request: IncomingMessage) {
    if (logger) {
      const requestId = upgradeIds.get(request) ?? observer.requestIdOf(request)
      const startedAt = performance.now()
      const path = pathOf(request.url)
      socket.once('close', (code, reason) => {
        const fields = {
          reqId: requestId,
          method: 'GET',
          path,
          status: 101,
          closeCode: code,
          closeReason: reason,
          durationMs: Math.round(performance.now() - startedAt),
        }
        logger.info(fields, `WebSocket ${path} closed ${code}${fields.closeReason ? ` (${fields.closeReason})` : ''}`)
      })
    }
    const token = new URL(request.url ?? '/', 'http://relay').searchParams.get('auth') ?? ''
    let clientId: string
    try {
      clientId = verifyRelayJwt(token, { now: Math.floor(now() / 1000), audiences: options.audiences, verifySignature: verifyEd25519 }).iss
    } catch (error) {
      socket.close(RelayCloseCode.unauthorized, error instanceof RelayAuthError ? error.reason : 'unauthorized')
      return
    }
    const connection: Connection = {
      socket,
      tcp: request.socket,
      clientId,
      subscriptions: new Map(),
      inflight: new InFlight(),
      alive: true,
      out: [],
      queue: Promise.resolve(),
      pending: 0,
      unanswered: 0,
      refused: false,
      refusal: undefined,
      rate: undefined,
      rateSecond: -1,
      ackWrite: undefined,
      fetched: undefined,
    }
    connections.set(socket, connection)
    // Requests of one connection are handled one after another: per-topic order holds. A publish
    // holds its turn only until the store has taken it (see onRequest). Acks (answers to our
    // pushes) need no turn in that queue and are taken at once.
    socket.onmessage = (buffer, start, end) => {
      turns.read()
      onFrame(connection, buffer, start, end)
    }
    function onFrame(connection: Connection, buffer: Buffer, start: number, end: number) {
      const ackId = plainAckId(buffer, start, end)
      if (ackId !== undefined) return acknowledge(connection, ackId, false)
      const publish = readPlainPublish(buffer, start, end)
      if (publish)
        return enqueue(
          connection,
          { id: publish.id, method: 'irn_publish', params: publish.params, checked: publish.params, jsonSafe: true },
          withinRate(connection),
        )
      const text = buffer.toString('utf8', start, end)
      let payload: unknown
      try {
        payload = JSON.parse(text)
      } catch {
        return reply(connection, null, undefined, new RpcError(RelayErrorCode.parse, 'Parse error: the frame is not JSON'))
      }
      if (isAck(payload)) return onAck(connection, payload)
      const request = toRequest(payload)
      if (request instanceof RpcError) return reply(connection, idOf(payload), undefined, request)
      // Counted as it arrives, not when its turn comes: on a shared store every request read in
      // one turn is counted in one round trip.
      enqueue(connection, request, withinRate(connection))
    }
    socket.on('pong', () => (connection.alive = true))
    socket.on('close', () => {
      connections.delete(socket)
      for (const topic of [...connection.subscriptions.keys()]) unsubscribe(connection, topic)
    })
  }

  function onAck(connection: Connection, payload: unknown) {
    const ack = ackSchema.safeParse(payload)
    if (ack.success) acknowledge(connection, ack.data.id, ack.data.error !== undefined)
  }

  function acknowledge(connection: Connection, requestId: number, failed: boolean) {
    const message = connection.inflight.take(requestId)
    if (message === undefined) return
    // A client that answers a push with an error gets it again when it next subscribes.
    if (failed) return
    const { clientId } = connection
    // Stores take acks in order and settle them in order: the last one stored means all are. A
    // store that stores acks in batches answers a batch's acks with one promise: followed once.
    const write = store.ack(clientId, message.id, message.expiresAt, now(), message)
    if (connection.ackWrite === write) return
    connection.ackWrite = write
    // Another connection of the client may have followed it already.
    if (lastAcks.get(clientId)?.write === write) return
    const settled: Promise<void> = write.then(
      () => {
        if (lastAcks.get(clientId)?.settled === settled) lastAcks.delete(clientId)
      },
      () => {
        if (lastAcks.get(clientId)?.settled === settled) lastAcks.delete(clientId)
      },
    )
    lastAcks.set(clientId, { write, settled })
  }

  /** Resolves once every ack this node took from the client is stored (or failed). */
  const acksStored = (clientId: string) => lastAcks.get(clientId)?.settled

  /** A request's envelope, or the error it is answered with. Publishes, most frames, skip zod. */
  function toRequest(payload: unknown): Request | RpcError {
    const publish = plainPublish(payload)
    if (publish) return { id: publish.id, method: 'irn_publish', params: publish.params, checked: publish.params }
    const request = requestSchema.safeParse(payload)
    if (!request.success) return new RpcError(RelayErrorCode.invalidRequest, firstIssue(request.error, 'Invalid request'))
    return { id: request.data.id, method: request.data.method, params: request.data.params, checked: undefined }
  }

  /**
   * Runs a request in its connection's turn. A request that finds the queue empty and is done
   * without waiting (a publish, its rate known) takes no promise at all.
   */
  function enqueue(connection: Connection, request: Request, allowed: boolean | Promise<boolean>) {
    let running: Promise<void> | undefined
    // The common case with no closure at all: nothing queued, the rate known, a publish.
    if (connection.pending === 0 && typeof allowed === 'boolean') {
      running = onRequest(connection, request, allowed)
      if (!running) return
    }
    connection.pending++
    // Inline closures: a named one costs a defineProperty per request where names are kept (tsx).
    running ??= connection.queue.then(() =>
      typeof allowed === 'boolean' ? onRequest(connection, request, allowed) : allowed.then((ok) => onRequest(connection, request, ok)),
    )
    connection.queue = running.then(
      () => void connection.pending--,
      (error: unknown) => {
        connection.pending--
        reply(connection, request.id, undefined, internal(error))
      },
    )
  }

  /**
   * Handles one request; the connection's next request is handled once this resolves. A publish
   * resolves as soon as the store has taken its messages, which fixes their order, and is answered
   * when they are stored: a client that pipelines publishes gets them written in one commit instead
   * of one commit each. Every other request first waits for the client's acks to be stored, so an
   * answer to one of them also says that every ack sent before it is kept.
   */
  function onRequest(connection: Connection, request: Request, allowed: boolean): Promise<void> | undefined {
    const { id, method } = request
    if (connection.refused) return
    try {
      if (!allowed) {
        // Publishes taken before it are stored: their receipts go out first, then the refusal.
        connection.refused = true
        connection.refusal = () => {
          reply(connection, id, undefined, new RpcError(RelayErrorCode.rateLimited, `Rate limit: at most ${maxRequestsPerSecond} requests per second`))
          // The frames gathered so far, this refusal last, leave before the close frame.
          writeOut(connection)
          connection.socket.close(RelayCloseCode.policy, 'rate limit exceeded')
        }
        if (connection.unanswered === 0) connection.refusal()
        return
      }
      let params: unknown = request.checked
      if (params === undefined) {
        if (!isMethod(method)) throw new RpcError(RelayErrorCode.methodNotFound, `Method not found: ${method}`)
        const checked = methodParams[method].safeParse(request.params ?? {})
        if (!checked.success) throw new RpcError(RelayErrorCode.invalidParams, firstIssue(checked.error, 'Invalid params'))
        params = checked.data
      }
      if (method === 'irn_publish') {
        // The commonest request, with as few objects as it takes: it is held until its commit.
        const message = toNewMessage(connection, params as PublishParams, request.jsonSafe)
        counts.published++
        if (addToBatch) {
          // Throws, holding nothing, for a message past a storage quota.
          const taken = addToBatch(message)
          connection.unanswered++
          return void toCommit(connection, id, taken)
        }
        connection.unanswered++
        store.add(message).then(
          (added) => {
            if (added && !shared) fanOut(added)
            answered(connection, id, true)
          },
          (error: unknown) => answered(connection, id, undefined, internal(error)),
        )
        return
      }
      if (method === 'irn_batchPublish') {
        const entries = (params as ParamsOf<'irn_batchPublish'>).messages
        const messages = entries.map((entry) => toNewMessage(connection, entry))
        // Stored whole or not at all: a batch past a quota is refused before any of it is stored
        // (on Redis, by the script that stores it: see `addAll`).
        store.checkQuota?.(messages)
        connection.unanswered++
        publish(
          messages,
          () => answered(connection, id, true),
          (error: unknown) => answered(connection, id, undefined, internal(error)),
        )
        return
      }
      const unacked = acksStored(connection.clientId)
      const handled = unacked
        ? unacked.then(() => handle(connection, id, method as Exclude<Method, 'irn_publish' | 'irn_batchPublish'>, params))
        : handle(connection, id, method as Exclude<Method, 'irn_publish' | 'irn_batchPublish'>, params)
      return handled.catch((error: unknown) => reply(connection, id, undefined, internal(error)))
    } catch (error) {
      reply(connection, id, undefined, internal(error))
      return undefined
    }
  }

  /** Answers a request other than a publish; throws (having changed nothing) to refuse it. */
  async function handle(connection: Connection, id: number | string, method: Exclude<Method, 'irn_publish' | 'irn_batchPublish'>, params: unknown) {
    switch (method) {
      case 'irn_subscribe': {
        const { topic } = params as ParamsOf<'irn_subscribe'>
        const opening = await open(connection, [topic])
        reply(connection, id, opening.ids[0])
        return opening.flush()
      }
      case 'irn_batchSubscribe': {
        const { topics } = params as ParamsOf<'irn_batchSubscribe'>
        const opening = await open(connection, topics)
        reply(connection, id, opening.ids)
        return opening.flush()
      }
      case 'irn_unsubscribe':
        unsubscribe(connection, (params as ParamsOf<'irn_unsubscribe'>).topic)
        return reply(connection, id, true)
      case 'irn_batchUnsubscribe':
        for (const { topic } of (params as ParamsOf<'irn_batchUnsubscribe'>).subscriptions) unsubscribe(connection, topic)
        return reply(connection, id, true)
      case 'irn_batchFetchMessages':
        return reply(connection, id, await fetchPage(connection, (params as ParamsOf<'irn_batchFetchMessages'>).topics))
      case 'wc_proposeSession': {
        // The dapp skipped irn_subscribe for the pairing topic: subscribing it is the relay's job,
        // and a proposal that is refused or not stored leaves it unsubscribed.
        const { pairingTopic, sessionProposal, ttl } = params as ParamsOf<'wc_proposeSession'>
        const proposal = toNewMessage(connection, { topic: pairingTopic, message: sessionProposal, ttl, tag: 1100 })
        const opening = await open(connection, [pairingTopic])
        try {
          await published([proposal])
        } catch (error) {
          opening.undo()
          throw error
        }
        reply(connection, id, true)
        return opening.flush()
      }
      case 'wc_approveSession': {
        const { sessionTopic, pairingTopic, sessionProposalResponse, sessionSettlementRequest, ttl } = params as ParamsOf<'wc_approveSession'>
        const messages = [
          toNewMessage(connection, { topic: pairingTopic, message: sessionProposalResponse, ttl, tag: 1101 }),
          toNewMessage(connection, { topic: sessionTopic, message: sessionSettlementRequest, ttl, tag: 1102 }),
        ]
        store.checkQuota?.(messages)
        const opening = await open(connection, [sessionTopic])
        try {
          await published(messages)
        } catch (error) {
          opening.undo()
          throw error
        }
        reply(connection, id, true)
        return opening.flush()
      }
    }
  }

  /**
   * The next page of what the client has not acknowledged on these topics, in order: at most
   * `maxFetchMessages` messages and `maxFetchBytes` bytes (one message always goes). A full page
   * says `hasMore` and the next fetch continues after it; a complete one starts the next afresh.
   * (The official clients read one page: what they subscribe to is pushed to them in any case.)
   */
  async function fetchPage(connection: Connection, topics: readonly string[]) {
    const cursors = connection.fetched
    const messages = []
    const reached = new Map<string, number>()
    let bytes = 0
    let hasMore = false
    pages: for (const topic of topics)
      for (const [m, wanted] of await backlog(connection.clientId, topic)) {
        if (!wanted || m.seq <= (reached.get(topic) ?? cursors?.get(topic) ?? 0)) continue
        if (messages.length === maxFetchMessages || (messages.length > 0 && bytes + m.message.length > maxFetchBytes)) {
          hasMore = true
          break pages
        }
        bytes += m.message.length
        reached.set(topic, m.seq)
        messages.push({ topic: m.topic, message: m.message, publishedAt: m.publishedAt, tag: m.tag, attestation: '' })
      }
    if (hasMore) {
      connection.fetched ??= new Map()
      for (const [topic, seq] of reached) connection.fetched.set(topic, seq)
    } else if (cursors) for (const topic of topics) cursors.delete(topic)
    return { messages, hasMore }
  }

  /**
   * Subscribes a connection to topics, all or none: topics it already holds keep their
   * subscription; new ones are registered for live messages (held back for now) and their stored
   * backlog is read. Resolves with the subscription ids and `flush`, to be called right after the
   * reply, which sends the backlog and then the held messages, each once and in order; `undo`
   * drops the new subscriptions instead. Throws, having subscribed nothing, when the connection
   * would hold too many or the store fails.
   */
  async function open(connection: Connection, topics: readonly string[]) {
    const fresh = [...new Set(topics)].filter((topic) => !connection.subscriptions.has(topic))
    if (connection.subscriptions.size + fresh.length > maxSubscriptions)
      throw new RpcError(RelayErrorCode.tooManySubscriptions, `Too many subscriptions: at most ${maxSubscriptions} per connection`)
    const opened = fresh.map((topic): [string, Subscription] => {
      const subscription: Subscription = { connection, id: sha256Hex(topic + connection.clientId), cursor: 0, held: [] }
      connection.subscriptions.set(topic, subscription)
      subscribers.set(topic, [...(subscribers.get(topic) ?? []), subscription])
      return [topic, subscription]
    })
    const undo = () => {
      for (const [topic, subscription] of opened) if (connection.subscriptions.get(topic) === subscription) unsubscribe(connection, topic)
    }
    let backlogs: (readonly [StoredMessage, boolean])[][]
    try {
      backlogs = await Promise.all(opened.map(([topic]) => backlog(connection.clientId, topic)))
    } catch (error) {
      undo()
      throw error
    }
    return {
      ids: topics.map((topic) => connection.subscriptions.get(topic)!.id),
      undo,
      flush() {
        for (const [index, [topic, subscription]] of opened.entries()) {
          // Closed or unsubscribed meanwhile: nothing to send.
          if (connection.subscriptions.get(topic) !== subscription) continue
          for (const [message, wanted] of backlogs[index]!)
            if (message.seq > subscription.cursor) {
              subscription.cursor = message.seq
              if (wanted) deliver(connection, subscription, message)
            }
          const held = subscription.held ?? []
          subscription.held = undefined
          for (const message of held) live(connection, subscription, message)
        }
      },
    }
  }

  function unsubscribe(connection: Connection, topic: string) {
    connection.subscriptions.delete(topic)
    const left = (subscribers.get(topic) ?? []).filter((subscription) => subscription.connection !== connection)
    if (left.length) subscribers.set(topic, left)
    else subscribers.delete(topic)
  }

  /**
   * Hands messages (all checked) to the store in order at once; a local store's are pushed to this
   * node's subscribers as it stores them. Calls `stored` once all are stored, else `failed`.
   */
  function publish(messages: readonly NewMessage[], stored: () => void, failed: (error: unknown) => void) {
    counts.published += messages.length
    // One message, the common case, in one callback.
    if (messages.length === 1) {
      store.add(messages[0]!).then((added) => {
        if (added && !shared) fanOut(added)
        stored()
      }, failed)
      return
    }
    // Several at once: a store that checks quotas only as it stores takes them whole or not at all.
    if (store.addAll) {
      store.addAll(messages).then((added) => {
        if (!shared) for (const message of added) if (message) fanOut(message)
        stored()
      }, failed)
      return
    }
    Promise.all(
      messages.map((message) =>
        store.add(message).then((added) => {
          if (added && !shared) fanOut(added)
        }),
      ),
    ).then(stored, failed)
  }

  const published = (messages: readonly NewMessage[]) => new Promise<void>((resolve, reject) => publish(messages, resolve, reject))

  /** `jsonSafe`: the message is known to be `JSON_SAFE`, so ASCII: its length is its size. */
  function toNewMessage(connection: Connection, params: Pick<PublishParams, 'topic' | 'message' | 'ttl' | 'tag'>, jsonSafe?: true): NewMessage {
    const { message } = params
    if ((jsonSafe ? message.length : Buffer.byteLength(message)) > maxMessageBytes)
      throw new RpcError(RelayErrorCode.tooLarge, `Message too large: at most ${maxMessageBytes} bytes`)
    const publishedAt = now()
    return {
      id: sha256Hex(params.topic + message),
      topic: params.topic,
      message,
      tag: params.tag,
      publishedAt,
      expiresAt: publishedAt + params.ttl * 1000,
      publisher: connection.clientId,
      // Tested once here, where a push and a stored row would each test it again.
      jsonSafe: jsonSafe ?? JSON_SAFE.test(message),
    }
  }

  /** Whether a message of `topic` from `publisher` goes to anyone here: publishers never get their own. */
  function wants(topic: string, publisher: string): boolean {
    const list = subscribers.get(topic)
    if (list) for (let index = 0; index < list.length; index++) if (list[index]!.connection.clientId !== publisher) return true
    return false
  }

  /** Pushes a newly stored message to this node's subscribers of its topic. */
  function fanOut(message: StoredMessage) {
    const list = subscribers.get(message.topic)
    if (!list) return
    for (let index = 0; index < list.length; index++) {
      const subscription = list[index]!
      live(subscription.connection, subscription, message)
    }
  }

  /** A message stored after the subscription opened: held while the backlog is read, else sent once. */
  function live(connection: Connection, subscription: Subscription, message: StoredMessage) {
    if (subscription.held) return void subscription.held.push(message)
    // An announcement can arrive after its message's TTL (a slow Redis subscriber, a held backlog):
    // live delivery keeps the TTL exactly as the stored backlog does.
    if (message.seq <= subscription.cursor || message.expiresAt <= now()) return
    subscription.cursor = message.seq
    deliver(connection, subscription, message)
  }

  /**
   * Stored messages of a topic in order, each with whether this client still wants it: it neither
   * published nor acknowledged it.
   */
  async function backlog(clientId: string, topic: string): Promise<(readonly [StoredMessage, boolean])[]> {
    await acksStored(clientId)
    const messages = await store.list(topic, now())
    // Asked all at once: a Redis store answers them in one round trip.
    const acked = await Promise.all(messages.map((message) => message.publisher === clientId || store.isAcked(clientId, message.id)))
    return messages.map((message, index) => [message, !acked[index]] as const)
  }

  function deliver(connection: Connection, subscription: Subscription, message: StoredMessage) {
    if (message.publisher === connection.clientId || connection.socket.readyState !== connection.socket.OPEN) return
    counts.delivered++
    const id = nextRequestId++
    connection.inflight.add(id, message)
    // Written out rather than stringified from objects (see Push): this is the hot path. A message
    // the store holds as JSON text (Redis notices) goes as it is, unparsed; most others (base64)
    // need no escaping and go between quotes as they are.
    const { json } = message
    send(
      connection,
      json !== undefined
        ? new Push(id, subscription.id, message, json, false)
        : (message.jsonSafe ?? JSON_SAFE.test(message.message))
          ? new Push(id, subscription.id, message, message.message, true)
          : new Push(id, subscription.id, message, JSON.stringify(message.message), false),
    )
  }

  /**
   * Counts one request of the connection's client in the current second: whether it is within the
   * limit, at once for a store of this node alone, after a round trip for a shared one (which
   * counts every node's requests of that client).
   */
  function withinRate(connection: Connection): boolean | Promise<boolean> {
    const second = Math.floor(now() / 1000)
    // A new second starts every count afresh, and drops the last second's clients with it.
    if (second !== rateWindow.second) rateWindow = { second, clients: new Map() }
    // A client's connections share its count; each finds it once a second, not once a request.
    let rate = connection.rate
    if (connection.rateSecond !== second || !rate) {
      const { clientId } = connection
      rate = rateWindow.clients.get(clientId)
      if (!rate) rateWindow.clients.set(clientId, (rate = { count: 0, left: 0, spent: false, taking: undefined }))
      connection.rate = rate
      connection.rateSecond = second
    }
    if (countShared) return take(rate, connection.clientId, second)
    return ++rate.count <= maxRequestsPerSecond
  }

  /**
   * One request from a client's allowance on a shared store: from what this node holds, else after
   * taking the next part from the store (requests waiting on it are served in arrival order). A
   * node never lets a client past the limit over all nodes; parts other nodes hold unused may have
   * it refused a little early.
   */
  function take(allowance: ClientRate, clientId: string, second: number): boolean | Promise<boolean> {
    if (allowance.taking) return allowance.taking.then(() => take(allowance, clientId, second))
    if (allowance.left > 0) {
      allowance.left--
      return true
    }
    if (allowance.spent) return false
    const taking = countShared!(clientId, second * 1000, allowanceChunk).then(
      (total) => {
        allowance.left = Math.max(0, Math.min(allowanceChunk, maxRequestsPerSecond - (total - allowanceChunk)))
        // Less than a whole part: the limit is reached, over all nodes, for this second.
        allowance.spent = allowance.left < allowanceChunk
        allowance.taking = undefined
      },
      (error: unknown) => {
        allowance.taking = undefined
        throw error
      },
    )
    allowance.taking = taking
    return taking.then(() => take(allowance, clientId, second))
  }

  /** Queues a publish taken by `addToBatch` to be pushed and answered once its commit settles. */
  function toCommit(connection: Connection, id: number | string, taken: { added: StoredMessage | undefined; committed: Promise<void> }) {
    let group = commitGroup
    if (group?.committed !== taken.committed) {
      const opened = { committed: taken.committed, entries: [] }
      commitGroup = group = opened
      taken.committed.then(
        () => settleCommit(opened, undefined),
        (error: unknown) => settleCommit(opened, internal(error)),
      )
    }
    group.entries.push(connection, id, taken.added)
  }

  /** Pushes a settled commit's messages and answers their publishes, in the order they came. */
  function settleCommit(group: NonNullable<typeof commitGroup>, error: RpcError | undefined) {
    // Publishes after this point belong to a later commit, even where a store answers them with the same settled promise.
    if (commitGroup === group) commitGroup = undefined
    const { entries } = group
    for (let index = 0; index < entries.length; index += 3) {
      const connection = entries[index] as Connection
      const id = entries[index + 1] as number | string
      if (error) answered(connection, id, undefined, error)
      else {
        const added = entries[index + 2] as StoredMessage | undefined
        if (added) fanOut(added)
        answered(connection, id, true)
      }
    }
  }

  /** Answers a publish; the last one a refused connection waits for lets its refusal go. */
  function answered(connection: Connection, id: number | string, result: unknown, error?: RpcError) {
    reply(connection, id, result, error)
    if (--connection.unanswered === 0) connection.refusal?.()
  }

  function reply(connection: Connection, id: number | string | null, result: unknown, error?: RpcError) {
    if (connection.socket.readyState !== connection.socket.OPEN) return
    // The receipt of a publish, the commonest reply, is written out.
    if (result === true && typeof id === 'number') return send(connection, `{"id":${id},"jsonrpc":"2.0","result":true}`)
    send(connection, JSON.stringify(error ? { id, jsonrpc: '2.0', error: { code: error.code, message: error.message } } : { id, jsonrpc: '2.0', result }))
  }

  /**
   * Sends a text frame. A connection's frames of one loop iteration leave in one write at its end:
   * under load a socket gets a reply and several pushes per turn, and a syscall, or a buffered
   * write, per frame would cost more than the relay's own work. Once OUT_AT_ONCE frames are
   * gathered they all leave at once: under load an iteration runs many sockets' callbacks, and
   * frames held through all of them outlive young collections, which then copy them.
   */
  function send(connection: Connection, frame: string | Push) {
    if (connection.out.length === 0) {
      if (pendingOut.length === 0) setImmediate(writeAll)
      pendingOut.push(connection)
    }
    connection.out.push(frame)
    if (++pendingFrames >= OUT_AT_ONCE) writeAll()
  }

  /** Writes out every connection's gathered frames. */
  function writeAll() {
    pendingFrames = 0
    const taken = pendingOut
    pendingOut = []
    for (const connection of taken) writeOut(connection)
  }

  /**
   * A connection's gathered frames as one buffer, framed here (RFC 6455: a server's frames are
   * unmasked, and this server negotiates no extension), in one write on the TCP socket under the
   * WebSocket. websocket.ts writes only control frames (ping, pong, close) of its own, whole and
   * never inside one of ours; a socket no longer open gets nothing more.
   */
  function writeOut(connection: Connection) {
    const frames = connection.out
    if (frames.length === 0) return
    connection.out = []
    if (connection.socket.readyState !== connection.socket.OPEN) return
    let size = 0
    for (let index = 0; index < frames.length; index++) {
      const frame = frames[index]!
      const length = typeof frame === 'string' ? Buffer.byteLength(frame) : pushLength(frame)
      lengths[index] = length
      size += length + (length < 126 ? 2 : length < 65_536 ? 4 : 10)
    }
    const buffer = Buffer.allocUnsafe(size)
    let at = 0
    for (let index = 0; index < frames.length; index++) {
      // FIN and the text opcode, then the length in its shortest form.
      buffer[at] = 0x81
      const length = lengths[index]!
      if (length < 126) {
        buffer[at + 1] = length
        at += 2
      } else if (length < 65_536) {
        buffer[at + 1] = 126
        buffer.writeUInt16BE(length, at + 2)
        at += 4
      } else {
        buffer[at + 1] = 127
        buffer.writeBigUInt64BE(BigInt(length), at + 2)
        at += 10
      }
      const frame = frames[index]!
      if (typeof frame === 'string') at += buffer.write(frame, at)
      else at = writePush(buffer, at, frame)
    }
    connection.tcp.write(buffer)
  }

  return {
    name: 'relay',
    host,
    port: options.port,
    url: `ws://${host}:${options.port}`,
    app,
    async start() {
      if (server) return
      unwatch ??= await store.watch?.(fanOut, { wants })
      const http = createServer(observer.listener(getRequestListener(app.fetch)))
      observer.track(http)
      await new Promise<void>((resolve, reject) => {
        // EADDRINUSE keeps its code, so callers (devnet) can say which port to change.
        http.once('error', reject)
        http.listen(options.port, host, () => {
          http.off('error', reject)
          resolve()
        })
      })
      const sockets = acceptWebSockets(http, {
        maxPayload: maxMessageBytes * 2,
        headers: (request) => {
          const requestId = observer.requestIdOf(request)
          upgradeIds.set(request, requestId)
          return [`x-request-id: ${requestId}`]
        },
        admit: gate.admit,
        release: gate.release,
        onConnection: accept,
      })
      server = http
      wss = sockets
      const heartbeat = setInterval(() => {
        for (const [socket, connection] of connections) {
          if (!connection.alive) {
            socket.terminate()
            continue
          }
          connection.alive = false
          socket.ping()
        }
      }, options.heartbeatMs ?? 30_000)
      const prune = setInterval(() => void store.prune(now()), 60_000)
      timers = [heartbeat, prune]
      for (const timer of timers) timer.unref()
    },
    /**
     * Stops accepting connections at once, closes every WebSocket (1001, clients reconnect
     * elsewhere), and resolves once the HTTP requests in flight are answered. The store stays open:
     * its owner closes it after this.
     */
    async stop() {
      for (const timer of timers) clearInterval(timer)
      timers = []
      const [http, sockets] = [server, wss]
      server = undefined
      wss = undefined
      // First, before anything is awaited: no new connection from here on, nor an upgrade on an
      // HTTP connection kept alive.
      const closed = new Promise<void>((resolve) => (http?.listening ? http.close(() => resolve()) : resolve()))
      sockets?.close()
      // Frames gathered this turn go before the close frame.
      writeAll()
      for (const socket of sockets?.clients ?? []) socket.close(1001, 'relay stopping')
      await observer.drain()
      await unwatch?.()
      unwatch = undefined
      await closed
      for (const socket of sockets?.clients ?? []) socket.terminate()
      await Promise.all([...lastAcks.values()].map((entry) => entry.settled))
      subscribers.clear()
      connections.clear()
    },
    connections: () => connections.size,
    inflight: () => observer.inflight(),
  }
}

const sha256Hex = (text: string) => hash('sha256', text, 'hex')

/** An answer to one of our pushes: a number id and no method. */
const isAck = (payload: unknown): boolean =>
  typeof payload === 'object' &&
  payload !== null &&
  (payload as { method?: unknown }).method === undefined &&
  typeof (payload as { id?: unknown }).id === 'number'

/** The id of a request that failed its schema, echoed when it is one. */
function idOf(payload: unknown): number | string | null {
  const id = typeof payload === 'object' && payload !== null ? (payload as { id?: unknown }).id : undefined
  return typeof id === 'number' || typeof id === 'string' ? id : null
}

/** What a client is told about a failure: our own errors as they are, anything else as an internal error. */
const internal = (error: unknown) =>
  error instanceof RpcError
    ? error
    : error instanceof QuotaExceededError
      ? new RpcError(RelayErrorCode.quotaExceeded, error.message)
      : new RpcError(RelayErrorCode.internal, 'Internal error')
