/**
 * Requests for the kms load clients (bench/kms/load.ts, bench/kms/flood.ts), made before timing:
 * bodies stamped with an API key and written out as HTTP bytes, sent over raw keep-alive sockets.
 */
import { connect, type Socket } from 'node:net'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'

export type Prepared = { body: string; headers: Record<string, string> }

/**
 * `count` activity bodies, `activity(i)` each, stamped with the API key.
 *
 * @example
 * const prepared = await stampAll(userKey, 10, (i) => ({ type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', ... }))
 */
export async function stampAll(key: { apiPublicKey: string; apiPrivateKey: string }, count: number, activity: (i: number) => object): Promise<Prepared[]> {
  const stamper = new ApiKeyStamper({ apiPublicKey: key.apiPublicKey, apiPrivateKey: key.apiPrivateKey })
  const prepared: Prepared[] = []
  for (let i = 0; i < count; i++) {
    const body = JSON.stringify(activity(i))
    const { stampHeaderName, stampHeaderValue } = await stamper.stamp(body)
    prepared.push({
      body,
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), [stampHeaderName]: stampHeaderValue },
    })
  }
  return prepared
}

/**
 * One keep-alive connection to a kms, one request at a time: each request's bytes were written
 * out whole before timing, so sending one is a single socket write, and reading the answer is
 * finding its Content-Length. Node's HTTP client costs several times more CPU per request, taken
 * from the very cores the bench measures.
 */
export class Connection {
  private readonly socket: Socket
  private buffered: Buffer = Buffer.alloc(0)
  private waiting: { resolve: (text: string) => void; reject: (error: Error) => void } | undefined
  constructor({ hostname, port }: URL) {
    this.socket = connect({ host: hostname, port: Number(port), noDelay: true })
    this.socket.on('data', (chunk: Buffer) => {
      this.buffered = this.buffered.length ? Buffer.concat([this.buffered, chunk]) : chunk
      this.settle()
    })
    const fail = (error: Error) => {
      this.waiting?.reject(error)
      this.waiting = undefined
    }
    this.socket.on('error', fail)
    this.socket.on('close', () => fail(new Error('the kms closed the connection')))
  }
  /** Sends one request's bytes; resolves with the answer's body once it is all in, or rejects on a status other than 200. */
  send(bytes: Buffer): Promise<string> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject }
      this.socket.write(bytes)
    })
  }
  private settle() {
    const headerEnd = this.buffered.indexOf('\r\n\r\n')
    if (headerEnd < 0 || !this.waiting) return
    const head = this.buffered.subarray(0, headerEnd).toString('latin1')
    const length = /\r\ncontent-length: *(\d+)/i.exec(head)
    if (!length) {
      this.waiting.reject(new Error(`an answer without Content-Length: ${head.slice(0, 200)}`))
      this.waiting = undefined
      return
    }
    const end = headerEnd + 4 + Number(length[1])
    if (this.buffered.length < end) return
    const text = this.buffered.subarray(headerEnd + 4, end).toString('utf8')
    this.buffered = this.buffered.subarray(end)
    const waiting = this.waiting
    this.waiting = undefined
    if (!head.startsWith('HTTP/1.1 200')) waiting.reject(new Error(`${head.split('\r\n')[0]}: ${text.slice(0, 300)}`))
    else waiting.resolve(text)
  }
  close() {
    this.socket.destroy()
  }
}

/** A request's bytes on the wire: request line (POST to `path`), headers and body, for `target`. */
export function wire({ body, headers }: Prepared, target: URL, path: string): Buffer {
  const lines = [`POST ${path} HTTP/1.1`, `host: ${target.host}`, 'connection: keep-alive']
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`)
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), Buffer.from(body)])
}
