import { bytesToHex, randomBytes } from '@noble/hashes/utils.js'
import { decrypt, deriveSymKey, encrypt, generateKeyPair, generateSymKey, topicOf } from './crypto.js'
import { createEmitter, type Emitter } from './emitter.js'
import { ExpiredError, PeerError, SessionNotFoundError, StorageWriteError, WalletConnectError } from './errors.js'
import { isErrorResponse, isObject, isRequest, isResponse, type JsonRpcErrorObject, type JsonRpcRequest, type JsonRpcResponse, payloadId } from './jsonrpc.js'
import {
  assertConforms,
  assertProposalNamespaces,
  assertSessionNamespaces,
  chainsOf,
  namespaceOf,
  type ProposalNamespaces,
  type SessionNamespaces,
} from './namespaces.js'
import { createRelayClient, type RelayClient, type RelayMessage, type WebSocketConstructor } from './relayClient.js'
import { type KeyValueStorage, memoryStorage, recordStore } from './store.js'
import { formatPairingUri, parsePairingUri } from './uri.js'

/*
 * The WalletConnect v2 Sign protocol, both roles in one client. A dapp calls `connect` and waits
 * for `approval()`; a wallet calls `pair` with the URI, hears `session_proposal`, and calls
 * `approve` or `reject`. After that both sides send requests, responses and events on the
 * session topic, encrypted with the key the two derived (X25519 + HKDF).
 *
 * Everything needed to carry on after a reload (keys, pairings, sessions, proposals, requests
 * waiting for an answer, the relay identity) is kept in storage under `<prefix>.*`; expired
 * records are dropped by `cleanup()`, which runs at start and every 30 seconds.
 */

export type Metadata = {
  name: string
  description: string
  url: string
  icons: string[]
  redirect?: { native?: string | undefined; universal?: string | undefined } | undefined
}

export type Pairing = {
  topic: string
  /** Unix seconds. */
  expiry: number
  /** True once a session was made through it. */
  active: boolean
  peerMetadata?: Metadata | undefined
}

export type ProposalParams = {
  id: number
  requiredNamespaces: ProposalNamespaces
  optionalNamespaces: ProposalNamespaces
  relays: { protocol: string }[]
  proposer: { publicKey: string; metadata: Metadata }
  /** Unix seconds. */
  expiryTimestamp: number
  pairingTopic: string
  sessionProperties?: Record<string, string> | undefined
}

export type Session = {
  topic: string
  pairingTopic: string
  relay: { protocol: string }
  /** Unix seconds. */
  expiry: number
  /** True once the dapp confirmed the settlement. */
  acknowledged: boolean
  /** Public key of the side that may update the session: the wallet. */
  controller: string
  namespaces: SessionNamespaces
  requiredNamespaces: ProposalNamespaces
  optionalNamespaces: ProposalNamespaces
  sessionProperties?: Record<string, string> | undefined
  self: { publicKey: string; metadata: Metadata }
  peer: { publicKey: string; metadata: Metadata }
}

export type SessionRequestParams = {
  request: { method: string; params: unknown; expiryTimestamp?: number | undefined }
  chainId: string
}

/** A request the wallet received and has not answered yet. */
export type PendingRequest = { id: number; topic: string; params: SessionRequestParams }

export type SessionEventParams = { event: { name: string; data: unknown }; chainId: string }

export type SignClientEvents = {
  session_proposal: { id: number; params: ProposalParams }
  session_connect: { session: Session }
  session_request: PendingRequest
  session_event: { id: number; topic: string; params: SessionEventParams }
  session_update: { id: number; topic: string; params: { namespaces: SessionNamespaces } }
  session_extend: { id: number; topic: string }
  session_ping: { id: number; topic: string }
  session_delete: { id: number; topic: string }
  session_expire: { topic: string }
  proposal_expire: { id: number }
  session_request_expire: { id: number; topic: string }
  pairing_ping: { id: number; topic: string }
  pairing_delete: { id: number; topic: string }
  pairing_expire: { topic: string }
  /** Failures that are not any caller's: undecryptable messages, storage writes, relay trouble. */
  error: Error
}

export type SignClientOptions = {
  /** Ours (`ws://127.0.0.1:5555`) or the public one (`wss://relay.walletconnect.org`). */
  relayUrl: string
  /** Needed by the public relay; nothing is sent anywhere else. */
  projectId?: string | undefined
  metadata: Metadata
  /** Default: in memory. Pass `localStorage` to survive reloads. */
  storage?: KeyValueStorage | undefined
  /** Default `latchkey.wc`. Two clients in one storage need different prefixes. */
  storagePrefix?: string | undefined
  /** In Node 20, `ws`'s WebSocket; browsers have their own. */
  WebSocket?: WebSocketConstructor | undefined
  /** Clock in unix ms; tests move it to expire things. */
  now?: (() => number) | undefined
  /** Only for tests: a relay client to use instead of making one. */
  relay?: RelayClient | undefined
}

