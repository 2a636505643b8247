import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getRequestListener } from '@hono/node-server'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { KmsError } from '../src/errors.js'
import { bodyLimit } from '../src/http/bodyLimit.js'
import { post, startKms } from './harness.js'

// The API's edge: what reaches a handler, and what is refused before. Names from the request
// resolve through own properties only; bodies are counted as they stream.

let t: Awaited<ReturnType<typeof startKms>>
beforeAll(async () => {
  t = await startKms()
})
afterAll(() => t.kms.stop())

const LIMIT = 256 * 1024

/** A body that streams `chunk` up to `total` bytes (forever when undefined), counting what was pulled. */
function countingBody(total?: number) {
  const chunk = new Uint8Array(16 * 1024).fill(0x20)
  const pulled = { bytes: 0 }
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (total !== undefined && pulled.bytes >= total) return controller.close()
      pulled.bytes += chunk.byteLength
      controller.enqueue(chunk)
    },
  })
  return { stream, pulled }
}

describe('body limit', () => {
  test('error: a chunked body that never ends is refused 413 after the limit, the rest never read', async () => {
    const { stream, pulled } = countingBody()
    const response = await t.kms.app.request('/public/v1/query/whoami', { method: 'POST', body: stream, duplex: 'half' } as RequestInit)
    expect(response.status).toBe(413)
    expect(await response.json()).toEqual({ code: 3, message: `request body too large: at most ${LIMIT} bytes`, details: [] })
    // Read up to the chunk that crossed the limit (the stream may have one more chunk queued), no further.
    expect(pulled.bytes).toBeLessThanOrEqual(LIMIT + 3 * 16 * 1024)
  })

  test('error: a body longer than the content-length it declares is counted, not trusted', async () => {
    const { stream } = countingBody(LIMIT * 2)
    const response = await t.kms.app.request('/public/v1/query/whoami', {
      method: 'POST',
      body: stream,
      duplex: 'half',
      headers: { 'content-length': '100' },
    } as RequestInit)
    expect(response.status).toBe(413)
  })

  test('error: an oversized chunked body over HTTP is answered 413 with CORS headers', async () => {
    const { stream } = countingBody(LIMIT + 1)
    const response = await fetch(`${t.kms.url}/public/v1/query/whoami`, {
      method: 'POST',
      body: stream,
      duplex: 'half',
      headers: { origin: 'http://localhost:5173' },
    } as RequestInit)
    expect(response.status).toBe(413)
    expect(response.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
  })

  test("behavior: over Node's HTTP server, a body that declares its length is read from Node's request, no web Request built around it", async () => {
    const app = new Hono<{ Variables: { raw: Uint8Array } }>()
    app.onError((error) => Response.json((error as KmsError).toJSON(), { status: (error as KmsError).status }))
    app.post('/', bodyLimit(64), (c) => c.json({ text: new TextDecoder().decode(c.var.raw), bodyUsed: c.req.raw.bodyUsed }))
    const server = createServer(getRequestListener(app.fetch))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
      const declared = await fetch(url, { method: 'POST', body: '{"a":"é"}' })
      expect(await declared.json()).toEqual({ text: '{"a":"é"}', bodyUsed: false })
      // Chunked (no length declared): read from the web stream, as before.
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"b":1}'))
          controller.close()
        },
      })
      const chunked = await fetch(url, { method: 'POST', body: stream, duplex: 'half' } as RequestInit)
      expect(await chunked.json()).toEqual({ text: '{"b":1}', bodyUsed: true })
      // Declared and over the limit: refused unread.
      const over = await fetch(url, { method: 'POST', body: 'x'.repeat(65) })
      expect([over.status, await over.json()]).toEqual([413, { code: 3, message: 'request body too large: at most 64 bytes', details: [] }])
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })

  test('a body at the limit is read and authenticated', async () => {
    const body = JSON.stringify({ organizationId: t.parent.organizationId, padding: '' })
    const padded = body.replace('"padding":""', `"padding":"${'x'.repeat(LIMIT - body.length)}"`)
    expect(padded.length).toBe(LIMIT)
    const { body: answer, status } = await post(t.kms, t.parentKey, '/public/v1/query/whoami', JSON.parse(padded))
    expect([status, answer['organizationId']]).toEqual([200, t.parent.organizationId])
  })
})

