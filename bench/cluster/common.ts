/** Helpers the kms and backend sections of bench:cluster share. */
import { availableParallelism } from 'node:os'
import pg from 'pg'
import type { CpuSplit } from '../kms/cpu.js'

export const fixed = (value: number, digits = 0) => value.toFixed(digits)
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  // An even count: the mean of the two middle values.
  return sorted.length % 2 ? sorted[middle]! : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2
}

/** A fresh database on the bench's PostgreSQL server, as a URL. */
export async function freshDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return url.href
}

export type Row = {
  label: string
  round: number
  rate: number
  p50: number
  p99: number
  failed: number
  cpu?: CpuSplit | undefined
  /** Under CPU quotas: the share of the quota periods in which the instances were throttled. */
  throttled?: number | undefined
}

const cpuText = (cpu: CpuSplit) =>
  `CPU µs/request: service ${fixed(cpu.kms).padStart(4)}, postgres ${fixed(cpu.postgres).padStart(4)}, client ${fixed(cpu.client).padStart(4)}, other work ${fixed(cpu.others).padStart(4)}`

/** Throughput targets of a section, as ratios of requests per second; a ratio without one is printed bare. */
export type Targets = { postgresOverSqlite?: number; twoOverOne?: number }

/** The setups of a section: the unconstrained three, and with CPU quotas one and two PostgreSQL instances at `cpus` cores each. */
export type Labels = { sqlite: string; one: string; two: string; quota?: { cpus: number; one: string; two: string } | undefined }

/** Labels of the quota rows: the same setups, each instance capped at `cpus` cores. */
export const quotaLabels = (labels: { one: string; two: string }, cpus: number) => ({
  cpus,
  one: `${labels.one}, ${cpus} CPU`,
  two: `${labels.two}, ${cpus} CPU each`,
})

/**
 * How many times one instance's rate two instances could reach on this machine, from a round's
 * CPU split (per request: the instances', PostgreSQL's and the client's CPU, all out of the same
 * cores). One instance is held to about one core (its one event loop; V8's helper threads make it
 * a little more, so this errs high), two to two cores, and both to what the machine's cores allow
 * for everything a request costs. `idle`: all `cores` free; `left`: without what the machine's
 * other work used during each row.
 */
function ceiling(one: Row, two: Row, cores: number) {
  if (!one.cpu || !two.cpu) return undefined
  const service = one.cpu.kms
  const perRequest = one.cpu.kms + one.cpu.postgres + one.cpu.client
  const bound = (instances: number, free: number) => Math.min((instances * 1e6) / service, (free * 1e6) / perRequest)
  const left = (row: Row) => Math.max(0, cores - (row.cpu!.others * row.rate) / 1e6)
  return { idle: bound(2, cores) / bound(1, cores), left: bound(2, left(two)) / bound(1, left(one)) }
}

/** Each round's ratio of `over` to `under` by `key`, their median and range, and the ratio of the medians. */
export function roundRatios(rows: readonly Row[], over: string, under: string, key: 'rate' | 'p50' = 'rate') {
  const rounds = [...new Set(rows.map((row) => row.round))]
  const of = (round: number, label: string) => rows.find((row) => row.round === round && row.label === label)![key]
  const perRound = rounds.map((round) => of(round, over) / of(round, under))
  const sorted = [...perRound].sort((a, b) => a - b)
  const medianOf = (label: string) => median(rows.filter((row) => row.label === label).map((row) => row[key]))
  return { perRound, median: median(sorted), low: sorted[0]!, high: sorted.at(-1)!, ofMedians: medianOf(over) / medianOf(under) }
}

/**
 * One line per setup and round, then the medians of the rounds and their ratios against the
 * targets given. With quota rows, two instances over one is judged on them: capped at a fixed CPU
 * each, as pods or machines of their own are, instances scale as production runs them; the
 * unconstrained rows share this machine's cores with PostgreSQL and the client, so their ratio is
 * printed beside the ceiling those cores allow.
 */
