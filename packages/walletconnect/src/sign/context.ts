import { bytesToHex, randomBytes } from '@noble/hashes/utils.js'
import { encrypt } from '../crypto.js'
import { createEmitter, type Emitter } from '../emitter.js'
import { ExpiredError, SessionNotFoundError, StorageWriteError } from '../errors.js'
import type { JsonRpcErrorObject, JsonRpcRequest, JsonRpcResponse } from '../jsonrpc.js'
import { payloadId } from '../jsonrpc.js'
import { createRelayClient, type RelayClient } from '../relayClient.js'
import { type KeyValueStorage, memoryStorage, type RecordStore, recordStore } from '../store.js'
import type { AuthRecord } from './authTypes.js'
import type { Metadata, Pairing, PendingRequest, ProposalParams, Session, SignClientEvents, SignClientOptions } from './types.js'

/*
 * What every part of the Sign client shares: the stores, the relay, the clock, the events, and
 * the one way to send (encrypted, with the tag and TTL of its method).
 *
 * @internal
 */

/** Tags and TTLs per method, as the official clients publish them. */
export const RPC: Record<string, { req: Publish; res: Publish; reject?: Publish }> = {
  wc_sessionPropose: { req: { tag: 1100, ttl: 300, prompt: true }, res: { tag: 1101, ttl: 300 }, reject: { tag: 1120, ttl: 300 } },
  wc_sessionSettle: { req: { tag: 1102, ttl: 300 }, res: { tag: 1103, ttl: 300 } },
  wc_sessionUpdate: { req: { tag: 1104, ttl: 86_400 }, res: { tag: 1105, ttl: 86_400 } },
  wc_sessionExtend: { req: { tag: 1106, ttl: 86_400 }, res: { tag: 1107, ttl: 86_400 } },
  wc_sessionRequest: { req: { tag: 1108, ttl: 300, prompt: true }, res: { tag: 1109, ttl: 300 } },
  wc_sessionEvent: { req: { tag: 1110, ttl: 300, prompt: true }, res: { tag: 1111, ttl: 300 } },
  wc_sessionDelete: { req: { tag: 1112, ttl: 86_400 }, res: { tag: 1113, ttl: 86_400 } },
  wc_sessionPing: { req: { tag: 1114, ttl: 86_400 }, res: { tag: 1115, ttl: 86_400 } },
  wc_sessionAuthenticate: { req: { tag: 1116, ttl: 3600, prompt: true }, res: { tag: 1117, ttl: 3600 }, reject: { tag: 1118, ttl: 300 } },
  wc_pairingDelete: { req: { tag: 1000, ttl: 86_400 }, res: { tag: 1001, ttl: 86_400 } },
  wc_pairingPing: { req: { tag: 1002, ttl: 30 }, res: { tag: 1003, ttl: 30 } },
}
export type Publish = { tag: number; ttl: number; prompt?: boolean }
const UNKNOWN_METHOD: Publish = { tag: 0, ttl: 300 }

export const FIVE_MINUTES = 300
export const THIRTY_DAYS = 30 * 86_400
export const SEVEN_DAYS = 7 * 86_400

export type PairingRecord = Pairing & { symKey: string }
export type SessionRecord = Session & { symKey: string }
export type ProposalRecord = {
  params: ProposalParams
  role: 'dapp' | 'wallet'
  /** Dapp: the private key of `params.proposer.publicKey`. */
  privateKey?: string | undefined
  /** Dapp, after the wallet answered: the session topic and key, waiting for the settlement. */
  sessionTopic?: string | undefined
  sessionSymKey?: string | undefined
  /** Dapp: the one-click request this proposal stands in for, when the wallet does not answer it. */
  fallbackFor?: number | undefined
}
type Outgoing = { topic: string; resolve(value: unknown): void; reject(error: Error): void; timer: ReturnType<typeof setTimeout> }
export type Deferred<value> = { resolve(value: value): void; reject(error: unknown): void; timer: ReturnType<typeof setTimeout> }

/** Where an outgoing envelope is sealed with a key other than the topic's own (type 1). */
export type SealOptions = { symKey: string; senderPublicKey: string }

export type Logger = { warn(message: string, ...details: unknown[]): void }

export type SignContext = {
  readonly options: SignClientOptions
  readonly metadata: Metadata
  readonly relay: RelayClient
  readonly events: Emitter<SignClientEvents>
  readonly logger: Logger
  now(): number
  readonly pairings: RecordStore<PairingRecord>
  readonly sessions: RecordStore<SessionRecord>
  readonly proposals: RecordStore<ProposalRecord>
  readonly requests: RecordStore<PendingRequest>
  readonly auths: RecordStore<AuthRecord>
  /** Pending `approval()`s of dapp proposals, by proposal id. */
  readonly approvals: Map<number, Deferred<Session>>
  keyFor(topic: string): string | undefined
  publish(topic: string, payload: JsonRpcRequest | JsonRpcResponse, opts: Publish, ttl?: number, seal?: SealOptions): Promise<void>
  sendRequest(topic: string, method: string, params: unknown, options?: { id?: number; ttl?: number; awaitResponse?: boolean }): Promise<unknown>
  sendResult(topic: string, id: number, method: string, result: unknown, seal?: SealOptions): Promise<void>
  sendError(topic: string, id: number, method: string, error: JsonRpcErrorObject, opts?: Publish, seal?: SealOptions): Promise<void>
  /** Settles a request this side sent; false when no such request is waiting on `topic`. */
  settleOutgoing(topic: string, response: JsonRpcResponse): Outgoing | undefined
  /** Rejects every request waiting on `topic` (its session ended). */
  dropOutgoing(topic: string, error: Error): void
  report(error: unknown): void
  close(): void
}

