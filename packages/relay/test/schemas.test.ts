import { expect, test } from 'vitest'
import { ackSchema, JSON_SAFE, methodParams, plainAckId, plainPublish, readPlainPublish, requestSchema } from '../src/schemas.js'

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

/** What the general path makes of a frame's text: the publish `JSON.parse` and `plainPublish` accept, or undefined. */
function viaParse(frame: string) {
  try {
    return plainPublish(JSON.parse(frame))
  } catch {
    return undefined
  }
}
const read = (frame: string) => {
  // Inside a larger buffer, as frames arrive: the reader keeps to its range.
  const bytes = Buffer.from(`xx${frame}yy`)
  return readPlainPublish(bytes, 2, bytes.length - 2)
}

test('behavior: a publish read from its bytes is what JSON.parse and the schemas make of it, for the forms clients send', () => {
  const message = 'AKxy/+09=='.repeat(20)
  const plain = [
    // Ours: topic, message, ttl, tag, prompt.
    `{"id":1716000000000123,"jsonrpc":"2.0","method":"irn_publish","params":{"topic":"${topic}","message":"${message}","ttl":300,"tag":1108,"prompt":false}}`,
    // The official client's order: prompt before tag.
    `{"id":1,"jsonrpc":"2.0","method":"irn_publish","params":{"topic":"${topic}","message":"${message}","ttl":86400,"prompt":true,"tag":1100}}`,
    // Keys in another order, no tag, no jsonrpc.
    `{"params":{"ttl":10,"message":"x","topic":"${topic}"},"method":"irn_publish","id":0}`,
    `{"id":2,"method":"irn_publish","params":{"topic":"${topic}","message":" ! ~","ttl":2592000,"tag":-3}}`,
    `{"id":3,"jsonrpc":"anything","method":"irn_publish","params":{"topic":"${topic}","message":"m","ttl":300,"tag":0}}`,
  ]
  for (const frame of plain) {
    expect(read(frame)).toBeDefined()
    expect(read(frame)).toEqual(viaParse(frame))
    expect(JSON_SAFE.test(read(frame)!.params.message)).toBe(true)
  }
})

test('behavior: anything else is left to the general path, which decides: accepted or refused there alike', () => {
  const base = (params: string, envelope = '"id":1,"jsonrpc":"2.0","method":"irn_publish"') => `{${envelope},"params":{${params}}}`
  const ok = `"topic":"${topic}","message":"hi","ttl":300`
  const others = [
    // Accepted by the general path, read there.
    base(`${ok},"tag":1.5`),
    base(`${ok},"tag":"1108"`),
    base(`${ok},"tag":1e3`),
    base(`${ok},"tag":null`),
    base(`${ok},"tag":123456789012345678`),
    base(`"topic":"${topic}","message":"h\\u00e9","ttl":300`),
    base(`"topic":"${topic}","message":"caf\u00e9","ttl":300`),
    base(`"topic":"${topic}","message":"é","ttl":300`),
    base(`"topic":"${topic}","message":"a"b","ttl":300`),
    base(`${ok},"ttl":400`),
    base(`${ok},"correlationId":9`),
    base(`${ok},"attestation":{"a":1}`),
    base(ok, '"id":"x","jsonrpc":"2.0","method":"irn_publish"'),
    base(ok, '"id":12345678901234567,"jsonrpc":"2.0","method":"irn_publish"'),
    base(ok, '"id":9007199254740993,"jsonrpc":"2.0","method":"irn_publish"'),
    base(ok, '"id":1,"id":2,"jsonrpc":"2.0","method":"irn_publish"'),
    base(ok, '"id":1,"jsonrpc":"2.0","method":"irn_publish","extra":true'),
    base(`${ok},"prompt":1`),
    `{ "id":1,"jsonrpc":"2.0","method":"irn_publish","params":{${ok}}}`,
    `{"id":1,"jsonrpc":"2.0","method":"irn_publish","params":{${ok}} }`,
    // Refused by the general path too.
    base(`${ok},"ttl":9`.replace('"ttl":300,', '')),
    base(`"topic":"${topic}","message":"","ttl":300`),
    base(`"topic":"${topic.toUpperCase()}","message":"hi","ttl":300`),
    base(`"topic":"${topic}00","message":"hi","ttl":300`),
    base(`"topic":"${topic}","message":"hi","ttl":9`),
    base(`"topic":"${topic}","message":"hi","ttl":2592001`),
    base(`"topic":"${topic}","message":"hi","ttl":300.5`),
    base(`"topic":"${topic}","message":"hi","ttl":0300`),
    base(`"topic":"${topic}","message":"hi"`),
    base(ok, '"id":1,"jsonrpc":"2.0","method":"irn_subscribe"'),
    base(ok, '"id":01,"jsonrpc":"2.0","method":"irn_publish"'),
    base(ok, '"id":-1,"jsonrpc":"2.0","method":"irn_publish"'),
    base(ok, '"jsonrpc":"2.0","method":"irn_publish"'),
    `{"id":1,"jsonrpc":"2.0","method":"irn_publish","params":{${ok}}`,
    `{"id":1,"jsonrpc":"2.0","method":"irn_publish","params":{${ok}}}}`,
    `{"id":1,"jsonrpc":"2.0","method":"irn_publish","params":{${ok},}}`,
    `{"id":1,"jsonrpc":"2.0","method":"irn_publish","params":[]}`,
    '',
    '{}',
  ]
  for (const frame of others) expect(read(frame), frame).toBeUndefined()
  // The list holds both kinds, so the cases above are not all refusals.
  expect(others.filter((frame) => viaParse(frame) !== undefined).length).toBeGreaterThan(10)
  expect(others.filter((frame) => viaParse(frame) === undefined).length).toBeGreaterThan(10)
})

test('behavior: a publish frame with any one byte changed is read as the general path reads it, or left to it', () => {
  const frame = `{"id":12,"jsonrpc":"2.0","method":"irn_publish","params":{"topic":"${topic}","message":"QUJD+/=","ttl":300,"tag":1108,"prompt":false}}`
  // Each position, each of a few bytes: quotes, digits, braces, a backslash, a space, a control and a non-ASCII byte.
  const bytes = [0x22, 0x30, 0x31, 0x39, 0x7b, 0x7d, 0x2c, 0x3a, 0x5c, 0x20, 0x2d, 0x2e, 0x65, 0x61, 0x41, 0x0a, 0xe9]
  let read_ = 0
  for (let position = 0; position < frame.length; position++)
    for (const byte of bytes) {
      const changed = Buffer.from(frame)
      changed[position] = byte
      const fast = readPlainPublish(changed, 0, changed.length)
      if (fast === undefined) continue
      read_++
      expect(fast, changed.toString()).toEqual(viaParse(changed.toString()))
    }
  // Changes inside the message, the topic's digits and the numbers still read as publishes.
  expect(read_).toBeGreaterThan(50)
})
