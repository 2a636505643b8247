import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { connect, type Socket } from 'node:net'
import { getFreePort } from '@latchkey/devnet'
import { signRelayJwt } from '@latchkey/walletconnect'
import { afterEach, describe, expect, test } from 'vitest'
import WebSocket from 'ws'
import { createRelay, memoryStore, type Relay } from '../src/index.js'
import { acceptWebSockets, type ServerWebSocket, type WebSocketServer, type WebSocketServerOptions } from '../src/websocket.js'

// The relay's own server side of RFC 6455, driven with raw TCP frames written here (and `ws` as a
// client for the normal path).

const TEXT = 0x1
const BINARY = 0x2
const CLOSE = 0x8
const PING = 0x9
const PONG = 0xa

/** A client's frame: masked with a random key unless told otherwise. */
function frame(opcode: number, payload: Buffer | string = '', options: { fin?: boolean; rsv?: number; masked?: boolean } = {}): Buffer {
  const data = typeof payload === 'string' ? Buffer.from(payload) : payload
  const masked = options.masked ?? true
  const size = data.length < 126 ? 2 : data.length < 65_536 ? 4 : 10
  const header = Buffer.alloc(size + (masked ? 4 : 0))
  header[0] = (options.fin === false ? 0 : 0x80) | ((options.rsv ?? 0) << 4) | opcode
  const lengthField = data.length < 126 ? data.length : data.length < 65_536 ? 126 : 127
  header[1] = (masked ? 0x80 : 0) | lengthField
  if (lengthField === 126) header.writeUInt16BE(data.length, 2)
  if (lengthField === 127) header.writeBigUInt64BE(BigInt(data.length), 2)
  if (!masked) return Buffer.concat([header, data])
  const mask = randomBytes(4)
  mask.copy(header, size)
  return Buffer.concat([header, data.map((byte, index) => byte ^ mask[index % 4]!)])
}

/** A close frame's payload: the code, then the reason. */
function closePayload(code: number, reason: string | Buffer = ''): Buffer {
  const payload = Buffer.alloc(2)
  payload.writeUInt16BE(code)
  return Buffer.concat([payload, typeof reason === 'string' ? Buffer.from(reason) : reason])
}

type Frame = { fin: boolean; opcode: number; payload: Buffer }

/** Items pushed by events, taken in order by awaiting. */
function queue<T>() {
  const items: T[] = []
  const waiters: ((item: T) => void)[] = []
  return {
    items,
    push(item: T) {
      const waiter = waiters.shift()
      if (waiter) waiter(item)
      else items.push(item)
    },
    next(): Promise<T> {
      const ready = items.shift()
      return ready !== undefined ? Promise.resolve(ready) : new Promise((resolve) => waiters.push(resolve))
    },
  }
}

type Raw = {
  socket: Socket
  status: number
  headers: Record<string, string>
  /** The body of a refusal, read to the end. */
  body: Promise<string>
  frames: ReturnType<typeof queue<Frame>>
  /** The server ended the TCP connection (after its close frame, if any). */
  ended: Promise<void>
  send(...frames: Buffer[]): Promise<void>
}

const SAMPLE_KEY = 'dGhlIHNhbXBsZSBub25jZQ=='

/**
 * A WebSocket client over a bare TCP socket: the upgrade request (headers given as undefined are
 * left out), `head` written in the same write, then the server's frames parsed as they come.
 */
