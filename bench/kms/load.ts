/**
 * The client side of `bench:kms`, run in its own process so its CPU is not the server's: stamps
 * `requests` sign_raw_payload bodies with `ApiKeyStamper` and writes out their HTTP bytes before
 * timing, warms the server up, then keeps `concurrency` requests in flight over keep-alive
 * connections (one per slot, raw sockets: see Connection) and reports what it saw.
 *
 * Driven over IPC by bench/kms.ts: `start` → `ready` → `go` → `result`.
 */
import { performance } from 'node:perf_hooks'
import { toPrefixedMessage } from 'viem'
import { Connection, type Prepared, stampAll, wire } from './wire.js'

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
  /** Written into each payload, so that two runs on one kms sign different bodies. Default 'payload'. */
  tag?: string | undefined
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

const prepare = (start: LoadStart, count: number, tag: string) =>
  stampAll(start, count, (i) => ({
    type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
    timestampMs: String(Date.now()),
    organizationId: start.organizationId,
    parameters: {
      signWith: start.signWith,
      // A personal message as EIP-191 frames it: a sub-organization signs only 0x19-framed keccak payloads.
      payload: toPrefixedMessage(`${tag} ${i}`),
      encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
      hashFunction: 'HASH_FUNCTION_KECCAK256',
    },
  }))

/** Sends every prepared request, `concurrency` at a time, each slot on a connection of its own; the answer of each is checked. */
async function drive(start: LoadStart, prepared: readonly Prepared[]) {
  const targets = (start.urls ?? [start.url]).map((url) => new URL(url))
  // Slot i sends to targets[i % n], so its requests' bytes are written for that host before timing.
  const slots = Array.from({ length: start.concurrency }, (_, slot) => targets[slot % targets.length]!)
  const bytes = prepared.map((item) => targets.map((target) => wire(item, target, '/public/v1/submit/sign_raw_payload')))
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
  const measured = await prepare(start, start.requests, start.tag ?? 'payload')
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
