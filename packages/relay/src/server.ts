import { hash } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import { createHttpObserver, type InflightRequest, type Logger, pathOf } from '@latchkey/service'
import { RelayAuthError, verifyRelayJwt } from '@latchkey/walletconnect'
import { type WebSocket, WebSocketServer } from 'ws'
import { memoryStore, type RelayStore, type StoredMessage } from './store.js'

export type RelayLimits = {
  /** Largest `message` accepted in a publish, in bytes. Default 512 KiB. */
  maxMessageBytes?: number | undefined
  /** Subscriptions one connection may hold. Default 1000. */
  maxSubscriptions?: number | undefined
  /** Requests one connection may send per second. Default 200. */
  maxRequestsPerSecond?: number | undefined
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
  limits?: RelayLimits | undefined
  /**
   * Where to log (pino): one line per HTTP request and per WebSocket connection when it closes,
   * each with its request id; never a token or a query string. Default: no logs.
   */
  logger?: Logger | undefined
}

export type Relay = {
  readonly name: string
  readonly host: string
  readonly port: number
  /** ws:// URL clients connect to. */
  readonly url: string
  start(): Promise<void>
  stop(): Promise<void>
  /** Connected clients, for tests and monitoring. */
  connections(): number
  /** HTTP requests not yet answered (WebSocket connections are not requests). */
  inflight(): InflightRequest[]
}

/** JSON-RPC error codes the relay answers with. */
export const RelayErrorCode = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  tooLarge: -32010,
  tooManySubscriptions: -32011,
  rateLimited: -32012,
} as const

/** WebSocket close codes: 4001 for a refused token, 4008 for abuse. */
export const RelayCloseCode = { unauthorized: 4001, policy: 4008 } as const

const TOPIC = /^[0-9a-f]{64}$/
const MIN_TTL_S = 10
const MAX_TTL_S = 30 * 86_400
const MAX_BATCH = 500

