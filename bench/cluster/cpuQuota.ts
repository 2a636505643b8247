/**
 * A fixed CPU quota per service process, as a Kubernetes pod's `resources.limits.cpu` gives it:
 * a cgroup per instance with the CFS bandwidth controller (cgroup v1 `cpu.cfs_quota_us`, or
 * cgroup v2 `cpu.max`). On a machine with few cores the instances, PostgreSQL and the load client
 * otherwise share them all, so two instances cannot show what two machines or pods would; with a
 * quota each instance gets its own fixed share, as in production.
 *
 * Groups are named `latchkey-bench-<bench pid>-<name>` and removed on close, on exit, on
 * SIGINT/SIGTERM/SIGHUP; a group whose bench process has gone (killed with SIGKILL) is removed by
 * the next bench that opens the controller.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** Throttling counters of a group, cumulative since it was made. */
export type Throttling = { periods: number; throttledPeriods: number; throttledMs: number }

/** One process group with its quota: `limit(undefined)` lifts it. */
export type CpuGroup = {
  readonly path: string
  /** Moves a process (all its threads) into the group. */
  add(pid: number): void
  /** Caps the group at `cpus` cores (0.5: half a core), or lifts the cap. */
  limit(cpus: number | undefined): void
  throttling(): Throttling
}

export type CpuQuotas = {
  /** `cgroup v1` or `cgroup v2`, and where the groups are made. */
  readonly description: string
  /** A new group, without a quota until `limit` is called. */
  group(name: string): CpuGroup
  /** Moves any process still in the groups to the parent (sending it `signal` first, if given) and removes them. */
  close(signal?: NodeJS.Signals): void
}

const PREFIX = 'latchkey-bench-'
const read = (path: string) => readFileSync(path, 'utf8').trim()
const mounts = () =>
  read('/proc/mounts')
    .split('\n')
    .map((line) => line.split(' '))
    .map(([, mountPoint, type, options]) => ({ mountPoint: mountPoint!, type: type!, options: (options ?? '').split(',') }))

