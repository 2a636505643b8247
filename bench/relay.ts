/**
 * Relay throughput and latency on loopback: our relay (SQLite store, JWT auth, acks) against a
 * plain `ws` fan-out server (bench/relay/plainServer.ts), each in its own process, driven by the
 * same clients in this process in the same run; then pairing time through our relay.
 *
 *   npm run bench:relay [-- --clients 1000 --messages 100 --rounds 3 --pairings 20]
 *
 * Clients come in pairs sharing a topic; every client publishes `messages` messages (pipelined, as
 * fast as the socket takes them) and its peer must receive each once. Latency is publish → push,
 * both stamped in this process. Exits 1 if any message is lost.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { getFreePort } from '@latchkey/devnet'
import { buildApprovedNamespaces, createSignClient, signRelayJwt, type WebSocketConstructor } from '@latchkey/walletconnect'
import { WebSocket } from 'ws'

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(name)
  const value = index > 0 ? Number(process.argv[index + 1]) : fallback
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive whole number`)
  return value
}
// Clients come in pairs.
const clients = Math.max(2, arg('--clients', 1000) - (arg('--clients', 1000) % 2))
const messages = arg('--messages', 100)
const pairings = arg('--pairings', 20)
const rounds = arg('--rounds', 3)
// The relay allows 200 requests per connection per second (acks not counted); a subscribe plus
// every publish must fit in one second's burst.
if (messages > 190) throw new Error('--messages is at most 190: more in one burst would hit the relay’s per-connection rate limit')

const root = new URL('../', import.meta.url).pathname
const padding = randomBytes(192).toString('base64') // about the size of a WalletConnect envelope

/**
 * `clientCpu`: share of one core the clients in this process used; near 100 % the clients, not the
 * server, set the pace. `serverMicros`: the server process's CPU time per delivered message, which
 * other load on the machine hardly changes (NaN where /proc is missing).
 */
type Result = {
  name: string
  delivered: number
  lost: number
  seconds: number
  perSecond: number
  p50: number
  p99: number
  clientCpu: number
  serverMicros: number
}

/** CPU time (user + system) a process has used, in ms; NaN without Linux's /proc. */
function processCpuMs(pid: number): number {
  try {
    // Fields after the command name; utime and stime are the 12th and 13th, in clock ticks (100 per second).
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return Number.NaN
  }
}