async function rawConnect(
  port: number,
  options: { path?: string; method?: string; headers?: Record<string, string | undefined>; head?: Buffer } = {},
): Promise<Raw> {
  const socket = connect(port, '127.0.0.1')
  rawSockets.push(socket)
  await once(socket, 'connect')
  const headers: Record<string, string | undefined> = {
    Host: `127.0.0.1:${port}`,
    Upgrade: 'websocket',
    Connection: 'Upgrade',
    'Sec-WebSocket-Key': SAMPLE_KEY,
    'Sec-WebSocket-Version': '13',
    ...options.headers,
  }
  const lines = [`${options.method ?? 'GET'} ${options.path ?? '/'} HTTP/1.1`]
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) lines.push(`${name}: ${value}`)
  socket.write(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), options.head ?? Buffer.alloc(0)]))

  const frames = queue<Frame>()
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  let buffered = Buffer.alloc(0)
  let response: { status: number; headers: Record<string, string> } | undefined
  let resolveResponse: (value: { status: number; headers: Record<string, string> }) => void = () => undefined
  const responded = new Promise<{ status: number; headers: Record<string, string> }>((resolve) => (resolveResponse = resolve))
  let resolveBody: (body: string) => void = () => undefined
  const body = new Promise<string>((resolve) => (resolveBody = resolve))
  socket.on('error', () => undefined)
  socket.on('end', () => {
    if (response) resolveBody(buffered.toString())
  })
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk])
    if (!response) {
      const headEnd = buffered.indexOf('\r\n\r\n')
      if (headEnd < 0) return
      const [statusLine = '', ...headerLines] = buffered.subarray(0, headEnd).toString().split('\r\n')
      response = {
        status: Number(statusLine.split(' ')[1]),
        headers: Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()])),
      }
      buffered = buffered.subarray(headEnd + 4)
      resolveResponse(response)
    }
    if (response.status !== 101) return
    // The server's frames: never masked.
    for (;;) {
      if (buffered.length < 2) return
      let length = buffered[1]! & 0x7f
      let at = 2
      if (length === 126) {
        if (buffered.length < 4) return
        length = buffered.readUInt16BE(2)
        at = 4
      } else if (length === 127) {
        if (buffered.length < 10) return
        length = Number(buffered.readBigUInt64BE(2))
        at = 10
      }
      if (buffered.length < at + length) return
      frames.push({ fin: (buffered[0]! & 0x80) !== 0, opcode: buffered[0]! & 0x0f, payload: Buffer.from(buffered.subarray(at, at + length)) })
      buffered = buffered.subarray(at + length)
    }
  })
  const { status, headers: responseHeaders } = await responded
  return {
    socket,
    status,
    headers: responseHeaders,
    body,
    frames,
    ended,
    send: (...parts: Buffer[]) => new Promise<void>((resolve) => socket.write(Buffer.concat(parts), () => resolve())),
  }
}

/** The server's close frame, as (code, reason). */
async function nextClose(raw: Raw) {
  for (;;) {
    const next = await raw.frames.next()
    if (next.opcode !== CLOSE) continue
    return { code: next.payload.length >= 2 ? next.payload.readUInt16BE(0) : undefined, reason: next.payload.subarray(2).toString() }
  }
}

type Accepted = {
  socket: ServerWebSocket
  /** Messages as text, with the range they were handed over in. */
  messages: ReturnType<typeof queue<{ text: string; buffer: Buffer; start: number; end: number }>>
  pongs: ReturnType<typeof queue<true>>
  closed: Promise<{ code: number; reason: string }>
}

const servers: { http: Server; sockets: WebSocketServer }[] = []
const rawSockets: Socket[] = []
let relay: Relay | undefined
afterEach(async () => {
  // Raw clients never answer a close frame: they would hold a stop for its whole close timeout.
  for (const socket of rawSockets.splice(0)) socket.destroy()
  for (const { http, sockets } of servers.splice(0)) {
    for (const socket of sockets.clients) socket.terminate()
    http.closeAllConnections()
    await new Promise((resolve) => http.close(resolve))
  }
  await relay?.stop()
  relay = undefined
})