/** This process's own group in a hierarchy (`/` at its root), from /proc/self/cgroup. */
function ownGroup(match: (controllers: string[], hierarchy: string) => boolean): string | undefined {
  for (const line of read('/proc/self/cgroup').split('\n')) {
    // hierarchy-id:controllers:path (the path may itself hold colons)
    const [hierarchy = '', controllers = '', ...path] = line.split(':')
    if (match(controllers.split(','), hierarchy)) return path.join(':')
  }
  return undefined
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Moves the group's processes to `parent` and removes it; quietly leaves what cannot be removed.
 * With `signal`, the processes (the bench's own instances) get it first.
 */
function removeGroup(path: string, parent: string, signal?: NodeJS.Signals) {
  try {
    for (const pid of read(join(path, 'cgroup.procs')).split('\n').filter(Boolean)) {
      if (signal) process.kill(Number(pid), signal)
      writeFileSync(join(parent, 'cgroup.procs'), pid)
    }
    rmdirSync(path)
  } catch {
    // Already gone, or a process that would not move: nothing more a bench can do.
  }
}

/** Groups left by benches that were killed before they could remove them. */
function removeStale(parent: string) {
  for (const name of readdirSync(parent)) {
    const pid = name.startsWith(PREFIX) ? Number.parseInt(name.slice(PREFIX.length), 10) : Number.NaN
    if (Number.isInteger(pid) && pid !== process.pid && !alive(pid)) removeGroup(join(parent, name), parent)
  }
}

type Engine = {
  description: string
  parent: string
  /** Writes the group's quota files. */
  limit(path: string, cpus: number | undefined): void
  throttling(path: string): Throttling
}

/** The cgroup v1 `cpu` controller, mounted on its own or with cpuacct. */
function v1(): Engine | string {
  const mount = mounts().find((entry) => entry.type === 'cgroup' && entry.options.includes('cpu'))
  if (!mount) return 'no cgroup v1 cpu controller is mounted'
  const own = ownGroup((controllers) => controllers.includes('cpu')) ?? '/'
  const parent = join(mount.mountPoint, own)
  return {
    description: `cgroup v1 (${parent}, cpu.cfs_quota_us)`,
    parent,
    limit(path, cpus) {
      const period = Number(read(join(path, 'cpu.cfs_period_us')))
      writeFileSync(join(path, 'cpu.cfs_quota_us'), cpus === undefined ? '-1' : String(Math.round(cpus * period)))
    },
    throttling(path) {
      const stat = Object.fromEntries(
        read(join(path, 'cpu.stat'))
          .split('\n')
          .map((line) => line.split(' ')),
      )
      return { periods: Number(stat.nr_periods), throttledPeriods: Number(stat.nr_throttled), throttledMs: Number(stat.throttled_time) / 1e6 }
    },
  }
}

/** cgroup v2 with the `cpu` controller delegated to this process's group (enabled for its children here if it is not yet). */
function v2(): Engine | string {
  const mount = mounts().find((entry) => entry.type === 'cgroup2')
  if (!mount) return 'no cgroup v2 hierarchy is mounted'
  const parent = join(mount.mountPoint, ownGroup((_, hierarchy) => hierarchy === '0') ?? '/')
  if (!read(join(parent, 'cgroup.controllers')).split(' ').includes('cpu')) return `the cgroup v2 cpu controller is not available in ${parent}`
  if (!read(join(parent, 'cgroup.subtree_control')).split(' ').includes('cpu')) {
    try {
      writeFileSync(join(parent, 'cgroup.subtree_control'), '+cpu')
    } catch (error) {
      // A non-root group holding processes may not enable controllers for its children.
      return `the cgroup v2 cpu controller cannot be enabled for children of ${parent} (${(error as Error).message})`
    }
  }
  return {
    description: `cgroup v2 (${parent}, cpu.max)`,
    parent,
    limit(path, cpus) {
      const period = Number(read(join(path, 'cpu.max')).split(' ')[1])
      writeFileSync(join(path, 'cpu.max'), `${cpus === undefined ? 'max' : Math.round(cpus * period)} ${period}`)
    },
    throttling(path) {
      const stat = Object.fromEntries(
        read(join(path, 'cpu.stat'))
          .split('\n')
          .map((line) => line.split(' ')),
      )
      return { periods: Number(stat.nr_periods), throttledPeriods: Number(stat.nr_throttled), throttledMs: Number(stat.throttled_usec) / 1000 }
    },
  }
}

const open = new Set<CpuQuotas>()
let handlersInstalled = false

/** Removes every group on exit and on the signals that end a bench, then lets the signal do what it would have. */
function installHandlers() {
  if (handlersInstalled) return
  handlersInstalled = true
  const closeAll = (signal?: NodeJS.Signals) => {
    for (const quotas of open) quotas.close(signal)
  }
  process.once('exit', () => closeAll())
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.once(signal, () => {
      // The instances in the groups are this bench's: they end with it (as a terminal's Ctrl-C would end them).
      closeAll('SIGTERM')
      process.kill(process.pid, signal)
    })
}

/**
 * Per-process CPU quotas through cgroups, or why they cannot be had here (no controller, not
 * writable: not root, or a container without delegation). Groups made here are removed by
 * `close()`, on exit and on SIGINT/SIGTERM/SIGHUP.
 *
 * @example
 * const quotas = openCpuQuotas()
 * if (typeof quotas === 'string') console.log(`no CPU quotas: ${quotas}`)
 * else {
 *   const group = quotas.group('kms-1')
 *   group.add(child.pid!)
 *   group.limit(0.5) // half a core, as `resources.limits.cpu: 500m`
 * }
 */
export function openCpuQuotas(): CpuQuotas | string {
  const reasons: string[] = []
  for (const engine of [v1, v2]) {
    let found: Engine | string
    try {
      found = engine()
    } catch (error) {
      found = (error as Error).message
    }
    if (typeof found === 'string') {
      reasons.push(found)
      continue
    }
    const { parent } = found
    const probe = join(parent, `${PREFIX}${process.pid}-probe`)
    try {
      removeStale(parent)
      mkdirSync(probe)
      found.limit(probe, 0.5)
      rmdirSync(probe)
    } catch (error) {
      if (existsSync(probe)) removeGroup(probe, parent)
      reasons.push(`${found.description} is not writable (${(error as Error).message.split('\n')[0]})`)
      continue
    }
    const made: string[] = []
    const quotas: CpuQuotas = {
      description: found.description,
      group(name) {
        const path = join(parent, `${PREFIX}${process.pid}-${name.replace(/[^a-z\d-]/gi, '-')}`)
        mkdirSync(path)
        made.push(path)
        found.limit(path, undefined)
        return {
          path,
          add: (pid) => writeFileSync(join(path, 'cgroup.procs'), String(pid)),
          limit: (cpus) => found.limit(path, cpus),
          throttling: () => found.throttling(path),
        }
      },
      close(signal) {
        for (const path of made.splice(0)) removeGroup(path, parent, signal)
        open.delete(quotas)
      },
    }
    open.add(quotas)
    installHandlers()
    return quotas
  }
  return reasons.join('; ')
}
