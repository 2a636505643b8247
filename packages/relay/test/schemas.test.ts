import { expect, test } from 'vitest'
import { ackSchema, methodParams, plainAckId, plainPublish, requestSchema } from '../src/schemas.js'

const topic = 'ab'.repeat(32)

/** What the schemas make of a frame: the publish they accept, or undefined. */
function viaSchemas(payload: unknown) {
  const request = requestSchema.safeParse(payload)
  if (!request.success || request.data.method !== 'irn_publish') return undefined
  const params = methodParams.irn_publish.safeParse(request.data.params ?? {})
  return params.success ? { id: request.data.id, params: params.data } : undefined
}

const publishes: unknown[] = [
  { id: 1, jsonrpc: '2.0', method: 'irn_publish', params: { topic, message: 'hi', ttl: 300, tag: 1108 } },
  { id: 'x', method: 'irn_publish', params: { topic, message: 'hi', ttl: 10 } },
  { id: 2, method: 'irn_publish', params: { topic, message: 'hi', ttl: 30 * 86_400, tag: 1.5, prompt: true, correlationId: 9 } },
  { id: 3, method: 'irn_publish', params: { topic, message: 'hi', ttl: 300, tag: '1108' } },
]
const refused: unknown[] = [
  null,
  [],
  'irn_publish',
  { method: 'irn_publish', params: { topic, message: 'hi', ttl: 300 } },
  { id: null, method: 'irn_publish', params: { topic, message: 'hi', ttl: 300 } },
  { id: 1, method: 'irn_publish' },
  { id: 1, method: 'irn_publish', params: [] },
  { id: 1, method: 'irn_publish', params: { topic: topic.toUpperCase(), message: 'hi', ttl: 300 } },
  { id: 1, method: 'irn_publish', params: { topic: `${topic}00`, message: 'hi', ttl: 300 } },
  { id: 1, method: 'irn_publish', params: { topic, message: '', ttl: 300 } },
  { id: 1, method: 'irn_publish', params: { topic, message: 7, ttl: 300 } },
  { id: 1, method: 'irn_publish', params: { topic, message: 'hi', ttl: 9 } },
  { id: 1, method: 'irn_publish', params: { topic, message: 'hi', ttl: 30 * 86_400 + 1 } },
  { id: 1, method: 'irn_publish', params: { topic, message: 'hi', ttl: 300.5 } },
  { id: 1, method: 'irn_publish', params: { topic, message: 'hi', ttl: '300' } },
  { id: 1, method: 'irn_publish', params: { topic, message: 'hi' } },
  { id: 1, method: 'irn_batchPublish', params: { messages: [{ topic, message: 'hi', ttl: 300 }] } },
]

test('behavior: the publish fast path accepts exactly what the schemas accept, with the same output', () => {
  for (const payload of publishes) {
    expect(plainPublish(payload)).toEqual(viaSchemas(payload))
    expect(plainPublish(payload)).toBeDefined()
  }
  for (const payload of refused) expect(plainPublish(payload)).toBeUndefined()
  // Those the fast path turns away the schemas refuse too, bar the batch, which is another method.
  expect(refused.filter((payload) => viaSchemas(payload) !== undefined)).toEqual([])
})

test('behavior: the ack fast path reads only the exact common ack; anything else goes to the schema', () => {
  const bytes = (frame: string) => Buffer.from(frame)
  expect(plainAckId(bytes('{"id":1716000000000123,"jsonrpc":"2.0","result":true}'))).toBe(1716000000000123)
  expect(plainAckId(bytes('{"id":7,"jsonrpc":"2.0","result":true}'))).toBe(7)
  expect(plainAckId(bytes('{"id":0,"jsonrpc":"2.0","result":true}'))).toBe(0)
  for (const frame of [
    '{"id":7,"jsonrpc":"2.0","result":false}',
    '{"id":7,"jsonrpc":"2.0","error":{"code":1,"message":"no"}}',
    '{"id":"7","jsonrpc":"2.0","result":true}',
    '{"id":7.5,"jsonrpc":"2.0","result":true}',
    // Not JSON at all: a number cannot start with 0.
    '{"id":07,"jsonrpc":"2.0","result":true}',
    ' {"id":7,"jsonrpc":"2.0","result":true}',
    '{"id":7,"jsonrpc":"2.0","result":true} ',
    '{"id":7,"jsonrpc":"2.0","result":true,"method":"irn_publish"}',
    '{"jsonrpc":"2.0","id":7,"result":true}',
    '{"id":,"jsonrpc":"2.0","result":true}',
    '{"id":-7,"jsonrpc":"2.0","result":true}',
    '{"id":7e3,"jsonrpc":"2.0","result":true}',
    '{"id":12345678901234567,"jsonrpc":"2.0","result":true}',
  ])
    expect(plainAckId(bytes(frame))).toBeUndefined()
  // What it reads, the schema reads alike.
  expect(ackSchema.parse(JSON.parse('{"id":7,"jsonrpc":"2.0","result":true}'))).toEqual({ id: 7, result: true })
})