export type ConnectParameters = {
  requiredNamespaces?: ProposalNamespaces | undefined
  optionalNamespaces?: ProposalNamespaces | undefined
  sessionProperties?: Record<string, string> | undefined
  /** Aborting drops the proposal and its pairing; `approval()` rejects with the abort reason. */
  signal?: AbortSignal | undefined
}

export type SignClient = {
  readonly events: Emitter<SignClientEvents>
  /** The relay identity (did:key), stable across reloads. */
  readonly clientId: string
  readonly metadata: Metadata

  // Dapp
  connect(parameters: ConnectParameters): Promise<{ uri: string; id: number; pairingTopic: string; approval(): Promise<Session> }>
  request<result = unknown>(parameters: {
    topic: string
    chainId: string
    request: { method: string; params?: unknown }
    /** Seconds the wallet has to answer; 300 to 604 800. Default 300. */
    expiry?: number | undefined
  }): Promise<result>

  // Wallet
  pair(parameters: { uri: string }): Promise<Pairing>
  approve(parameters: {
    id: number
    namespaces: SessionNamespaces
    sessionProperties?: Record<string, string> | undefined
  }): Promise<{ topic: string; acknowledged(): Promise<Session> }>
  reject(parameters: { id: number; reason?: JsonRpcErrorObject | undefined }): Promise<void>
  respond(parameters: { topic: string; response: JsonRpcResponse }): Promise<void>
  update(parameters: { topic: string; namespaces: SessionNamespaces }): Promise<void>
  emit(parameters: { topic: string; event: { name: string; data: unknown }; chainId: string }): Promise<void>

  // Both
  extend(parameters: { topic: string }): Promise<void>
  ping(parameters: { topic: string }): Promise<void>
  /** Ends a session (or a pairing, given its topic) here and tells the peer. */
  disconnect(parameters: { topic: string; reason?: JsonRpcErrorObject | undefined }): Promise<void>

  sessions(): Session[]
  session(topic: string): Session | undefined
  pairings(): Pairing[]
  /** Proposals received and not yet answered (wallet). */
  proposals(): ProposalParams[]
  /** Requests received and not yet answered (wallet). */
  pendingRequests(): PendingRequest[]
  /** Drops what has expired; runs by itself at start and every 30 seconds. */
  cleanup(): Promise<void>
  close(): void
}

/** Tags and TTLs per method, as the official clients publish them. */
const RPC: Record<string, { req: Publish; res: Publish; reject?: Publish }> = {
  wc_sessionPropose: { req: { tag: 1100, ttl: 300, prompt: true }, res: { tag: 1101, ttl: 300 }, reject: { tag: 1120, ttl: 300 } },
  wc_sessionSettle: { req: { tag: 1102, ttl: 300 }, res: { tag: 1103, ttl: 300 } },
  wc_sessionUpdate: { req: { tag: 1104, ttl: 86_400 }, res: { tag: 1105, ttl: 86_400 } },
  wc_sessionExtend: { req: { tag: 1106, ttl: 86_400 }, res: { tag: 1107, ttl: 86_400 } },
  wc_sessionRequest: { req: { tag: 1108, ttl: 300, prompt: true }, res: { tag: 1109, ttl: 300 } },
  wc_sessionEvent: { req: { tag: 1110, ttl: 300, prompt: true }, res: { tag: 1111, ttl: 300 } },
  wc_sessionDelete: { req: { tag: 1112, ttl: 86_400 }, res: { tag: 1113, ttl: 86_400 } },
  wc_sessionPing: { req: { tag: 1114, ttl: 86_400 }, res: { tag: 1115, ttl: 86_400 } },
  wc_pairingDelete: { req: { tag: 1000, ttl: 86_400 }, res: { tag: 1001, ttl: 86_400 } },
  wc_pairingPing: { req: { tag: 1002, ttl: 30 }, res: { tag: 1003, ttl: 30 } },
}
type Publish = { tag: number; ttl: number; prompt?: boolean }
const UNKNOWN_METHOD: Publish = { tag: 0, ttl: 300 }

