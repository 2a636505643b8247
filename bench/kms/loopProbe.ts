/**
 * Runs inside a kms process (`node --import bench/kms/loopProbe.ts`) when BENCH_LOOP_PROBE names a
 * file: watches the event loop two ways, a 5 ms timer's drift (how late it fired: the longest
 * stall, and how much of that stall the process spent on a CPU, as a machine whose cores are
 * shared also stalls a loop that does not block) and `monitorEventLoopDelay`'s histogram, and on
 * each SIGUSR2 appends what it saw since the
 * last one to that file as a JSON line, then starts over. bench/kmsFlood.ts signals it around each
 * window; measured in the server, the client's own work does not show.
 */
import { appendFileSync } from 'node:fs'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'

export type LoopWindow = {
  longestStallMs: number
  /** The longest stall counting only the process's CPU time in it (all its threads: an upper bound of the loop's own work). */
  longestOnCpuMs: number
  delayMaxMs: number
  delayP99Ms: number
}

const file = process.env['BENCH_LOOP_PROBE']
if (file) {
  const tickMs = 5
  const histogram = monitorEventLoopDelay({ resolution: tickMs })
  histogram.enable()
  let last = performance.now()
  let lastCpu = process.cpuUsage()
  let longest = 0
  let longestOnCpu = 0
  setInterval(() => {
    const now = performance.now()
    const cpu = process.cpuUsage(lastCpu)
    const gap = now - last
    longest = Math.max(longest, gap - tickMs)
    longestOnCpu = Math.max(longestOnCpu, Math.min(gap, (cpu.user + cpu.system) / 1000) - tickMs)
    last = now
    lastCpu = process.cpuUsage()
  }, tickMs).unref()
  process.on('SIGUSR2', () => {
    const window: LoopWindow = {
      longestStallMs: longest,
      longestOnCpuMs: longestOnCpu,
      delayMaxMs: histogram.max / 1e6,
      delayP99Ms: histogram.percentile(99) / 1e6,
    }
    appendFileSync(file, `${JSON.stringify(window)}\n`)
    histogram.reset()
    longest = 0
    longestOnCpu = 0
  })
}
