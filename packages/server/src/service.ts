import { type ServerType, serve } from '@hono/node-server'
import { createServerApp, type ServerAppOptions } from './app.js'
import { openStore } from './store.js'

export type AppServerOptions = Omit<ServerAppOptions, 'store'> & {
  /** Default 8787. */
  port?: number | undefined
  /** Default `127.0.0.1`. */
  host?: string | undefined
  /** SQLite file; default in memory. */
  databasePath?: string | undefined
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
  const store = openStore(options.databasePath ?? ':memory:')
  const app = createServerApp({ ...options, store })
  let server: ServerType | undefined
  return {
    name: 'server',
    host,
    port,
    url: `http://${host}:${port}`,
    app,
    async start() {
      if (server) return
      await new Promise<void>((resolve, reject) => {
        const started = serve({ fetch: app.fetch, port, hostname: host }, () => resolve())
        started.once('error', reject)
        server = started
      })
    },
    async stop() {
      const running = server
      server = undefined
      if (running) await new Promise<void>((resolve) => running.close(() => resolve()))
      store.close()
    },
  }
}