/** Error objects the protocol sends, with the official codes. */
export const SdkErrors = {
  userRejected: { code: 5000, message: 'User rejected.' },
  unsupportedChains: { code: 5100, message: 'Unsupported chains.' },
  unauthorizedMethod: { code: 3001, message: 'Unauthorized method.' },
  unauthorizedEvent: { code: 3002, message: 'Unauthorized event.' },
  unauthorizedUpdate: { code: 3003, message: 'Unauthorized update request.' },
  userDisconnected: { code: 6000, message: 'User disconnected.' },
  invalidSettle: { code: 1005, message: 'Invalid session settle request.' },
  invalidUpdate: { code: 1003, message: 'Invalid update request.' },
  noMatchingKey: { code: 2, message: 'No matching key.' },
  expired: { code: 6, message: 'Expired.' },
  methodUnsupported: { code: 10001, message: 'Unsupported wc_ method.' },
} as const

const FIVE_MINUTES = 300
const THIRTY_DAYS = 30 * 86_400
const SEVEN_DAYS = 7 * 86_400
const MAX_PENDING_REQUESTS = 200
const SEEN_REQUESTS = 1000

type PairingRecord = Pairing & { symKey: string }
type SessionRecord = Session & { symKey: string }
type ProposalRecord = {
  params: ProposalParams
  role: 'dapp' | 'wallet'
  /** Dapp: the private key of `params.proposer.publicKey`. */
  privateKey?: string | undefined
  /** Dapp, after the wallet answered: the session topic and key, waiting for the settlement. */
  sessionTopic?: string | undefined
  sessionSymKey?: string | undefined
}
type Outgoing = { topic: string; resolve(value: unknown): void; reject(error: Error): void; timer: ReturnType<typeof setTimeout> }
type Deferred = { resolve(session: Session): void; reject(error: unknown): void; timer: ReturnType<typeof setTimeout> }

/**
 * Creates a Sign client and restores what storage holds: pairings, sessions and unanswered
 * proposals and requests, re-subscribing their topics.
 *
 * @example
 * const dapp = await createSignClient({ relayUrl: 'ws://127.0.0.1:5555', metadata, storage: localStorage })
 * const { uri, approval } = await dapp.connect({ optionalNamespaces: { eip155: { chains: ['eip155:1'], methods: ['personal_sign'], events: ['chainChanged'] } } })
 * showQr(uri)
 * const session = await approval()
 */
