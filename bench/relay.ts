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
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { getFreePort } from '@latchkey/devnet'
import { buildApprovedNamespaces, createSignClient, signRelayJwt, type WebSocketConstructor } from '@latchkey/walletconnect'
import { WebSocket } from 'ws'
import { wholeNumberArg as arg } from './args.js'
import { fixed, measure, medianOf, percentile, printTable, type Result, startProcess, stopProcess } from './relay/harness.js'

// Clients come in pairs.
const clients = Math.max(2, arg('--clients', 1000) - (arg('--clients', 1000) % 2))
const messages = arg('--messages', 100)
const pairings = arg('--pairings', 20)
const rounds = arg('--rounds', 3)
// The relay allows 200 requests per client per second (acks not counted); a subscribe plus
// every publish must fit in one second's burst.
if (messages > 190) throw new Error('--messages is at most 190: more in one burst would hit the relay’s per-client rate limit')

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
const runs: { plain: Result; ours: Result; unlimited: Result }[] = []
/** The relay's connection caps and storage quotas turned off: the same relay beside it measures what they cost. */
const NO_LIMITS = [
  '--max-connections',
  '0',
  '--max-connections-per-ip',
  '0',
  '--max-stored-bytes',
  '0',
  '--max-stored-bytes-per-topic',
  '0',
  '--max-stored-bytes-per-client',
  '0',
]
let pairing: number[] = []
try {
  const plainPort = await getFreePort()
  const plain = await startProcess('bench/relay/plainServer.ts', [String(plainPort)], 'listening')
  const port = await getFreePort()
  const url = `ws://127.0.0.1:${port}`
  const ours = await startProcess('packages/relay/src/cli.ts', ['--port', String(port), '--db', join(dir, 'relay.db')], 'Relay listening')
  const unlimitedPort = await getFreePort()
  const unlimitedUrl = `ws://127.0.0.1:${unlimitedPort}`
  const unlimited = await startProcess(
    'packages/relay/src/cli.ts',
    ['--port', String(unlimitedPort), '--db', join(dir, 'unlimited.db'), ...NO_LIMITS],
    'Relay listening',
  )
  try {
    // Interleaved rounds, so drift on this machine hits both servers alike.
    for (let round = 0; round < rounds; round++) {
      const plainResult = await measure({
        name: 'plain ws fan-out',
        urls: Array.from({ length: clients }, () => `ws://127.0.0.1:${plainPort}`),
        protocol: 'plain',
        messages,
        servers: [plain],
      })
      // Tokens are minted before timing, as real clients hold theirs before they publish.
      const tokens = (at: string) => Array.from({ length: clients }, () => `${at}/?auth=${signRelayJwt({ seed: randomBytes(32).toString('hex'), aud: at })}`)
      const [urls, unlimitedUrls] = [tokens(url), tokens(unlimitedUrl)]
      // Limits off and on under the same load, which one first alternating round by round.
      const off = () => measure({ name: 'latchkey relay, limits off', urls: unlimitedUrls, protocol: 'irn', messages, servers: [unlimited] })
      const on = () => measure({ name: 'latchkey relay (SQLite)', urls, protocol: 'irn', messages, servers: [ours] })
      let unlimitedResult: Result
      let oursResult: Result
      if (round % 2) [oursResult, unlimitedResult] = [await on(), await off()]
      else [unlimitedResult, oursResult] = [await off(), await on()]
      runs.push({ plain: plainResult, ours: oursResult, unlimited: unlimitedResult })
    }
    pairing = await pairingTimes(url)
  } finally {
    await stopProcess(plain)
    await stopProcess(ours)
    await stopProcess(unlimited)
  }
} finally {
  await rm(dir, { recursive: true, force: true })
}

console.log(
  `\nRelay throughput on loopback: ${clients} clients × ${messages} messages (${clients * messages} deliveries) per round, each server in its own process\n`,
)
const results = runs.flatMap((run, index) => [
  { ...run.plain, round: index + 1 },
  { ...run.unlimited, round: index + 1 },
  { ...run.ours, round: index + 1 },
])
printTable(results)
const [plainRate, ourRate] = [medianOf(runs.map((run) => run.plain.perSecond)), medianOf(runs.map((run) => run.ours.perSecond))]
const ratio = ourRate / plainRate
console.log(
  `\nmedian of ${runs.length} rounds: plain ws ${fixed(plainRate, 0)} msgs/s, latchkey ${fixed(ourRate, 0)} msgs/s: latchkey / plain ws = ${fixed(ratio, 2)}× (target ≥ 0.5: ${ratio >= 0.5 ? 'met' : 'missed'})`,
)
const [plainMicros, ourMicros] = [medianOf(runs.map((run) => run.plain.serverMicros)), medianOf(runs.map((run) => run.ours.serverMicros))]
// Per round, both servers under the same load: the median of those ratios, and their range.
const cpuRatios = runs.map((run) => run.ours.serverMicros / run.plain.serverMicros).sort((a, b) => a - b)
const cpuRatio = medianOf(cpuRatios)
console.log(
  `server CPU per delivered message, median: plain ws ${fixed(plainMicros)} µs, latchkey ${fixed(ourMicros)} µs: latchkey ÷ plain ws ${fixed(cpuRatio, 2)}× (rounds ${fixed(cpuRatios[0]!, 2)}–${fixed(cpuRatios.at(-1)!, 2)}; target ≤ 1.5: ${cpuRatio <= 1.5 ? 'met' : 'missed'})`,
)
// What the connection caps and storage quotas cost: the same relay with them off, round by round.
const limitRates = runs.map((run) => run.ours.perSecond / run.unlimited.perSecond).sort((a, b) => a - b)
const limitCpu = runs.map((run) => run.ours.serverMicros / run.unlimited.serverMicros).sort((a, b) => a - b)
console.log(
  `limits on ÷ off, median of rounds: msgs/s ${fixed(medianOf(limitRates), 2)}× (rounds ${fixed(limitRates[0]!, 2)}–${fixed(limitRates.at(-1)!, 2)}), CPU per message ${fixed(medianOf(limitCpu), 2)}× (rounds ${fixed(limitCpu[0]!, 2)}–${fixed(limitCpu.at(-1)!, 2)}) (target: cost ≤ 5 %, msgs/s ≥ 0.95×: ${medianOf(limitRates) >= 0.95 ? 'met' : 'missed'})`,
)
const median = percentile(pairing, 50)
console.log(
  `Pairing through the latchkey relay, URI → settled session, ${pairing.length} runs: median ${fixed(median)} ms, p90 ${fixed(percentile(pairing, 90))} ms (target < 300 ms: ${median < 300 ? 'met' : 'missed'})`,
)
const lost = results.reduce((sum, r) => sum + r.lost, 0)
if (lost) {
  console.error(`\n${lost} messages lost`)
  process.exit(1)
}