/** An HTTP server with acceptWebSockets on it, recording what each connection reads. */
async function startServer(options: Partial<WebSocketServerOptions> = {}) {
  const http = createServer((_, response) => response.writeHead(404).end('not here'))
  const port = await getFreePort()
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve))
  const accepted = queue<Accepted>()
  const sockets: WebSocketServer = acceptWebSockets(http, {
    maxPayload: 256,
    headers: () => ['x-test: yes'],
    onConnection(socket) {
      const messages: Accepted['messages'] = queue()
      const pongs: Accepted['pongs'] = queue()
      socket.onmessage = (buffer, start, end) => messages.push({ text: buffer.toString('utf8', start, end), buffer, start, end })
      socket.on('pong', () => pongs.push(true))
      const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason })))
      accepted.push({ socket, messages, pongs, closed })
    },
    ...options,
  })
  servers.push({ http, sockets })
  return { port, url: `ws://127.0.0.1:${port}`, sockets, accepted: () => accepted.next() }
}

/** A server and one raw connection to it, accepted. */
async function connected(options: Partial<WebSocketServerOptions> = {}) {
  const server = await startServer(options)
  const raw = await rawConnect(server.port)
  expect(raw.status).toBe(101)
  return { server, raw, accepted: await server.accepted() }
}

describe('handshake', () => {
  test('default: 101 with the accept key of RFC 6455 §1.3, the extra headers, and no extension even when offered', async () => {
    const server = await startServer()
    const raw = await rawConnect(server.port, { headers: { 'Sec-WebSocket-Extensions': 'permessage-deflate; client_max_window_bits' } })
    expect(raw.status).toBe(101)
    expect(raw.headers).toEqual({
      upgrade: 'websocket',
      connection: 'Upgrade',
      'sec-websocket-accept': 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=',
      'x-test': 'yes',
    })
  })

  test('behavior: the first subprotocol offered is taken, as ws took it', async () => {
    const server = await startServer()
    const raw = await rawConnect(server.port, { headers: { 'Sec-WebSocket-Protocol': 'chat, superchat' } })
    expect([raw.status, raw.headers['sec-websocket-protocol']]).toEqual([101, 'chat'])
    const client = new WebSocket(server.url, ['one', 'two'])
    await once(client, 'open')
    expect(client.protocol).toBe('one')
    client.terminate()
  })

  test('behavior: frames sent in the same write as the upgrade request are read', async () => {
    const server = await startServer()
    const raw = await rawConnect(server.port, { head: Buffer.concat([frame(TEXT, 'first'), frame(TEXT, 'second')]) })
    expect(raw.status).toBe(101)
    const { messages } = await server.accepted()
    expect([(await messages.next()).text, (await messages.next()).text]).toEqual(['first', 'second'])
  })

  const refusals: [string, Parameters<typeof rawConnect>[1], number, string][] = [
    ['a POST', { method: 'POST' }, 400, 'A WebSocket upgrade is a GET'],
    ['another Upgrade', { headers: { Upgrade: 'h2c' } }, 400, 'Invalid Upgrade header: not websocket'],
    ['no key', { headers: { 'Sec-WebSocket-Key': undefined } }, 400, 'Missing or invalid Sec-WebSocket-Key header'],
    ['a key of 15 bytes', { headers: { 'Sec-WebSocket-Key': randomBytes(15).toString('base64') } }, 400, 'Missing or invalid Sec-WebSocket-Key header'],
    ['a key that is not base64', { headers: { 'Sec-WebSocket-Key': `${'*'.repeat(22)}==` } }, 400, 'Missing or invalid Sec-WebSocket-Key header'],
    ['no version', { headers: { 'Sec-WebSocket-Version': undefined } }, 400, 'Missing Sec-WebSocket-Version header'],
    ['version 8', { headers: { 'Sec-WebSocket-Version': '8' } }, 426, 'Unsupported Sec-WebSocket-Version: this server speaks 13'],
    ['a subprotocol that is no token', { headers: { 'Sec-WebSocket-Protocol': 'a b' } }, 400, 'Invalid Sec-WebSocket-Protocol header'],
  ]
  for (const [name, options, status, message] of refusals)
    test(`error: ${name} is refused with ${status} and the connection closed`, async () => {
      const server = await startServer()
      const raw = await rawConnect(server.port, options)
      expect([raw.status, raw.headers['sec-websocket-version'], await raw.body]).toEqual([status, status === 426 ? '13' : undefined, message])
      await raw.ended
    })

  test('error: without the upgrade token in Connection, Node hands the request to the HTTP handler, not here', async () => {
    const server = await startServer()
    const raw = await rawConnect(server.port, { headers: { Connection: 'keep-alive' } })
    expect(raw.status).toBe(404)
  })

  test('error: once the server is closed, an upgrade is refused with 503', async () => {
    const server = await startServer()
    server.sockets.close()
    const raw = await rawConnect(server.port)
    expect([raw.status, await raw.body]).toEqual([503, 'The server is stopping'])
  })
})