type Connection = {
  socket: WebSocket
  clientId: string
  subscriptions: Map<string, string>
  /** Pushed irn_subscription requests awaiting the client's ack, by request id. */
  inflight: Map<number, string>
  /** Message ids on their way to this connection, so a flush and a live push never double up. */
  sent: Set<string>
  alive: boolean
  /** True while this turn's frames are being gathered into one write. */
  corked: boolean
  window: { startedAt: number; count: number }
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
 * client acknowledged it.
 *
 * @example
 * const relay = createRelay({ port: 5555 })
 * await relay.start()
 */
export function createRelay(options: RelayOptions): Relay {
  const host = options.host ?? '127.0.0.1'
  const store = options.store ?? memoryStore()
  const now = options.now ?? Date.now
  const maxMessageBytes = options.limits?.maxMessageBytes ?? 512 * 1024
  const maxSubscriptions = options.limits?.maxSubscriptions ?? 1000
  const maxRequestsPerSecond = options.limits?.maxRequestsPerSecond ?? 200
  const subscribers = new Map<string, Set<Connection>>()
  const connections = new Map<WebSocket, Connection>()
  let server: Server | undefined
  let wss: WebSocketServer | undefined
  let timers: NodeJS.Timeout[] = []
  let unwatch: (() => Promise<void>) | undefined
  let nextRequestId = 1
  const { logger } = options
  // GET /readyz: the store answers.
  const observer = createHttpObserver({ logger, ready: () => store.ping?.() })
  /** The id given to each WebSocket upgrade (echoed in its 101 response), for its log line. */
  const upgradeIds = new WeakMap<IncomingMessage, string>()

  function accept(socket: WebSocket, request: IncomingMessage) {
    if (logger) {
      const requestId = upgradeIds.get(request) ?? observer.requestIdOf(request)
      const startedAt = performance.now()
      const path = pathOf(request.url)
      socket.once('close', (code: number, reason: Buffer) => {
        const fields = {
          reqId: requestId,
          method: 'GET',
          path,
          status: 101,
          closeCode: code,
          closeReason: reason.toString(),
          durationMs: Math.round(performance.now() - startedAt),
        }
        logger.info(fields, `WebSocket ${path} closed ${code}${fields.closeReason ? ` (${fields.closeReason})` : ''}`)
      })
    }
    const token = new URL(request.url ?? '/', 'http://relay').searchParams.get('auth') ?? ''
    let clientId: string
    try {
      clientId = verifyRelayJwt(token, { now: Math.floor(now() / 1000), audiences: options.audiences }).iss
    } catch (error) {
      socket.close(RelayCloseCode.unauthorized, error instanceof RelayAuthError ? error.reason : 'unauthorized')
      return
    }
    const connection: Connection = {
      socket,
      clientId,
      subscriptions: new Map(),
      inflight: new Map(),
      sent: new Set(),
      alive: true,
      corked: false,
      window: { startedAt: now(), count: 0 },
    }
    connections.set(socket, connection)
    // Requests of one connection are handled one after another: per-topic order holds. A publish
    // holds its turn only until the store has taken it (see onMessage). Acks (answers to our
    // pushes) need no turn in that queue and are taken at once.
    let queue = Promise.resolve()
    socket.on('message', (data) => {
      const frame = parseFrame(data.toString())
      if (frame.kind === 'ack') onAck(connection, frame.payload)
      else queue = queue.then(() => onMessage(connection, frame)).catch(() => undefined)
    })
    socket.on('pong', () => (connection.alive = true))
    socket.on('close', () => {
      connections.delete(socket)
      for (const topic of connection.subscriptions.keys()) subscribers.get(topic)?.delete(connection)
    })
    socket.on('error', () => undefined)
  }

  function onAck(connection: Connection, payload: Payload & { id: number }) {
    const messageId = connection.inflight.get(payload.id)
    if (messageId === undefined) return
    connection.inflight.delete(payload.id)
    if (payload.error !== undefined) return void connection.sent.delete(messageId)
    // Not awaited: no one waits on an ack. Once it is stored the store answers for this message,
    // so `sent` only bridges the time before and stays as small as the unacknowledged pushes.
    void store.ack(connection.clientId, messageId).then(
      () => connection.sent.delete(messageId),
      () => undefined,
    )
  }

  /**
   * Handles one request; the connection's next request is handled once this resolves. A publish
   * resolves as soon as the store has taken its messages, which fixes their order, and is answered
   * when they are stored: a client that pipelines publishes gets them written in one commit instead
   * of one commit each.
   */
  async function onMessage(connection: Connection, frame: Exclude<Frame, { kind: 'ack' }>) {
    if (frame.kind === 'unparsable') return reply(connection, null, undefined, new RpcError(RelayErrorCode.parse, 'Parse error: the frame is not JSON'))
    const { payload } = frame
    const id = typeof payload?.id === 'number' || typeof payload?.id === 'string' ? payload.id : null
    try {
      if (!payload || typeof payload.method !== 'string') throw new RpcError(RelayErrorCode.invalidRequest, 'Invalid request: method is missing')
      if (!withinRate(connection)) {
        reply(connection, id, undefined, new RpcError(RelayErrorCode.rateLimited, `Rate limit: at most ${maxRequestsPerSecond} requests per second`))
        connection.socket.close(RelayCloseCode.policy, 'rate limit exceeded')
        return
      }
      if (payload.method === 'irn_publish' || payload.method === 'irn_batchPublish') {
        const params = (payload.params ?? {}) as Record<string, unknown>
        const stored = payload.method === 'irn_publish' ? publish(connection, [params]) : publish(connection, batchParam(params.messages))
        void stored.then(
          () => reply(connection, id, true),
          (error: unknown) => reply(connection, id, undefined, internal(error)),
        )
        return
      }
      const after: (() => Promise<void>)[] = []
      reply(connection, id, await handle(connection, payload.method, (payload.params ?? {}) as Record<string, unknown>, after))
      // Stored messages follow the subscribe reply, before this connection's next request is handled.
      for (const task of after) await task()
    } catch (error) {
      reply(connection, id, undefined, internal(error))
    }
  }

  async function handle(connection: Connection, method: string, params: Record<string, unknown>, after: (() => Promise<void>)[]): Promise<unknown> {
    switch (method) {
      case 'irn_subscribe': {
        const topic = topicParam(params.topic)
        const subscriptionId = subscribe(connection, topic)
        after.push(() => flush(connection, topic))
        return subscriptionId
      }
      case 'irn_batchSubscribe': {
        const topics = topicsParam(params.topics)
        const ids = topics.map((topic) => subscribe(connection, topic))
        for (const topic of topics) after.push(() => flush(connection, topic))
        return ids
      }
      case 'irn_unsubscribe': {
        const topic = topicParam(params.topic)
        unsubscribe(connection, topic)
        return true
      }
      case 'irn_batchUnsubscribe': {
        const list = Array.isArray(params.subscriptions) ? params.subscriptions : []
        for (const entry of list) unsubscribe(connection, topicParam((entry as { topic?: unknown }).topic))
        return true
      }
      case 'irn_batchFetchMessages': {
        const messages = []
        for (const topic of topicsParam(params.topics))
          for (const m of await unacknowledged(connection, topic))
            messages.push({ topic: m.topic, message: m.message, publishedAt: m.publishedAt, tag: m.tag, attestation: '' })
        return { messages, hasMore: false }
      }
      case 'wc_proposeSession': {
        // The dapp skipped irn_subscribe for the pairing topic: subscribing it is the relay's job.
        const pairingTopic = topicParam(params.pairingTopic)
        subscribe(connection, pairingTopic)
        await publish(connection, [{ topic: pairingTopic, message: params.sessionProposal, ttl: params.ttl ?? 300, tag: 1100 }])
        return true
      }
      case 'wc_approveSession': {
        const sessionTopic = topicParam(params.sessionTopic)
        const pairingTopic = topicParam(params.pairingTopic)
        subscribe(connection, sessionTopic)
        const ttl = params.ttl ?? 300
        await publish(connection, [
          { topic: pairingTopic, message: params.sessionProposalResponse, ttl, tag: 1101 },
          { topic: sessionTopic, message: params.sessionSettlementRequest, ttl, tag: 1102 },
        ])
        return true
      }
      default:
        throw new RpcError(RelayErrorCode.methodNotFound, `Method not found: ${method}`)
    }
  }

  function subscribe(connection: Connection, topic: string): string {
    const existing = connection.subscriptions.get(topic)
    if (existing) return existing
    if (connection.subscriptions.size >= maxSubscriptions)
      throw new RpcError(RelayErrorCode.tooManySubscriptions, `Too many subscriptions: at most ${maxSubscriptions} per connection`)
    // The id clients compute themselves: sha256(topic ‖ clientId).
    const subscriptionId = sha256Hex(topic + connection.clientId)
    connection.subscriptions.set(topic, subscriptionId)
    const set = subscribers.get(topic) ?? new Set()
    set.add(connection)
    subscribers.set(topic, set)
    return subscriptionId
  }

  function unsubscribe(connection: Connection, topic: string) {
    connection.subscriptions.delete(topic)
    subscribers.get(topic)?.delete(connection)
  }

  /**
   * Checks every message first (one bad message stores none), hands them to the store in order at
   * once, and pushes each to this node's subscribers once it is stored. Resolves when all are stored.
   */
  function publish(connection: Connection, entries: readonly Record<string, unknown>[]): Promise<void> {
    const messages = entries.map((params) => toStoredMessage(connection, params))
    return Promise.all(messages.map((message) => store.add(message).then((added) => added && fanOut(message)))).then(() => undefined)
  }

  function toStoredMessage(connection: Connection, params: Record<string, unknown>): StoredMessage {
    const topic = topicParam(params.topic)
    const message = params.message
    if (typeof message !== 'string' || message.length === 0)
      throw new RpcError(RelayErrorCode.invalidParams, 'Invalid params: message must be a non-empty string')
    if (Buffer.byteLength(message) > maxMessageBytes) throw new RpcError(RelayErrorCode.tooLarge, `Message too large: at most ${maxMessageBytes} bytes`)
    const ttl = params.ttl
    if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < MIN_TTL_S || ttl > MAX_TTL_S)
      throw new RpcError(RelayErrorCode.invalidParams, `Invalid params: ttl must be whole seconds from ${MIN_TTL_S} to ${MAX_TTL_S}`)
    const tag = typeof params.tag === 'number' && Number.isInteger(params.tag) ? params.tag : 0
    const publishedAt = now()
    return {
      id: sha256Hex(topic + message),
      topic,
      message,
      tag,
      publishedAt,
      expiresAt: publishedAt + ttl * 1000,
      publisher: connection.clientId,
    }
  }

  /** Pushes a newly stored message to this node's subscribers of its topic. */
  function fanOut(message: StoredMessage) {
    for (const subscriber of subscribers.get(message.topic) ?? []) deliver(subscriber, message)
  }

  async function flush(connection: Connection, topic: string) {
    for (const message of await unacknowledged(connection, topic)) deliver(connection, message)
  }

  /** Stored messages of a topic that this client neither published nor acknowledged, in order. */
  async function unacknowledged(connection: Connection, topic: string): Promise<StoredMessage[]> {
    const messages = (await store.list(topic, now())).filter((message) => message.publisher !== connection.clientId)
    // Asked all at once: a Redis store answers them in one round trip.
    const acked = await Promise.all(messages.map((message) => store.isAcked(connection.clientId, message.id)))
    return messages.filter((_, index) => !acked[index])
  }

  function deliver(connection: Connection, message: StoredMessage) {
    if (message.publisher === connection.clientId || connection.sent.has(message.id)) return
    const subscriptionId = connection.subscriptions.get(message.topic)
    if (!subscriptionId || connection.socket.readyState !== connection.socket.OPEN) return
    const id = nextRequestId++
    connection.sent.add(message.id)
    connection.inflight.set(id, message.id)
    // Written out rather than stringified from objects: this is the hot path, and every part but
    // the message is hex or a number the relay produced.
    send(
      connection,
      `{"id":${id},"jsonrpc":"2.0","method":"irn_subscription","params":{"id":"${subscriptionId}","data":{"topic":"${message.topic}","message":${JSON.stringify(message.message)},"publishedAt":${message.publishedAt},"tag":${message.tag},"attestation":""}}}`,
    )
  }

  function withinRate(connection: Connection) {
    const time = now()
    if (time - connection.window.startedAt >= 1000) connection.window = { startedAt: time, count: 0 }
    connection.window.count++
    return connection.window.count <= maxRequestsPerSecond
  }

  function reply(connection: Connection, id: number | string | null, result: unknown, error?: RpcError) {
    if (connection.socket.readyState !== connection.socket.OPEN) return
    // The receipt of a publish, the commonest reply, is written out.
    if (result === true && typeof id === 'number') return send(connection, `{"id":${id},"jsonrpc":"2.0","result":true}`)
    send(connection, JSON.stringify(error ? { id, jsonrpc: '2.0', error: { code: error.code, message: error.message } } : { id, jsonrpc: '2.0', result }))
  }

  /**
   * Sends a frame. Frames for one connection within a turn of the event loop leave in one write:
   * under load a socket gets a reply and several pushes per turn, and a syscall per frame would
   * cost more than the relay's own work.
   */
  function send(connection: Connection, frame: string) {
    const raw = (connection.socket as unknown as { _socket?: { cork(): void; uncork(): void } })._socket
    if (raw && !connection.corked) {
      connection.corked = true
      raw.cork()
      process.nextTick(() => {
        connection.corked = false
        raw.uncork()
      })
    }
    connection.socket.send(frame)
  }

  return {
    name: 'relay',
    host,
    port: options.port,
    url: `ws://${host}:${options.port}`,
    async start() {
      if (server) return
      // Messages other nodes store (a shared Redis) reach this node's subscribers too.
      unwatch ??= await store.watch?.(fanOut)
      const http = createServer(observer.listener((request, response) => void serveHttp(request, response, options.rpc ?? {})))
      observer.track(http)
      await new Promise<void>((resolve, reject) => {
        // EADDRINUSE keeps its code, so callers (devnet) can say which port to change.
        http.once('error', reject)
        http.listen(options.port, host, () => {
          http.off('error', reject)
          resolve()
        })
      })
      // Attached once listening: ws re-emits server errors, which must not surface as a crash.
      const sockets = new WebSocketServer({ server: http, maxPayload: maxMessageBytes * 2 })
      sockets.on('error', () => undefined)
      sockets.on('headers', (headers, request) => {
        const requestId = observer.requestIdOf(request)
        upgradeIds.set(request, requestId)
        headers.push(`x-request-id: ${requestId}`)
      })
      sockets.on('connection', accept)
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
      // First, before anything is awaited: no new connection from here on.
      const closed = new Promise<void>((resolve) => (http?.listening ? http.close(() => resolve()) : resolve()))
      for (const socket of sockets?.clients ?? []) socket.close(1001, 'relay stopping')
      await observer.drain()
      await unwatch?.()
      unwatch = undefined
      await new Promise<void>((resolve) => (sockets ? sockets.close(() => resolve()) : resolve()))
      await closed
      for (const socket of sockets?.clients ?? []) socket.terminate()
      subscribers.clear()
      connections.clear()
    },
    connections: () => connections.size,
    inflight: () => observer.inflight(),
  }
}

