/**
 * What `bench:relay` and `bench:cluster` share: server processes, their CPU time, and one timed
 * round of clients in pairs publishing to their pair's topic through a relay or the plain `ws`
 * reference.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { appendFileSync, readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { WebSocket } from 'ws'

export const root = new URL('../../', import.meta.url).pathname
const padding = randomBytes(192).toString('base64') // about the size of a WalletConnect envelope

/**
 * `clientCpu`: share of one core the clients in this process used; near 100 % the clients, not the
 * server, set the pace. `serverMicros`: the server processes' CPU time per delivered message, which
 * other load on the machine hardly changes (NaN where /proc is missing); `helperMicros`: the same
 * for processes the servers lean on (Redis).
 */
export type Result = {
  name: string
  delivered: number
  lost: number
  seconds: number
  perSecond: number
  p50: number
  p99: number
  clientCpu: number
  serverMicros: number
  helperMicros: number
}

/** CPU time (user + system) a process has used, in ms; NaN without Linux's /proc. */
export function processCpuMs(pid: number): number {
  try {
    // Fields after the command name; utime and stime are the 12th and 13th, in clock ticks (100 per second).
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return Number.NaN
  }
}

/**
 * Starts `script` in its own Node process and resolves once it prints `ready`. `BENCH_NODE_FLAGS`
 * (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) are given to that process, to profile a server.
 */
