import { request } from 'node:http'
import { getFreePort } from '@latchkey/devnet'
import { afterEach, beforeEach, expect, test } from 'vitest'
import { createAppServer, LIMITS } from '../src/index.js'
import { origin, useBackend } from './backend.js'

// The backend's body limit over real HTTP (the bin's server): a chunked body with no length, and
// a declared length the body does not keep to, each answered 413 before it is read whole.

const { t } = useBackend()
let server: ReturnType<typeof createAppServer>
// The harness builds each test's options before it: the server is started with them.
beforeEach(async () => {
  server = createAppServer({ ...t.options, store: undefined, port: await getFreePort() })
  await server.start()
})
afterEach(() => server.stop())

const tooLarge = { error: { code: 'body_too_large', message: `The request body is larger than ${LIMITS.bodyBytes} bytes` } }

/** Sends `chunks` of 16 KiB (a JSON string that never closes) until the server answers; resolves with the answer and how much was sent. */
function upload(headers: Record<string, string>, chunks: number) {
  return new Promise<{ status: number; body: unknown; sentBytes: number }>((resolve, reject) => {
    const outgoing = request(
      `${server.url}/auth/email/start`,
      { method: 'POST', headers: { 'content-type': 'application/json', origin, ...headers } },
      (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk) => (text += chunk))
        response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text), sentBytes }))
      },
    )
    outgoing.on('error', reject)
    let sentBytes = 0
    const chunk = Buffer.alloc(16 * 1024, 'a')
    outgoing.write('{"email":"')
    const more = () => {
      if (sentBytes >= chunks * chunk.length || outgoing.destroyed) {
        outgoing.end()
        return
      }
      sentBytes += chunk.length
      if (outgoing.write(chunk)) setImmediate(more)
      else outgoing.once('drain', more)
    }
    more()
  })
}

test('error: a chunked body past the limit is answered 413', async () => {
  const answer = await upload({ 'transfer-encoding': 'chunked' }, 64)
  expect([answer.status, answer.body]).toEqual([413, tooLarge])
})

test('error: a declared content-length over the limit is answered 413', async () => {
  // Less than it declares, and never more: the body is still unfinished when the answer comes, and
  // no byte past the declared length reaches Node's parser as the start of another request.
  const answer = await upload({ 'content-length': String(LIMITS.bodyBytes + 1) }, 2)
  expect([answer.status, answer.body]).toEqual([413, tooLarge])
})
