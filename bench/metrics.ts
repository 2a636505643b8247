/**
 * What metrics cost: the kms (stamped `sign_raw_payload`, SQLite) and the relay (SQLite) each run
 * twice in the same run, one instance with `--metrics-port` and one without, every instance its own
 * process, driven by the same load in interleaved rounds (which one goes first alternates round by
 * round); each "on" round ends with a scrape of `/metrics`, so what is counted is also read.
 *
 *   npm run bench:metrics [-- --requests 3000 --concurrency 32 --clients 400 --messages 100 --rounds 3]
 *
 * Prints each round's throughput, the median of the per-round on/off ratios with their range, and
 * the target (metrics on within 3 % of off: ratio ≥ 0.97).
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { signRelayJwt } from '@latchkey/walletconnect'
import { wholeNumberArg as arg } from './args.js'
import { kmsCluster, measureLoad, stopInstance } from './kms/instances.js'
import { fixed, measure, medianOf, startProcess, stopProcess } from './relay/harness.js'

const requests = arg('--requests', 3000)
const concurrency = arg('--concurrency', 32)
const clients = Math.max(2, arg('--clients', 400) - (arg('--clients', 400) % 2))
const messages = arg('--messages', 100)
const rounds = arg('--rounds', 3)
if (messages > 190) throw new Error('--messages is at most 190: more in one burst would hit the relay’s per-client rate limit')

/** Reads `/metrics` once and checks it names `metric`: an "on" round is only honest if what it counts can be read. */
async function scrape(port: number, metric: string) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  if (!text.includes(metric)) throw new Error(`GET /metrics on ${port} does not name ${metric}`)
}

/** Runs `off` and `on` once per round, alternating which goes first; returns each round's pair of rates. */
async function interleaved(off: () => Promise<number>, on: () => Promise<number>) {
  const pairs: { off: number; on: number }[] = []
  for (let round = 0; round < rounds; round++) {
    if (round % 2) {
      const onRate = await on()
      pairs.push({ on: onRate, off: await off() })
    } else {
      const offRate = await off()
      pairs.push({ off: offRate, on: await on() })
    }
  }
  return pairs
}

function report(name: string, unit: string, pairs: readonly { off: number; on: number }[]) {
  console.log(`\n${name}`)
  for (const [index, pair] of pairs.entries())
    console.log(`  round ${index + 1}: off ${fixed(pair.off, 0)} ${unit}, on ${fixed(pair.on, 0)} ${unit}, on/off ${fixed(pair.on / pair.off, 3)}`)
  const ratios = pairs.map((pair) => pair.on / pair.off).sort((a, b) => a - b)
  const median = medianOf(ratios)
  console.log(
    `  median on/off ${fixed(median, 3)} (range ${fixed(ratios[0]!, 3)}–${fixed(ratios.at(-1)!, 3)}); medians ${fixed(medianOf(pairs.map((pair) => pair.off)), 0)} → ${fixed(medianOf(pairs.map((pair) => pair.on)), 0)} ${unit} (target ≥ 0.97: ${median >= 0.97 ? 'met' : 'missed'})`,
  )
}

const dir = await mkdtemp(join(tmpdir(), 'latchkey-bench-metrics-'))
try {
  // The kms: one instance without metrics, one with, on SQLite files of their own.
  const kmsMetricsPort = await getFreePort()
  const kmsOff = await kmsCluster(1, { databasePath: join(dir, 'kms-off.db') }, undefined, 'kms-off')
  const kmsOn = await kmsCluster(1, { databasePath: join(dir, 'kms-on.db') }, undefined, 'kms-on', { args: ['--metrics-port', String(kmsMetricsPort)] })
  let kmsPairs: { off: number; on: number }[]
  try {
    kmsPairs = await interleaved(
      async () => (await measureLoad('metrics off', kmsOff, requests, concurrency)).rate,
      async () => {
        const measured = await measureLoad('metrics on', kmsOn, requests, concurrency)
        await scrape(kmsMetricsPort, 'latchkey_kms_activities_total{type="ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2"')
        return measured.rate
      },
    )
  } finally {
    await Promise.all([...kmsOff.instances, ...kmsOn.instances].map((instance) => stopInstance(instance.child)))
  }

  // The relay: the same, with `clients` in pairs publishing `messages` each per round.
  const [offPort, onPort, relayMetricsPort] = [await getFreePort(), await getFreePort(), await getFreePort()]
  const relayOff = await startProcess('packages/relay/src/cli.ts', ['--port', String(offPort), '--db', join(dir, 'relay-off.db')], 'Relay listening')
  const relayOn = await startProcess(
    'packages/relay/src/cli.ts',
    ['--port', String(onPort), '--db', join(dir, 'relay-on.db'), '--metrics-port', String(relayMetricsPort)],
    'Relay listening',
  )
  let relayPairs: { off: number; on: number }[]
  try {
    // Tokens are minted before timing, as real clients hold theirs before they publish.
    const tokens = (port: number) =>
      Array.from({ length: clients }, () => {
        const at = `ws://127.0.0.1:${port}`
        return `${at}/?auth=${signRelayJwt({ seed: randomBytes(32).toString('hex'), aud: at })}`
      })
    relayPairs = await interleaved(
      async () => (await measure({ name: 'metrics off', urls: tokens(offPort), protocol: 'irn', messages, servers: [relayOff] })).perSecond,
      async () => {
        const result = await measure({ name: 'metrics on', urls: tokens(onPort), protocol: 'irn', messages, servers: [relayOn] })
        await scrape(relayMetricsPort, 'latchkey_relay_deliveries_total')
        return result.perSecond
      },
    )
  } finally {
    await stopProcess(relayOff)
    await stopProcess(relayOn)
  }

  console.log(
    `\nMetrics on vs off, ${rounds} interleaved rounds each (load average ${loadavg()
      .map((load) => fixed(load, 1))
      .join(', ')})`,
  )
  report(`kms: ${requests} stamped sign_raw_payload per round, ${concurrency} in flight (SQLite)`, 'signatures/s', kmsPairs)
  report(`relay: ${clients} clients × ${messages} messages per round (SQLite)`, 'msgs/s', relayPairs)
} finally {
  await rm(dir, { recursive: true, force: true })
}
