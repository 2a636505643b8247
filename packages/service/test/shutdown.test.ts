import { expect, test } from 'vitest'
import { listening, startCli } from './cliProcess.js'

// The drain before a shutdown, in a real process: the runner, SIGTERM, and `/readyz` against a
// normal request while `--shutdown-delay` runs. No sleeps: each step waits for a log line.

const fixture = 'packages/service/test/fixtures/service.ts'

const status = async (url: string) => {
  const response = await fetch(url)
  return { status: response.status, body: await response.text() }
}

/**
 * Starts the fixture and resolves once it answered `/readyz`: the runner installs its signal
 * handlers as soon as `start` resolves, before the process handles any request, so an answer
 * means a signal from now on is handled.
 */
async function startFixture(args: readonly string[], env: Record<string, string> = {}) {
  const service = startCli(fixture, args, env)
  const port = (await service.waitForLog(listening))['port'] as number
  const url = `http://127.0.0.1:${port}`
  expect(await status(`${url}/readyz`)).toEqual({ status: 200, body: '{"status":"ready"}' })
  return { service, url }
}

test('behavior: with --shutdown-delay, SIGTERM makes /readyz answer 503 while requests are still served, then it stops and exits 0', async () => {
  const { service, url } = await startFixture(['--shutdown-delay', '2'])

  service.child.kill('SIGTERM')
  const notReady = await service.waitForLog((line) => line.msg.startsWith('SIGTERM: not ready'))
  expect(notReady.msg).toBe('SIGTERM: not ready; still serving for 2 s (--shutdown-delay), then stopping')
  expect(await status(`${url}/readyz`)).toEqual({ status: 503, body: '{"status":"unavailable","reason":"shutting down"}' })
  expect(await status(`${url}/work`)).toEqual({ status: 200, body: 'done' })
  expect(await status(`${url}/healthz`)).toEqual({ status: 200, body: '{"status":"ok"}' })

  expect(await service.exited).toEqual({ code: 0, signal: null })
  const messages = service.logs().map((line) => line.msg)
  // The request above was served after the signal and before the shutdown began.
  expect(messages.indexOf('GET /work 200')).toBeGreaterThan(messages.indexOf(notReady.msg))
  const stopping = service.logs().find((line) => line.msg.startsWith('SIGTERM: stopping'))!
  expect(messages.indexOf(stopping.msg)).toBeGreaterThan(messages.indexOf('GET /work 200'))
  expect(messages.at(-1)).toBe('stopped')
  // The graceful shutdown waited for the whole delay (the log's own clock, not the test's).
  expect(Date.parse(stopping.time) - Date.parse(notReady.time)).toBeGreaterThanOrEqual(2000)
})

test('default: without --shutdown-delay, SIGTERM stops at once: no "not ready" phase, exit 0', async () => {
  const { service } = await startFixture([])
  service.child.kill('SIGTERM')
  expect(await service.exited).toEqual({ code: 0, signal: null })
  expect(service.logs().map((line) => line.msg)).toEqual([
    expect.stringMatching(/^test service listening on /),
    'SIGTERM: stopping; no new connections, finishing 0 requests in flight',
    'stopped',
  ])
})

test('behavior: LATCHKEY_SHUTDOWN_DELAY sets the delay as the flag does', async () => {
  const { service } = await startFixture([], { LATCHKEY_SHUTDOWN_DELAY: '1' })
  service.child.kill('SIGTERM')
  expect((await service.waitForLog((line) => line.msg.startsWith('SIGTERM: not ready'))).msg).toBe(
    'SIGTERM: not ready; still serving for 1 s (--shutdown-delay), then stopping',
  )
  expect(await service.exited).toEqual({ code: 0, signal: null })
})

test('error: refuses a delay out of range, exit 2', async () => {
  const service = startCli(fixture, ['--shutdown-delay', '3601'])
  expect(await service.exited).toEqual({ code: 2, signal: null })
  expect(service.stderr()).toBe('test-service: --shutdown-delay must be a whole number from 0 to 3600, got "3601" (see test-service --help)\n')
})

test('behavior: SIGTERM while the service starts is kept, not fatal: it stops as soon as the start is done and exits 0', async () => {
  const service = startCli(fixture, [], { FIXTURE_SLOW_START: '1' })
  await service.waitForLog((line) => line.msg === 'starting slowly')
  service.child.kill('SIGTERM')
  await service.waitForLog((line) => line.msg === 'SIGTERM while starting: stopping as soon as started')
  service.child.kill('SIGUSR2')
  expect(await service.exited).toEqual({ code: 0, signal: null })
  expect(service.logs().map((line) => line.msg)).toEqual([
    'starting slowly',
    'SIGTERM while starting: stopping as soon as started',
    expect.stringMatching(/^test service listening on /),
    'SIGTERM: stopping; no new connections, finishing 0 requests in flight',
    'stopped',
  ])
})
