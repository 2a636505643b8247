import { ed25519 } from '@noble/curves/ed25519.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { clientIdOf, signRelayJwt } from './auth.js'
import { createEmitter, type Emitter } from './emitter.js'
import { RelayConnectionError, RelayRequestError } from './errors.js'
import { isObject, isRequest, isResponse, type JsonRpcRequest, payloadId } from './jsonrpc.js'

/*
 * The relay client: one WebSocket to an irn relay, opened when there is something to do,
 * authenticated with a fresh ed25519 did:key JWT on every (re)connect. Topics are remembered and
 * re-subscribed in batches after a reconnect; publishes wait in an outbox until the relay
 * answers, so a dropped socket loses nothing (the relay drops exact duplicates). Incoming
 * messages are acknowledged at once and handed on one at a time, in arrival order, once.
 */

/** The standard WebSocket constructor; in Node 20 pass `ws`'s. */
export type WebSocketConstructor = new (url: string) => WebSocketLike

/** The part of the WebSocket API the client uses; `ws` and browsers both fit. */
export type WebSocketLike = {
  readonly readyState: number
  send(data: string): void
  close(code?: number, reason?: string): void
  addEventListener(type: 'open' | 'close' | 'error' | 'message', listener: (event: never) => void): void
  /** `ws` only: ping frames from the relay reset the keep-alive timer. */
  on?: ((event: 'ping', listener: () => void) => unknown) | undefined
  terminate?: (() => void) | undefined
}

export type RelayMessage = { topic: string; message: string; publishedAt: number; tag: number }

export type PublishOptions = { tag: number; ttl: number; prompt?: boolean | undefined }

export type RelayClientEvents = {
  connect: undefined
  disconnect: { code: number; reason: string }
  error: Error
}

export type RelayClientOptions = {
  /** e.g. `wss://relay.walletconnect.org` or `ws://127.0.0.1:5555`. */
  relayUrl: string
  /** Sent as `projectId`; the public relay needs one, ours does not. */
  projectId?: string | undefined
  /** 32-byte ed25519 seed, hex; keep it to keep the client id (and the relay's acks). */
  seed: string
  WebSocket?: WebSocketConstructor | undefined
  /** Milliseconds a relay request may take before the socket is taken as stalled. Default 10 000. */
  requestTimeoutMs?: number | undefined
  /** Milliseconds a subscribe or publish keeps retrying through reconnects. Default 60 000. */
  giveUpMs?: number | undefined
  /** Milliseconds without a ping or message before a `ws` socket is dropped. Default 35 000. */
  keepAliveMs?: number | undefined
}

export type RelayClient = {
  readonly clientId: string
  readonly emitter: Emitter<RelayClientEvents>
  /** The one consumer of messages; awaited, so messages are handled one at a time in order. */
  onMessage(handler: (message: RelayMessage) => unknown): void
  /** Resolves when the relay confirmed the subscription (it then flushes stored messages). */
  subscribe(topic: string): Promise<void>
  unsubscribe(topic: string): Promise<void>
  /** Resolves when the relay has stored the message. Waits through reconnects. */
  publish(topic: string, message: string, options: PublishOptions): Promise<void>
  /** Topics the client holds, subscribed or waiting to be. */
  topics(): readonly string[]
  /** Closes the socket for good; pending calls are rejected. */
  close(): void
}

type Pending = { request: JsonRpcRequest; resolve: (value: unknown) => void; reject: (error: Error) => void; sent: boolean }

const OPEN = 1
const BATCH = 500
const SEEN_LIMIT = 2000
const MAX_BACKOFF_MS = 5000

/**
 * Connects to a relay lazily: the socket opens on the first subscribe or publish.
 *
 * @example
 * const relay = createRelayClient({ relayUrl: 'ws://127.0.0.1:5555', seed })
 * relay.emitter.on('message', ({ topic, message }) => …)
 * await relay.subscribe(topic)
 */