describe('names from the request', () => {
  test.each(['constructor', 'toString', '__proto__', 'hasOwnProperty'])('error: query %s is an unknown query (404), not a handler', async (name) => {
    const { status, body } = await post(t.kms, t.parentKey, `/public/v1/query/${name}`, { organizationId: t.parent.organizationId })
    expect([status, body]).toEqual([404, { code: 5, message: `unknown query ${name}`, details: [] }])
  })

  test.each(['constructor', 'toString', '__proto__'])('error: activity type %s is unsupported (400)', async (type) => {
    const { status, body } = await post(t.kms, t.parentKey, `/public/v1/submit/${type}`, {
      type,
      timestampMs: t.timestampMs(),
      organizationId: t.parent.organizationId,
      parameters: {},
    })
    expect([status, body]).toEqual([400, { code: 3, message: `unsupported activity type ${type} for /public/v1/submit/${type}`, details: [] }])
  })

  test.each(['constructor', 'toString', '__proto__'])('error: list_suborgs filterType %s is refused (400)', async (filterType) => {
    const { status, body } = await post(t.kms, t.parentKey, '/public/v1/query/list_suborgs', {
      organizationId: t.parent.organizationId,
      filterType,
      filterValue: 'x',
    })
    expect(status).toBe(400)
    expect(body['message']).toMatch(new RegExp(`^unsupported filterType ${filterType}: use NAME, `))
  })

  test('a known filterType still answers', async () => {
    const sub = await t.subOrganization()
    const { body } = await post(t.kms, t.parentKey, '/public/v1/query/list_suborgs', {
      organizationId: t.parent.organizationId,
      filterType: 'PUBLIC_KEY',
      filterValue: sub.keys.apiPublicKey,
    })
    expect(body).toEqual({ organizationIds: [sub.organizationId] })
  })
})

describe('stamps', () => {
  test.each(['null', '1', '[]', '"text"'])('error: X-Stamp-Webauthn %s is unauthenticated (401)', async (header) => {
    const response = await fetch(`${t.kms.url}/public/v1/query/whoami`, {
      method: 'POST',
      body: JSON.stringify({ organizationId: t.parent.organizationId }),
      headers: { 'X-Stamp-Webauthn': header },
    })
    expect([response.status, await response.json()]).toEqual([
      401,
      { code: 16, message: 'malformed stamp: X-Stamp-Webauthn must be a JSON object', details: [] },
    ])
  })

  test('error: X-Stamp of base64url "null" is unauthenticated (401)', async () => {
    const response = await fetch(`${t.kms.url}/public/v1/query/whoami`, {
      method: 'POST',
      body: JSON.stringify({ organizationId: t.parent.organizationId }),
      headers: { 'X-Stamp': Buffer.from('null').toString('base64url') },
    })
    expect(response.status).toBe(401)
  })

  test('preflight and refusals carry CORS headers', async () => {
    const preflight = await fetch(`${t.kms.url}/public/v1/query/whoami`, { method: 'OPTIONS', headers: { origin: 'http://localhost:5173' } })
    expect([preflight.status, preflight.headers.get('access-control-allow-headers')]).toEqual([
      204,
      'content-type, x-stamp, x-stamp-webauthn, x-stamp-attested, x-client-version, x-session, x-auth-proxy-config-id',
    ])
    const { stampHeaderValue } = await new ApiKeyStamper(t.parentKey).stamp('{}')
    const refused = await fetch(`${t.kms.url}/public/v1/query/whoami`, {
      method: 'POST',
      body: '{ }',
      headers: { 'X-Stamp': stampHeaderValue, origin: 'http://localhost:5173' },
    })
    expect([refused.status, refused.headers.get('access-control-allow-origin')]).toEqual([401, 'http://localhost:5173'])
  })

  test('error: a page of another origin gets no CORS grant, on the API nor on the dev inbox', async () => {
    const origin = { origin: 'https://any-website.example' }
    const preflight = await fetch(`${t.kms.url}/public/v1/query/whoami`, { method: 'OPTIONS', headers: origin })
    const inbox = await fetch(`${t.kms.url}/dev/mailbox.json`, { headers: origin })
    expect([preflight.status, preflight.headers.get('access-control-allow-origin'), inbox.status, inbox.headers.get('access-control-allow-origin')]).toEqual([
      204,
      null,
      200,
      null,
    ])
    const allowed = await fetch(`${t.kms.url}/dev/mailbox.json`, { headers: { origin: 'http://localhost:5173' } })
    expect(allowed.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
  })
})