/** Starts `script` in its own Node process and resolves once it prints `ready`. */
async function startProcess(script: string, args: string[], ready: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', script, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
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

async function stopProcess(child: ChildProcess) {
  if (child.exitCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

/** Opens `count` sockets, a hundred at a time. */
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

const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN

/**
 * One run: `clients` sockets in pairs, each publishing `messages` to its pair's topic. `protocol`
 * says how to subscribe, publish and read a push.
 */
async function measure(name: string, server: ChildProcess, urls: readonly string[], protocol: 'irn' | 'plain'): Promise<Result> {
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

  const started = performance.now()
  const cpu = process.cpuUsage()
  const serverCpu = processCpuMs(server.pid!)
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
  const serverMs = processCpuMs(server.pid!) - serverCpu
  for (const socket of sockets) socket.terminate()
  const seconds = (lastReceipt - started) / 1000
  latencies.sort((a, b) => a - b)
  return {
    name,
    delivered: seen.size,
    lost: expected - seen.size,
    seconds,
    perSecond: seen.size / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    clientCpu: (used.user + used.system) / 1e4 / seconds,
    serverMicros: (serverMs * 1000) / seen.size,
  }
}

/** Median time from a fresh URI to a settled session, dapp and wallet both our Sign client. */
async function pairingTimes(relayUrl: string): Promise<number[]> {
  const options = { relayUrl, WebSocket: WebSocket as unknown as WebSocketConstructor }
  const dapp = await createSignClient({ ...options, metadata: { name: 'bench dapp', description: '', url: 'http://dapp.bench', icons: [] } })
  const wallet = await createSignClient({ ...options, metadata: { name: 'bench wallet', description: '', url: 'http://wallet.bench', icons: [] } })
  const account = `0x${'11'.repeat(20)}`
  wallet.events.on('session_proposal', ({ id, params }) => {
    const namespaces = buildApprovedNamespaces({
      proposal: params,
      supported: { eip155: { chains: ['eip155:31337'], methods: ['personal_sign'], events: ['chainChanged'], accounts: [`eip155:31337:${account}`] } },
    })
    void wallet.approve({ id, namespaces })
  })
  const times: number[] = []
  try {
    for (let run = 0; run < pairings; run++) {
      const started = performance.now()
      const { uri, approval } = await dapp.connect({
        optionalNamespaces: { eip155: { chains: ['eip155:31337'], methods: ['personal_sign'], events: ['chainChanged'] } },
      })
      await wallet.pair({ uri })
      await approval()
      times.push(performance.now() - started)
    }
  } finally {
    dapp.close()
    wallet.close()
  }
  return times.sort((a, b) => a - b)
}

const dir = await mkdtemp(join(tmpdir(), 'latchkey-bench-relay-'))
const runs: { plain: Result; ours: Result }[] = []
let pairing: number[] = []
try {
  const plainPort = await getFreePort()
  const plain = await startProcess('bench/relay/plainServer.ts', [String(plainPort)], 'listening')
  const port = await getFreePort()
  const url = `ws://127.0.0.1:${port}`
  const ours = await startProcess('packages/relay/src/cli.ts', ['--port', String(port), '--db', join(dir, 'relay.db')], 'Relay listening')
  try {
    // Interleaved rounds, so drift on this machine hits both servers alike.
    for (let round = 0; round < rounds; round++) {
      const plainResult = await measure(
        'plain ws fan-out',
        plain,
        Array.from({ length: clients }, () => `ws://127.0.0.1:${plainPort}`),
        'plain',
      )
      // Tokens are minted before timing, as real clients hold theirs before they publish.
      const urls = Array.from({ length: clients }, () => `${url}/?auth=${signRelayJwt({ seed: randomBytes(32).toString('hex'), aud: url })}`)
      runs.push({ plain: plainResult, ours: await measure('latchkey relay (SQLite)', ours, urls, 'irn') })
    }
    pairing = await pairingTimes(url)
  } finally {
    await stopProcess(plain)
    await stopProcess(ours)
  }
} finally {
  await rm(dir, { recursive: true, force: true })
}

const fixed = (value: number, digits = 1) => value.toFixed(digits)
console.log(
  `\nRelay throughput on loopback: ${clients} clients × ${messages} messages (${clients * messages} deliveries) per round, each server in its own process\n`,
)
console.log(
  [
    'round',
    'server'.padEnd(24),
    'delivered'.padStart(9),
    'lost'.padStart(5),
    'seconds'.padStart(8),
    'msgs/s'.padStart(9),
    'p50 ms'.padStart(8),
    'p99 ms'.padStart(8),
    'client cpu'.padStart(10),
    'server µs/msg'.padStart(13),
  ].join('  '),
)
const results = runs.flatMap((run) => [run.plain, run.ours])
for (const [index, r] of results.entries())
  console.log(
    [
      String((index >> 1) + 1).padStart(5),
      r.name.padEnd(24),
      String(r.delivered).padStart(9),
      String(r.lost).padStart(5),
      fixed(r.seconds, 2).padStart(8),
      fixed(r.perSecond, 0).padStart(9),
      fixed(r.p50).padStart(8),
      fixed(r.p99).padStart(8),
      `${fixed(r.clientCpu, 0)} %`.padStart(10),
      fixed(r.serverMicros).padStart(13),
    ].join('  '),
  )
const medianOf = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  )
const [plainRate, ourRate] = [medianOf(runs.map((run) => run.plain.perSecond)), medianOf(runs.map((run) => run.ours.perSecond))]
const ratio = ourRate / plainRate
console.log(
  `\nmedian of ${runs.length} rounds: plain ws ${fixed(plainRate, 0)} msgs/s, latchkey ${fixed(ourRate, 0)} msgs/s: latchkey / plain ws = ${fixed(ratio, 2)}× (target ≥ 0.5: ${ratio >= 0.5 ? 'met' : 'missed'})`,
)
const [plainMicros, ourMicros] = [medianOf(runs.map((run) => run.plain.serverMicros)), medianOf(runs.map((run) => run.ours.serverMicros))]
console.log(`server CPU per delivered message, median: plain ws ${fixed(plainMicros)} µs, latchkey ${fixed(ourMicros)} µs`)
const median = percentile(pairing, 50)
console.log(
  `Pairing through the latchkey relay, URI → settled session, ${pairing.length} runs: median ${fixed(median)} ms, p90 ${fixed(percentile(pairing, 90))} ms (target < 300 ms: ${median < 300 ? 'met' : 'missed'})`,
)
const lost = results.reduce((sum, r) => sum + r.lost, 0)
if (lost) {
  console.error(`\n${lost} messages lost`)
  process.exit(1)
}
