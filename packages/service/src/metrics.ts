import { createServer, type Server } from 'node:http'
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import type { MiddlewareHandler } from 'hono'
import { routePath } from 'hono/route'
import type { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { withSpan } from './tracing.js'

// Prometheus metrics of one service (prom-client). Each service has its own registry, so several
// services in one process (tests, the devnet) never share a counter. Label values are only ever
// chosen from short fixed lists or route templates: an id, an email, an address or a key in a
// label would make every user a time series and leak them to whoever reads the dashboards.

type PromClient = typeof import('prom-client')
let promClient: PromClient | undefined
/** prom-client, loaded on the first `createMetrics`: a bin without --metrics-port never loads it. */
const loadPromClient = (): PromClient => (promClient ??= createRequire(import.meta.url)('prom-client') as PromClient)

/** The seconds buckets of every duration histogram: from a cached read to a slow database. */
const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/** What a metric is: its name (`latchkey_…`), its help line and the names of its labels. */
export type MetricDefinition<label extends string> = { name: string; help: string; labelNames?: readonly label[] | undefined }

/**
 * A service's metrics: its registry, the HTTP and database metrics every service has, and
 * factories for its own, each registered once (asking again for a name returns the same metric).
 */
export type Metrics = {
  readonly registry: Registry
  /** The exposition (`text/plain; version=0.0.4`), as `GET /metrics` serves it. */
  exposition(): Promise<string>
  counter<label extends string>(definition: MetricDefinition<label> & { collect?: (this: Counter<label>) => void | Promise<void> }): Counter<label>
  gauge<label extends string>(definition: MetricDefinition<label> & { collect?: (this: Gauge<label>) => void | Promise<void> }): Gauge<label>
  histogram<label extends string>(definition: MetricDefinition<label> & { buckets?: number[] | undefined }): Histogram<label>
  readonly http: {
    requests: Counter<'route' | 'method' | 'status'>
    duration: Histogram<'route' | 'method'>
    inflight: Gauge<'route' | 'method'>
  }
  readonly database: {
    transactions: Counter<'outcome'>
    retries: Counter<'code'>
    poolWaits: Counter
    poolWaitSeconds: Histogram
  }
}

/**
 * The metrics of the service `service` (the bin's name: the `service` label of every series),
 * with Node's own (event-loop lag, heap, GC) beside them.
 *
 * @example
 * const metrics = createMetrics('latchkey-kms')
 * const signatures = metrics.counter({ name: 'latchkey_kms_signatures_total', help: 'Signatures made.' })
 */
export function createMetrics(service: string): Metrics {
  const { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } = loadPromClient()
  const registry = new Registry()
  registry.setDefaultLabels({ service })
  collectDefaultMetrics({ register: registry })
  // prom-client names these gauges `…_total`, which Prometheus keeps for counters (promtool refuses
  // them); the same counts remain, by type, as nodejs_active_handles, _requests and _resources.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name)
  const made = new Map<string, unknown>()
  const once = <metric>(name: string, make: () => metric): metric => {
    if (!made.has(name)) made.set(name, make())
    return made.get(name) as metric
  }
  const counter = <label extends string>({
    name,
    help,
    labelNames,
    collect,
  }: MetricDefinition<label> & { collect?: (this: Counter<label>) => void | Promise<void> }) =>
    once(name, () => new Counter<label>({ name, help, labelNames: labelNames ?? [], registers: [registry], ...(collect ? { collect } : {}) }))
  const gauge = <label extends string>({
    name,
    help,
    labelNames,
    collect,
  }: MetricDefinition<label> & { collect?: (this: Gauge<label>) => void | Promise<void> }) =>
    once(name, () => new Gauge<label>({ name, help, labelNames: labelNames ?? [], registers: [registry], ...(collect ? { collect } : {}) }))
  const histogram = <label extends string>({ name, help, labelNames, buckets }: MetricDefinition<label> & { buckets?: number[] | undefined }) =>
    once(name, () => new Histogram<label>({ name, help, labelNames: labelNames ?? [], buckets: buckets ?? SECONDS, registers: [registry] }))
  return {
    registry,
    exposition: () => registry.metrics(),
    counter,
    gauge,
    histogram,
    http: {
      requests: counter({
        name: 'latchkey_http_requests_total',
        help: 'HTTP requests answered, by route template, method and status.',
        labelNames: ['route', 'method', 'status'],
      }),
      duration: histogram({
        name: 'latchkey_http_request_duration_seconds',
        help: 'Time from a request reaching its route to its response, by route template and method.',
        labelNames: ['route', 'method'],
      }),
      inflight: gauge({
        name: 'latchkey_http_requests_in_flight',
        help: 'HTTP requests being answered, by route template and method.',
        labelNames: ['route', 'method'],
      }),
    },
    database: {
      transactions: counter({
        name: 'latchkey_db_transactions_total',
        help: 'Database transactions, by outcome: committed, failed (an error other than a serialization failure), retries_exhausted.',
        labelNames: ['outcome'],
      }),
      retries: counter({
        name: 'latchkey_db_transaction_retries_total',
        help: 'Transactions run again after a serialization failure or deadlock, by error code.',
        labelNames: ['code'],
      }),
      poolWaits: counter({ name: 'latchkey_db_pool_waits_total', help: 'Connection requests that found every PostgreSQL pool connection busy and waited.' }),
      poolWaitSeconds: histogram({ name: 'latchkey_db_pool_wait_seconds', help: 'Time spent getting a connection from the PostgreSQL pool.' }),
    },
  }
}

/** The label of a request no route matched: its path is never a label. */
export const UNMATCHED_ROUTE = 'unmatched'

/** The HTTP methods a label may name; any other is `other`, so a client cannot invent series. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/**
 * A Hono middleware, first on an app: requests, durations and requests in flight by route
 * template (`/users/:id`, never `/users/42`), and, when traces are on, a span per request. With
 * neither, nothing to install: `undefined`.
 *
 * @example
 * const observe = routeObserver(options.metrics)
 * if (observe) app.use(observe)
 */
export function routeObserver(metrics: Metrics | undefined, options: { tracing?: boolean | undefined } = {}): MiddlewareHandler | undefined {
  if (!metrics && !options.tracing) return undefined
  return async (c, next) => {
    // The last route the path matched is the most specific one (the handler's), registered after the middlewares.
    const template = routeTemplate(routePath(c, -1))
    const method = METHODS.has(c.req.method) ? c.req.method : 'other'
    const labels = { route: template, method }
    metrics?.http.inflight.inc(labels)
    const startedAt = performance.now()
    try {
      await withSpan(
        `${method} ${template}`,
        { kind: 'server', headers: c.req.raw.headers, attributes: { 'http.route': template, 'http.request.method': method } },
        next,
      )
    } finally {
      metrics?.http.inflight.dec(labels)
      metrics?.http.duration.observe(labels, (performance.now() - startedAt) / 1000)
      metrics?.http.requests.inc({ ...labels, status: String(c.res.status) })
    }
  }
}

/** A middleware's catch-all (`*`, `/*`) is no route: a request that only matched one is unmatched. */
function routeTemplate(path: string): string {
  return path === '' || path === '*' || path === '/*' ? UNMATCHED_ROUTE : path
}

/**
 * Serves `GET /metrics` on `host:port`; rejects with the listen error (EADDRINUSE when the port is
 * taken), so a bin refuses to start before its service listens.
 *
 * @example
 * const server = await serveMetrics(metrics, '127.0.0.1', 9464)
 */
export async function serveMetrics(metrics: Metrics, host: string, port: number): Promise<Server> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?', 1)[0]
    if ((request.method !== 'GET' && request.method !== 'HEAD') || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: metrics are at GET /metrics\n')
      return
    }
    metrics.exposition().then(
      (text) =>
        response
          .writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' })
          .end(request.method === 'HEAD' ? undefined : text),
      (error: Error) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${error.message}\n`),
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  return server
}
