/**
 * Scale-out, one section per service, each printing one instance beside two in the same run.
 *
 *   npm run bench:cluster [-- --clients 600 --messages 100 --rounds 3]
 *
 * Relay: a plain `ws` fan-out server (the CPU reference), one relay node on SQLite, and two relay
 * nodes sharing one Redis, each in its own process, driven in interleaved rounds by the same
 * clients: in pairs sharing a topic, every client publishing `messages` messages. On the two nodes
 * a pair's clients sit on different nodes, so every message crosses nodes through Redis. Prints
 * messages per second, p50/p99 publish-to-push latency, lost messages (exit 1 if any), the relay
 * processes' CPU time per delivered message and Redis's apart, each round's ratios, and their medians and ranges against the targets
 * (two nodes ≥ 0.8× one SQLite node; one node's CPU per message ≤ 1.5× the plain server's).
 *
 * kms and backend (bench/cluster/kms.ts, bench/cluster/backend.ts): one instance on SQLite, one on
 * PostgreSQL and two on one PostgreSQL, each its own process, with throughput, p50/p99 and failed
 * requests (exit 1 if any), and the ratios: the kms against its targets (one PostgreSQL ≥ 0.8×
 * SQLite; two ≥ 1.5× one); the backend's also one sign-in at a time, its target being latency
 * (PostgreSQL's p50 within 1.5× SQLite's). `--only relay|kms|backend` runs one section;
 * `--kms-requests`, `--sign-ins`, `--alone-sign-ins` and `--concurrency` size them.
 *
 * `--instance-cpus 0.5` (the default; 0 turns it off): the kms and backend sections also measure
 * one and two PostgreSQL instances each capped at that many cores by a cgroup
 * (bench/cluster/cpuQuota.ts), as production runs an instance per pod or machine with its own CPU;
 * the kms's two-over-one target is judged on those rows. `--node-cpus 0.3` (the default; 0 turns it
 * off) does the same for the relay: one SQLite node and the two Redis nodes, each capped (Redis,
 * the shared service, is not), and two nodes over one is judged on those rows; the relay's CPU per
 * message is judged unconstrained. Without a writable cgroup cpu controller (not root, no
 * delegation) a notice says so and only the unconstrained rows are measured, and judged.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { signRelayJwt } from '@latchkey/walletconnect'
import { startPostgres } from '../scripts/ensure-postgres.mjs'
import { wholeNumberArg as arg } from './args.js'
import { backendSection } from './cluster/backend.js'
import { type CpuQuotas, openCpuQuotas } from './cluster/cpuQuota.js'
import { kmsSection } from './cluster/kms.js'
import { fixed, measure, medianOf, printTable, type Result, root, startProcess, stopProcess } from './relay/harness.js'

// Clients come in pairs, one of each pair on each node.
const clients = Math.max(2, arg('--clients', 600) - (arg('--clients', 600) % 2))
const messages = arg('--messages', 100)
const rounds = arg('--rounds', 3)
if (messages > 190) throw new Error('--messages is at most 190: more in one burst would hit the relay’s per-client rate limit')
const instanceCpus = process.argv.includes('--instance-cpus') ? Number(process.argv[process.argv.indexOf('--instance-cpus') + 1]) : 0.5
if (!(instanceCpus >= 0 && instanceCpus <= 64)) throw new Error('--instance-cpus is a number of cores per instance, e.g. 0.5; 0 turns quotas off')
// A relay node at 0.3 CPU: two of them, Redis and 600 clients then still fit two cores.
const nodeCpus = process.argv.includes('--node-cpus') ? Number(process.argv[process.argv.indexOf('--node-cpus') + 1]) : 0.3
if (!(nodeCpus >= 0 && nodeCpus <= 64)) throw new Error('--node-cpus is a number of cores per relay node, e.g. 0.3; 0 turns quotas off')

/** A redis-server on a free port, without persistence (scripts/ensure-redis.mjs installs it when missing). */
async function startRedis(): Promise<{ url: string; process: ChildProcess }> {
  const ensured = spawnSync(process.execPath, [join(root, 'scripts/ensure-redis.mjs')], { encoding: 'utf8' })
  if (ensured.status !== 0) throw new Error(`redis-server is not available:\n${ensured.stderr}`)
  const port = await getFreePort()
  const child = spawn('/usr/bin/redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let output = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes('Ready to accept connections')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready:\n${output}`)))
  })
  return { url: `redis://127.0.0.1:${port}`, process: child }
}

