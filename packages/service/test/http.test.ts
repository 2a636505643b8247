import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { type AddressInfo, connect } from 'node:net'
import { afterEach, describe, expect, test } from 'vitest'
import { closeGracefully, createHttpObserver, createLogger, type HttpObserverOptions, pathOf } from '../src/index.js'
import { connectionRefused } from './cliProcess.js'

// The observer on a real node:http server on loopback.

const servers: Server[] = []
afterEach(() => {
  for (const server of servers.splice(0)) server.closeAllConnections(), server.close()
})

/** A server behind an observer; its handler answers `GET /hello`, or waits for `release()` on `POST /slow`. */
async function observed(options: Omit<HttpObserverOptions, 'logger'> = {}) {
  const written: string[] = []
  const logger = createLogger({ name: 'latchkey-test', level: 'debug', destination: { write: (line: string) => void written.push(line) } })
  const observer = createHttpObserver({ ...options, logger })
  const waiting: (() => void)[] = []
  const server = createServer(
    observer.listener((request, response) => {
      logger.info('handling')
      if (request.url?.startsWith('/slow')) waiting.push(() => response.end('slow done'))
      else response.end('hello')
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  observer.track(server)
  servers.push(server)
  const port = (server.address() as AddressInfo).port
  return {
    observer,
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    lines: () => written.map((line) => JSON.parse(line) as Record<string, unknown>),
    /** Resolves once a slow request is being handled. */
    handling: () =>
      new Promise<void>((resolve) => {
        const check = () => (waiting.length ? resolve() : setImmediate(check))
        check()
      }),
    release: () => waiting.shift()?.(),
  }
}

describe('createHttpObserver', () => {
  test('default: /healthz is alive, /readyz is ready when ready() answers', async () => {
    const { url } = await observed({ ready: () => undefined })
    const health = await fetch(`${url}/healthz`)
    expect([health.status, health.headers.get('content-type'), health.headers.get('cache-control'), await health.json()]).toEqual([
      200,
      'application/json',
      'no-store',
      { status: 'ok' },
    ])
    const ready = await fetch(`${url}/readyz?probe=1`)
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'ready' }])
    const head = await fetch(`${url}/healthz`, { method: 'HEAD' })
    expect([head.status, await head.text()]).toEqual([200, ''])
  })

  test('behavior: /readyz answers 503 with the reason when ready() throws or does not answer in time', async () => {
    const failing = await observed({
      ready: () => {
        throw new Error('SQLITE_IOERR: disk I/O error')
      },
    })
    const answer = await fetch(`${failing.url}/readyz`)
    expect([answer.status, await answer.json()]).toEqual([503, { status: 'unavailable', reason: 'SQLITE_IOERR: disk I/O error' }])
    expect(failing.lines().at(-1)).toMatchObject({ level: 'warn', path: '/readyz', status: 503, reason: 'SQLITE_IOERR: disk I/O error' })

    const silent = await observed({ ready: () => new Promise(() => undefined), readyTimeoutMs: 50 })
    const late = await fetch(`${silent.url}/readyz`)
    expect([late.status, await late.json()]).toEqual([503, { status: 'unavailable', reason: 'the store did not answer within 50 ms' }])
  })

  test('behavior: each request gets an id (a valid incoming one, else a UUID), echoed, on its line and on lines logged while handling it', async () => {
    const { url, lines } = await observed()
    const echoed = await fetch(`${url}/hello?token=secret-token`, { headers: { 'x-request-id': 'trace-42' } })
    expect(echoed.headers.get('x-request-id')).toBe('trace-42')
    const replaced = await fetch(`${url}/hello`, { headers: { 'x-request-id': 'has a space' } })
    const generated = await fetch(`${url}/hello`)
    for (const response of [replaced, generated])
      expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(replaced.headers.get('x-request-id')).not.toBe(generated.headers.get('x-request-id'))

    const [handling, request] = lines().slice(0, 2)
    expect(handling).toMatchObject({ level: 'info', reqId: 'trace-42', msg: 'handling' })
    expect(request).toEqual({
      level: 'info',
      time: expect.any(String),
      service: 'latchkey-test',
      reqId: 'trace-42',
      method: 'GET',
      path: '/hello',
      status: 200,
      durationMs: expect.any(Number),
      msg: 'GET /hello 200',
    })
    expect(JSON.stringify(lines())).not.toContain('secret-token')
  })

  test('behavior: closeGracefully refuses new connections at once, closes idle keep-alive connections, answers the request in flight', async () => {
    const { observer, server, port, handling, release } = await observed()
    // An idle keep-alive connection: it must not hold the shutdown up.
    const idle = connect(port, '127.0.0.1')
    await once(idle, 'connect')
    idle.write('GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    expect(String((await once(idle, 'data'))[0])).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: keep-alive\r\n[\s\S]*hello$/)
    const idleClosed = once(idle, 'close')

    // The request in flight, on a keep-alive connection too: once answered, that connection must
    // close at once, not after the keep-alive timeout (raised here so that waiting for it would fail the test).
    server.keepAliveTimeout = 600_000
    const busy = connect(port, '127.0.0.1')
    await once(busy, 'connect')
    busy.write('POST /slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n')
    let answer = ''
    busy.on('data', (chunk: Buffer) => (answer += chunk.toString()))
    const busyClosed = once(busy, 'close')
    await handling()
    expect(observer.inflight()).toEqual([{ requestId: expect.any(String), method: 'POST', path: '/slow', ms: expect.any(Number) }])

    let closed = false
    const closing = closeGracefully([server], observer).then(() => (closed = true))
    expect(observer.draining).toBe(true)
    expect(await connectionRefused(port)).toBe(true)
    await idleClosed
    expect(closed).toBe(false)
    release()
    await busyClosed
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*slow done$/)
    await closing
    expect(observer.inflight()).toEqual([])
  })
})

test('pathOf: the path without query or fragment, at most 200 characters', () => {
  expect([pathOf('/v1/?chainId=eip155:1&projectId=p'), pathOf(undefined), pathOf('?x=1'), pathOf(`/${'a'.repeat(300)}`).length]).toEqual([
    '/v1/',
    '/',
    '/',
    201,
  ])
})
