/**
 * CPU time of other processes, read from /proc (Linux): the kms instances and the PostgreSQL
 * server that serves them, so a bench can say where the machine's cores went during its window.
 */
import { readdirSync, readFileSync } from 'node:fs'

/**
 * CPU time per request (µs) during a timed window, by process: the service instances together,
 * the PostgreSQL server (every backend; 0 on SQLite), the load client, and everything else the
 * machine ran meanwhile (the other work sharing its cores).
 */
export type CpuSplit = { kms: number; postgres: number; client: number; others: number }

/** Clock ticks per second of /proc's utime and stime (USER_HZ, 100 on every Linux this runs on). */
const TICKS_PER_SECOND = 100

/** utime + stime of `pid` in ms, and its parent's pid; undefined once the process has gone. */
function stat(pid: number): { cpuMs: number; ppid: number } | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // The command name may hold spaces and parentheses: the fields start after its last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return { ppid: Number(fields[1]), cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND }
}

/** The PostgreSQL server listening on `port`: its postmaster and every backend and helper it has forked. */
export function postgresPids(port: number): number[] {
  const pids = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
  const postmaster = pids.find((pid) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
      return argv[0]?.endsWith('/postgres') && argv.includes('-p') && argv[argv.indexOf('-p') + 1] === String(port)
    } catch {
      return false
    }
  })
  if (postmaster === undefined) return []
  return [postmaster, ...pids.filter((pid) => stat(pid)?.ppid === postmaster)]
}

/**
 * A CPU meter over groups of processes: `read()` answers each group's CPU time (ms) since the
 * meter was made. A process that exits in between counts what it used up to its last reading; one
 * that starts in between (a new PostgreSQL backend) counts from zero, found again on each read.
 *
 * @example
 * const meter = cpuMeter({ kms: () => [child.pid!], postgres: () => postgresPids(5432) })
 * // … load …
 * meter.read() // { kms: 5210, postgres: 3120 }
 */
export function cpuMeter<group extends string>(groups: Record<group, () => number[]>) {
  const start = new Map<number, number>()
  const snapshot = () => {
    const now = new Map<group, Map<number, number>>()
    for (const [name, pids] of Object.entries(groups) as [group, () => number[]][]) {
      const times = new Map<number, number>()
      for (const pid of pids()) {
        const cpu = stat(pid)?.cpuMs
        if (cpu !== undefined) times.set(pid, cpu)
      }
      now.set(name, times)
    }
    return now
  }
  for (const times of snapshot().values()) for (const [pid, cpu] of times) start.set(pid, cpu)
  return {
    read(): Record<group, number> {
      const result = {} as Record<group, number>
      for (const [name, times] of snapshot()) {
        let sum = 0
        for (const [pid, cpu] of times) sum += cpu - (start.get(pid) ?? 0)
        result[name] = sum
      }
      return result
    },
  }
}

/** CPU time (ms) the whole machine has spent busy, all cores together, from /proc/stat. */
export function machineBusyMs(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!
  // user nice system idle iowait irq softirq steal …: busy is everything but idle and iowait.
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number) as number[]
  return (((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) * 1000) / TICKS_PER_SECOND
}