/** A relay URL with a fresh client's token, minted before timing as real clients hold theirs. */
const withToken = (url: string) => `${url}/?auth=${signRelayJwt({ seed: randomBytes(32).toString('hex'), aud: url })}`

/** A relay setup's processes in one CPU group each, when quotas are on. */
type RelayGroups = { limit(cpus: number | undefined): void; throttled(): () => number }

/** Puts each of `children` in a CPU group of its own; undefined without quotas. */
function relayGroups(quotas: CpuQuotas | undefined, name: string, children: readonly ChildProcess[]): RelayGroups | undefined {
  if (!quotas) return undefined
  const groups = children.map((child, index) => {
    const group = quotas.group(`${name}-${index + 1}`)
    group.add(child.pid!)
    return group
  })
  return {
    limit: (cpus) => {
      for (const group of groups) group.limit(cpus)
    },
    // The share of quota periods in which the groups were throttled, from now to the call of the answer.
    throttled: () => {
      const before = groups.map((group) => group.throttling())
      return () => {
        const deltas = groups.map((group, index) => {
          const after = group.throttling()
          return { periods: after.periods - before[index]!.periods, throttled: after.throttledPeriods - before[index]!.throttledPeriods }
        })
        const periods = deltas.reduce((sum, delta) => sum + delta.periods, 0)
        return periods ? deltas.reduce((sum, delta) => sum + delta.throttled, 0) / periods : 0
      }
    },
  }
}

