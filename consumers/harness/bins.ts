import { resolve } from 'node:path'
import { nativeModulesReady, needsNativeModules } from './native.js'
import { binPath, consumerEnv, type RunResult, run, type StartedProcess, startProcess } from './process.js'

export type InstalledBinParameters = {
  /** The consumer directory the tarballs are installed in (the `consumers` value the global setup provides). */
  dir: string
  /** The bin's name, e.g. `latchkey-relay`. */
  name: string
  args?: readonly string[] | undefined
  /** Where it runs, relative to `dir` (an app's folder). Default: `dir` itself. */
  cwd?: string | undefined
  /** Environment variables on top of the machine's basics (see {@link consumerEnv}). */
  env?: Record<string, string> | undefined
}

/**
 * Starts an installed package's bin as an operator would: `node node_modules/.bin/<name>` under
 * plain node (no tsx, no `source` condition), in the consumer directory, with a clean
 * environment. A bin whose package needs a native module (the relay, kms and backend: SQLite)
 * first waits for the background build of it. Resolves once a line of its output matches `ready`. The consumer tests start
 * `vite preview` and `next start` through it too.
 *
 * @example
 * const relay = await startInstalledBin({ dir, name: 'latchkey-relay', args: ['--port', String(port)], ready: /listening/ })
 * await relay.stop() // SIGTERM; resolves with its exit code
 */
export async function startInstalledBin(parameters: InstalledBinParameters & { ready: RegExp; timeout?: number | undefined }): Promise<StartedProcess> {
  const { dir, name, args = [], cwd = '.', env, ready, timeout } = parameters
  if (needsNativeModules(dir, name)) await nativeModulesReady(dir)
  return startProcess({ command: process.execPath, args: [binPath(dir, name), ...args], cwd: resolve(dir, cwd), env: consumerEnv(env), ready, timeout })
}

/**
 * Runs an installed bin to its end (`--help`, bad input) and resolves with its exit and output.
 *
 * @example
 * const { code, output } = await runInstalledBin({ dir, name: 'latchkey-kms', args: ['--help'] })
 */
export async function runInstalledBin(parameters: InstalledBinParameters): Promise<RunResult> {
  const { dir, name, args = [], cwd = '.', env } = parameters
  if (needsNativeModules(dir, name)) await nativeModulesReady(dir)
  return run(process.execPath, [binPath(dir, name), ...args], { cwd: resolve(dir, cwd), env: consumerEnv(env) })
}
