/**
 * The flooding user of `bench:kms-flood`, in a process of its own: stamps `requests` create_wallet
 * bodies of `accounts` accounts each before timing, then on `go` keeps `concurrency` of them in
 * flight (cycling through them once all are sent) until `stop`, and reports how many the kms
 * accepted and refused. `go`/`stop` may repeat; `exit` ends it.
 *
 * Driven over IPC: `start` → `ready`, then (`go` → `stop` → `result`)*.
 */
import { cpuUsage } from 'node:process'
import { Connection, stampAll, wire } from './wire.js'

export type FloodStart = {
  type: 'start'
  url: string
  organizationId: string
  apiPublicKey: string
  apiPrivateKey: string
  requests: number
  accounts: number
  concurrency: number
}
export type FloodResult = {
  type: 'result'
  /** Answered 200 with a completed activity not seen before (a wallet derived). */
  accepted: number
  /** Answered 200 with an activity answered before: a body sent again once all were sent, which the kms does not derive again. */
  repeated: number
  /** Answered 429 (rate limited). */
  refused: number
  /** Anything else. */
  failed: number
  firstFailure: string | undefined
  cpuMs: number
}

async function prepare(start: FloodStart) {
  const target = new URL(start.url)
  const prepared = await stampAll(start, start.requests, (i) => ({
    type: 'ACTIVITY_TYPE_CREATE_WALLET',
    timestampMs: String(Date.now()),
    organizationId: start.organizationId,
    parameters: {
      walletName: `flood ${i}`,
      accounts: Array.from({ length: start.accounts }, (_, index) => ({
        curve: 'CURVE_SECP256K1',
        pathFormat: 'PATH_FORMAT_BIP32',
        path: `m/44'/60'/0'/0/${index}`,
        addressFormat: 'ADDRESS_FORMAT_ETHEREUM',
      })),
    },
  }))
  return prepared.map((item) => wire(item, target, '/public/v1/submit/create_wallet'))
}

/** Sends `bytes` round and round, `concurrency` at a time, until `stopped()`; `sent` carries on from the last window. */
async function flood(start: FloodStart, bytes: readonly Buffer[], sent: { count: number; seen: Set<string> }, stopped: () => boolean): Promise<FloodResult> {
  const { seen } = sent
  const result: FloodResult = { type: 'result', accepted: 0, repeated: 0, refused: 0, failed: 0, firstFailure: undefined, cpuMs: 0 }
  const cpu = cpuUsage()
  await Promise.all(
    Array.from({ length: start.concurrency }, async () => {
      const connection = new Connection(new URL(start.url))
      try {
        while (!stopped()) {
          try {
            const text = await connection.send(bytes[sent.count++ % bytes.length]!)
            const { activity } = JSON.parse(text) as { activity?: { id?: string; status?: string } }
            if (activity?.status === 'ACTIVITY_STATUS_COMPLETED' && activity.id) {
              if (seen.has(activity.id)) result.repeated++
              else result.accepted++
              seen.add(activity.id)
            } else {
              result.failed++
              result.firstFailure ??= text.slice(0, 300)
            }
          } catch (error) {
            const message = (error as Error).message
            if (message.startsWith('HTTP/1.1 429')) result.refused++
            else {
              result.failed++
              result.firstFailure ??= message
            }
          }
        }
      } finally {
        connection.close()
      }
    }),
  )
  const used = cpuUsage(cpu)
  return { ...result, cpuMs: (used.user + used.system) / 1000 }
}

process.once('message', async (start: FloodStart) => {
  const bytes = await prepare(start)
  const sent = { count: 0, seen: new Set<string>() }
  let stop = false
  let running: Promise<FloodResult> | undefined
  process.on('message', async (message: { type: 'go' | 'stop' | 'exit' }) => {
    if (message.type === 'go') {
      stop = false
      running = flood(start, bytes, sent, () => stop)
    } else if (message.type === 'stop') {
      stop = true
      process.send!(await running!)
    } else process.exit(0)
  })
  process.send!({ type: 'ready' })
})
