/**
 * The client side of `bench:kms`, run in its own process so its CPU is not the server's: stamps
 * `requests` sign_raw_payload bodies with `ApiKeyStamper` before timing, warms the server up, then
 * keeps `concurrency` requests in flight over keep-alive connections and reports what it saw.
 *
 * Driven over IPC by bench/kms.ts: `start` → `ready` → `go` → `result`.
 */
import { Agent, request } from 'node:http'
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

/** Sends every prepared request, `concurrency` at a time; the status of each answer is checked. */
async function drive(start: LoadStart, prepared: readonly Prepared[], agent: Agent) {
  const targets = (start.urls ?? [start.url]).map((url) => new URL(url))
  const latencies: number[] = []
  let failed = 0
  let firstFailure: string | undefined
  let next = 0
  const send = ({ body, headers }: Prepared, { hostname, port }: URL) =>
    new Promise<string>((resolve, reject) => {
      const outgoing = request({ hostname, port, path: '/public/v1/submit/sign_raw_payload', method: 'POST', headers, agent }, (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => (text += chunk))
        response.on('end', () => resolve(text))
        response.on('error', reject)
      })
      outgoing.on('error', reject)
      outgoing.end(body)
    })
  await Promise.all(
    Array.from({ length: start.concurrency }, async (_, slot) => {
      const target = targets[slot % targets.length]!
      while (next < prepared.length) {
        const item = prepared[next++]!
        const sent = performance.now()
        const text = await send(item, target)
        latencies.push(performance.now() - sent)
        const answer = JSON.parse(text) as { activity?: { status?: string; result?: { signRawPayloadResult?: { r?: string } } } }
        if (answer.activity?.status !== 'ACTIVITY_STATUS_COMPLETED' || !answer.activity.result?.signRawPayloadResult?.r) {
          failed++
          firstFailure ??= text.slice(0, 300)
        }
      }
    }),
  )
  return { latencies, failed, firstFailure }
}

process.once('message', async (start: LoadStart) => {
  const agent = new Agent({ keepAlive: true, maxSockets: start.concurrency })
  const warmup = await prepare(start, start.warmup, 'warm-up')
  const measured = await prepare(start, start.requests, 'payload')
  await drive(start, warmup, agent)
  process.send!({ type: 'ready' })
  process.once('message', async () => {
    const cpu = process.cpuUsage()
    const started = performance.now()
    const { latencies, failed, firstFailure } = await drive(start, measured, agent)
    const seconds = (performance.now() - started) / 1000
    const used = process.cpuUsage(cpu)
    agent.destroy()
    const result: LoadResult = { type: 'result', served: measured.length, failed, seconds, latencies, cpuMs: (used.user + used.system) / 1000, firstFailure }
    process.send!(result, () => process.exit(0))
  })
})
