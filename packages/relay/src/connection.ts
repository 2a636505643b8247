// What the relay keeps per WebSocket connection and per request, and how a failure is told.
import type { Socket } from 'node:net'
import { RelayErrorCode } from './http.js'
import type { InFlight } from './inflight.js'
import type { Push } from './push.js'
import { QuotaExceededError } from './quota.js'
import type { PublishParams } from './schemas.js'
import type { StoredMessage } from './store.js'
import type { ServerWebSocket } from './websocket.js'

/** One topic a connection subscribed. */
export type Subscription = {
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

export type Connection = {
  socket: ServerWebSocket
  /** The TCP socket under the WebSocket (from the HTTP upgrade): a turn's frames leave on it in one write. */
  tcp: Socket
  /** The client's address as the per-address limits count it (limits.ts `addressKey`). */
  address: string
  /** Bytes of this connection's counted in the relay's unread budget (outbound.ts `unreadBudget`). */
  unread: number
  clientId: string
  subscriptions: Map<string, Subscription>
  /** Pushed irn_subscription requests awaiting the client's ack, by request id. */
  inflight: InFlight<StoredMessage>
  /** The message bytes of those pushes. */
  unackedBytes: number
  /** Whether the client answered the latest heartbeat ping (with its payload, `ping`) since it was sent. */
  alive: boolean
  ping: Buffer | undefined
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
export type ClientRate = { count: number; left: number; spent: boolean; taking: Promise<void> | undefined }

/** A frame that is a request, its envelope checked; its params are checked when its turn comes. */
export type Request = {
  /** null only for `junk` without an id of its own. */
  id: number | string | null
  method: string
  params: unknown
  checked: PublishParams | undefined
  /** The publish's message is known to be `JSON_SAFE` (read from its bytes): not tested again. */
  jsonSafe?: true | undefined
  /**
   * A frame refused before it became a request, counted against the rate all the same: the error
   * it is answered with (not JSON, an invalid envelope), or null when it is answered with nothing
   * (an ack of no push in flight).
   */
  junk?: RpcError | null | undefined
}

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

/** An answer to one of our pushes: a number id and no method. */
export const isAck = (payload: unknown): boolean =>
  typeof payload === 'object' &&
  payload !== null &&
  (payload as { method?: unknown }).method === undefined &&
  typeof (payload as { id?: unknown }).id === 'number'

/** The id of a request that failed its schema, echoed when it is one. */
export function idOf(payload: unknown): number | string | null {
  const id = typeof payload === 'object' && payload !== null ? (payload as { id?: unknown }).id : undefined
  return typeof id === 'number' || typeof id === 'string' ? id : null
}

/** What a client is told about a failure: our own errors as they are, anything else as an internal error. */
export const internal = (error: unknown) =>
  error instanceof RpcError
    ? error
    : error instanceof QuotaExceededError
      ? new RpcError(RelayErrorCode.quotaExceeded, error.message)
      : new RpcError(RelayErrorCode.internal, 'Internal error')
