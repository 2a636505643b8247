// The relay's options and its public shape, apart from the server that reads them.
import type { InflightRequest, Logger, Metrics } from '@latchkey/service'
import type { Hono } from 'hono'
import type { ConnectionLimits } from './limits.js'
import type { RelayStore } from './store.js'

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
  /**
   * Bytes the relay holds for one connection that its socket has not taken yet (a client that does
   * not read). Past it the connection is closed with `RelayCloseCode.slowConsumer` and its frames
   * are dropped; a subscription's stored backlog is written paced (half of this at a time, the rest
   * as the socket drains), so a client that reads is never closed for a large backlog. At least
   * twice `maxMessageBytes` and 64 KiB. Default 4 MiB, or twice `maxMessageBytes` when that is more.
   */
  maxBufferedBytes?: number | undefined
  /**
   * Bytes all connections from one address (IPv6: one /64) may hold unread together, counted per
   * connection once its socket is past its 16 KiB high-water mark. Past it the connection being
   * written to is closed with `RelayCloseCode.slowConsumer`. 0 or at least `maxBufferedBytes`.
   * Default 64 MiB; 0: no cap (behind a proxy every client has its address: cap there).
   */
  maxBufferedBytesPerIp?: number | undefined
  /**
   * Bytes all connections may hold unread together, counted as `maxBufferedBytesPerIp`; past it
   * the connection being written to is closed with `RelayCloseCode.slowConsumer`. 0 or at least
   * `maxBufferedBytes`. Default 1 GiB; 0: no cap.
   */
  maxBufferedBytesTotal?: number | undefined
  /**
   * Pushed messages one connection may leave unacknowledged. Past it the connection is closed with
   * `RelayCloseCode.slowConsumer` (nothing is lost: an unacknowledged message is sent again on the
   * next subscribe). Default 2000 (two topics' `maxStoredMessagesPerTopic`); 0: no cap.
   */
  maxUnackedMessages?: number | undefined
  /**
   * Message bytes one connection may leave unacknowledged, as `maxUnackedMessages`. Default 32 MiB
   * (two topics' `maxStoredBytesPerTopic`); 0: no cap.
   */
  maxUnackedBytes?: number | undefined
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
 * WebSocket close codes: 4001 for a refused token, 4008 for abuse (the rate limit), 4009 for a
 * slow consumer (a client that leaves more than `maxBufferedBytes` unread, or more than
 * `maxUnackedMessages` / `maxUnackedBytes` unacknowledged; it may reconnect and is sent again what
 * it did not acknowledge).
 */
export const RelayCloseCode = { unauthorized: 4001, policy: 4008, slowConsumer: 4009 } as const
