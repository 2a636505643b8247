import { Hono } from 'hono'
import { expect, test } from 'vitest'
import { ServerError } from '../errors.js'
import { sameOrigin } from './sameOrigin.js'

// The check on an app of its own: a route that counts what reached it, errors answered as the
// backend answers them. The attacks on the backend's own routes are in test/sameOrigin.test.ts.

const page = 'https://app.example'
let reached = 0
const app = new Hono()
app.use(
  '*',
  sameOrigin([page], (c) => c.req.path === '/exempt'),
)
app.onError((error, c) =>
  error instanceof ServerError ? c.json({ error: { code: error.code, message: error.message } }, error.status) : c.text('unexpected', 500),
)
app.on(['GET', 'POST', 'PUT', 'DELETE'], ['/change', '/exempt'], (c) => {
  reached++
  return c.json({ reached })
})

const answer = async (response: Response) => [response.status, await response.json()]
const send = async (method: string, headers: Record<string, string>, path = '/change') => {
  const before = reached
  const response = await answer(await app.request(path, { method, headers, ...(method === 'GET' ? {} : { body: '{}' }) }))
  return { response, reached: reached - before }
}

const refusedOrigin = (origin: string) => [
  403,
  { error: { code: 'origin_not_allowed', message: `This request must come from an allowed origin, not ${origin}` } },
]
const noOrigin = [403, { error: { code: 'origin_not_allowed', message: 'This request must come from an allowed origin, and it named none' } }]
const notJson = [403, { error: { code: 'json_required', message: 'This request must be sent as application/json' } }]

test('default: JSON from an allowed origin reaches the route', async () => {
  expect((await send('POST', { origin: page, 'content-type': 'application/json' })).reached).toBe(1)
  expect((await send('POST', { origin: page, 'content-type': 'Application/JSON; charset=utf-8' })).reached).toBe(1)
})

test('behavior: GET needs neither an origin nor a type', async () => {
  expect((await send('GET', {})).reached).toBe(1)
})

test('error: refuses a foreign origin before the route runs, whatever the method', async () => {
  for (const method of ['POST', 'PUT', 'DELETE'])
    expect(await send(method, { origin: 'https://evil.app.example', 'content-type': 'application/json' })).toEqual({
      response: refusedOrigin('https://evil.app.example'),
      reached: 0,
    })
})

test('error: refuses a request with no origin', async () => {
  expect(await send('POST', { 'content-type': 'application/json' })).toEqual({ response: noOrigin, reached: 0 })
})

test('error: refuses the types a page may send without a preflight, and no type at all', async () => {
  for (const type of ['text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonp'])
    expect(await send('POST', { origin: page, 'content-type': type })).toEqual({ response: notJson, reached: 0 })
  expect(await send('POST', { origin: page })).toEqual({ response: notJson, reached: 0 })
})

test('behavior: an exempt request needs neither', async () => {
  expect((await send('POST', { 'content-type': 'text/plain' }, '/exempt')).reached).toBe(1)
})
