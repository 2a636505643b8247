import { createServer, type Server } from 'node:http'
import { getRequestListener } from '@hono/node-server'
import { closeGracefully, createHttpObserver, type InflightRequest, type Logger } from '@latchkey/service'
import { createServerApp, paymasterFor, type ServerAppOptions } from './app.js'
import { createServerAudit } from './audit.js'
import { apiKeyStamper, KmsClient } from './internal/kmsClient.js'
import type { Paymaster } from './paymaster/service.js'
import { openStore, type Store } from './store.js'
import { createWebhookSender, type WebhookSender } from './webhooks/dispatcher.js'
import { createKmsEventFollower, type KmsEventFollower } from './webhooks/kmsEvents.js'

export type AppServerOptions = Omit<ServerAppOptions, 'store'> & {
  /** Default 8787. */
  port?: number | undefined
  /** Default `127.0.0.1`. */
  host?: string | undefined
  /**
   * A `postgres://` URL (several instances may share the database) or a SQLite file path; default:
   * `databasePath`, else SQLite in memory.
   */
  databaseUrl?: string | undefined
  /** SQLite file, when `databaseUrl` is not given; default in memory. */
  databasePath?: string | undefined
  /** A store already open (`openStore`), instead of `databaseUrl`/`databasePath`; stop() closes it. */
  store?: Store | undefined
  /**
   * Where to log (pino): one line per request with its request id, and unexpected errors; never a
   * cookie, a body or a query string. Default: no request log, unexpected errors on the console.
   */
  logger?: Logger | undefined
  /**
   * Behind a reverse proxy that terminates TLS: take the scheme from `X-Forwarded-Proto` (so
   * session cookies are `Secure`) and the client's address from the last `X-Forwarded-For` entry
   * (per-IP limits), unless `ipOf` is given. Only with a proxy that sets both; default false.
   */
  trustProxy?: boolean | undefined
  /** 32 bytes: the key of the audit trail's keyed hashes of IPs and emails. Default: the fixed development key. */
  auditKey?: Uint8Array | undefined
  /** Also append each audit event, once stored, to this file as a JSON line. */
  auditLogFile?: string | undefined
  /** How long a webhook endpoint has to answer. Default 10 s. */
  webhookTimeoutMs?: number | undefined
  /** How often the kms's completed activities are read for their events (wallet.exported, mfa.enrolled, …). Default 2 s. */
  kmsEventPollMs?: number | undefined
}

/**
 * The app backend as a start/stop instance (the shape of prool).
 *
 * @example
 * const server = createAppServer({ port: 8787, kmsUrl, organizationId, apiPublicKey, apiPrivateKey, appName: 'Demo', allowedOrigins })
 * await server.start()
 */
export function createAppServer(options: AppServerOptions) {
  const host = options.host ?? '127.0.0.1'
  const port = options.port ?? 8787
  const ipOf = options.ipOf ?? (options.trustProxy ? forwardedFor : undefined)
  let store: Store | undefined = options.store
  // Request ids, the request log, /healthz and /readyz (the store answers).
  const observer = createHttpObserver({
    logger: options.logger,
    ready: async () => {
      if (!store) throw new Error('the store is not open')
      await store.ping()
    },
  })
  let server: Server | undefined
  let audit: ServerAppOptions['audit']
  let webhooks: { sender: WebhookSender; follower: KmsEventFollower; unsubscribe: () => void } | undefined
  let paymaster: Paymaster | undefined
  return {
    name: 'server',
    host,
    port,
    url: `http://${host}:${port}`,
    /** Opens the store (applying its migrations), then listens. */
    async start() {
      if (server) return
      store ??= await openStore(options.databaseUrl ?? options.databasePath ?? ':memory:', {
        metrics: options.metrics,
        onRetry: ({ attempt, error }) => options.logger?.warn({ attempt, err: error }, 'database transaction conflicted; running it again'),
      })
      audit = options.audit ?? createServerAudit(store, { key: options.auditKey, logFile: options.auditLogFile, logger: options.logger })
      // Every instance sends: claims keep them from sending one delivery twice at once.
      const sender = createWebhookSender({ outbox: store.webhooks, now: options.now, logger: options.logger, timeoutMs: options.webhookTimeoutMs })
      // Every instance follows the kms's trail too: the cursor's compare-and-set and the once-keys keep an activity to one event.
      const follower = createKmsEventFollower({
        kms: new KmsClient({ baseUrl: options.kmsUrl }, apiKeyStamper({ apiPublicKey: options.apiPublicKey, apiPrivateKey: options.apiPrivateKey })),
        organizationId: options.organizationId,
        store,
        logger: options.logger,
        pollMs: options.kmsEventPollMs,
      })
      webhooks = { sender, follower, unsubscribe: store.onWebhooksQueued(sender.nudge) }
      sender.start()
      follower.start()
      // The issuer of access JWTs defaults to this server's own URL, never a request's Host.
      // Every instance settles too: settling a reservation twice changes nothing.
      paymaster = options.paymaster ? paymasterFor(options, store, audit) : undefined
      paymaster?.start()
      const app = createServerApp({ ...options, sessionJwtIssuer: options.sessionJwtIssuer ?? `http://${host}:${port}`, store, ipOf, audit }, { paymaster })
      const requests = getRequestListener(app.fetch)
      const started = createServer(
        observer.listener(
          options.trustProxy
            ? (incoming, outgoing) => {
                // An absolute request target is how the adapter learns the scheme the browser used.
                const proto = String(incoming.headers['x-forwarded-proto'] ?? '')
                  .split(',')[0]!
                  .trim()
                if ((proto === 'https' || proto === 'http') && incoming.url?.startsWith('/') && incoming.headers.host)
                  incoming.url = `${proto}://${incoming.headers.host}${incoming.url}`
                return requests(incoming, outgoing)
              }
            : requests,
        ),
      )
      await new Promise<void>((resolve, reject) => {
        started.once('error', reject)
        started.listen(port, host, () => {
          started.off('error', reject)
          resolve()
        })
      })
      observer.track(started)
      server = started
    },
    /**
     * Stops accepting connections at once, resolves once every request in flight is answered and
     * the webhook deliveries being sent are settled, then closes the store.
     */
    async stop() {
      const running = server
      server = undefined
      await closeGracefully(running ? [running] : [], observer)
      // A delivery cut here is claimed again by an instance once its lease ends, with the same id.
      webhooks?.unsubscribe()
      await webhooks?.follower.stop()
      await webhooks?.sender.stop()
      webhooks = undefined
      await paymaster?.stop()
      paymaster = undefined
      await audit?.settled()
      const open = store
      store = undefined
      await open?.close()
    },
    /** Requests not yet answered, oldest first. */
    inflight: (): InflightRequest[] => observer.inflight(),
  }
}

/** The client's address as the proxy in front saw it: the last X-Forwarded-For entry. */
function forwardedFor(request: Request, env: unknown): string {
  const last = request.headers.get('x-forwarded-for')?.split(',').at(-1)?.trim()
  return last || ((env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket?.remoteAddress ?? 'unknown')
}