export async function startProcess(script: string, args: string[], ready: string): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [...(process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ') : []), '--conditions=source', '--import', 'tsx', script, ...args],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  let output = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes(ready)) resolve()
    })
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before it was ready:\n${output}`)))
  })
  return child
}

export async function stopProcess(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

/** Opens one socket per URL, a hundred at a time. */
async function openSockets(urls: readonly string[]): Promise<WebSocket[]> {
  const sockets: WebSocket[] = []
  for (let start = 0; start < urls.length; start += 100) {
    const batch = urls.slice(start, start + 100).map(
      (url) =>
        new Promise<WebSocket>((resolve, reject) => {
          const socket = new WebSocket(url)
          socket.once('open', () => resolve(socket))
          socket.once('error', reject)
        }),
    )
    sockets.push(...(await Promise.all(batch)))
  }
  return sockets
}

export const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN

export const medianOf = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  )

export type Round = {
  name: string
  /** One URL per client; clients 2k and 2k+1 share a topic. */
  urls: readonly string[]
  /** How to subscribe, publish and read a push. */
  protocol: 'irn' | 'plain'
  messages: number
  /** The server processes whose CPU counts as the server's. */
  servers: readonly ChildProcess[]
  /** Processes the servers lean on (Redis), counted apart. */
  helpers?: readonly ChildProcess[] | undefined
}

/**
 * One timed round: every client publishes `messages` to its pair's topic; its peer must receive each
 * once. With `BENCH_WINDOWS=<file>`, appends the round's name and its timed window (µs on the
 * monotonic clock V8's CPU profiles use) to that file, to cut a `--cpu-prof` profile to the rounds.
 */
export async function measure(round: Round): Promise<Result> {
  const { urls, protocol, messages } = round
  const clients = urls.length
  const sockets = await openSockets(urls)
  const topics = Array.from({ length: clients / 2 }, () => randomBytes(32).toString('hex'))
  const expected = clients * messages
  const latencies: number[] = []
  const seen = new Set<string>()
  let lastReceipt = 0
  let progress: () => void = () => undefined

  // Subscribe everyone and wait for every reply before timing starts.
  await Promise.all(
    sockets.map(
      (socket, index) =>
        new Promise<void>((resolve) => {
          const topic = topics[index >> 1]!
          socket.once('message', () => resolve())
          socket.send(JSON.stringify(protocol === 'irn' ? { id: 1, jsonrpc: '2.0', method: 'irn_subscribe', params: { topic } } : { sub: topic }))
        }),
    ),
  )
  for (const socket of sockets)
    socket.on('message', (data) => {
      const text = data.toString()
      // Publish receipts need no reading; only pushes are parsed, as the plain server's are.
      if (protocol === 'irn' && !text.includes('"irn_subscription"')) return
      const frame = JSON.parse(text) as { id?: number; method?: string; params?: { data: { message: string } }; message?: string }
      let message: string | undefined
      if (protocol === 'irn') {
        socket.send(JSON.stringify({ id: frame.id, jsonrpc: '2.0', result: true }))
        message = frame.params?.data.message
      } else message = frame.message
      if (!message) return
      const now = performance.now()
      const [sentAt, key] = message.split('|', 2) as [string, string]
      if (seen.has(key)) return
      seen.add(key)
      latencies.push(now - Number(sentAt))
      lastReceipt = now
      progress()
    })

  const cpuOf = (processes: readonly ChildProcess[]) => processes.reduce((sum, child) => sum + processCpuMs(child.pid!), 0)
  const startedAt = process.hrtime.bigint()
  const started = performance.now()
  const cpu = process.cpuUsage()
  const serverCpu = cpuOf(round.servers)
  const helperCpu = cpuOf(round.helpers ?? [])
  let id = 2
  for (let k = 0; k < messages; k++)
    for (const [index, socket] of sockets.entries()) {
      const topic = topics[index >> 1]!
      const message = `${performance.now()}|${index}.${k}|${padding}`
      socket.send(
        JSON.stringify(
          protocol === 'irn' ? { id: id++, jsonrpc: '2.0', method: 'irn_publish', params: { topic, message, ttl: 300, tag: 1108 } } : { topic, message },
        ),
      )
    }
  // Done when every message arrived, or when nothing more arrives for ten seconds.
  await new Promise<void>((resolve) => {
    let stall = setTimeout(resolve, 10_000)
    progress = () => {
      clearTimeout(stall)
      if (seen.size >= expected) return resolve()
      stall = setTimeout(resolve, 10_000)
    }
  })
  const used = process.cpuUsage(cpu)
  // The timed window on the monotonic clock V8's profiles use, so a profile can be cut to it.
  if (process.env.BENCH_WINDOWS) appendFileSync(process.env.BENCH_WINDOWS, `${round.name}\t${startedAt / 1000n}\t${process.hrtime.bigint() / 1000n}\n`)
  const serverMs = cpuOf(round.servers) - serverCpu
  const helperMs = cpuOf(round.helpers ?? []) - helperCpu
  for (const socket of sockets) socket.terminate()
  const seconds = (lastReceipt - started) / 1000
  latencies.sort((a, b) => a - b)
  return {
    name: round.name,
    delivered: seen.size,
    lost: expected - seen.size,
    seconds,
    perSecond: seen.size / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    clientCpu: (used.user + used.system) / 1e4 / seconds,
    serverMicros: (serverMs * 1000) / seen.size,
    helperMicros: round.helpers?.length ? (helperMs * 1000) / seen.size : Number.NaN,
  }
}

const fixed = (value: number, digits = 1) => (Number.isNaN(value) ? '–' : value.toFixed(digits))

/** Prints results as one table, a row each, `round` numbering them. */
export function printTable(results: readonly (Result & { round: number })[]) {
  const width = Math.max(24, ...results.map((r) => r.name.length))
  console.log(
    [
      'round',
      'server'.padEnd(width),
      'delivered'.padStart(9),
      'lost'.padStart(5),
      'seconds'.padStart(8),
      'msgs/s'.padStart(9),
      'p50 ms'.padStart(8),
      'p99 ms'.padStart(8),
      'client cpu'.padStart(10),
      'server µs/msg'.padStart(13),
      'redis µs/msg'.padStart(12),
    ].join('  '),
  )
  for (const r of results)
    console.log(
      [
        String(r.round).padStart(5),
        r.name.padEnd(width),
        String(r.delivered).padStart(9),
        String(r.lost).padStart(5),
        fixed(r.seconds, 2).padStart(8),
        fixed(r.perSecond, 0).padStart(9),
        fixed(r.p50).padStart(8),
        fixed(r.p99).padStart(8),
        `${fixed(r.clientCpu, 0)} %`.padStart(10),
        fixed(r.serverMicros).padStart(13),
        fixed(r.helperMicros).padStart(12),
      ].join('  '),
    )
}

export { fixed }
