import { createReadStream } from 'node:fs'
import { realpath, stat } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { extname, join, sep } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { defineInstance, formatAddress, type Instance, PortInUseError, StartFailedError } from './instance.js'

export type StaticServerParameters = {
  /** Directory of a built single-page app; must contain `index.html`. */
  root: string
  port: number
  /**
   * Host name in the URL and address to listen on. Default: `localhost`, which listens on both
   * 127.0.0.1 and ::1 so every client's idea of `localhost` reaches this server and no other.
   */
  host?: string
  /** Name in messages. Default: `static server`. */
  name?: string
}

const contentTypes: Partial<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.map': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.txt': 'text/plain; charset=utf-8',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.wasm': 'application/wasm',
}

/**
 * Serves a built single-page app (no dependencies, `node:http`): paths without a dot that match
 * no file get `index.html` (client-side routes), missing assets get 404, paths that try to leave
 * the root get 400, and nothing is cached (`Cache-Control: no-store`) so a rebuild shows at once.
 *
 * @example
 * const demo = staticServer({ root: 'apps/demo/dist', port: 5173 })
 * await demo.start()
 * console.log(demo.url) // http://localhost:5173
 */
export function staticServer(parameters: StaticServerParameters): Instance {
  const { port, host = 'localhost', name = 'static server' } = parameters
  let servers: Server[] = []

  return defineInstance({
    name,
    host,
    port,
    url: `http://${formatAddress(host, port)}`,
    async start() {
      let root: string
      try {
        root = await realpath(parameters.root)
        if (!(await stat(join(root, 'index.html'))).isFile()) throw new Error('index.html is not a file')
      } catch (cause) {
        throw new StartFailedError({ name, reason: `no index.html in ${parameters.root}`, cause })
      }
      const handler = (request: IncomingMessage, response: ServerResponse) => {
        serve(root, request, response).catch((error: unknown) => {
          if (!response.headersSent) send(response, 500, 'Internal server error')
          else response.destroy(error instanceof Error ? error : undefined)
        })
      }
      // `localhost` means both loopback addresses; ::1 is optional (IPv6 may be off).
      const addresses =
        host === 'localhost'
          ? [
              { address: '127.0.0.1', required: true },
              { address: '::1', required: false },
            ]
          : [{ address: host, required: true }]
      try {
        for (const { address, required } of addresses) {
          const server = createServer(handler)
          try {
            await listen(server, address, port)
            servers.push(server)
          } catch (error) {
            const code = (error as NodeJS.ErrnoException).code
            if (code === 'EADDRINUSE') throw new PortInUseError({ name, host: address, port })
            if (!required && (code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT')) continue
            throw new StartFailedError({ name, reason: (error as Error).message, cause: error })
          }
        }
      } catch (error) {
        await closeAll(servers)
        servers = []
        throw error
      }
    },
    async stop() {
      await closeAll(servers)
      servers = []
    },
  })
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen({ host, port, exclusive: true, ipv6Only: host.includes(':') }, () => {
      server.off('error', reject)
      resolve()
    })
  })
}

async function closeAll(servers: readonly Server[]): Promise<void> {
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve) => {
          server.close(() => resolve())
          server.closeAllConnections()
        }),
    ),
  )
}

async function serve(root: string, request: IncomingMessage, response: ServerResponse): Promise<void> {
  if (request.method !== 'GET' && request.method !== 'HEAD') return send(response, 405, 'Method not allowed', { Allow: 'GET, HEAD' })

  const rawPath = (request.url ?? '/').split(/[?#]/, 1)[0] ?? '/'
  let path: string
  try {
    path = decodeURIComponent(rawPath)
  } catch {
    return send(response, 400, 'Bad request')
  }
  const segments = path.split('/')
  if (!path.startsWith('/') || path.includes('\0') || path.includes('\\') || segments.includes('..')) return send(response, 400, 'Bad request')

  const file = await findFile(root, join(root, ...segments))
  if (file) return sendFile(response, request.method === 'HEAD', file)
  const last = segments[segments.length - 1] ?? ''
  if (last.includes('.')) return send(response, 404, 'Not found')
  return sendFile(response, request.method === 'HEAD', { path: join(root, 'index.html'), size: (await stat(join(root, 'index.html'))).size })
}

/**
 * The file to send for `candidate` (or `candidate.html`, as Vite's dev server and most static hosts
 * serve a page of a multi-page app, or a directory's index.html), if it exists inside `root`.
 */
async function findFile(root: string, candidate: string): Promise<{ path: string; size: number } | undefined> {
  for (const path of [candidate, `${candidate}.html`, join(candidate, 'index.html')]) {
    let real: string
    try {
      real = await realpath(path)
    } catch {
      continue
    }
    // A symbolic link must not lead out of the root either.
    if (real !== root && !real.startsWith(root + sep)) return undefined
    const stats = await stat(real)
    if (stats.isFile()) return { path: real, size: stats.size }
  }
  return undefined
}

async function sendFile(response: ServerResponse, headOnly: boolean, file: { path: string; size: number }): Promise<void> {
  response.writeHead(200, {
    'Content-Type': contentTypes[extname(file.path).toLowerCase()] ?? 'application/octet-stream',
    'Content-Length': file.size,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  })
  if (headOnly) return void response.end()
  await pipeline(createReadStream(file.path), response)
}

function send(response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...headers,
  })
  response.end(body)
}
