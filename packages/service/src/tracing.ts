import type { Context, Span, SpanKind, Tracer } from '@opentelemetry/api'
import type { SpanExporter } from '@opentelemetry/sdk-trace-base'

// Optional OpenTelemetry traces. Off by default, and then free: nothing of OpenTelemetry is even
// loaded, and `withSpan` only calls its work. `startTracing` loads the SDK (a dynamic import),
// exports over OTLP/HTTP (or to a given exporter, for tests), and propagates W3C `traceparent`.

type Api = typeof import('@opentelemetry/api')

let tracing: { api: Api; tracer: Tracer; stop(): Promise<void> } | undefined

export type TracingOptions = {
  /** `service.name` of the spans (the bin's name). */
  service: string
  /** The collector's OTLP/HTTP traces endpoint, e.g. `http://collector:4318/v1/traces`. Ignored with `exporter`. */
  endpoint?: string | undefined
  /** Where spans go instead of OTLP, each as soon as it ends (tests use an in-memory exporter). */
  exporter?: SpanExporter | undefined
}

/**
 * Turns traces on for this process: spans from `withSpan` and `recordSpan` go to the OTLP
 * endpoint (batched) or to `exporter` (at once), and `traceHeaders` carries the current trace to
 * the next service. A second call while on is refused, since the tracer is process-wide.
 *
 * @example
 * const tracing = await startTracing({ service: 'latchkey-kms', endpoint: 'http://127.0.0.1:4318/v1/traces' })
 * await tracing.stop()
 */
export async function startTracing(options: TracingOptions): Promise<{ stop(): Promise<void> }> {
  if (tracing) throw new Error('traces are already on in this process')
  const [
    api,
    { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor },
    { AsyncLocalStorageContextManager },
    { W3CTraceContextPropagator },
    { resourceFromAttributes },
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
  ])
  const processor = options.exporter
    ? new SimpleSpanProcessor(options.exporter)
    : new BatchSpanProcessor(new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(options.endpoint ? { url: options.endpoint } : {}))
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': options.service }), spanProcessors: [processor] })
  const contextManager = new AsyncLocalStorageContextManager().enable()
  api.context.setGlobalContextManager(contextManager)
  api.propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  api.trace.setGlobalTracerProvider(provider)
  const stop = async () => {
    if (tracing?.stop !== stop) return
    tracing = undefined
    await provider.shutdown()
    api.trace.disable()
    api.propagation.disable()
    api.context.disable()
  }
  tracing = { api, tracer: provider.getTracer('latchkey', '0.1.0'), stop }
  return { stop }
}

/** Whether `startTracing` is on. */
export const tracingOn = (): boolean => tracing !== undefined

export type SpanOptions = {
  kind?: 'server' | 'client' | 'internal' | undefined
  /** An incoming request's headers: its `traceparent` makes this span a child of the caller's. */
  headers?: Headers | undefined
  attributes?: Record<string, string | number | boolean> | undefined
}

/**
 * Runs `work` inside a span named `name` (a child of the current span, or of the caller's
 * `traceparent`), ended when `work` settles and marked as an error when it throws. With traces
 * off: only `work()`.
 *
 * @example
 * const result = await withSpan('kms activity ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', {}, () => run(activity))
 */
export async function withSpan<result>(name: string, options: SpanOptions, work: () => Promise<result>): Promise<result> {
  if (!tracing) return work()
  const { api, tracer } = tracing
  const parent: Context = options.headers
    ? api.propagation.extract(api.context.active(), options.headers, {
        get: (carrier, key) => carrier.get(key) ?? undefined,
        keys: (carrier) => [...carrier.keys()],
      })
    : api.context.active()
  return tracer.startActiveSpan(
    name,
    { kind: spanKind(api, options.kind), ...(options.attributes ? { attributes: options.attributes } : {}) },
    parent,
    async (span: Span) => {
      try {
        return await work()
      } catch (error) {
        span.recordException(error as Error)
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: (error as Error).message })
        throw error
      } finally {
        span.end()
      }
    },
  )
}

/**
 * Records a span that already happened (a database statement, timed by Kysely's log), as a child
 * of the current span. With traces off: nothing.
 *
 * @example
 * recordSpan('db select', { startTime, durationMs: 1.2, attributes: { 'db.system': 'postgresql' } })
 */
export function recordSpan(
  name: string,
  timing: { startTime: number; durationMs: number; attributes?: Record<string, string | number> | undefined; failed?: boolean },
): void {
  if (!tracing) return
  const { api, tracer } = tracing
  const span = tracer.startSpan(
    name,
    { kind: api.SpanKind.CLIENT, startTime: timing.startTime, ...(timing.attributes ? { attributes: timing.attributes } : {}) },
    api.context.active(),
  )
  if (timing.failed) span.setStatus({ code: api.SpanStatusCode.ERROR })
  span.end(timing.startTime + timing.durationMs)
}

/**
 * The `traceparent` (and `tracestate`) of the current span, for a request to the next service;
 * empty with traces off or outside a span.
 *
 * @example
 * await fetch(url, { headers: { ...traceHeaders(), 'content-type': 'application/json' } })
 */
export function traceHeaders(): Record<string, string> {
  if (!tracing) return {}
  const headers: Record<string, string> = {}
  tracing.api.propagation.inject(tracing.api.context.active(), headers)
  return headers
}

function spanKind(api: Api, kind: SpanOptions['kind']): SpanKind {
  if (kind === 'server') return api.SpanKind.SERVER
  if (kind === 'client') return api.SpanKind.CLIENT
  return api.SpanKind.INTERNAL
}
