import { once } from 'node:events'
import { createServer, type Server } from 'node:net'
import { Hono } from 'hono'
import { afterEach, expect, test } from 'vitest'
import { createMetrics, routeObserver } from '../src/index.js'
import { listening, startCli } from './cliProcess.js'

// --metrics-port on a bin (runService), and the route labels every service's HTTP metrics carry.

const fixture = 'packages/service/test/fixtures/service.ts'
const held: Server[] = []
afterEach(async () => {
  for (const server of held.splice(0)) await new Promise((resolve) => server.close(resolve))
})

/** A port something else already listens on. */
async function takenPort(): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  held.push(server)
  return (server.address() as { port: number }).port
}

/** A free port: taken, then released. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

test('error: refuses a metrics port already taken: exit 2 with one line, before the service listens', async () => {
  const port = await takenPort()
  const service = startCli(fixture, ['--metrics-port', String(port)])
  expect(await service.exited).toEqual({ code: 2, signal: null })
  expect(service.stderr()).toBe(`test-service: --metrics-port: 127.0.0.1:${port} is already in use; choose another port\n`)
  expect(service.logs().filter(listening)).toEqual([])
})

test('error: refuses a metrics port that is not a port (LATCHKEY_METRICS_PORT)', async () => {
  const service = startCli(fixture, [], { LATCHKEY_METRICS_PORT: '70000' })
  expect(await service.exited).toEqual({ code: 2, signal: null })
  expect(service.stderr()).toBe('test-service: LATCHKEY_METRICS_PORT must be a port number from 1 to 65535, got "70000" (see test-service --help)\n')
})

test('behavior: serves GET /metrics on --metrics-port, on 127.0.0.1 by default, and only there', async () => {
  const port = await freePort()
  const service = startCli(fixture, ['--metrics-port', String(port)])
  await service.waitForLog(listening)
  const scraped = await fetch(`http://127.0.0.1:${port}/metrics`)
  expect(scraped.status).toBe(200)
  expect(scraped.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
  expect(await scraped.text()).toMatch(/^process_cpu_user_seconds_total\{service="test-service"\} \d/m)
  expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(404)
  service.child.kill('SIGTERM')
  expect(await service.exited).toEqual({ code: 0, signal: null })
})

test('behavior: without --metrics-port nothing listens for metrics and nothing is counted', async () => {
  const app = new Hono()
  expect(routeObserver(undefined)).toBeUndefined()
  app.get('/users/:id', (c) => c.text('ok'))
  expect((await app.request('/users/1')).status).toBe(200)
})

test('behavior: HTTP requests are labelled by route template, never by their path', async () => {
  const metrics = createMetrics('test-service')
  const app = new Hono()
  app.use(routeObserver(metrics)!)
  app.use('/users/*', async (_c, next) => next())
  app.get('/users/:id', (c) => c.text('ok'))
  for (const path of ['/users/ada@example.com', '/users/0x1b3cB81E51011b549d78bf720b0d924ac763A7C2', '/nowhere/04a1b2c3d4']) await app.request(path)
  const exposition = await metrics.exposition()
  const http = exposition.split('\n').filter((line) => line.startsWith('latchkey_http_requests_total{'))
  expect(http).toEqual([
    'latchkey_http_requests_total{route="/users/:id",method="GET",status="200",service="test-service"} 2',
    'latchkey_http_requests_total{route="unmatched",method="GET",status="404",service="test-service"} 1',
  ])
  expect(exposition).toContain('latchkey_http_requests_in_flight{route="/users/:id",method="GET",service="test-service"} 0')
  expect(exposition).not.toMatch(/ada@example|0x1b3c|04a1b2/i)
})
