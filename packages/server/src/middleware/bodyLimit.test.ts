import { Hono } from 'hono'
import { expect, test } from 'vitest'
import { z } from 'zod'
import { ServerError } from '../errors.js'
import { readBody } from '../internal/context.js'
import { bodyLimit } from './bodyLimit.js'

// The limit on an app of its own: a route that reads its JSON body, errors answered as the
// backend answers them. The backend's own routes behind it are in test/bodyLimit.test.ts.

const limit = 1024
const app = new Hono()
app.use('*', bodyLimit(limit))
app.onError((error, c) =>
  error instanceof ServerError ? c.json({ error: { code: error.code, message: error.message } }, error.status) : c.text('unexpected', 500),
)
app.post('/echo', async (c) => c.json(await readBody(c.req.raw, z.object({ text: z.string() }))))

const tooLarge = [413, { error: { code: 'body_too_large', message: 'The request body is larger than 1024 bytes' } }]
const answer = async (response: Response) => [response.status, await response.json()]

/** A body that never ends, counting what was pulled from it: only a limit that streams can answer it. */
function endlessBody() {
  const pulled = { bytes: 0, cancelled: false }
  const chunk = new TextEncoder().encode(`{"text":"${'a'.repeat(100)}`)
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled.bytes += chunk.byteLength
      controller.enqueue(chunk)
    },
    cancel() {
      pulled.cancelled = true
    },
  })
  return { stream, pulled }
}

const post = (body: BodyInit, headers: Record<string, string> = {}) =>
  app.request('/echo', { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, duplex: 'half' } as RequestInit)

test('default: a body within the limit reaches the route', async () => {
  const text = 'a'.repeat(limit - 20)
  expect(await answer(await post(JSON.stringify({ text })))).toEqual([200, { text }])
})

test('error: a declared length over the limit is refused before the body is read', async () => {
  const { stream, pulled } = endlessBody()
  expect(await answer(await post(stream, { 'content-length': String(limit + 1) }))).toEqual(tooLarge)
  expect(pulled.bytes).toBeLessThanOrEqual(chunkAhead)
})

// A ReadableStream may pull one chunk ahead of what is read.
const chunkAhead = 2 * 111

test('error: a content-length that understates the body is refused while streaming, and the rest is never pulled', async () => {
  const { stream, pulled } = endlessBody()
  expect(await answer(await post(stream, { 'content-length': '10' }))).toEqual(tooLarge)
  expect(pulled.cancelled).toBe(true)
  expect(pulled.bytes).toBeLessThanOrEqual(limit + chunkAhead)
})

test('error: a chunked body (no content-length) is refused at the first byte past the limit', async () => {
  const { stream, pulled } = endlessBody()
  expect(await answer(await post(stream))).toEqual(tooLarge)
  expect(pulled.cancelled).toBe(true)
  expect(pulled.bytes).toBeLessThanOrEqual(limit + chunkAhead)
})