async function relaySection() {
  const dir = await mkdtemp(join(tmpdir(), 'latchkey-bench-cluster-'))
  type Capped = { sqlite: Result; cluster: Result; sqliteThrottled: number; clusterThrottled: number }
  const runs: { plain: Result; sqlite: Result; cluster: Result; capped?: Capped }[] = []
  const children: ChildProcess[] = []
  const quotas = cpuQuotas(nodeCpus)
  try {
    const redis = await startRedis()
    children.push(redis.process)
    const plainPort = await getFreePort()
    const plain = await startProcess('bench/relay/plainServer.ts', [String(plainPort)], 'listening')
    children.push(plain)
    const startRelay = async (store: string[]) => {
      const port = await getFreePort()
      const child = await startProcess('packages/relay/src/cli.ts', ['--port', String(port), ...store], 'Relay listening')
      children.push(child)
      return { url: `ws://127.0.0.1:${port}`, child }
    }
    const single = await startRelay(['--db', join(dir, 'relay.db')])
    const nodes = [await startRelay(['--redis', redis.url]), await startRelay(['--redis', redis.url])]
    // Redis, like PostgreSQL for the kms, is the shared service: it stays unconstrained.
    const singleGroups = relayGroups(quotas, 'relay-sqlite', [single.child])
    const nodeGroups = relayGroups(
      quotas,
      'relay-redis',
      nodes.map((node) => node.child),
    )
    const measureSqlite = (name: string) =>
      measure({ name, urls: Array.from({ length: clients }, () => withToken(single.url)), protocol: 'irn', messages, servers: [single.child] })
    const measureCluster = (name: string) =>
      measure({
        name,
        urls: Array.from({ length: clients }, (_, index) => withToken(nodes[index % 2]!.url)),
        protocol: 'irn',
        messages,
        servers: nodes.map((node) => node.child),
        helpers: [redis.process],
      })
    /** Measures with each node of `groups` capped at `nodeCpus`, and the share of periods it was throttled in. */
    const capped = async (groups: RelayGroups, run: () => Promise<Result>) => {
      groups.limit(nodeCpus)
      try {
        const done = groups.throttled()
        const result = await run()
        return { result, throttled: done() }
      } finally {
        groups.limit(undefined)
      }
    }
    // Interleaved rounds, so drift on this machine hits every setup alike.
    for (let round = 0; round < rounds; round++) {
      const plainResult = await measure({
        name: 'plain ws fan-out',
        urls: Array.from({ length: clients }, () => `ws://127.0.0.1:${plainPort}`),
        protocol: 'plain',
        messages,
        servers: [plain],
      })
      const sqlite = await measureSqlite('relay, 1 node (SQLite)')
      const cluster = await measureCluster('relay, 2 nodes (Redis)')
      let cappedRun: Capped | undefined
      if (singleGroups && nodeGroups) {
        const one = await capped(singleGroups, () => measureSqlite(`relay, 1 node (SQLite), ${nodeCpus} CPU`))
        const two = await capped(nodeGroups, () => measureCluster(`relay, 2 nodes (Redis), ${nodeCpus} CPU each`))
        cappedRun = { sqlite: one.result, cluster: two.result, sqliteThrottled: one.throttled, clusterThrottled: two.throttled }
      }
      runs.push({ plain: plainResult, sqlite, cluster, ...(cappedRun ? { capped: cappedRun } : {}) })
    }
  } finally {
    // Relays first, then the Redis they use.
    for (const child of children.reverse()) await stopProcess(child)
    await rm(dir, { recursive: true, force: true })
  }

  console.log(
    `\nRelay scale-out on loopback: ${clients} clients × ${messages} messages (${clients * messages} deliveries) per round; on 2 nodes every message crosses nodes\n`,
  )
  const results = runs.flatMap((run, index) =>
    [run.plain, run.sqlite, run.cluster, ...(run.capped ? [run.capped.sqlite, run.capped.cluster] : [])].map((result) => ({ ...result, round: index + 1 })),
  )
  printTable(results)
  const median = (pick: (run: (typeof runs)[number]) => number) => medianOf(runs.map(pick))
  const [plainRate, sqliteRate, clusterRate] = [median((r) => r.plain.perSecond), median((r) => r.sqlite.perSecond), median((r) => r.cluster.perSecond)]
  const [plainCpu, sqliteCpu, clusterCpu, redisCpu] = [
    median((r) => r.plain.serverMicros),
    median((r) => r.sqlite.serverMicros),
    median((r) => r.cluster.serverMicros),
    median((r) => r.cluster.helperMicros),
  ]
  // Each round's ratios set its setups side by side under the same load; their median and range say
  // more on a shared machine than a ratio of medians taken from different rounds.
  const ratios = runs.map((run) => ({
    throughput: run.cluster.perSecond / run.sqlite.perSecond,
    cpu: run.sqlite.serverMicros / run.plain.serverMicros,
    clusterCpu: (run.cluster.serverMicros + run.cluster.helperMicros) / run.sqlite.serverMicros,
    capped: run.capped ? run.capped.cluster.perSecond / run.capped.sqlite.perSecond : Number.NaN,
  }))
  const withCaps = runs.every((run) => run.capped)
  console.log(
    `\nround  2 nodes ÷ 1 node, msgs/s  1 node ÷ plain ws, CPU/msg  2 nodes + Redis ÷ 1 node, CPU/msg${withCaps ? `  at ${nodeCpus} CPU per node: 2 ÷ 1, msgs/s` : ''}`,
  )
  for (const [index, ratio] of ratios.entries())
    console.log(
      `${String(index + 1).padStart(5)}  ${`${fixed(ratio.throughput, 2)}×`.padStart(23)}  ${`${fixed(ratio.cpu, 2)}×`.padStart(24)}  ${`${fixed(ratio.clusterCpu, 2)}×`.padStart(33)}${
        withCaps ? `${fixed(ratio.capped, 2)}×`.padStart(31) : ''
      }`,
    )
  const spread = (pick: (ratio: (typeof ratios)[number]) => number) => {
    const values = ratios.map(pick).sort((a, b) => a - b)
    return `${fixed(medianOf(values), 2)}× (rounds ${fixed(values[0]!, 2)}–${fixed(values.at(-1)!, 2)})`
  }
  const throughput = medianOf(ratios.map((ratio) => ratio.throughput))
  const cpu = medianOf(ratios.map((ratio) => ratio.cpu))
  console.log(`\nmedians of ${runs.length} rounds`)
  // With CPU quotas the two-node target is judged on the capped rows, as the kms's two-over-one is:
  // unconstrained, the two nodes, Redis and the clients share this machine's cores with one
  // another, where in production each node runs on its own.
  console.log(
    `throughput: 2 nodes (Redis) ${fixed(clusterRate, 0)} msgs/s, 1 node (SQLite) ${fixed(sqliteRate, 0)}, plain ws ${fixed(plainRate, 0)}: 2 nodes ÷ 1 node ${spread((ratio) => ratio.throughput)}${
      withCaps ? ' (every process sharing the machine)' : ` (target ≥ 0.8: ${throughput >= 0.8 ? 'met' : 'missed'})`
    }`,
  )
  if (withCaps) {
    const capped = medianOf(ratios.map((ratio) => ratio.capped))
    const used = (result: Result, nodeCount: number) => (result.serverMicros * result.perSecond) / 1e6 / nodeCount
    const usedOne = median((r) => used(r.capped!.sqlite, 1))
    const usedTwo = median((r) => used(r.capped!.cluster, 2))
    console.log(
      `at ${nodeCpus} CPU per node (a cgroup each, Redis unconstrained): 2 nodes ${fixed(
        median((r) => r.capped!.cluster.perSecond),
        0,
      )} msgs/s, 1 node ${fixed(
        median((r) => r.capped!.sqlite.perSecond),
        0,
      )}: 2 nodes ÷ 1 node ${spread((ratio) => ratio.capped)} (target ≥ 0.8: ${capped >= 0.8 ? 'met' : 'missed'})`,
    )
    console.log(
      `  CPU used per node (median): 1 node ${fixed(usedOne, 2)} of ${nodeCpus}, throttled in ${fixed(median((r) => r.capped!.sqliteThrottled) * 100)} % of periods; 2 nodes ${fixed(usedTwo, 2)} of ${nodeCpus} each, throttled in ${fixed(median((r) => r.capped!.clusterThrottled) * 100)} %`,
    )
    for (const [label, value] of [
      ['1 node', usedOne],
      ['2 nodes', usedTwo],
    ] as const)
      if (value < 0.85 * nodeCpus)
        console.log(
          `  note: ${label}: ${fixed(value, 2)} of ${nodeCpus} CPU used per node: the quota was not all that limited it, so the ratio is not the quota's alone`,
        )
  }
  console.log(
    `server CPU per delivered message: plain ws ${fixed(plainCpu)} µs, 1 node (SQLite) ${fixed(sqliteCpu)} µs: 1 node ÷ plain ${spread((ratio) => ratio.cpu)} (target ≤ 1.5: ${cpu <= 1.5 ? 'met' : 'missed'}); 2 nodes ${fixed(clusterCpu)} µs plus Redis ${fixed(redisCpu)} µs: ÷ 1 node ${spread((ratio) => ratio.clusterCpu)}`,
  )
  return results.reduce((sum, r) => sum + r.lost, 0)
}

