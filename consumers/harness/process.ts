import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { delimiter, join, resolve } from 'node:path'

/** The repository this harness lives in; nothing a consumer runs may reach into it. */
export const repositoryRoot = resolve(import.meta.dirname, '../..')

/**
 * The environment a consumer's command runs in: the machine's basics and what the caller adds,
 * never this process's npm and test-runner variables (`npm_config_*`, `NODE_ENV=test`,
 * `NODE_OPTIONS`) nor a PATH entry into a `node_modules/.bin` or the repository.
 *
 * @example
 * spawn('node', ['app.mjs'], { env: consumerEnv({ PORT: '3000' }) })
 */
export function consumerEnv(extra: Record<string, string> = {}): Record<string, string> {
  const path = (process.env['PATH'] ?? '')
    .split(delimiter)
    .filter((entry) => entry && !entry.includes('node_modules') && !resolve(entry).startsWith(repositoryRoot))
    .join(delimiter)
  const env: Record<string, string> = { PATH: path, NO_COLOR: '1' }
  for (const name of ['HOME', 'USER', 'LANG', 'TMPDIR', 'CI']) {
    const value = process.env[name]
    if (value) env[name] = value
  }
  return { ...env, ...extra }
}

export type RunResult = { code: number | null; signal: NodeJS.Signals | null; output: string }

/**
 * Runs a command to its end and resolves with its exit and its stdout and stderr interleaved.
 *
 * @example
 * const { code, output } = await run(process.execPath, ['node_modules/.bin/tsc', '--noEmit'], { cwd: dir })
 */
export function run(command: string, args: readonly string[], options: { cwd: string; env?: Record<string, string> }): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? consumerEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    child.once('error', reject)
    child.once('close', (code, signal) => resolvePromise({ code, signal, output }))
  })
}

/**
 * Runs a command and throws, with everything it printed, unless it exits 0.
 *
 * @example
 * await runOrThrow(process.execPath, ['node_modules/.bin/vite', 'build'], { cwd: join(dir, 'vite') })
 */
export async function runOrThrow(command: string, args: readonly string[], options: { cwd: string; env?: Record<string, string> }): Promise<string> {
  const result = await run(command, args, options)
  if (result.code !== 0) throw new Error(`${[command, ...args].join(' ')} exited ${result.signal ?? result.code} in ${options.cwd}:\n${result.output}`)
  return result.output
}

export type StartedProcess = {
  readonly pid: number | undefined
  /** Everything the process printed so far, stdout and stderr interleaved. */
  output(): string
  /** SIGTERM, then SIGKILL after `timeout` ms; resolves with how it exited. */
  stop(timeout?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

export type StartProcessParameters = {
  command: string
  args: readonly string[]
  cwd: string
  env?: Record<string, string> | undefined
  /** A line of its output that says it is ready (e.g. `/listening/`). */
  ready: RegExp
  /** How long to wait for `ready`. Default 60 000 ms. */
  timeout?: number | undefined
}

/**
 * Starts a long-running process and resolves once a line of its output matches `ready`; rejects
 * with its output if it exits first or stays silent past `timeout`. On Linux it runs under
 * `setpriv --pdeathsig SIGKILL`, so it never outlives the test process.
 *
 * @example
 * const preview = await startProcess({ command: process.execPath, args: ['node_modules/.bin/vite', 'preview'], cwd, ready: /Local:/ })
 * await preview.stop()
 */
export async function startProcess(parameters: StartProcessParameters): Promise<StartedProcess> {
  const { command, args, cwd, ready, timeout = 60_000 } = parameters
  const setpriv = process.platform === 'linux' ? ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path)) : undefined
  const [file, argv] = setpriv ? [setpriv, ['--pdeathsig', 'SIGKILL', '--', command, ...args]] : [command, [...args]]
  const child = spawn(file, argv, { cwd, env: parameters.env ?? consumerEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) =>
    child.once('exit', (code, signal) => resolveExit({ code, signal })),
  )
  let output = ''
  let onOutput = () => {}
  const append = (chunk: string) => {
    output += chunk
    onOutput()
  }
  child.stdout.setEncoding('utf8').on('data', append)
  child.stderr.setEncoding('utf8').on('data', append)
  const described = `${[command, ...args].join(' ')} (in ${cwd})`
  await new Promise<void>((resolveReady, reject) => {
    onOutput = () => {
      if (!output.split('\n').some((line) => ready.test(line))) return
      cleanup()
      resolveReady()
    }
    const timer = setTimeout(() => {
      cleanup()
      reject(new Error(`${described} printed nothing matching ${ready} within ${timeout} ms:\n${output}`))
    }, timeout)
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      cleanup()
      reject(new Error(`${described} exited ${signal ?? code} before it was ready:\n${output}`))
    }
    const onError = (error: Error) => {
      cleanup()
      reject(error)
    }
    function cleanup() {
      clearTimeout(timer)
      onOutput = () => {}
      child.off('exit', onExit)
      child.off('error', onError)
    }
    child.once('exit', onExit)
    child.once('error', onError)
  }).catch(async (error: unknown) => {
    await terminate(child, exited, 0)
    throw error
  })
  return {
    pid: child.pid,
    output: () => output,
    async stop(stopTimeout = 10_000) {
      await terminate(child, exited, stopTimeout)
      return exited
    },
  }
}

async function terminate(child: ChildProcess, exited: Promise<unknown>, timeout: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill(timeout > 0 ? 'SIGTERM' : 'SIGKILL')
  if (timeout === 0) return void (await exited)
  let timer: NodeJS.Timeout | undefined
  const killed = new Promise<void>((resolveKill) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL')
      resolveKill()
    }, timeout)
  })
  await Promise.race([exited, killed])
  clearTimeout(timer)
  await exited
}

/**
 * Path of an installed package's bin in a consumer directory: `node_modules/.bin/<name>`.
 *
 * @example
 * binPath(dir, 'vite') // '/tmp/latchkey-consumers-x/node_modules/.bin/vite'
 */
export function binPath(dir: string, name: string): string {
  return join(dir, 'node_modules', '.bin', name)
}
