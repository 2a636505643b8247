import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { PortInUseError, StartFailedError, StartTimeoutError } from './instance.js'

/** A child process that printed its readiness line, and a promise that settles when it exits. */
export type RunningChild = { child: ChildProcess; exited: Promise<void> }

export type SpawnUntilReadyParameters = {
  /** Name in messages. */
  name: string
  /** What it is, in "<program> exited before it was listening". */
  program: string
  host: string
  port: number
  /** An executable, or a `.js`/`.mjs` file that runs under this Node. */
  binary: string
  args: readonly string[]
  /** Options for Node itself, placed before `binary` when it is a script. */
  nodeOptions?: readonly string[]
  /** Its environment. Default: this process's. */
  env?: NodeJS.ProcessEnv
  /** The line on stdout that says it is listening. */
  ready: RegExp
  timeout: number
}

/**
 * Spawns a service and resolves once its stdout matches `ready`; on exit, error or timeout first,
 * it is killed and a {@link StartFailedError}, {@link PortInUseError} or {@link StartTimeoutError}
 * says why. It never outlives this process (see {@link reapOnExit}).
 *
 * @example
 * const running = await spawnUntilReady({ name: 'chain A', program: 'anvil', host, port, binary, args, ready: /^Listening on /m, timeout: 20_000 })
 */
export async function spawnUntilReady(parameters: SpawnUntilReadyParameters): Promise<RunningChild> {
  const { name, program, host, port, ready, timeout } = parameters
  const [command, args] = commandLine(parameters.binary, parameters.args, parameters.nodeOptions ?? [])
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: parameters.env ?? process.env })
  reapOnExit(child)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  void exited.then(() => liveChildren.delete(child))

  // Keep the last part of stderr for error messages; the service's own log on stdout is drained so
  // the pipe never fills and blocks it.
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-8_192)
  })
  // A later failure to signal the process must not crash ours; the readiness wait below reports
  // a failure to spawn.
  child.on('error', () => undefined)

  try {
    await new Promise<void>((resolve, reject) => {
      let stdout = ''
      const onData = (chunk: string) => {
        stdout = (stdout + chunk).slice(-8_192)
        if (!ready.test(stdout)) return
        cleanup()
        resolve()
      }
      const onError = (error: Error) => {
        cleanup()
        reject(new StartFailedError({ name, reason: error.message, cause: error }))
      }
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        cleanup()
        if (/address already in use|EADDRINUSE/i.test(stderr + stdout)) reject(new PortInUseError({ name, host, port, details: stderr || stdout }))
        else
          reject(new StartFailedError({ name, reason: `${program} exited (${signal ?? `code ${code}`}) before it was listening`, details: stderr || stdout }))
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new StartTimeoutError({ name, timeout, details: stderr || stdout }))
      }, timeout)
      function cleanup() {
        clearTimeout(timer)
        child.stdout?.off('data', onData)
        child.off('error', onError)
        child.off('exit', onExit)
        child.stdout?.resume()
      }
      child.stdout?.setEncoding('utf8').on('data', onData)
      child.once('error', onError)
      child.once('exit', onExit)
    })
  } catch (error) {
    await terminate({ child, exited }, 0)
    throw error
  }
  return { child, exited }
}

/**
 * SIGTERM, wait up to `timeout` ms, then SIGKILL; resolves once the process has exited.
 *
 * @example
 * await terminate(running, 5_000)
 */
export async function terminate({ child, exited }: RunningChild, timeout: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return
  if (timeout > 0) {
    child.kill('SIGTERM')
    let timer: NodeJS.Timeout | undefined
    const timedOut = await Promise.race([
      exited.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeout)
      }),
    ])
    clearTimeout(timer)
    if (!timedOut) return
  }
  child.kill('SIGKILL')
  await exited
}

/**
 * On Linux, the service runs under `setpriv --pdeathsig SIGKILL` (util-linux), so the kernel kills
 * it even when its parent dies without running any handler (SIGKILL, a crash). `setpriv` execs the
 * service, so the pid stays its own.
 */
function commandLine(binary: string, args: readonly string[], nodeOptions: readonly string[]): [string, string[]] {
  const launch: [string, string[]] =
    binary.endsWith('.mjs') || binary.endsWith('.js') ? [process.execPath, [...nodeOptions, binary, ...args]] : [binary, [...args]]
  const setpriv = process.platform === 'linux' ? ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path)) : undefined
  if (!setpriv) return launch
  return [setpriv, ['--pdeathsig', 'SIGKILL', '--', launch[0], ...launch[1]]]
}

// Every child still running in this process. On exit they are killed synchronously; on a fatal
// signal that nobody else handles they are killed before the signal takes its default course
// (the pattern of `signal-exit`).
const liveChildren = new Set<ChildProcess>()
let reaperInstalled = false

function reapOnExit(child: ChildProcess) {
  liveChildren.add(child)
  if (reaperInstalled) return
  reaperInstalled = true
  const killAll = () => {
    for (const live of liveChildren) live.kill('SIGKILL')
    liveChildren.clear()
  }
  process.on('exit', killAll)
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      // Someone else handles this signal (the CLI, a test runner): they decide when to exit,
      // and the exit handler above still runs then.
      if (process.listenerCount(signal) > 1) return
      killAll()
      process.off(signal, onSignal)
      process.kill(process.pid, signal)
    }
    process.on(signal, onSignal)
  }
}