/**
 * One entry per service; each runs its setups interleaved, prints its table and medians, and
 * answers how many messages or requests were lost. The kms and backend sections go here.
 */
const sections: { name: string; run: () => Promise<number> }[] = [
  { name: 'relay', run: relaySection },
  {
    name: 'kms',
    run: () =>
      withPostgres((postgresUrl) =>
        kmsSection({
          postgresUrl,
          rounds,
          requests: arg('--kms-requests', 2000),
          concurrency: arg('--concurrency', 32),
          quotas: cpuQuotas(instanceCpus),
          instanceCpus,
        }),
      ),
  },
  {
    name: 'backend',
    run: () =>
      withPostgres((postgresUrl) =>
        backendSection({
          postgresUrl,
          rounds,
          signIns: arg('--sign-ins', 400),
          concurrency: arg('--concurrency', 32),
          aloneSignIns: arg('--alone-sign-ins', 60),
          quotas: cpuQuotas(instanceCpus),
          instanceCpus,
        }),
      ),
  },
]

let quotas: ReturnType<typeof openCpuQuotas> | undefined
/** The per-instance CPU groups, opened once (with its notice) for the sections that use them; undefined when off (`cpus` 0) or unavailable. */
function cpuQuotas(cpus: number) {
  if (cpus === 0) return undefined
  if (quotas === undefined) {
    quotas = openCpuQuotas()
    console.log(
      typeof quotas === 'string'
        ? `\nCPU quotas per instance: not available here (${quotas}); only the unconstrained rows are measured, and two instances over one is judged on them against the ceiling this machine's shared cores allow`
        : `\nCPU quotas per instance, through ${quotas.description}: for the quota rows, each relay node at ${nodeCpus} CPU, each kms and backend instance at ${instanceCpus}`,
    )
  }
  return typeof quotas === 'string' ? undefined : quotas
}

/** A throwaway PostgreSQL cluster for one section (scripts/ensure-postgres.mjs). */
async function withPostgres(run: (url: string) => Promise<number>) {
  const postgres: { url: string; stop: () => Promise<void> } = await startPostgres()
  try {
    return await run(postgres.url)
  } finally {
    await postgres.stop()
  }
}

const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined
let lost = 0
try {
  for (const section of sections) if (!only || section.name === only) lost += await section.run()
} finally {
  if (quotas && typeof quotas !== 'string') quotas.close()
}
if (lost) {
  console.error(`\n${lost} messages lost or requests failed`)
  process.exit(1)
}