export function createContext(options: SignClientOptions): SignContext {
  const storage = options.storage ?? memoryStorage()
  const prefix = options.storagePrefix ?? 'latchkey.wc'
  const nowMs = options.now ?? Date.now
  const events = createEmitter<SignClientEvents>()
  const report = (error: unknown) => events.emit('error', error instanceof Error ? error : new Error(String(error)))
  const reportStorage = (error: StorageWriteError) => events.emit('error', error)

  const seed = restoreSeed(storage, `${prefix}.seed`, reportStorage)
  const relay = options.relay ?? createRelayClient({ relayUrl: options.relayUrl, projectId: options.projectId, seed, WebSocket: options.WebSocket })
  relay.emitter.on('error', (error) => events.emit('error', error))

  const pairings = recordStore<PairingRecord>(storage, `${prefix}.pairings`, reportStorage)
  const sessions = recordStore<SessionRecord>(storage, `${prefix}.sessions`, reportStorage)
  const proposals = recordStore<ProposalRecord>(storage, `${prefix}.proposals`, reportStorage)
  const requests = recordStore<PendingRequest>(storage, `${prefix}.requests`, reportStorage)
  const auths = recordStore<AuthRecord>(storage, `${prefix}.auths`, reportStorage)
  const outgoing = new Map<number, Outgoing>()
  const approvals = new Map<number, Deferred<Session>>()

  function keyFor(topic: string): string | undefined {
    return pairings.get(topic)?.symKey ?? sessions.get(topic)?.symKey ?? proposals.values().find((p) => p.sessionTopic === topic)?.sessionSymKey
  }

  async function publish(topic: string, payload: JsonRpcRequest | JsonRpcResponse, opts: Publish, ttl?: number, seal?: SealOptions) {
    const symKey = seal?.symKey ?? keyFor(topic)
    if (!symKey) throw new SessionNotFoundError(topic)
    const message = seal
      ? encrypt({ symKey, message: JSON.stringify(payload), type: 1, senderPublicKey: seal.senderPublicKey })
      : encrypt({ symKey, message: JSON.stringify(payload) })
    await relay.publish(topic, message, { tag: opts.tag, ttl: ttl ?? opts.ttl, prompt: opts.prompt ?? false })
  }

  const context: SignContext = {
    options,
    metadata: options.metadata,
    relay,
    events,
    logger: options.logger ?? console,
    now: () => Math.floor(nowMs() / 1000),
    pairings,
    sessions,
    proposals,
    requests,
    auths,
    approvals,
    keyFor,
    publish,

    async sendRequest(topic, method, params, opts = {}) {
      const rpc = RPC[method]!
      const id = opts.id ?? payloadId()
      const ttl = opts.ttl ?? rpc.req.ttl
      const request: JsonRpcRequest = { id, jsonrpc: '2.0', method, params }
      if (opts.awaitResponse === false) return publish(topic, request, rpc.req, ttl)
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
    },

    sendResult: (topic, id, method, result, seal) => publish(topic, { id, jsonrpc: '2.0', result }, RPC[method]?.res ?? UNKNOWN_METHOD, undefined, seal),

    sendError: (topic, id, method, error, opts, seal) =>
      publish(topic, { id, jsonrpc: '2.0', error }, opts ?? RPC[method]?.res ?? UNKNOWN_METHOD, undefined, seal),

    settleOutgoing(topic, response) {
      const entry = outgoing.get(response.id)
      if (!entry || entry.topic !== topic) return undefined
      outgoing.delete(response.id)
      clearTimeout(entry.timer)
      return entry
    },

    dropOutgoing(topic, error) {
      for (const [id, entry] of outgoing)
        if (entry.topic === topic) {
          outgoing.delete(id)
          clearTimeout(entry.timer)
          entry.reject(error)
        }
    },

    report,

    close() {
      for (const approval of approvals.values()) clearTimeout(approval.timer)
      for (const entry of outgoing.values()) clearTimeout(entry.timer)
      approvals.clear()
      outgoing.clear()
      relay.close()
    },
  }
  return context
}

/** A timer that does not keep Node alive. */
export function unrefTimer(callback: () => void, ms: number): ReturnType<typeof setTimeout> {
  const timer = setTimeout(callback, ms)
  ;(timer as { unref?: () => void }).unref?.()
  return timer
}

export function toSession({ symKey: _, ...session }: SessionRecord): Session {
  return session
}

export function toPairing({ symKey: _, ...pairing }: PairingRecord): Pairing {
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
