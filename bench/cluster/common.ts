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

/** One line per setup and round, then the medians of the rounds and their ratios against the targets. */
export function report(title: string, unit: string, rows: readonly Row[], labels: { sqlite: string; one: string; two: string }) {
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
  const rounds = [...new Set(rows.map((row) => row.round))]
  const perRound = (over: string, under: string) =>
    rounds
      .map((round) =>
        fixed(rows.find((row) => row.round === round && row.label === over)!.rate / rows.find((row) => row.round === round && row.label === under)!.rate, 2),
      )
      .join(', ')
  console.log(`  per round: 1 PostgreSQL / SQLite ${perRound(labels.one, labels.sqlite)}; 2 PostgreSQL / 1 ${perRound(labels.two, labels.one)}`)
  // Each round's ratio sets its setups side by side under the same load; on a shared machine their
  // median says more than a ratio of medians taken from different rounds (printed too).
  const ratioOf = (over: string, under: string) => {
    const values = rounds
      .map(
        (round) => rows.find((row) => row.round === round && row.label === over)!.rate / rows.find((row) => row.round === round && row.label === under)!.rate,
      )
      .sort((a, b) => a - b)
    return { median: median(values), low: values[0]!, high: values.at(-1)!, ofMedians: rate(over) / rate(under) }
  }
  const line = (name: string, ratio: ReturnType<typeof ratioOf>, target: number) =>
    console.log(
      `  ${name.padEnd(26)} ${fixed(ratio.median, 2)}× median of the rounds' ratios (${fixed(ratio.low, 2)}–${fixed(ratio.high, 2)}; ratio of the medians ${fixed(ratio.ofMedians, 2)}×) (target ≥ ${target}: ${ratio.median >= target ? 'met' : 'missed'})`,
    )
  line('1 PostgreSQL / SQLite', ratioOf(labels.one, labels.sqlite), 0.8)
  line('2 PostgreSQL / 1', ratioOf(labels.two, labels.one), 1.5)
  return rows.reduce((sum, row) => sum + row.failed, 0)
}
