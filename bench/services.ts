/** Service processes for benchmarks: started from the workspace source, ready once they answer /readyz. */
import { type ChildProcess, spawn } from 'node:child_process'

/**
 * Starts `script` (a service's cli.ts) on `port` with `args` and `env` added to this process's
 * environment; resolves once it answers /readyz, rejects if it exits first. Its request log is
 * kept at `warn`: one line per request would be the bench's own load. With BENCH_CPU_PROF set to a
 * directory, the service writes its V8 CPU profile there on exit. `nodeArgs` go to node before the
 * script (e.g. `--import` of a probe that runs inside the service).
 *
 * @example
 * const { child, url } = await startService('latchkey-kms', 'packages/kms/src/cli.ts', port, [], {})
 */
export async function startService(
  name: string,
  script: string,
  port: number,
  args: readonly string[],
  env: Record<string, string>,
  nodeArgs: readonly string[] = [],
) {
  // BENCH_CPU_PROF=<dir>: each service writes a V8 CPU profile there when it exits (node --cpu-prof).
  const profile = process.env['BENCH_CPU_PROF'] ? ['--cpu-prof', '--cpu-prof-dir', process.env['BENCH_CPU_PROF']] : []
  const child = spawn(process.execPath, [...profile, '--conditions=source', '--import', 'tsx', ...nodeArgs, script, '--port', String(port), ...args], {
    env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const url = `http://127.0.0.1:${port}`
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}) before it was ready`)
    const ready = await fetch(`${url}/readyz`).then(
      (response) => response.ok,
      () => false,
    )
    if (ready) return { child, url }
    // The process has no readiness event to wait for; polling /readyz is the contract.
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/** SIGTERM, then the exit (graceful shutdown); nothing if it has already gone. */
export async function stopService(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}
