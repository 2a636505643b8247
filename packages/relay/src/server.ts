import { hash, randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { performance } from 'node:perf_hooks'
import { getRequestListener } from '@hono/node-server'
import { createHttpObserver, pathOf } from '@latchkey/service'
import { RelayAuthError, verifyRelayJwt } from '@latchkey/walletconnect'
import { coalescer } from './coalesce.js'
import { type Connection, idOf, internal, isAck, type Request, RpcError, type Subscription } from './connection.js'
import { verifyEd25519 } from './ed25519.js'
import { createRelayHttpApp, RelayErrorCode } from './http.js'
import { InFlight } from './inflight.js'
import { addressKey, connectionGate } from './limits.js'
import { relayMetrics } from './metrics.js'
import { type Relay, RelayCloseCode, type RelayOptions } from './options.js'
import { outboundLimits, PUSH_FRAME_OVERHEAD, paced, unreadBudget } from './outbound.js'
import { Push, textFrames } from './push.js'
import { requestRate } from './rate.js'
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
import { memoryStore, type NewMessage, type StoredMessage } from './store.js'
import { acceptWebSockets, type ServerWebSocket, type WebSocketServer } from './websocket.js'

export { RelayErrorCode } from './http.js'
export { type Relay, RelayCloseCode, type RelayLimits, type RelayOptions } from './options.js'

/** The random payload of a heartbeat ping, which its pong must echo. */
const PING_BYTES = 8

/** Frames gathered for all connections that are written out at once, not at the end of the loop iteration. */
const OUT_AT_ONCE = 1000

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
  const outbound = outboundLimits(options.limits, maxMessageBytes)
  const { maxBufferedBytes, maxUnackedMessages, maxUnackedBytes } = outbound
  /** Unread bytes per address and in all: many connections that do not read add up. */
  const unread = unreadBudget(outbound)
  const withinRate = requestRate({ now, maxRequestsPerSecond, countShared: store.countRequests?.bind(store) })
  const addToBatch = shared ? undefined : store.addToBatch?.bind(store)
  /**
   * Publishes awaiting the commit that holds them (`addToBatch`), a flat list of connection, request
   * id and the stored message (undefined for a copy of one stored before): a commit settles its
   * publishes with one callback, not a promise and two closures each.
   */
  let commitGroup: { committed: Promise<void>; entries: (Connection | number | string | StoredMessage | undefined)[] } | undefined
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
      address: addressKey(request.socket.remoteAddress ?? ''),
      unread: 0,
      clientId,
      subscriptions: new Map(),
      inflight: new InFlight(),
      unackedBytes: 0,
      alive: true,
      ping: undefined,
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
        return junk(connection, null, new RpcError(RelayErrorCode.parse, 'Parse error: the frame is not JSON'))
      }
      if (isAck(payload)) return onAck(connection, payload)
      const request = toRequest(payload)
      if (request instanceof RpcError) return junk(connection, idOf(payload), request)
      // Counted as it arrives, not when its turn comes: on a shared store every request read in
      // one turn is counted in one round trip.
      enqueue(connection, request, withinRate(connection))
    }
    // Only the answer to the latest ping counts: a client that sends pongs unasked (RFC 6455 allows
    // them) but reads nothing would otherwise be kept alive forever.
    socket.on('pong', (payload) => {
      if (connection.ping?.equals(payload)) connection.alive = true
    })
    request.socket.on('drain', () => unread.clear(connection))
    socket.on('close', () => {
      unread.clear(connection)
      connections.delete(socket)
      for (const topic of [...connection.subscriptions.keys()]) unsubscribe(connection, topic)
    })
  }

  function onAck(connection: Connection, payload: unknown) {
    const ack = ackSchema.safeParse(payload)
    if (ack.success) acknowledge(connection, ack.data.id, ack.data.error !== undefined)
    else junk(connection, null, null)
  }

  /**
   * A frame refused before it is a request (not JSON, an invalid envelope, an ack of no push in
   * flight): counted against the rate as a request, so junk is not free, and answered with `error`
   * (if any) in its turn. Acks of pushes in flight are never counted: a busy subscriber sends many.
   */
  function junk(connection: Connection, id: number | string | null, error: RpcError | null) {
    enqueue(connection, { id, method: '', params: undefined, checked: undefined, junk: error }, withinRate(connection))
  }

  function acknowledge(connection: Connection, requestId: number, failed: boolean) {
    const message = connection.inflight.take(requestId)
    if (message === undefined) return junk(connection, null, null)
    connection.unackedBytes -= message.message.length
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
      if (request.junk !== undefined || id === null) {
        if (request.junk) reply(connection, id, undefined, request.junk)
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
    // A topic named twice is read once: each read lists its whole backlog.
    const unique = [...new Set(topics)]
    pages: for (const topic of unique)
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
    } else if (cursors) for (const topic of unique) cursors.delete(topic)
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
        flushBacklogs(connection, opened, backlogs, 0)
      },
    }
  }

  /**
   * Sends each new subscription's backlog, paced to what the socket takes (a client that reads gets
   * a backlog of any size without passing `maxBufferedBytes`), then the live messages held meanwhile,
   * one topic after another. Stops for a topic unsubscribed, or a connection closed, meanwhile.
   */
  function flushBacklogs(
    connection: Connection,
    opened: readonly [string, Subscription][],
    backlogs: readonly (readonly (readonly [StoredMessage, boolean])[])[],
    index: number,
  ) {
    const entry = opened[index]
    if (!entry) return
    const [topic, subscription] = entry
    const isOpen = () => connection.subscriptions.get(topic) === subscription && connection.socket.readyState === connection.socket.OPEN
    // Closed or unsubscribed meanwhile: nothing to send.
    if (!isOpen()) return flushBacklogs(connection, opened, backlogs, index + 1)
    paced({
      tcp: connection.tcp,
      budget: maxBufferedBytes / 2,
      items: backlogs[index]!.filter(([message]) => message.seq > subscription.cursor),
      sizeOf: ([message, wanted]) => (wanted ? message.message.length + PUSH_FRAME_OVERHEAD : 0),
      send([message, wanted]) {
        subscription.cursor = message.seq
        if (wanted) deliver(connection, subscription, message)
      },
      writeOut: () => writeOut(connection),
      open: isOpen,
      done() {
        const held = subscription.held ?? []
        subscription.held = undefined
        for (const message of held) live(connection, subscription, message)
        flushBacklogs(connection, opened, backlogs, index + 1)
      },
    })
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
    // Each push is held until the client acks it: one that does not is closed, not held without end.
    if (
      (maxUnackedMessages > 0 && connection.inflight.size >= maxUnackedMessages) ||
      (maxUnackedBytes > 0 && connection.unackedBytes + message.message.length > maxUnackedBytes)
    ) {
      // What it was sent so far goes before the close frame.
      writeOut(connection)
      return slowConsumer(connection, 'too many messages unacknowledged')
    }
    counts.delivered++
    const id = nextRequestId++
    connection.inflight.add(id, message)
    connection.unackedBytes += message.message.length
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
    const bytes = textFrames(frames, lengths)
    // A client that does not read would have the relay buffer every frame for it; many such clients, more.
    const waiting = connection.tcp.writableLength + bytes.length
    if (waiting > maxBufferedBytes) return slowConsumer(connection, 'too many bytes unread')
    const over = unread.over(connection, waiting)
    if (over) return slowConsumer(connection, over)
    if (!connection.tcp.write(bytes)) unread.wrote(connection)
  }

  /**
   * Closes a connection whose client does not keep up (reads or acks too little), dropping its
   * frames not yet written; what it did not acknowledge is sent again when it subscribes again.
   */
  function slowConsumer(connection: Connection, reason: string) {
    connection.out = []
    connection.socket.close(RelayCloseCode.slowConsumer, `slow consumer: ${reason}`)
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
        // Each ping carries its own random payload: only a pong that echoes it says the client reads.
        const payloads = randomBytes(PING_BYTES * connections.size)
        let at = 0
        for (const [socket, connection] of connections) {
          if (!connection.alive) {
            socket.terminate()
            continue
          }
          connection.alive = false
          connection.ping = payloads.subarray(at, (at += PING_BYTES))
          socket.ping(connection.ping)
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