describe('frames', () => {
  test('default: ws as a client: text and binary messages, pings both ways, and a close handshake it starts', async () => {
    const server = await startServer()
    const client = new WebSocket(server.url)
    await once(client, 'open')
    const accepted = await server.accepted()
    client.send('héllo')
    client.send(Buffer.from('bytes'))
    client.send('x'.repeat(200))
    expect([(await accepted.messages.next()).text, (await accepted.messages.next()).text, (await accepted.messages.next()).text]).toEqual([
      'héllo',
      'bytes',
      'x'.repeat(200),
    ])
    accepted.socket.ping()
    await accepted.pongs.next()
    const pong = once(client, 'pong')
    client.ping('are you there')
    expect((await pong)[0].toString()).toBe('are you there')
    const clientClosed = once(client, 'close')
    client.close(3000, 'done')
    expect(await accepted.closed).toEqual({ code: 3000, reason: 'done' })
    const [code, reason] = await clientClosed
    expect([code, reason.toString()]).toEqual([3000, ''])
    expect(server.sockets.clients.size).toBe(0)
  })

  test('default: ws as a client sees the close code and reason the server closes with', async () => {
    const server = await startServer()
    const client = new WebSocket(server.url)
    await once(client, 'open')
    const accepted = await server.accepted()
    const clientClosed = once(client, 'close')
    accepted.socket.close(4001, 'the token has expired')
    const [code, reason] = await clientClosed
    expect([code, reason.toString()]).toEqual([4001, 'the token has expired'])
    // ws echoes the reason too.
    expect(await accepted.closed).toEqual({ code: 4001, reason: 'the token has expired' })
  })

  test('behavior: frames pipelined in one chunk are handed over as ranges of that chunk, unmasked in place', async () => {
    const { accepted } = await connected()
    const chunk = Buffer.concat([frame(TEXT, 'one'), frame(TEXT, 'a longer second frame'), frame(TEXT, ''), frame(TEXT, 'x'.repeat(130))])
    accepted.socket.receive(chunk)
    const received = [await accepted.messages.next(), await accepted.messages.next(), await accepted.messages.next(), await accepted.messages.next()]
    expect(received.map(({ text, start, end }) => [text, start, end])).toEqual([
      ['one', 6, 9],
      ['a longer second frame', 15, 36],
      ['', 42, 42],
      ['x'.repeat(130), 50, 180],
    ])
    for (const { buffer } of received) expect(buffer).toBe(chunk)
  })

  test('behavior: frames of every length form, split across chunks byte by byte, are read whole', async () => {
    const { accepted } = await connected({ maxPayload: 100_000 })
    const texts = ['short', 'é'.repeat(100), 'z'.repeat(70_000)]
    const bytes = Buffer.concat(texts.map((text) => frame(TEXT, text)))
    for (let at = 0; at < bytes.length; at++) accepted.socket.receive(bytes.subarray(at, at + 1))
    for (const text of texts) expect((await accepted.messages.next()).text).toBe(text)
  })

  test('behavior: a message of many socket reads (300 kB) is read whole', async () => {
    const server = await startServer({ maxPayload: 300_000 })
    const client = new WebSocket(server.url)
    await once(client, 'open')
    const { messages } = await server.accepted()
    const text = randomBytes(150_000).toString('hex')
    client.send(text)
    expect((await messages.next()).text).toBe(text)
    client.terminate()
  })

  test('behavior: frames written to the socket a byte at a time are read whole', async () => {
    const { raw, accepted } = await connected()
    const bytes = Buffer.concat([frame(TEXT, 'one byte at a time'), frame(BINARY, 'then binary'), frame(TEXT, 'a'.repeat(200))])
    for (const byte of bytes) await raw.send(Buffer.from([byte]))
    expect([(await accepted.messages.next()).text, (await accepted.messages.next()).text, (await accepted.messages.next()).text]).toEqual([
      'one byte at a time',
      'then binary',
      'a'.repeat(200),
    ])
  })

  test('behavior: a fragmented message with a ping between its fragments is reassembled; the ping is answered first', async () => {
    const { raw, accepted } = await connected()
    const euro = Buffer.from('€')
    await raw.send(
      frame(TEXT, Buffer.concat([Buffer.from('price: 5'), euro.subarray(0, 1)]), { fin: false }),
      frame(PING, 'between'),
      frame(0, euro.subarray(1), { fin: false }),
      frame(0, ' today'),
    )
    expect(await raw.frames.next()).toEqual({ fin: true, opcode: PONG, payload: Buffer.from('between') })
    expect((await accepted.messages.next()).text).toBe('price: 5€ today')
    // And the next message is read on its own.
    await raw.send(frame(BINARY, 'b', { fin: false }), frame(0, 'in', { fin: false }), frame(0, 'ary'), frame(TEXT, 'after'))
    expect((await accepted.messages.next()).text).toBe('binary')
    expect((await accepted.messages.next()).text).toBe('after')
  })

  test('behavior: a message of many fragments, empty ones among them, is reassembled', async () => {
    const { raw, accepted } = await connected()
    const middle = Array.from({ length: 100 }, (_, index) => [frame(0, '', { fin: false }), frame(0, String(index % 10), { fin: false })]).flat()
    await raw.send(frame(TEXT, '<', { fin: false }), ...middle, frame(0, '>'))
    expect((await accepted.messages.next()).text).toBe(`<${'0123456789'.repeat(10)}>`)
  })

  test('behavior: a ping is answered with a pong of the same payload; a pong is reported', async () => {
    const { raw, accepted } = await connected()
    await raw.send(frame(PING, 'abc'), frame(PING), frame(PONG, 'unasked'))
    expect(await raw.frames.next()).toEqual({ fin: true, opcode: PONG, payload: Buffer.from('abc') })
    expect(await raw.frames.next()).toEqual({ fin: true, opcode: PONG, payload: Buffer.alloc(0) })
    expect(await accepted.pongs.next()).toBe(true)
  })

  test('behavior: a binary message is handed over as it is, UTF-8 or not', async () => {
    const { raw, accepted } = await connected()
    await raw.send(frame(BINARY, Buffer.from([0xff, 0x00, 0xfe])))
    const { buffer, start, end } = await accepted.messages.next()
    expect([...buffer.subarray(start, end)]).toEqual([0xff, 0x00, 0xfe])
  })

  const protocolErrors: [string, () => Buffer[], string][] = [
    ['an unmasked frame', () => [frame(TEXT, 'plain', { masked: false })], 'client frames must be masked'],
    ['a reserved bit set', () => [frame(TEXT, 'compressed?', { rsv: 4 })], 'reserved bits set'],
    ['an unknown data opcode', () => [frame(0x3, 'three')], 'unknown opcode 3'],
    ['an unknown control opcode', () => [frame(0xb, 'eleven')], 'unknown opcode 11'],
    ['a control frame over 125 bytes', () => [frame(PING, 'p'.repeat(126))], 'control frame over 125 bytes'],
    ['a fragmented control frame', () => [frame(PING, 'half', { fin: false })], 'fragmented control frame'],
    ['a continuation of nothing', () => [frame(0, 'orphan')], 'continuation of no message'],
    ['a new message inside a fragmented one', () => [frame(TEXT, 'start', { fin: false }), frame(TEXT, 'again')], 'new message inside a fragmented one'],
    ['a close frame of 1 byte', () => [frame(CLOSE, Buffer.from([3]))], 'close frame with a 1-byte payload'],
    ['a close code no one may send (1005)', () => [frame(CLOSE, closePayload(1005))], 'invalid close code 1005'],
    ['a reserved close code (1015)', () => [frame(CLOSE, closePayload(1015))], 'invalid close code 1015'],
    ['an unassigned close code (2000)', () => [frame(CLOSE, closePayload(2000))], 'invalid close code 2000'],
    ['a close code past 4999', () => [frame(CLOSE, closePayload(5000))], 'invalid close code 5000'],
  ]
  for (const [name, frames, reason] of protocolErrors)
    test(`error: ${name} fails the connection with 1002`, async () => {
      const { raw, accepted } = await connected()
      await raw.send(...frames(), frame(TEXT, 'never read'))
      expect(await nextClose(raw)).toEqual({ code: 1002, reason })
      await raw.ended
      expect(await accepted.closed).toEqual({ code: 1002, reason })
      expect(accepted.messages.items).toEqual([])
    })

  const invalidData: [string, () => Buffer[], string][] = [
    ['a text message that is not UTF-8', () => [frame(TEXT, Buffer.from([0x68, 0xff, 0x69]))], 'text message is not UTF-8'],
    ['a text message cut inside a character', () => [frame(TEXT, Buffer.from('€').subarray(0, 2))], 'text message is not UTF-8'],
    [
      'a fragmented text message that is not UTF-8 once whole',
      () => [frame(TEXT, 'ok', { fin: false }), frame(0, Buffer.from([0xc0, 0xaf]))],
      'text message is not UTF-8',
    ],
    ['a close reason that is not UTF-8', () => [frame(CLOSE, closePayload(1000, Buffer.from([0xed, 0xa0, 0x80])))], 'close reason is not UTF-8'],
  ]
  for (const [name, frames, reason] of invalidData)
    test(`error: ${name} fails the connection with 1007`, async () => {
      const { raw, accepted } = await connected()
      await raw.send(...frames(), frame(TEXT, 'never read'))
      expect(await nextClose(raw)).toEqual({ code: 1007, reason })
      expect(await accepted.closed).toEqual({ code: 1007, reason })
      expect(accepted.messages.items).toEqual([])
    })

  test('error: a message over maxPayload fails the connection with 1009 on its header, before its payload is read', async () => {
    const { raw, accepted } = await connected({ maxPayload: 256 })
    // The header of a 100 000-byte frame, and nothing of its payload.
    await raw.send(frame(TEXT, Buffer.alloc(100_000)).subarray(0, 14))
    expect(await nextClose(raw)).toEqual({ code: 1009, reason: 'message over 256 bytes' })
    expect(await accepted.closed).toEqual({ code: 1009, reason: 'message over 256 bytes' })
  })

  test('error: a fragmented message whose fragments add up to more than maxPayload fails with 1009', async () => {
    const { raw, accepted } = await connected({ maxPayload: 256 })
    await raw.send(frame(TEXT, 'a'.repeat(200), { fin: false }), frame(0, 'b'.repeat(57)))
    expect(await nextClose(raw)).toEqual({ code: 1009, reason: 'message over 256 bytes' })
    expect(accepted.messages.items).toEqual([])
  })

  test('behavior: a message of exactly maxPayload is read', async () => {
    const { raw, accepted } = await connected({ maxPayload: 256 })
    await raw.send(frame(TEXT, 'a'.repeat(200), { fin: false }), frame(0, 'b'.repeat(56)))
    expect((await accepted.messages.next()).text).toBe(`${'a'.repeat(200)}${'b'.repeat(56)}`)
  })
})