export function report(title: string, unit: string, rows: readonly Row[], labels: Labels, targets: Targets) {
  console.log(`\n${title}\n`)
  const width = Math.max(26, ...rows.map((row) => row.label.length))
  const quotaLine = (row: Row, instances: number, cpus: number) => {
    if (!row.cpu) return ''
    const used = (row.cpu.kms * row.rate) / 1e6 / instances
    return `   ${fixed(used, 2)} of ${cpus} CPU per instance${row.throttled === undefined ? '' : `, throttled in ${fixed(row.throttled * 100)} % of periods`}`
  }
  const extra = (row: Row) => {
    const quota = labels.quota
    if (!quota || (row.label !== quota.one && row.label !== quota.two)) return ''
    return quotaLine(row, row.label === quota.one ? 1 : 2, quota.cpus)
  }
  for (const row of rows)
    console.log(
      `  round ${row.round}  ${row.label.padEnd(width)} ${fixed(row.rate).padStart(6)} ${unit}/s   p50 ${fixed(row.p50, 1).padStart(6)} ms   p99 ${fixed(row.p99, 1).padStart(6)} ms   failed ${row.failed}${row.cpu ? `   ${cpuText(row.cpu)}` : ''}${extra(row)}`,
    )
  const of = (label: string) => rows.filter((row) => row.label === label)
  const rate = (label: string) => median(of(label).map((row) => row.rate))
  const p = (label: string, key: 'p50' | 'p99') => median(of(label).map((row) => row[key]))
  console.log(`\n  medians of ${Math.max(...rows.map((row) => row.round))} rounds`)
  const cpu = (label: string): CpuSplit | undefined => {
    const split = of(label).map((row) => row.cpu)
    if (split.some((value) => !value)) return undefined
    const pick = (key: keyof CpuSplit) => median(split.map((value) => value![key]))
    return { kms: pick('kms'), postgres: pick('postgres'), client: pick('client'), others: pick('others') }
  }
  const all = [labels.sqlite, labels.one, labels.two, ...(labels.quota ? [labels.quota.one, labels.quota.two] : [])]
  for (const label of all) {
    const split = cpu(label)
    console.log(
      `  ${label.padEnd(width)} ${fixed(rate(label)).padStart(6)} ${unit}/s   p50 ${fixed(p(label, 'p50'), 1)} ms   p99 ${fixed(p(label, 'p99'), 1)} ms${split ? `   ${cpuText(split)}` : ''}`,
    )
  }
  const pgOverSqlite = roundRatios(rows, labels.one, labels.sqlite)
  const twoOverOne = roundRatios(rows, labels.two, labels.one)
  const quotaTwoOverOne = labels.quota ? roundRatios(rows, labels.quota.two, labels.quota.one) : undefined
  const list = (values: readonly number[]) => values.map((value) => fixed(value, 2)).join(', ')
  console.log(
    `  per round: 1 PostgreSQL / SQLite ${list(pgOverSqlite.perRound)}; 2 PostgreSQL / 1 ${list(twoOverOne.perRound)}${quotaTwoOverOne ? `; at ${labels.quota!.cpus} CPU each ${list(quotaTwoOverOne.perRound)}` : ''}`,
  )
  // Each round's ratio sets its setups side by side under the same load; on a shared machine their
  // median says more than a ratio of medians taken from different rounds (printed too).
  const line = (name: string, ratio: ReturnType<typeof roundRatios>, target: number | undefined, note = '') =>
    console.log(
      `  ${name.padEnd(30)} ${fixed(ratio.median, 2)}× median of the rounds' ratios (${fixed(ratio.low, 2)}–${fixed(ratio.high, 2)}; ratio of the medians ${fixed(ratio.ofMedians, 2)}×)${target === undefined ? '' : ` (target ≥ ${target}: ${ratio.median >= target ? 'met' : 'missed'})`}${note}`,
    )
  line('1 PostgreSQL / SQLite', pgOverSqlite, targets.postgresOverSqlite)
  // The unconstrained ratio is judged only without quota rows: with them it is the machine's ceiling that shows.
  line('2 PostgreSQL / 1', twoOverOne, quotaTwoOverOne ? undefined : targets.twoOverOne, quotaTwoOverOne ? ' (every process sharing the machine)' : '')
  const cores = availableParallelism()
  const ceilings = [...new Set(rows.map((row) => row.round))].flatMap((round) => {
    const [one, two] = [labels.one, labels.two].map((label) => rows.find((row) => row.round === round && row.label === label))
    const found = one && two ? ceiling(one, two, cores) : undefined
    return found ? [found] : []
  })
  if (ceilings.length)
    console.log(
      `  ${''.padEnd(30)} its ceiling from each round's one-instance CPU split (one instance held to about a core, two sharing ${cores} cores with PostgreSQL and the client): ${fixed(median(ceilings.map((c) => c.idle)), 2)}× on an otherwise idle machine (rounds ${list(ceilings.map((c) => c.idle))}), ${fixed(median(ceilings.map((c) => c.left)), 2)}× on the cores the machine's other work left (rounds ${list(ceilings.map((c) => c.left))})`,
    )
  if (quotaTwoOverOne && labels.quota) {
    line(
      `2 / 1 at ${labels.quota.cpus} CPU per instance`,
      quotaTwoOverOne,
      targets.twoOverOne,
      targets.twoOverOne === undefined ? '' : ' (judged here: each instance its own CPU, as a pod or machine)',
    )
    const { cpus } = labels.quota
    for (const [label, instances] of [
      [labels.quota.one, 1],
      [labels.quota.two, 2],
    ] as const) {
      const measured = of(label).filter((row) => row.cpu)
      if (!measured.length) continue
      const used = median(measured.map((row) => (row.cpu!.kms * row.rate) / 1e6 / instances))
      // Well below its quota, an instance was held back by something else (this machine's cores, the client, PostgreSQL).
      if (used < cpus * 0.9)
        console.log(
          `  ${''.padEnd(30)} note: ${label}: ${fixed(used, 2)} of ${cpus} CPU used per instance (median): the quota was not all that limited it, so the ratio is not the quota's alone`,
        )
    }
  }
  return rows.reduce((sum, row) => sum + row.failed, 0)
}
