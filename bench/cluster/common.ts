/** Helpers the kms and backend sections of bench:cluster share. */
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

export type Row = { label: string; round: number; rate: number; p50: number; p99: number; failed: number; cpu?: CpuSplit | undefined }

const cpuText = (cpu: CpuSplit) =>
  `CPU µs/request: service ${fixed(cpu.kms).padStart(4)}, postgres ${fixed(cpu.postgres).padStart(4)}, client ${fixed(cpu.client).padStart(4)}, other work ${fixed(cpu.others).padStart(4)}`

/** Throughput targets of a section, as ratios of requests per second; a ratio without one is printed bare. */
export type Targets = { postgresOverSqlite?: number; twoOverOne?: number }

/** Each round's ratio of `over` to `under` by `key`, their median and range, and the ratio of the medians. */
export function roundRatios(rows: readonly Row[], over: string, under: string, key: 'rate' | 'p50' = 'rate') {
  const rounds = [...new Set(rows.map((row) => row.round))]
  const of = (round: number, label: string) => rows.find((row) => row.round === round && row.label === label)![key]
  const perRound = rounds.map((round) => of(round, over) / of(round, under))
  const sorted = [...perRound].sort((a, b) => a - b)
  const medianOf = (label: string) => median(rows.filter((row) => row.label === label).map((row) => row[key]))
  return { perRound, median: median(sorted), low: sorted[0]!, high: sorted.at(-1)!, ofMedians: medianOf(over) / medianOf(under) }
}

/** One line per setup and round, then the medians of the rounds and their ratios, against the targets given. */
export function report(title: string, unit: string, rows: readonly Row[], labels: { sqlite: string; one: string; two: string }, targets: Targets) {
  console.log(`\n${title}\n`)
  for (const row of rows)
    console.log(
      `  round ${row.round}  ${row.label.padEnd(26)} ${fixed(row.rate).padStart(6)} ${unit}/s   p50 ${fixed(row.p50, 1).padStart(6)} ms   p99 ${fixed(row.p99, 1).padStart(6)} ms   failed ${row.failed}${row.cpu ? `   ${cpuText(row.cpu)}` : ''}`,
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
  for (const label of [labels.sqlite, labels.one, labels.two]) {
    const split = cpu(label)
    console.log(
      `  ${label.padEnd(26)} ${fixed(rate(label)).padStart(6)} ${unit}/s   p50 ${fixed(p(label, 'p50'), 1)} ms   p99 ${fixed(p(label, 'p99'), 1)} ms${split ? `   ${cpuText(split)}` : ''}`,
    )
  }
  const pgOverSqlite = roundRatios(rows, labels.one, labels.sqlite)
  const twoOverOne = roundRatios(rows, labels.two, labels.one)
  const list = (values: readonly number[]) => values.map((value) => fixed(value, 2)).join(', ')
  console.log(`  per round: 1 PostgreSQL / SQLite ${list(pgOverSqlite.perRound)}; 2 PostgreSQL / 1 ${list(twoOverOne.perRound)}`)
  // Each round's ratio sets its setups side by side under the same load; on a shared machine their
  // median says more than a ratio of medians taken from different rounds (printed too).
  const line = (name: string, ratio: ReturnType<typeof roundRatios>, target: number | undefined) =>
    console.log(
      `  ${name.padEnd(26)} ${fixed(ratio.median, 2)}× median of the rounds' ratios (${fixed(ratio.low, 2)}–${fixed(ratio.high, 2)}; ratio of the medians ${fixed(ratio.ofMedians, 2)}×)${target === undefined ? '' : ` (target ≥ ${target}: ${ratio.median >= target ? 'met' : 'missed'})`}`,
    )
  line('1 PostgreSQL / SQLite', pgOverSqlite, targets.postgresOverSqlite)
  line('2 PostgreSQL / 1', twoOverOne, targets.twoOverOne)
  return rows.reduce((sum, row) => sum + row.failed, 0)
}