describe('close', () => {
  test('default: the peer closes: its code is echoed, the socket ended, and (code, reason) reported', async () => {
    const { raw, accepted } = await connected()
    await raw.send(frame(CLOSE, closePayload(3001, 'bye ✓')))
    expect(await raw.frames.next()).toEqual({ fin: true, opcode: CLOSE, payload: closePayload(3001) })
    await raw.ended
    expect(await accepted.closed).toEqual({ code: 3001, reason: 'bye ✓' })
    expect(accepted.socket.readyState).toBe(3)
  })

  test('behavior: a close frame without a code is answered with 1000 and reported as 1005', async () => {
    const { raw, accepted } = await connected()
    await raw.send(frame(CLOSE))
    expect(await raw.frames.next()).toEqual({ fin: true, opcode: CLOSE, payload: closePayload(1000) })
    expect(await accepted.closed).toEqual({ code: 1005, reason: '' })
  })

  test('behavior: the server closes: a close frame; messages after it are dropped; the socket ends once the peer answers', async () => {
    const { raw, accepted } = await connected()
    accepted.socket.close(4008, 'rate limit exceeded')
    expect(accepted.socket.readyState).toBe(2)
    expect(await raw.frames.next()).toEqual({ fin: true, opcode: CLOSE, payload: closePayload(4008, 'rate limit exceeded') })
    await raw.send(frame(TEXT, 'too late'), frame(PING, 'too late'), frame(CLOSE, closePayload(4008)))
    await raw.ended
    expect(await accepted.closed).toEqual({ code: 4008, reason: '' })
    expect(accepted.messages.items).toEqual([])
    // No pong after the close frame: nothing followed it.
    expect(raw.frames.items).toEqual([])
  })

  test('behavior: a reason longer than a close frame holds is cut at a character', async () => {
    const { raw, accepted } = await connected()
    accepted.socket.close(4001, `the token is for another relay (${'é'.repeat(100)})`)
    const { reason } = await nextClose(raw)
    expect([Buffer.byteLength(reason), reason]).toEqual([122, `the token is for another relay (${'é'.repeat(45)}`])
  })

  test('behavior: a peer that never answers the close frame is cut off after the close timeout, reported as 1006', async () => {
    const { raw, accepted } = await connected({ closeTimeoutMs: 50 })
    accepted.socket.close(1001, 'stopping')
    expect(await nextClose(raw)).toEqual({ code: 1001, reason: 'stopping' })
    await raw.ended
    expect(await accepted.closed).toEqual({ code: 1006, reason: '' })
  })

  test('behavior: the TCP connection ending without a close frame is reported as 1006', async () => {
    const { raw, accepted } = await connected()
    raw.socket.end()
    expect(await accepted.closed).toEqual({ code: 1006, reason: '' })
    await raw.ended
  })

  test('behavior: terminate destroys the connection at once', async () => {
    const { raw, accepted } = await connected()
    accepted.socket.terminate()
    await raw.ended
    expect(await accepted.closed).toEqual({ code: 1006, reason: '' })
    expect(raw.frames.items).toEqual([])
  })
})