export function createRelayClient(options: RelayClientOptions): RelayClient {
  const WebSocketImpl = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket
  if (!WebSocketImpl) throw new RelayConnectionError('no WebSocket implementation; pass one as `WebSocket`')
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000
  const keepAliveMs = options.keepAliveMs ?? 35_000
  const giveUpMs = options.giveUpMs ?? 60_000
  let handler: (message: RelayMessage) => unknown = () => undefined
  const clientId = clientIdOf(ed25519.getPublicKey(hexToBytes(options.seed)))
  const emitter = createEmitter<RelayClientEvents>()
  const subscribed = new Set<string>()
  /** Requests not yet answered, in send order: re-sent after a reconnect. */
  const pending = new Map<number, Pending>()
  const seen = new Set<string>()
  let socket: WebSocketLike | undefined
  let connecting = false
  let closed = false
  let attempt = 0
  let retryTimer: ReturnType<typeof setTimeout> | undefined
  let idleTimer: ReturnType<typeof setTimeout> | undefined
  let queue = Promise.resolve()

  function open() {
    if (closed || connecting || socket) return
    connecting = true
    const url = new URL(options.relayUrl)
    url.searchParams.set('auth', signRelayJwt({ seed: options.seed, aud: options.relayUrl }))
    if (options.projectId) url.searchParams.set('projectId', options.projectId)
    url.searchParams.set('ua', 'wc-2/latchkey-0.1')
    url.searchParams.set('useOnCloseEvent', 'true')
    let ws: WebSocketLike
    try {
      ws = new WebSocketImpl!(url.toString())
    } catch (error) {
      connecting = false
      emitter.emit('error', new RelayConnectionError('the relay URL could not be opened', error))
      return scheduleRetry()
    }
    ws.addEventListener('open', () => {
      connecting = false
      socket = ws
      attempt = 0
      armKeepAlive()
      ws.on?.('ping', armKeepAlive)
      emitter.emit('connect', undefined)
      resubscribe()
      for (const entry of pending.values()) send(entry)
    })
    ws.addEventListener('message', (event: { data: unknown }) => {
      armKeepAlive()
      onFrame(String(event.data))
    })
    ws.addEventListener('close', (event: { code: number; reason: string }) => {
      connecting = false
      if (socket === ws) socket = undefined
      clearTimeout(idleTimer)
      for (const entry of pending.values()) entry.sent = false
      emitter.emit('disconnect', { code: event.code, reason: String(event.reason ?? '') })
      if (event.code === 4001) emitter.emit('error', new RelayConnectionError(`the relay refused the token: ${event.reason}`))
      scheduleRetry()
    })
    ws.addEventListener('error', () => {
      // A close event follows; the retry is scheduled there.
    })
  }

  function scheduleRetry() {
    if (closed || retryTimer || !wanted()) return
    const delay = Math.min(MAX_BACKOFF_MS, 100 * 2 ** attempt++)
    retryTimer = setTimeout(() => {
      retryTimer = undefined
      open()
    }, delay)
  }

  /** The socket is wanted while there are topics to hear or requests to send. */
  function wanted() {
    return subscribed.size > 0 || pending.size > 0
  }

  function armKeepAlive() {
    if (!socket?.on) return
    clearTimeout(idleTimer)
    const current = socket
    idleTimer = setTimeout(() => {
      // No ping and no message: the path is dead even if no close came. Drop it and reconnect.
      if (socket === current) drop()
    }, keepAliveMs)
    ;(idleTimer as { unref?: () => void }).unref?.()
  }

  function resubscribe() {
    const topics = [...subscribed]
    for (let i = 0; i < topics.length; i += BATCH) {
      const batch = topics.slice(i, i + BATCH)
      // Without retries: after another reconnect this runs again with the topics of that moment.
      request('irn_batchSubscribe', { topics: batch }, false).catch((error: Error) => emitter.emit('error', error))
    }
  }

  function request(method: string, params: Record<string, unknown>, retry = true): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const id = payloadId()
      const startedAt = Date.now()
      let timer: ReturnType<typeof setTimeout> | undefined
      const onTimeout = () => {
        if (!pending.has(id)) return
        if (!retry || Date.now() - startedAt >= giveUpMs) {
          pending.delete(id)
          return entry.reject(new RelayRequestError(method, 'no answer from the relay'))
        }
        // A stalled socket: drop it; the outbox is re-sent on the new one.
        drop()
        arm()
      }
      const arm = () => {
        timer = setTimeout(onTimeout, requestTimeoutMs)
        ;(timer as { unref?: () => void }).unref?.()
      }
      const entry: Pending = {
        request: { id, jsonrpc: '2.0', method, params },
        resolve: (value) => (clearTimeout(timer), resolve(value)),
        reject: (error) => (clearTimeout(timer), reject(error)),
        sent: false,
      }
      pending.set(id, entry)
      arm()
      if (socket?.readyState === OPEN) send(entry)
      else open()
    })
  }

  function drop() {
    if (!socket) return
    if (socket.terminate) socket.terminate()
    else socket.close(4000, 'stalled')
  }

  function send(entry: Pending) {
    if (!socket || socket.readyState !== OPEN || entry.sent) return
    entry.sent = true
    socket.send(JSON.stringify(entry.request))
  }

  function onFrame(text: string) {
    // A closed client must not ack: the relay would then never hand the message to its successor.
    if (closed) return
    let payload: unknown
    try {
      payload = JSON.parse(text)
    } catch {
      return emitter.emit('error', new RelayConnectionError('the relay sent a frame that is not JSON'))
    }
    if (isResponse(payload)) {
      const entry = pending.get(payload.id)
      if (!entry) return
      pending.delete(payload.id)
      if ('error' in payload) entry.reject(new RelayRequestError(entry.request.method, payload.error.message, payload.error.code))
      else entry.resolve(payload.result)
      return
    }
    if (!isRequest(payload) || !payload.method.endsWith('_subscription')) return
    socket?.send(JSON.stringify({ id: payload.id, jsonrpc: '2.0', result: true }))
    const data = isObject(payload.params) && isObject(payload.params.data) ? payload.params.data : undefined
    if (!data || typeof data.topic !== 'string' || typeof data.message !== 'string') return
    const message: RelayMessage = {
      topic: data.topic,
      message: data.message,
      publishedAt: typeof data.publishedAt === 'number' ? data.publishedAt : Date.now(),
      tag: typeof data.tag === 'number' ? data.tag : 0,
    }
    const key = bytesToHex(sha256(utf8ToBytes(message.topic + message.message)))
    if (seen.has(key)) return
    seen.add(key)
    if (seen.size > SEEN_LIMIT) seen.delete(seen.values().next().value as string)
    // One at a time, in arrival order, even when the handler is async.
    queue = queue.then(async () => {
      try {
        await handler(message)
      } catch (error) {
        emitter.emit('error', error instanceof Error ? error : new Error(String(error)))
      }
    })
  }

  return {
    clientId,
    emitter,
    onMessage(next) {
      handler = next
    },
    async subscribe(topic) {
      if (closed) throw new RelayConnectionError('the relay client is closed')
      subscribed.add(topic)
      try {
        await request('irn_subscribe', { topic })
      } catch (error) {
        subscribed.delete(topic)
        throw error
      }
    },
    async unsubscribe(topic) {
      if (!subscribed.delete(topic)) return
      if (socket?.readyState !== OPEN) return
      const id = bytesToHex(sha256(utf8ToBytes(topic + clientId)))
      await request('irn_unsubscribe', { topic, id }, false).catch(() => undefined)
    },
    async publish(topic, message, { tag, ttl, prompt = false }) {
      if (closed) throw new RelayConnectionError('the relay client is closed')
      await request('irn_publish', { topic, message, ttl, tag, prompt })
    },
    topics: () => [...subscribed],
    close() {
      closed = true
      clearTimeout(retryTimer)
      clearTimeout(idleTimer)
      for (const entry of pending.values()) entry.reject(new RelayConnectionError('the relay client is closed'))
      pending.clear()
      socket?.close(1000, 'closed by client')
      socket = undefined
    },
  }
}
