/**
 * The client side of `bench:kms`, run in its own process so its CPU is not the server's: stamps
 * `requests` sign_raw_payload bodies with `ApiKeyStamper` and writes out their HTTP bytes before
 * timing, warms the server up, then keeps `concurrency` requests in flight over keep-alive
 * connections (one per slot, raw sockets: see Connection) and reports what it saw.
 *
 * Driven over IPC by bench/kms.ts: `start` → `ready` → `go` → `result`.
 */
import { connect, type Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { keccak256, toHex } from 'viem'

export type LoadStart = {
  type: 'start'
  url: string
  /** Instances to spread the requests over (slot i of `concurrency` sends to urls[i % n]); default [url]. */
  urls?: readonly string[] | undefined
  organizationId: string
  signWith: string
  apiPublicKey: string
  apiPrivateKey: string
  requests: number
  concurrency: number
  warmup: number
}
export type LoadResult = {
  type: 'result'
  served: number
  failed: number
  seconds: number
  latencies: number[]
  cpuMs: number
  firstFailure: string | undefined
}

type Prepared = { body: string; headers: Record<string, string> }

async function prepare(start: LoadStart, count: number, tag: string): Promise<Prepared[]> {
  const stamper = new ApiKeyStamper({ apiPublicKey: start.apiPublicKey, apiPrivateKey: start.apiPrivateKey })
  const prepared: Prepared[] = []
  for (let i = 0; i < count; i++) {
    const body = JSON.stringify({
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: String(Date.now()),
      organizationId: start.organizationId,
      parameters: {
        signWith: start.signWith,
        payload: keccak256(toHex(`${tag} ${i}`)),
        encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
        hashFunction: 'HASH_FUNCTION_NO_OP',
      },
    })
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
class Connection {
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

/** A request's bytes on the wire: request line, headers and body, for `target`. */
function wire({ body, headers }: Prepared, target: URL): Buffer {
  const lines = [`POST /public/v1/submit/sign_raw_payload HTTP/1.1`, `host: ${target.host}`, 'connection: keep-alive']
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`)
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), Buffer.from(body)])
}

/** Sends every prepared request, `concurrency` at a time, each slot on a connection of its own; the answer of each is checked. */
async function drive(start: LoadStart, prepared: readonly Prepared[]) {
  const targets = (start.urls ?? [start.url]).map((url) => new URL(url))
  // Slot i sends to targets[i % n], so its requests' bytes are written for that host before timing.
  const slots = Array.from({ length: start.concurrency }, (_, slot) => targets[slot % targets.length]!)
  const bytes = prepared.map((item) => targets.map((target) => wire(item, target)))
  const latencies: number[] = []
  let failed = 0
  let firstFailure: string | undefined
  let next = 0
  await Promise.all(
    slots.map(async (target) => {
      const connection = new Connection(target)
      const which = targets.indexOf(target)
      try {
        while (next < prepared.length) {
          const index = next++
          const sent = performance.now()
          let text: string
          try {
            text = await connection.send(bytes[index]![which]!)
          } catch (error) {
            latencies.push(performance.now() - sent)
            failed++
            firstFailure ??= (error as Error).message
            continue
          }
          latencies.push(performance.now() - sent)
          const answer = JSON.parse(text) as { activity?: { status?: string; result?: { signRawPayloadResult?: { r?: string } } } }
          if (answer.activity?.status !== 'ACTIVITY_STATUS_COMPLETED' || !answer.activity.result?.signRawPayloadResult?.r) {
            failed++
            firstFailure ??= text.slice(0, 300)
          }
        }
      } finally {
        connection.close()
      }
    }),
  )
  return { latencies, failed, firstFailure }
}

process.once('message', async (start: LoadStart) => {
  const warmup = await prepare(start, start.warmup, 'warm-up')
  const measured = await prepare(start, start.requests, 'payload')
  await drive(start, warmup)
  process.send!({ type: 'ready' })
  process.once('message', async () => {
    const cpu = process.cpuUsage()
    const started = performance.now()
    const { latencies, failed, firstFailure } = await drive(start, measured)
    const seconds = (performance.now() - started) / 1000
    const used = process.cpuUsage(cpu)
    const result: LoadResult = { type: 'result', served: measured.length, failed, seconds, latencies, cpuMs: (used.user + used.system) / 1000, firstFailure }
    process.send!(result, () => process.exit(0))
  })
})