describe('in the relay', () => {
  const token = (url: string) => signRelayJwt({ seed: randomBytes(32).toString('hex'), aud: url })
  const subscribe = (id: number) => JSON.stringify({ id, jsonrpc: '2.0', method: 'irn_subscribe', params: { topic: 'ab'.repeat(32) } })

  async function startRelay(heartbeatMs?: number) {
    relay = createRelay({ port: await getFreePort(), store: memoryStore(), limits: { maxMessageBytes: 1024 }, heartbeatMs })
    await relay.start()
    return relay
  }

  test('default: the 101 carries x-request-id; frames behind the upgrade, split, binary and fragmented, are all requests', async () => {
    const { url, port } = await startRelay()
    const request = subscribe(1)
    const raw = await rawConnect(port, { path: `/?auth=${token(url)}`, head: frame(TEXT, request) })
    expect(raw.status).toBe(101)
    expect(raw.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
    expect(raw.headers['sec-websocket-extensions']).toBeUndefined()
    const second = frame(BINARY, subscribe(2))
    for (const byte of second) await raw.send(Buffer.from([byte]))
    const third = subscribe(3)
    await raw.send(frame(TEXT, third.slice(0, 10), { fin: false }), frame(0, third.slice(10)))
    const answers = [await raw.frames.next(), await raw.frames.next(), await raw.frames.next()]
    expect(
      answers.map(({ opcode, payload }) => [opcode, JSON.parse(payload.toString()).id, /^[0-9a-f]{64}$/.test(JSON.parse(payload.toString()).result)]),
    ).toEqual([
      [TEXT, 1, true],
      [TEXT, 2, true],
      [TEXT, 3, true],
    ])
  })

  test('error: a frame over twice maxMessageBytes is refused with 1009', async () => {
    const { url } = await startRelay()
    const client = new WebSocket(`${url}/?auth=${token(url)}`)
    await once(client, 'open')
    const closed = once(client, 'close')
    client.send('x'.repeat(2049))
    const [code] = await closed
    expect(code).toBe(1009)
  })

  test('behavior: the heartbeat drops a connection that misses a pong and keeps one that answers', async () => {
    const { url, port } = await startRelay(300)
    const answering = new WebSocket(`${url}/?auth=${token(url)}`)
    let pings = 0
    answering.on('ping', () => pings++)
    await once(answering, 'open')
    const silent = await rawConnect(port, { path: `/?auth=${token(url)}` })
    expect(relay!.connections()).toBe(2)
    // The silent client is sent a ping (a random payload to echo), and terminated at the next beat without a pong.
    const ping = await silent.frames.next()
    expect({ fin: ping.fin, opcode: ping.opcode, payloadBytes: ping.payload.length }).toEqual({ fin: true, opcode: PING, payloadBytes: 8 })
    await silent.ended
    expect(pings).toBeGreaterThanOrEqual(1)
    // The answering client, pinged at the same beats, is still served.
    answering.send(subscribe(7))
    const [answer] = await once(answering, 'message')
    expect(JSON.parse(answer.toString())).toMatchObject({ id: 7 })
    answering.terminate()
  })

  test('error: the heartbeat drops a connection whose pongs do not echo its ping: unasked pongs keep no one alive', async () => {
    const { url, port } = await startRelay(100)
    const liar = await rawConnect(port, { path: `/?auth=${token(url)}` })
    // Pongs sent unasked, and every ping answered with a pong of another payload: what a client
    // that reads nothing (and so never sees a ping's payload) could send.
    await liar.send(frame(PONG, 'unasked'))
    const answering = (async () => {
      for (;;) {
        const next = await Promise.race([liar.frames.next(), liar.ended.then(() => undefined)])
        if (!next) return
        if (next.opcode === PING) await liar.send(frame(PONG, 'not the payload'), frame(PONG))
      }
    })()
    await liar.ended
    await answering
    await expect.poll(() => relay!.connections()).toBe(0)
  })

  test('behavior: stop() closes every client with 1001', async () => {
    const { url } = await startRelay()
    const client = new WebSocket(`${url}/?auth=${token(url)}`)
    await once(client, 'open')
    const closed = once(client, 'close')
    await relay!.stop()
    relay = undefined
    const [code, reason] = await closed
    expect([code, reason.toString()]).toEqual([1001, 'relay stopping'])
  })
})