export async function createSignClient(options: SignClientOptions): Promise<SignClient> {
  const storage = options.storage ?? memoryStorage()
  const prefix = options.storagePrefix ?? 'latchkey.wc'
  const nowMs = options.now ?? Date.now
  const now = () => Math.floor(nowMs() / 1000)
  const events = createEmitter<SignClientEvents>()
  const reportStorage = (error: StorageWriteError) => events.emit('error', error)

  const seed = restoreSeed(storage, `${prefix}.seed`, reportStorage)
  const relay = options.relay ?? createRelayClient({ relayUrl: options.relayUrl, projectId: options.projectId, seed, WebSocket: options.WebSocket })
  relay.emitter.on('error', (error) => events.emit('error', error))

  const pairings = recordStore<PairingRecord>(storage, `${prefix}.pairings`, reportStorage)
  const sessions = recordStore<SessionRecord>(storage, `${prefix}.sessions`, reportStorage)
  const proposals = recordStore<ProposalRecord>(storage, `${prefix}.proposals`, reportStorage)
  const requests = recordStore<PendingRequest>(storage, `${prefix}.requests`, reportStorage)

  const outgoing = new Map<number, Outgoing>()
  const approvals = new Map<number, Deferred>()
  const seenRequests = new Set<string>()

  function keyFor(topic: string): string | undefined {
    return pairings.get(topic)?.symKey ?? sessions.get(topic)?.symKey ?? proposals.values().find((p) => p.sessionTopic === topic)?.sessionSymKey
  }

  // ---------- sending ----------

  async function publish(topic: string, payload: JsonRpcRequest | JsonRpcResponse, opts: Publish, ttl?: number) {
    const symKey = keyFor(topic)
    if (!symKey) throw new SessionNotFoundError(topic)
    const message = encrypt({ symKey, message: JSON.stringify(payload) })
    await relay.publish(topic, message, { tag: opts.tag, ttl: ttl ?? opts.ttl, prompt: opts.prompt ?? false })
  }

  /** Publishes a request; with `awaitResponse`, resolves with the peer's result. */
  async function sendRequest(
    topic: string,
    method: string,
    params: unknown,
    options: { id?: number; ttl?: number; awaitResponse?: boolean } = {},
  ): Promise<unknown> {
    const rpc = RPC[method]!
    const id = options.id ?? payloadId()
    const ttl = options.ttl ?? rpc.req.ttl
    const request: JsonRpcRequest = { id, jsonrpc: '2.0', method, params }
    if (options.awaitResponse === false) return publish(topic, request, rpc.req, ttl)
    const response = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        outgoing.delete(id)
        reject(new ExpiredError(`${method} request`))
      }, ttl * 1000)
      ;(timer as { unref?: () => void }).unref?.()
      outgoing.set(id, { topic, resolve, reject, timer })
    })
    try {
      await publish(topic, request, rpc.req, ttl)
    } catch (error) {
      const entry = outgoing.get(id)
      outgoing.delete(id)
      if (entry) clearTimeout(entry.timer)
      throw error
    }
    return response
  }

  function sendResult(topic: string, id: number, method: string, result: unknown) {
    return publish(topic, { id, jsonrpc: '2.0', result }, RPC[method]?.res ?? UNKNOWN_METHOD)
  }

  function sendError(topic: string, id: number, method: string, error: JsonRpcErrorObject, opts?: Publish) {
    return publish(topic, { id, jsonrpc: '2.0', error }, opts ?? RPC[method]?.res ?? UNKNOWN_METHOD)
  }

  // ---------- receiving ----------

  relay.onMessage(async ({ topic, message }: RelayMessage) => {
    const symKey = keyFor(topic)
    if (!symKey) {
      // A topic we no longer hold: stop hearing it instead of failing on every message.
      await relay.unsubscribe(topic)
      return
    }
    let payload: unknown
    try {
      payload = JSON.parse(decrypt({ symKey, envelope: message }))
    } catch (error) {
      return events.emit('error', error instanceof Error ? error : new Error(String(error)))
    }
    if (isRequest(payload)) return onRequest(topic, payload)
    if (isResponse(payload)) return onResponse(topic, payload)
  })

  async function onRequest(topic: string, request: JsonRpcRequest) {
    const seenKey = `${topic}:${request.id}`
    if (seenRequests.has(seenKey)) return
    seenRequests.add(seenKey)
    if (seenRequests.size > SEEN_REQUESTS) seenRequests.delete(seenRequests.values().next().value as string)
    const { id, method } = request
    const params = request.params as Record<string, unknown>
    const fail = (error: JsonRpcErrorObject) => sendError(topic, id, method, error)
    try {
      switch (method) {
        case 'wc_sessionPropose':
          return await onPropose(topic, id, params as unknown as ProposalParams)
        case 'wc_sessionSettle':
          return await onSettle(topic, id, params as unknown as SettleParams)
        case 'wc_sessionRequest': {
          const session = sessions.get(topic)
          if (!session) return await fail(SdkErrors.noMatchingKey)
          const { request: inner, chainId } = params as unknown as SessionRequestParams
          if (!isObject(inner) || typeof inner.method !== 'string') return await fail(SdkErrors.invalidUpdate)
          const granted = grantedFor(session, chainId)
          if (!granted) return await fail(SdkErrors.unsupportedChains)
          if (!granted.methods.has(inner.method)) return await fail(SdkErrors.unauthorizedMethod)
          if (inner.expiryTimestamp !== undefined && inner.expiryTimestamp < now()) return await fail(SdkErrors.expired)
          const pending: PendingRequest = { id, topic, params: { request: inner, chainId } }
          const all = requests.values()
          if (all.length >= MAX_PENDING_REQUESTS) requests.delete(String(all[0]!.id))
          requests.set(String(id), pending)
          events.emit('session_request', pending)
          return
        }
        case 'wc_sessionEvent': {
          const session = sessions.get(topic)
          if (!session) return await fail(SdkErrors.noMatchingKey)
          const { event, chainId } = params as unknown as SessionEventParams
          const granted = grantedFor(session, chainId)
          if (!granted) return await fail(SdkErrors.unsupportedChains)
          if (!isObject(event) || !granted.events.has(event.name)) return await fail(SdkErrors.unauthorizedEvent)
          await sendResult(topic, id, method, true)
          events.emit('session_event', { id, topic, params: { event, chainId } })
          return
        }
        case 'wc_sessionUpdate': {
          const session = sessions.get(topic)
          if (!session) return await fail(SdkErrors.noMatchingKey)
          if (session.controller !== session.peer.publicKey) return await fail(SdkErrors.unauthorizedUpdate)
          const namespaces = params.namespaces
          try {
            assertSessionNamespaces(namespaces)
            assertConforms(namespaces, session.requiredNamespaces)
          } catch {
            return await fail(SdkErrors.invalidUpdate)
          }
          sessions.set(topic, { ...session, namespaces })
          await sendResult(topic, id, method, true)
          events.emit('session_update', { id, topic, params: { namespaces } })
          return
        }
        case 'wc_sessionExtend': {
          const session = sessions.get(topic)
          if (!session) return await fail(SdkErrors.noMatchingKey)
          sessions.set(topic, { ...session, expiry: now() + SEVEN_DAYS })
          await sendResult(topic, id, method, true)
          events.emit('session_extend', { id, topic })
          return
        }
        case 'wc_sessionPing':
          if (!sessions.get(topic)) return await fail(SdkErrors.noMatchingKey)
          await sendResult(topic, id, method, true)
          events.emit('session_ping', { id, topic })
          return
        case 'wc_sessionDelete':
          if (!sessions.get(topic)) return
          // Answer first: the answer needs the session key that the deletion throws away.
          await sendResult(topic, id, method, true).catch((error: Error) => events.emit('error', error))
          await deleteSession(topic)
          events.emit('session_delete', { id, topic })
          return
        case 'wc_pairingPing':
          await sendResult(topic, id, method, true)
          events.emit('pairing_ping', { id, topic })
          return
        case 'wc_pairingDelete':
          if (!pairings.get(topic)) return
          await sendResult(topic, id, method, true).catch((error: Error) => events.emit('error', error))
          await deletePairing(topic)
          events.emit('pairing_delete', { id, topic })
          return
        default:
          return await fail(SdkErrors.methodUnsupported)
      }
    } catch (error) {
      events.emit('error', error instanceof Error ? error : new Error(String(error)))
    }
  }

  function grantedFor(session: Session, chainId: unknown) {
    if (typeof chainId !== 'string') return undefined
    const matching = Object.entries(session.namespaces)
      .filter(([key]) => namespaceOf(key) === namespaceOf(chainId))
      .map(([, value]) => value)
      .filter((value) => chainsOf(value).includes(chainId))
    if (!matching.length) return undefined
    return { methods: new Set(matching.flatMap((v) => v.methods)), events: new Set(matching.flatMap((v) => v.events)) }
  }

  async function onPropose(topic: string, id: number, params: ProposalParams) {
    const pairing = pairings.get(topic)
    if (!pairing || !isObject(params) || !isObject(params.proposer) || !/^[0-9a-f]{64}$/.test(String(params.proposer.publicKey))) return
    try {
      assertProposalNamespaces(params.requiredNamespaces ?? {})
      assertProposalNamespaces(params.optionalNamespaces ?? {})
    } catch {
      return sendError(topic, id, 'wc_sessionPropose', { code: 1006, message: 'Invalid namespaces.' }, RPC.wc_sessionPropose!.reject)
    }
    if (typeof params.expiryTimestamp === 'number' && params.expiryTimestamp < now()) return
    const proposal: ProposalParams = {
      ...params,
      id,
      requiredNamespaces: params.requiredNamespaces ?? {},
      optionalNamespaces: params.optionalNamespaces ?? {},
      expiryTimestamp: typeof params.expiryTimestamp === 'number' ? params.expiryTimestamp : now() + FIVE_MINUTES,
      pairingTopic: topic,
    }
    proposals.set(String(id), { params: proposal, role: 'wallet' })
    pairings.set(topic, { ...pairing, peerMetadata: params.proposer.metadata })
    events.emit('session_proposal', { id, params: proposal })
  }

  type SettleParams = {
    relay: { protocol: string }
    namespaces: SessionNamespaces
    controller: { publicKey: string; metadata: Metadata }
    expiry: number
    sessionProperties?: Record<string, string>
  }

  async function onSettle(topic: string, id: number, params: SettleParams) {
    const proposal = proposals.values().find((p) => p.sessionTopic === topic)
    if (!proposal?.sessionSymKey) return
    const approval = approvals.get(proposal.params.id)
    try {
      if (!isObject(params) || !isObject(params.controller) || typeof params.expiry !== 'number') throw new Error('malformed')
      assertSessionNamespaces(params.namespaces)
      assertConforms(params.namespaces, proposal.params.requiredNamespaces)
    } catch (error) {
      await sendError(topic, id, 'wc_sessionSettle', SdkErrors.invalidSettle)
      proposals.delete(String(proposal.params.id))
      approval?.reject(error)
      return
    }
    const session: SessionRecord = {
      topic,
      symKey: proposal.sessionSymKey,
      pairingTopic: proposal.params.pairingTopic,
      relay: params.relay ?? { protocol: 'irn' },
      expiry: params.expiry,
      acknowledged: true,
      controller: params.controller.publicKey,
      namespaces: params.namespaces,
      requiredNamespaces: proposal.params.requiredNamespaces,
      optionalNamespaces: proposal.params.optionalNamespaces,
      ...(params.sessionProperties ? { sessionProperties: params.sessionProperties } : {}),
      self: proposal.params.proposer,
      peer: params.controller,
    }
    sessions.set(topic, session)
    proposals.delete(String(proposal.params.id))
    activatePairing(proposal.params.pairingTopic, params.controller.metadata)
    await sendResult(topic, id, 'wc_sessionSettle', true)
    const view = toSession(session)
    if (approval) {
      clearTimeout(approval.timer)
      approvals.delete(proposal.params.id)
      approval.resolve(view)
    }
    events.emit('session_connect', { session: view })
  }

  async function onResponse(topic: string, response: JsonRpcResponse) {
    const proposal = proposals.get(String(response.id))
    if (proposal?.role === 'dapp' && proposal.params.pairingTopic === topic) {
      if (isErrorResponse(response)) {
        proposals.delete(String(response.id))
        settleApproval(response.id, new PeerError(response.error))
        return
      }
      const result = response.result as { responderPublicKey?: unknown }
      if (typeof result?.responderPublicKey !== 'string' || !proposal.privateKey) return
      const sessionSymKey = deriveSymKey(proposal.privateKey, result.responderPublicKey)
      const sessionTopic = topicOf(sessionSymKey)
      proposals.set(String(response.id), { ...proposal, sessionTopic, sessionSymKey })
      await relay.subscribe(sessionTopic)
      return
    }
    const entry = outgoing.get(response.id)
    if (!entry || entry.topic !== topic) return
    outgoing.delete(response.id)
    clearTimeout(entry.timer)
    if (isErrorResponse(response)) entry.reject(new PeerError(response.error))
    else entry.resolve(response.result)
  }

  function settleApproval(id: number, error: Error) {
    const approval = approvals.get(id)
    if (!approval) return
    clearTimeout(approval.timer)
    approvals.delete(id)
    approval.reject(error)
  }

  function activatePairing(topic: string, peerMetadata: Metadata) {
    const pairing = pairings.get(topic)
    if (pairing) pairings.set(topic, { ...pairing, active: true, expiry: now() + THIRTY_DAYS, peerMetadata })
  }

  // ---------- removing ----------

  async function deleteSession(topic: string) {
    sessions.delete(topic)
    for (const request of requests.values()) if (request.topic === topic) requests.delete(String(request.id))
    for (const [id, entry] of outgoing)
      if (entry.topic === topic) {
        outgoing.delete(id)
        clearTimeout(entry.timer)
        entry.reject(new SessionNotFoundError(topic))
      }
    await relay.unsubscribe(topic)
  }

  async function deletePairing(topic: string) {
    pairings.delete(topic)
    for (const proposal of proposals.values())
      if (proposal.params.pairingTopic === topic) {
        proposals.delete(String(proposal.params.id))
        if (proposal.sessionTopic) await relay.unsubscribe(proposal.sessionTopic)
      }
    await relay.unsubscribe(topic)
  }

  async function cleanup() {
    const t = now()
    for (const session of sessions.values())
      if (session.expiry <= t) {
        await deleteSession(session.topic)
        events.emit('session_expire', { topic: session.topic })
      }
    for (const proposal of proposals.values())
      if (proposal.params.expiryTimestamp <= t) {
        proposals.delete(String(proposal.params.id))
        if (proposal.sessionTopic) await relay.unsubscribe(proposal.sessionTopic)
        settleApproval(proposal.params.id, new ExpiredError('Proposal'))
        events.emit('proposal_expire', { id: proposal.params.id })
      }
    for (const pairing of pairings.values())
      if (pairing.expiry <= t) {
        await deletePairing(pairing.topic)
        events.emit('pairing_expire', { topic: pairing.topic })
      }
    for (const request of requests.values()) {
      const expiry = request.params.request.expiryTimestamp
      if ((expiry !== undefined && expiry <= t) || !sessions.get(request.topic)) {
        requests.delete(String(request.id))
        events.emit('session_request_expire', { id: request.id, topic: request.topic })
      }
    }
  }

  // ---------- start ----------

  await cleanup()
  const topics = [...pairings.keys(), ...sessions.keys(), ...proposals.values().flatMap((p) => (p.sessionTopic ? [p.sessionTopic] : []))]
  // Re-subscribed on the next task, so that listeners attached right after `await
  // createSignClient()` hear the messages stored for us while we were away.
  setTimeout(() => {
    for (const topic of topics) relay.subscribe(topic).catch((error: Error) => events.emit('error', error))
  }, 0)
  const sweeper = setInterval(() => void cleanup().catch((error: Error) => events.emit('error', error)), 30_000)
  ;(sweeper as { unref?: () => void }).unref?.()

  function requireSession(topic: string): SessionRecord {
    const session = sessions.get(topic)
    if (!session || session.expiry <= now()) throw new SessionNotFoundError(topic)
    return session
  }

  return {
    events,
    clientId: relay.clientId,
    metadata: options.metadata,

    async connect({ requiredNamespaces = {}, optionalNamespaces = {}, sessionProperties, signal }) {
      assertProposalNamespaces(requiredNamespaces)
      assertProposalNamespaces(optionalNamespaces)
      signal?.throwIfAborted()
      const symKey = generateSymKey()
      const pairingTopic = topicOf(symKey)
      const expiryTimestamp = now() + FIVE_MINUTES
      pairings.set(pairingTopic, { topic: pairingTopic, symKey, expiry: expiryTimestamp, active: false })
      const keys = generateKeyPair()
      const id = payloadId()
      const params: ProposalParams = {
        id,
        requiredNamespaces,
        optionalNamespaces,
        relays: [{ protocol: 'irn' }],
        proposer: { publicKey: keys.publicKey, metadata: options.metadata },
        expiryTimestamp,
        pairingTopic,
        ...(sessionProperties ? { sessionProperties } : {}),
      }
      proposals.set(String(id), { params, role: 'dapp', privateKey: keys.privateKey })
      const approval = new Promise<Session>((resolve, reject) => {
        const timer = setTimeout(() => void cleanup(), (expiryTimestamp - now()) * 1000 + 50)
        ;(timer as { unref?: () => void }).unref?.()
        approvals.set(id, { resolve, reject, timer })
      })
      approval.catch(() => undefined)
      signal?.addEventListener('abort', () => {
        settleApproval(id, signal.reason instanceof Error ? signal.reason : new WalletConnectError('aborted', 'Pairing aborted'))
        proposals.delete(String(id))
        void deletePairing(pairingTopic)
      })
      await relay.subscribe(pairingTopic)
      await sendRequest(pairingTopic, 'wc_sessionPropose', params, { id, awaitResponse: false })
      const uri = formatPairingUri({ topic: pairingTopic, version: 2, relay: { protocol: 'irn' }, symKey, expiryTimestamp })
      return { uri, id, pairingTopic, approval: () => approval }
    },

    async request({ topic, chainId, request, expiry = FIVE_MINUTES }) {
      const session = requireSession(topic)
      const granted = grantedFor(session, chainId)
      if (!granted) throw new WalletConnectError('unsupported_chain', `The session does not include ${chainId}.`)
      if (!granted.methods.has(request.method)) throw new WalletConnectError('unsupported_method', `The wallet did not grant ${request.method} on ${chainId}.`)
      const ttl = Math.min(SEVEN_DAYS, Math.max(FIVE_MINUTES, expiry))
      const params: SessionRequestParams = {
        request: { method: request.method, params: request.params ?? [], expiryTimestamp: now() + ttl },
        chainId,
      }
      return (await sendRequest(topic, 'wc_sessionRequest', params, { ttl })) as never
    },

    async pair({ uri }) {
      const parsed = parsePairingUri(uri, { now: now() })
      const existing = pairings.get(parsed.topic)
      if (existing?.active) throw new WalletConnectError('pairing_exists', 'This pairing is already in use.')
      const pairing: PairingRecord = { topic: parsed.topic, symKey: parsed.symKey, expiry: parsed.expiryTimestamp, active: false }
      pairings.set(parsed.topic, pairing)
      await relay.subscribe(parsed.topic)
      return toPairing(pairing)
    },

    async approve({ id, namespaces, sessionProperties }) {
      const proposal = proposals.get(String(id))
      if (proposal?.role !== 'wallet') throw new WalletConnectError('no_proposal', 'There is no such proposal.', { details: `id ${id}` })
      if (proposal.params.expiryTimestamp <= now()) throw new ExpiredError('Proposal')
      assertSessionNamespaces(namespaces)
      assertConforms(namespaces, proposal.params.requiredNamespaces)
      const { pairingTopic, proposer } = proposal.params
      const keys = generateKeyPair()
      const symKey = deriveSymKey(keys.privateKey, proposer.publicKey)
      const topic = topicOf(symKey)
      const self = { publicKey: keys.publicKey, metadata: options.metadata }
      const settle: SettleParams = {
        relay: { protocol: 'irn' },
        namespaces,
        controller: self,
        expiry: now() + SEVEN_DAYS,
        ...(sessionProperties ? { sessionProperties } : {}),
      }
      sessions.set(topic, {
        topic,
        symKey,
        pairingTopic,
        relay: settle.relay,
        expiry: settle.expiry,
        acknowledged: false,
        controller: keys.publicKey,
        namespaces,
        requiredNamespaces: proposal.params.requiredNamespaces,
        optionalNamespaces: proposal.params.optionalNamespaces,
        ...(sessionProperties ? { sessionProperties } : {}),
        self,
        peer: proposer,
      })
      proposals.delete(String(id))
      await relay.subscribe(topic)
      await sendResult(pairingTopic, id, 'wc_sessionPropose', { relay: { protocol: 'irn' }, responderPublicKey: keys.publicKey })
      activatePairing(pairingTopic, proposer.metadata)
      const acknowledged = sendRequest(topic, 'wc_sessionSettle', settle).then(() => {
        const session = sessions.get(topic)
        if (!session) throw new SessionNotFoundError(topic)
        sessions.set(topic, { ...session, acknowledged: true })
        return toSession({ ...session, acknowledged: true })
      })
      acknowledged.catch(() => undefined)
      return { topic, acknowledged: () => acknowledged }
    },

    async reject({ id, reason = SdkErrors.userRejected }) {
      const proposal = proposals.get(String(id))
      if (proposal?.role !== 'wallet') throw new WalletConnectError('no_proposal', 'There is no such proposal.', { details: `id ${id}` })
      proposals.delete(String(id))
      await sendError(proposal.params.pairingTopic, id, 'wc_sessionPropose', reason, RPC.wc_sessionPropose!.reject)
    },

    async respond({ topic, response }) {
      requireSession(topic)
      requests.delete(String(response.id))
      await publish(topic, response, RPC.wc_sessionRequest!.res)
    },

    async update({ topic, namespaces }) {
      const session = requireSession(topic)
      if (session.controller !== session.self.publicKey) throw new WalletConnectError('not_controller', 'Only the wallet can update a session.')
      assertSessionNamespaces(namespaces)
      assertConforms(namespaces, session.requiredNamespaces)
      sessions.set(topic, { ...session, namespaces })
      await sendRequest(topic, 'wc_sessionUpdate', { namespaces })
    },

    async emit({ topic, event, chainId }) {
      const session = requireSession(topic)
      const granted = grantedFor(session, chainId)
      if (!granted) throw new WalletConnectError('unsupported_chain', `The session does not include ${chainId}.`)
      if (!granted.events.has(event.name)) throw new WalletConnectError('unsupported_event', `The dapp did not ask for ${event.name}.`)
      await sendRequest(topic, 'wc_sessionEvent', { event, chainId }, { awaitResponse: false })
    },

    async extend({ topic }) {
      const session = requireSession(topic)
      sessions.set(topic, { ...session, expiry: now() + SEVEN_DAYS })
      await sendRequest(topic, 'wc_sessionExtend', {})
    },

    async ping({ topic }) {
      if (pairings.get(topic)) return void (await sendRequest(topic, 'wc_pairingPing', {}))
      requireSession(topic)
      await sendRequest(topic, 'wc_sessionPing', {})
    },

    async disconnect({ topic, reason = SdkErrors.userDisconnected }) {
      if (sessions.get(topic)) {
        // Sealed before the key is dropped; the relay client delivers it even after a reconnect.
        const sent = sendRequest(topic, 'wc_sessionDelete', reason, { awaitResponse: false })
        sent.catch((error: Error) => events.emit('error', error))
        await deleteSession(topic)
        return
      }
      if (pairings.get(topic)) {
        const sent = sendRequest(topic, 'wc_pairingDelete', reason, { awaitResponse: false })
        sent.catch((error: Error) => events.emit('error', error))
        await deletePairing(topic)
        return
      }
      throw new SessionNotFoundError(topic)
    },

    sessions: () =>
      sessions
        .values()
        .filter((s) => s.expiry > now())
        .map(toSession),
    session: (topic) => {
      const record = sessions.get(topic)
      return record && record.expiry > now() ? toSession(record) : undefined
    },
    pairings: () => pairings.values().map(toPairing),
    proposals: () =>
      proposals
        .values()
        .filter((p) => p.role === 'wallet')
        .map((p) => p.params),
    pendingRequests: () => requests.values(),
    cleanup,
    close() {
      clearInterval(sweeper)
      for (const approval of approvals.values()) clearTimeout(approval.timer)
      for (const entry of outgoing.values()) clearTimeout(entry.timer)
      approvals.clear()
      outgoing.clear()
      relay.close()
    },
  }
}

function toSession({ symKey: _, ...session }: SessionRecord): Session {
  return session
}

function toPairing({ symKey: _, ...pairing }: PairingRecord): Pairing {
  return pairing
}

function restoreSeed(storage: KeyValueStorage, key: string, onError: (error: StorageWriteError) => void): string {
  try {
    const stored = storage.getItem(key)
    if (stored && /^[0-9a-f]{64}$/.test(stored)) return stored
  } catch {
    // Unreadable storage: a fresh identity below.
  }
  const seed = bytesToHex(randomBytes(32))
  try {
    storage.setItem(key, seed)
  } catch (error) {
    onError(new StorageWriteError(key, error))
  }
  return seed
}
