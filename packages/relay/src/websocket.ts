import { isUtf8 } from 'node:buffer'
import { hash } from 'node:crypto'
import { EventEmitter } from 'node:events'
import type { IncomingMessage, Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'

/**
 * The server side of RFC 6455, as much as the relay uses: the handshake, frames read straight from
 * the TCP socket, the close handshake, ping and pong. No extension is negotiated (no compression):
 * the relay writes its own text frames on the socket (see server.ts `writeOut`), whole, and so do
 * the control frames here, so no frame ever lands inside another.
 *
 * Reading is the hot path: a frame is unmasked in place in the chunk the socket gave, and a whole
 * message in one frame is handed over as `(buffer, start, end)` of that chunk, so a chunk of many
 * pipelined frames is read without allocating per frame. Only a frame split across chunks, or a
 * fragmented message, is copied into a buffer of its own.
 * @internal
 */

/** Appended to the client's key for `Sec-WebSocket-Accept` (RFC 6455 §1.3). */
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
/** Base64 of 16 bytes. */
const KEY = /^[A-Za-z0-9+/]{22}==$/
/** An HTTP token (RFC 7230 §3.2.6), as a subprotocol name is. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

export const OPEN = 1
export const CLOSING = 2
export const CLOSED = 3

const CONTINUATION = 0x0
const TEXT = 0x1
const BINARY = 0x2
const CLOSE = 0x8
const PING = 0x9
const PONG = 0xa

/** Close codes this side sends on its own. */
export const CloseCode = {
  normal: 1000,
  goingAway: 1001,
  protocolError: 1002,
  noStatus: 1005,
  abnormal: 1006,
  invalidData: 1007,
  tooBig: 1009,
} as const

export type WebSocketServerOptions = {
  /** The largest message accepted, in bytes; a larger one is refused (1009) before it is read whole. */
  maxPayload: number
  /** Extra `name: value` lines for a 101 about to be sent (the relay's `x-request-id`). */
  headers?: ((request: IncomingMessage) => readonly string[]) | undefined
  /**
   * Asked about a valid upgrade before its 101: a refusal (429, 503) is answered with its status
   * and the WebSocket never opens; undefined accepts it, and `release` is called once it closes.
   */
  admit?: ((request: IncomingMessage) => Refusal | undefined) | undefined
  release?: ((request: IncomingMessage) => void) | undefined
  /** Called once the 101 is written, before any frame of the connection is read. */
  onConnection: (socket: ServerWebSocket, request: IncomingMessage) => void
  /** How long a closing connection waits for the peer's close frame and end before it is destroyed. Default 30 000 ms. */
  closeTimeoutMs?: number | undefined
}

export type WebSocketServer = {
  /** Connections not yet closed. */
  readonly clients: ReadonlySet<ServerWebSocket>
  /** Refuses upgrades from now on (503); open connections are left as they are. */
  close(): void
}

/**
 * Accepts WebSocket upgrades on an HTTP server.
 *
 * @example
 * const sockets = acceptWebSockets(http, { maxPayload: 1 << 20, onConnection: (socket) => (socket.onmessage = (buffer, start, end) => console.log(buffer.toString('utf8', start, end))) })
 */
export function acceptWebSockets(server: Server, options: WebSocketServerOptions): WebSocketServer {
  const clients = new Set<ServerWebSocket>()
  const closeTimeoutMs = options.closeTimeoutMs ?? 30_000
  let closed = false
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const refusal = closed ? { status: 503 as const, message: 'The server is stopping' } : refusalOf(request)
    if (refusal !== undefined) return refuse(socket, refusal)
    // The client already hung up: nothing to answer.
    if (!socket.readable || !socket.writable) return void socket.destroy()
    const limited = options.admit?.(request)
    if (limited !== undefined) return refuse(socket, limited)
    const key = request.headers['sec-websocket-key'] as string
    const lines = [
      'HTTP/1.1 101 Switching Protocols',
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Accept: ${hash('sha1', key + GUID, 'base64')}`,
    ]
    // As ws did: the first subprotocol offered is taken (no client of the relay offers one), since
    // a client that offers some refuses an answer naming none.
    const protocol = subprotocolOf(request)
    if (protocol !== undefined) lines.push(`Sec-WebSocket-Protocol: ${protocol}`)
    if (options.headers) lines.push(...options.headers(request))
    const tcp = socket as Socket
    tcp.setTimeout(0)
    tcp.setNoDelay(true)
    tcp.write(`${lines.join('\r\n')}\r\n\r\n`)
    const connection = new ServerWebSocket(tcp, options.maxPayload, closeTimeoutMs)
    clients.add(connection)
    connection.once('close', () => {
      clients.delete(connection)
      options.release?.(request)
    })
    options.onConnection(connection, request)
    // Frames sent right behind the handshake: read once the connection's owner listens.
    if (head.length > 0) connection.receive(head)
    tcp.on('data', (chunk: Buffer) => connection.receive(chunk))
  }
  server.on('upgrade', onUpgrade)
  return {
    clients,
    close() {
      closed = true
    },
  }
}

export type Refusal = { status: 400 | 426 | 429 | 503; message: string }

/** Why an upgrade request is refused, or undefined for a valid one (RFC 6455 §4.2.1). */
function refusalOf(request: IncomingMessage): Refusal | undefined {
  const { headers } = request
  if (request.method !== 'GET') return { status: 400, message: 'A WebSocket upgrade is a GET' }
  if (headers.upgrade?.toLowerCase() !== 'websocket') return { status: 400, message: 'Invalid Upgrade header: not websocket' }
  // Node emits 'upgrade' only for a Connection naming upgrade; checked here all the same.
  if (!(headers.connection ?? '').split(',').some((token) => token.trim().toLowerCase() === 'upgrade'))
    return { status: 400, message: 'Invalid Connection header: no upgrade' }
  const key = headers['sec-websocket-key']
  if (key === undefined || !KEY.test(key)) return { status: 400, message: 'Missing or invalid Sec-WebSocket-Key header' }
  const version = headers['sec-websocket-version']
  if (version === undefined) return { status: 400, message: 'Missing Sec-WebSocket-Version header' }
  if (version.trim() !== '13') return { status: 426, message: 'Unsupported Sec-WebSocket-Version: this server speaks 13' }
  const protocols = headers['sec-websocket-protocol']
  if (protocols !== undefined && !protocols.split(',').every((name) => TOKEN.test(name.trim())))
    return { status: 400, message: 'Invalid Sec-WebSocket-Protocol header' }
  return undefined
}

const subprotocolOf = (request: IncomingMessage) => request.headers['sec-websocket-protocol']?.split(',')[0]?.trim() || undefined

const REASONS = { 400: 'Bad Request', 426: 'Upgrade Required', 429: 'Too Many Requests', 503: 'Service Unavailable' } as const

function refuse(socket: Duplex, { status, message }: Refusal) {
  socket.on('error', ignore)
  const lines = [
    `HTTP/1.1 ${status} ${REASONS[status]}`,
    'Connection: close',
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(message)}`,
  ]
  if (status === 426) lines.push('Sec-WebSocket-Version: 13')
  // A client past a connection cap may try again once others have left.
  if (status === 429) lines.push('Retry-After: 60')
  socket.once('finish', () => socket.destroy())
  socket.end(`${lines.join('\r\n')}\r\n\r\n${message}`)
}

const ignore = () => undefined

type Events = {
  /** The connection's TCP socket closed: the peer's close code and reason (see `ServerWebSocket`). */
  close: [code: number, reason: string]
  /** A pong and its payload (valid only during the call): an answer to a ping, or unsolicited (RFC 6455 allows both). */
  pong: [payload: Buffer]
}

/**
 * One accepted connection. Messages go to `onmessage` as a range of a buffer, valid only during the
 * call; `close` reports the close code of the close frame the peer sent (1005 if it had none), the
 * code this side failed the connection with (1002, 1007, 1009) if the peer sent none, else 1006.
 * @internal
 */
export class ServerWebSocket extends EventEmitter<Events> {
  readyState: typeof OPEN | typeof CLOSING | typeof CLOSED = OPEN
  /**
   * Each message, text or binary, as `buffer[start, end)`. The relay reads both as UTF-8 text, as
   * it did through ws; only text messages are checked to be UTF-8 (1007), as ws did.
   */
  onmessage: ((buffer: Buffer, start: number, end: number) => void) | undefined = undefined
  private closeSent = false
  private closeReceived = false
  /** Set once nothing more is read: the peer's close frame arrived, or the connection failed. */
  private done = false
  private closeCode: number = CloseCode.abnormal
  private closeReason = ''
  private closeTimer: NodeJS.Timeout | undefined = undefined
  /** Bytes of a frame header that a chunk ended inside of, read again with the next chunk. */
  private rest: Buffer | undefined = undefined
  /** The payload of a frame split across chunks, still masked, being filled; it grows as bytes come. */
  private frame: Buffer | undefined = undefined
  /** The length of that payload, from its header. */
  private frameLength = 0
  private filled = 0
  private frameOpcode = 0
  private frameFin = false
  private mask0 = 0
  private mask1 = 0
  private mask2 = 0
  private mask3 = 0
  /** The opcode of the fragmented message being read (text or binary), 0 when none is. */
  private fragmentOpcode = 0
  /**
   * The fragmented message so far, unmasked, in one buffer that grows as fragments come: its size
   * follows the bytes received (a peer sending many tiny or empty fragments makes no object each).
   */
  private fragments: Buffer | undefined = undefined
  private fragmentsLength = 0
  /** Any byte of the fragments so far with its high bit set: only then is UTF-8 checked. */
  private fragmentsHigh = 0

  constructor(
    /** The TCP socket: the relay writes its own whole frames on it. */
    readonly socket: Socket,
    private readonly maxPayload: number,
    private readonly closeTimeoutMs: number,
  ) {
    super()
    socket.on('error', ignore)
    // The peer ended its side without a close frame (or after one): end ours, which closes the socket.
    socket.on('end', () => {
      if (this.readyState === OPEN) this.readyState = CLOSING
      socket.end()
    })
    socket.on('close', () => {
      this.readyState = CLOSED
      clearTimeout(this.closeTimer)
      this.fragments = undefined
      this.frame = undefined
      this.emit('close', this.closeCode, this.closeReason)
    })
  }

  get OPEN(): typeof OPEN {
    return OPEN
  }

  /**
   * Starts the close handshake: a close frame now, the TCP socket ended once the peer's close frame
   * arrives (or destroyed after the close timeout). Messages that arrive meanwhile are dropped. A
   * reason longer than a close frame holds (123 bytes) is cut at a character.
   */
  close(code: number = CloseCode.normal, reason = '') {
    if (this.readyState !== OPEN) return
    this.readyState = CLOSING
    this.sendClose(code, reason)
    this.closeTimer = setTimeout(() => this.socket.destroy(), this.closeTimeoutMs)
  }

  /** Drops the connection at once, without a close handshake. */
  terminate() {
    if (this.readyState === OPEN) this.readyState = CLOSING
    this.socket.destroy()
  }

  /** Sends a ping; a peer's answer echoes `payload` (at most 125 bytes), which tells it from an unsolicited pong. */
  ping(payload?: Buffer) {
    if (this.readyState === OPEN) this.socket.write(payload === undefined ? PING_FRAME : controlFrame(PING, payload, 0, Math.min(payload.length, 125)))
  }

  /** Reads the frames of one chunk from the socket. */
  receive(chunk: Buffer) {
    if (this.done) return
    let at = 0
    if (this.frame !== undefined) {
      const taken = Math.min(this.frameLength - this.filled, chunk.length)
      this.fill(chunk, 0, taken)
      if (this.filled < this.frameLength) return
      const frame = this.frame
      this.frame = undefined
      at = taken
      const high = unmask(frame, 0, frame.length, this.mask0, this.mask1, this.mask2, this.mask3)
      if (!this.onFrameRead(this.frameOpcode, this.frameFin, frame, 0, frame.length, high)) return
    } else if (this.rest !== undefined) {
      // Rare: a chunk ended inside a frame header, at most 13 bytes ago.
      chunk = Buffer.concat([this.rest, chunk])
      this.rest = undefined
    }
    const length = chunk.length
    while (at < length) {
      const available = length - at
      if (available < 2) break
      const first = chunk[at]!
      const second = chunk[at + 1]!
      const fin = (first & 0x80) !== 0
      const opcode = first & 0x0f
      if ((first & 0x70) !== 0) return void this.fail(CloseCode.protocolError, 'reserved bits set')
      if ((second & 0x80) === 0) return void this.fail(CloseCode.protocolError, 'client frames must be masked')
      let payload = second & 0x7f
      if (opcode >= CLOSE) {
        if (opcode > PONG) return void this.fail(CloseCode.protocolError, `unknown opcode ${opcode}`)
        if (!fin) return void this.fail(CloseCode.protocolError, 'fragmented control frame')
        if (payload > 125) return void this.fail(CloseCode.protocolError, 'control frame over 125 bytes')
      } else if (opcode > BINARY) return void this.fail(CloseCode.protocolError, `unknown opcode ${opcode}`)
      else if (opcode === CONTINUATION) {
        if (this.fragmentOpcode === 0) return void this.fail(CloseCode.protocolError, 'continuation of no message')
      } else if (this.fragmentOpcode !== 0) return void this.fail(CloseCode.protocolError, 'new message inside a fragmented one')
      let header = 6
      if (payload === 126) {
        if (available < 4) break
        payload = chunk.readUInt16BE(at + 2)
        header = 8
      } else if (payload === 127) {
        if (available < 10) break
        // Past 2^32 bytes is past any maxPayload.
        payload = chunk.readUInt32BE(at + 2) === 0 ? chunk.readUInt32BE(at + 6) : Number.POSITIVE_INFINITY
        header = 14
      }
      if (opcode < CLOSE && (opcode === CONTINUATION ? this.fragmentsLength : 0) + payload > this.maxPayload)
        return void this.fail(CloseCode.tooBig, `message over ${this.maxPayload} bytes`)
      if (available < header) break
      const start = at + header
      const end = start + payload
      if (end > length) {
        // The frame goes on in the next chunks: its payload gets a buffer of its own.
        this.mask0 = chunk[start - 4]!
        this.mask1 = chunk[start - 3]!
        this.mask2 = chunk[start - 2]!
        this.mask3 = chunk[start - 1]!
        this.frameOpcode = opcode
        this.frameFin = fin
        // Not the whole payload at once: a header alone would then reserve maxPayload bytes.
        this.frame = Buffer.allocUnsafe(Math.min(payload, FIRST_FILL))
        this.frameLength = payload
        this.filled = 0
        this.fill(chunk, start, length)
        return
      }
      const high = unmask(chunk, start, end, chunk[start - 4]!, chunk[start - 3]!, chunk[start - 2]!, chunk[start - 1]!)
      if (!this.onFrameRead(opcode, fin, chunk, start, end, high)) return
      at = end
    }
    if (at < length) this.rest = Buffer.from(chunk.subarray(at))
  }

  /** Appends bytes of a split frame, its buffer doubled (up to the frame's length) when full. */
  private fill(source: Buffer, from: number, to: number) {
    const frame = this.frame!
    const needed = this.filled + to - from
    if (needed > frame.length) {
      const grown = Buffer.allocUnsafe(Math.min(this.frameLength, Math.max(needed, frame.length * 2)))
      frame.copy(grown, 0, 0, this.filled)
      this.frame = grown
    }
    this.filled += source.copy(this.frame!, this.filled, from, to)
  }

  /** One whole frame, unmasked. False once nothing more is to be read. */
  private onFrameRead(opcode: number, fin: boolean, buffer: Buffer, start: number, end: number, high: number): boolean {
    if (opcode === TEXT || opcode === BINARY) {
      if (fin) return this.onMessage(opcode, buffer, start, end, high)
      this.fragmentOpcode = opcode
      this.fragmentsLength = 0
      this.fragmentsHigh = 0
    } else if (opcode !== CONTINUATION) return this.onControl(opcode, buffer, start, end, high)
    this.fragmentsHigh |= high
    this.appendFragment(buffer, start, end)
    if (!fin) return true
    const message = this.fragments!
    const { fragmentOpcode, fragmentsLength, fragmentsHigh } = this
    this.fragments = undefined
    this.fragmentOpcode = 0
    return this.onMessage(fragmentOpcode, message, 0, fragmentsLength, fragmentsHigh)
  }

  /** Copies a fragment's payload after the fragments before it (the header checks kept the whole within maxPayload). */
  private appendFragment(buffer: Buffer, start: number, end: number) {
    const needed = this.fragmentsLength + end - start
    let fragments = this.fragments
    if (fragments === undefined || needed > fragments.length) {
      const grown = Buffer.allocUnsafe(Math.min(this.maxPayload, Math.max(needed, (fragments?.length ?? 0) * 2)))
      fragments?.copy(grown, 0, 0, this.fragmentsLength)
      this.fragments = fragments = grown
    }
    buffer.copy(fragments, this.fragmentsLength, start, end)
    this.fragmentsLength = needed
  }

  /** A ping, a pong or a close frame. */
  private onControl(opcode: number, buffer: Buffer, start: number, end: number, high: number): boolean {
    if (opcode === PING) {
      // Answered with the same payload, as one whole frame; not after this side's close frame.
      if (!this.closeSent && this.socket.writable) this.socket.write(controlFrame(PONG, buffer, start, end))
      return true
    }
    if (opcode === PONG) {
      this.emit('pong', buffer.subarray(start, end))
      return true
    }
    return this.onClose(buffer, start, end, high)
  }

  private onMessage(opcode: number, buffer: Buffer, start: number, end: number, high: number): boolean {
    // Only a payload with a byte past ASCII needs the UTF-8 check.
    if (opcode === TEXT && (high & 0x80) !== 0 && !isUtf8(buffer.subarray(start, end))) return this.fail(CloseCode.invalidData, 'text message is not UTF-8')
    // After this side's close frame, messages are dropped (RFC 6455 §1.4).
    if (this.readyState === OPEN) this.onmessage?.(buffer, start, end)
    return !this.done
  }

  /** The peer's close frame: checked, answered with the same code if this side has not closed, then the socket ended. */
  private onClose(buffer: Buffer, start: number, end: number, high: number): boolean {
    const length = end - start
    if (length === 1) return this.fail(CloseCode.protocolError, 'close frame with a 1-byte payload')
    const code = length === 0 ? CloseCode.noStatus : buffer.readUInt16BE(start)
    if (length > 0 && !isCloseCode(code)) return this.fail(CloseCode.protocolError, `invalid close code ${code}`)
    if ((high & 0x80) !== 0 && !isUtf8(buffer.subarray(start + 2, end))) return this.fail(CloseCode.invalidData, 'close reason is not UTF-8')
    this.closeReceived = true
    this.closeCode = code
    this.closeReason = length > 2 ? buffer.toString('utf8', start + 2, end) : ''
    this.finish()
    if (!this.closeSent) this.sendClose(code === CloseCode.noStatus ? CloseCode.normal : code, '')
    this.socket.end()
    return false
  }

  /** Fails the connection (RFC 6455 §7.1.7): a close frame with the code, and the socket ended without waiting. */
  private fail(code: number, reason: string): false {
    this.finish()
    if (!this.closeSent) this.sendClose(code, reason)
    if (!this.closeReceived) {
      this.closeCode = code
      this.closeReason = reason
    }
    this.socket.end()
    return false
  }

  /** Nothing more is read; a peer that never ends its side is cut off after the close timeout. */
  private finish() {
    this.done = true
    this.rest = undefined
    this.frame = undefined
    this.fragments = undefined
    if (this.readyState === OPEN) this.readyState = CLOSING
    this.closeTimer ??= setTimeout(() => this.socket.destroy(), this.closeTimeoutMs)
  }

  private sendClose(code: number, reason: string) {
    this.closeSent = true
    const text = Buffer.from(reason)
    // A control frame holds 125 bytes: the code and at most 123 of the reason, cut at a character.
    let size = Math.min(text.length, 123)
    while (size < text.length && size > 0 && (text[size]! & 0xc0) === 0x80) size--
    const payload = Buffer.allocUnsafe(2 + size)
    payload.writeUInt16BE(code, 0)
    text.copy(payload, 2, 0, size)
    if (this.socket.writable) this.socket.write(controlFrame(CLOSE, payload, 0, payload.length))
  }
}

/** What a split frame's buffer starts at: about what one read from a socket gives. */
const FIRST_FILL = 64 * 1024

/** A ping with no payload. */
const PING_FRAME = Buffer.from([0x80 | PING, 0])

/** A control frame as a server sends it: final, unmasked. */
function controlFrame(opcode: number, payload: Buffer, start: number, end: number): Buffer {
  const frame = Buffer.allocUnsafe(2 + end - start)
  frame[0] = 0x80 | opcode
  frame[1] = end - start
  payload.copy(frame, 2, start, end)
  return frame
}

/** Close codes a peer may send (RFC 6455 §7.4, the IANA registry): reserved and unassigned ones are a protocol error. */
const isCloseCode = (code: number) => (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999)

/**
 * Unmasks `buffer[start, end)` in place, four bytes a round, and returns every byte ORed together:
 * its high bit says whether the payload is anything but ASCII, for free while each byte is touched.
 */
function unmask(buffer: Buffer, start: number, end: number, mask0: number, mask1: number, mask2: number, mask3: number): number {
  let high = 0
  let at = start
  for (const last = end - 3; at < last; at += 4) {
    const a = buffer[at]! ^ mask0
    const b = buffer[at + 1]! ^ mask1
    const c = buffer[at + 2]! ^ mask2
    const d = buffer[at + 3]! ^ mask3
    buffer[at] = a
    buffer[at + 1] = b
    buffer[at + 2] = c
    buffer[at + 3] = d
    high |= a | b | c | d
  }
  if (at < end) {
    const a = buffer[at]! ^ mask0
    buffer[at] = a
    high |= a
  }
  if (at + 1 < end) {
    const b = buffer[at + 1]! ^ mask1
    buffer[at + 1] = b
    high |= b
  }
  if (at + 2 < end) {
    const c = buffer[at + 2]! ^ mask2
    buffer[at + 2] = c
    high |= c
  }
  return high
}
