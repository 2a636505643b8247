import { randomUUID } from 'node:crypto'
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import { type Logger, withRequestId } from './logger.js'

/** A request the service is still answering: what a shutdown past its deadline cuts. */
export type InflightRequest = {
  readonly requestId: string
  readonly method: string
  /** Without the query string. */
  readonly path: string
  /** Milliseconds since it arrived. */
  readonly ms: number
}

export type HttpObserverOptions = {
  /** Where each request's line goes; none: requests are not logged. */
  logger?: Logger | undefined
  /**
   * Whether the service can do its work: resolves (or returns) when its store answers, throws
   * otherwise. `GET /readyz` calls it. Default: always ready.
   */
  ready?: (() => unknown) | undefined
  /** How long `/readyz` waits for `ready`. Default 2000 ms. */
  readyTimeoutMs?: number | undefined
}

/**
 * What a service's HTTP servers share: request ids, the request log, `/healthz` and `/readyz`,
 * and the requests in flight, so a shutdown can wait for them or say which it cut.
 */
export type HttpObserver = {
  /**
   * Wraps a request listener: answers `GET /healthz` and `GET /readyz` itself; gives every other
   * request an id (a valid incoming `x-request-id`, or a new UUID), echoed in the response's
   * `x-request-id` and carried by every line logged while handling it; and logs one line when the
   * response ends.
   */
  listener(inner: RequestListener): RequestListener
  /** The id for an incoming request that is not handled by `listener` (a WebSocket upgrade). */
  requestIdOf(request: IncomingMessage): string
  /** Remembers a server, so `drain` can close its idle connections. */
  track(server: Server): void
  /** Requests not yet answered, oldest first. */
  inflight(): InflightRequest[]
  /**
   * For a shutdown: `/readyz` answers 503, and connections are closed as soon as they are idle
   * (now, or when their request is answered) instead of being kept alive. Resolves once no
   * request is in flight.
   */
  drain(): Promise<void>
  /** True once `drain` was called. */
  readonly draining: boolean
}

const REQUEST_ID = /^[\x21-\x7e]{1,200}$/

// Process-wide, because the runner does not hold the observers a service makes: once the runner
// withdraws readiness (SIGTERM with --shutdown-delay), every observer of this process answers
// `/readyz` 503 while it goes on serving every other request.
let readinessWithdrawn = false

/**
 * For the first phase of a shutdown: every observer in this process answers `GET /readyz` 503
 * from now on, so load balancers stop sending requests, while requests are still served and
 * connections kept alive. Called by `runService` on SIGTERM; there is no way back.
 */
export function withdrawReadiness(): void {
  readinessWithdrawn = true
}

/**
 * The observer of one service's HTTP servers.
 *
 * @example
 * const observer = createHttpObserver({ logger, ready: () => store.ping() })
 * const server = createServer(observer.listener(handler))
 * observer.track(server)
 */
export function createHttpObserver(options: HttpObserverOptions = {}): HttpObserver {
  const { logger } = options
  const readyTimeoutMs = options.readyTimeoutMs ?? 2000
  const inflight = new Map<ServerResponse, { requestId: string; method: string; path: string; startedAt: number }>()
  const servers = new Set<Server>()
  let draining = false
  const whenIdle: (() => void)[] = []

  const closeIdle = () => {
    for (const server of servers) server.closeIdleConnections()
  }

  async function readiness(): Promise<{ status: number; body: Record<string, string> }> {
    if (draining || readinessWithdrawn) return { status: 503, body: { status: 'unavailable', reason: 'shutting down' } }
    let timer: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        Promise.resolve().then(() => options.ready?.()),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the store did not answer within ${readyTimeoutMs} ms`)), readyTimeoutMs)
        }),
      ])
      return { status: 200, body: { status: 'ready' } }
    } catch (error) {
      return { status: 503, body: { status: 'unavailable', reason: (error as Error).message || 'the store did not answer' } }
    } finally {
      clearTimeout(timer)
    }
  }

  const requestIdOf = (request: IncomingMessage) => {
    const incoming = request.headers['x-request-id']
    return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID()
  }

  return {
    listener(inner) {
      return (request, response) => {
        const path = pathOf(request.url)
        if ((request.method === 'GET' || request.method === 'HEAD') && (path === '/healthz' || path === '/readyz')) {
          const answer: Promise<{ status: number; body: Record<string, string> }> =
            path === '/healthz' ? Promise.resolve({ status: 200, body: { status: 'ok' } }) : readiness()
          void answer.then(({ status, body }) => {
            response
              .writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' })
              .end(request.method === 'HEAD' ? undefined : JSON.stringify(body))
            // Probes come every few seconds: only at debug level, unless the answer is "not ready".
            if (logger)
              logger[status === 200 ? 'debug' : 'warn'](
                { method: request.method, path, status, ...('reason' in body ? { reason: body.reason } : {}) },
                `${path} ${status}`,
              )
          })
          return
        }
        const requestId = requestIdOf(request)
        const startedAt = performance.now()
        response.setHeader('x-request-id', requestId)
        inflight.set(response, { requestId, method: request.method ?? '', path, startedAt })
        response.once('close', () => {
          inflight.delete(response)
          if (logger) {
            const status = response.statusCode
            const fields = {
              reqId: requestId,
              method: request.method,
              path,
              status,
              durationMs: Math.round((performance.now() - startedAt) * 10) / 10,
              ...(response.writableFinished ? {} : { aborted: true }),
            }
            const message = `${request.method} ${path} ${status}${response.writableFinished ? '' : ' (aborted)'}`
            logger[status >= 500 ? 'error' : 'info'](fields, message)
          }
          if (draining) {
            // The connection goes idle once this response is out: close it rather than keep it alive.
            setImmediate(closeIdle)
            if (inflight.size === 0) for (const resolve of whenIdle.splice(0)) resolve()
          }
        })
        // The request's context costs a little on every request: only worth it when lines are logged.
        if (logger) withRequestId(requestId, () => inner(request, response))
        else inner(request, response)
      }
    },
    requestIdOf,
    track(server) {
      servers.add(server)
      server.once('close', () => servers.delete(server))
    },
    inflight() {
      const now = performance.now()
      return [...inflight.values()].map(({ requestId, method, path, startedAt }) => ({ requestId, method, path, ms: Math.round(now - startedAt) }))
    },
    drain() {
      draining = true
      closeIdle()
      if (inflight.size === 0) return Promise.resolve()
      return new Promise<void>((resolve) => {
        whenIdle.push(resolve)
      })
    },
    get draining() {
      return draining
    },
  }
}

/**
 * The path of a request target, without its query string (which may carry tokens: a relay's
 * `?auth=`, a project id) and at most 200 characters.
 *
 * @example
 * pathOf('/v1/?chainId=eip155:1&projectId=abc') // '/v1/'
 */
export function pathOf(target: string | undefined): string {
  const path = (target ?? '/').split('?', 1)[0]!.split('#', 1)[0]!
  return path.length > 200 ? `${path.slice(0, 200)}…` : path || '/'
}

/**
 * Stops `servers` accepting connections and resolves once every request in flight is answered
 * and every connection is closed (idle ones at once, busy ones when their request is answered).
 *
 * @example
 * await closeGracefully([server], observer)
 * store.close()
 */
export async function closeGracefully(servers: readonly Server[], observer: HttpObserver): Promise<void> {
  const closed = servers.map(
    (server) =>
      new Promise<void>((resolve) => {
        if (!server.listening) return resolve()
        server.close(() => resolve())
      }),
  )
  await observer.drain()
  await Promise.all(closed)
}