const MAX_RPC_BODY_BYTES = 1024 * 1024
const cors = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers': 'content-type',
  'access-control-max-age': '86400',
}

/**
 * The JSON-RPC HTTP endpoint (the eip155 default RPC of SPEC §7): forwards a request body to the
 * configured RPC of `chainId`. Every other path says how to reach the relay.
 */
async function serveHttp(request: IncomingMessage, response: ServerResponse, rpc: Readonly<Record<string, string>>): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://relay')
  const rpcError = (status: number, code: number, message: string): void =>
    void response.writeHead(status, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }))
  if (url.pathname !== '/v1' && url.pathname !== '/v1/') {
    response
      .writeHead(426, { 'content-type': 'text/plain' })
      .end('This is a WalletConnect relay: connect with a WebSocket, or POST JSON-RPC to /v1/?chainId=eip155:N.\n')
    return
  }
  if (request.method === 'OPTIONS') return void response.writeHead(204, cors).end()
  if (request.method !== 'POST') return void response.writeHead(405, { ...cors, allow: 'POST, OPTIONS' }).end()
  const chainId = url.searchParams.get('chainId') ?? ''
  if (!/^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/.test(chainId))
    return rpcError(400, RelayErrorCode.invalidParams, 'Invalid params: chainId must be a CAIP-2 id such as eip155:1')
  const upstream = rpc[chainId]
  if (!upstream) return rpcError(400, RelayErrorCode.invalidParams, `Unsupported chainId ${chainId}`)
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_RPC_BODY_BYTES) return rpcError(413, RelayErrorCode.tooLarge, `Request too large: at most ${MAX_RPC_BODY_BYTES} bytes`)
    chunks.push(chunk)
  }
  const body = Buffer.concat(chunks).toString('utf8')
  try {
    JSON.parse(body)
  } catch {
    return rpcError(400, RelayErrorCode.parse, 'Parse error: the body is not JSON')
  }
  let answer: Response
  try {
    answer = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  } catch {
    return rpcError(502, -32603, `The RPC of ${chainId} is unavailable`)
  }
  const text = await answer.text()
  response.writeHead(answer.status, { ...cors, 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(text)
}

const sha256Hex = (text: string) => hash('sha256', text, 'hex')

type Payload = { id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: unknown }
/** A frame from a client: an answer to one of our pushes, a request, or not JSON at all. */
type Frame = { kind: 'ack'; payload: Payload & { id: number } } | { kind: 'request'; payload: Payload | null } | { kind: 'unparsable' }

function parseFrame(text: string): Frame {
  let payload: Payload | null
  try {
    payload = JSON.parse(text)
  } catch {
    return { kind: 'unparsable' }
  }
  if (payload && typeof payload === 'object' && payload.method === undefined && typeof payload.id === 'number')
    return { kind: 'ack', payload: payload as Payload & { id: number } }
  return { kind: 'request', payload: payload && typeof payload === 'object' ? payload : null }
}

function topicParam(value: unknown): string {
  if (typeof value !== 'string' || !TOPIC.test(value))
    throw new RpcError(RelayErrorCode.invalidParams, 'Invalid params: topic must be 32 bytes of lowercase hex')
  return value
}

function batchParam(value: unknown): Record<string, unknown>[] {
  if (!Array.isArray(value) || value.length > MAX_BATCH)
    throw new RpcError(RelayErrorCode.invalidParams, `Invalid params: messages must be a list of at most ${MAX_BATCH}`)
  return value.map((entry) => (entry && typeof entry === 'object' ? entry : {}) as Record<string, unknown>)
}

/** What a client is told about a failure: our own errors as they are, anything else as an internal error. */
const internal = (error: unknown) => (error instanceof RpcError ? error : new RpcError(-32603, 'Internal error'))

function topicsParam(value: unknown): string[] {
  if (!Array.isArray(value) || value.length > MAX_BATCH)
    throw new RpcError(RelayErrorCode.invalidParams, `Invalid params: topics must be a list of at most ${MAX_BATCH}`)
  return value.map(topicParam)
}
