import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { defineInstance, formatAddress, type Instance, PortInUseError, StartFailedError, StartTimeoutError } from './instance.js'

export type AnvilParameters = {
  /** Port for the JSON-RPC endpoint. */
  port: number
  chainId: number
  /** Address to listen on. Default: `127.0.0.1` (nothing outside this machine can reach it). */
  host?: string
  /** Name in messages. Default: `anvil (chain id <chainId>)`. */
  name?: string
  /** How long to wait for anvil's "Listening on" line. Default: 20 000 ms. */
  startTimeout?: number
  /** How long to wait after SIGTERM before SIGKILL. Default: 5 000 ms. */
  stopTimeout?: number
  /** More command-line arguments for anvil, e.g. `['--block-time', '1']`. */
  args?: readonly string[]
  /** Path to an anvil executable. Default: the one in `@foundry-rs/anvil`'s platform package. */
  binary?: string
}

export type AnvilInstance = Instance & {
  readonly chainId: number
  /** Process id of the running anvil; `undefined` when it is not running. */
  readonly pid: number | undefined
}

/**
 * A local anvil chain as an {@link Instance}. `start()` resolves when anvil prints that it is
 * listening; `stop()` sends SIGTERM, then SIGKILL after `stopTimeout`. Anvil never outlives the
 * process that started it (see the README).
 *
 * @example
 * const chain = anvil({ port: 8545, chainId: 31337 })
 * await chain.start()
 * console.log(chain.url) // http://127.0.0.1:8545
 * await chain.stop()
 */
export function anvil(parameters: AnvilParameters): AnvilInstance {
  const { port, chainId, host = '127.0.0.1', startTimeout = 20_000, stopTimeout = 5_000, args = [] } = parameters
  const name = parameters.name ?? `anvil (chain id ${chainId})`
  let running: { child: ChildProcess; exited: Promise<void> } | undefined

  const instance = defineInstance({
    name,
    host,
    port,
    url: `http://${formatAddress(host, port)}`,
    async start() {
      const binary = parameters.binary ?? resolveAnvilBinary()
      const anvilArgs = ['--port', String(port), '--chain-id', String(chainId), '--host', host, ...args]
      running = await spawnUntilListening({ name, host, port, binary, args: anvilArgs, timeout: startTimeout })
    },
    async stop() {
      if (!running) return
      const { child, exited } = running
      running = undefined
      await terminate(child, exited, stopTimeout)
    },
  })

  return Object.defineProperties(instance, {
    chainId: { value: chainId, enumerable: true },
    pid: { get: () => running?.child.pid, enumerable: true },
  }) as AnvilInstance
}

async function spawnUntilListening(parameters: {
  name: string
  host: string
  port: number
  binary: string
  args: string[]
  timeout: number
}): Promise<{ child: ChildProcess; exited: Promise<void> }> {
  const { name, host, port, timeout } = parameters
  const [command, args] = commandLine(parameters.binary, parameters.args)
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  reapOnExit(child)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  void exited.then(() => liveChildren.delete(child))

  // Keep the last part of stderr for error messages; anvil's own log on stdout is drained so the
  // pipe never fills and blocks it.
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
        if (!/^Listening on /m.test(stdout)) return
        cleanup()
        resolve()
      }
      const onError = (error: Error) => {
        cleanup()
        reject(new StartFailedError({ name, reason: error.message, cause: error }))
      }
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        cleanup()
        if (/address already in use/i.test(stderr)) reject(new PortInUseError({ name, host, port, details: stderr }))
        else reject(new StartFailedError({ name, reason: `anvil exited (${signal ?? `code ${code}`}) before it was listening`, details: stderr || stdout }))
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
    await terminate(child, exited, 0)
    throw error
  }
  return { child, exited }
}

/** SIGTERM, wait up to `timeout` ms, then SIGKILL; resolves once the process has exited. */
async function terminate(child: ChildProcess, exited: Promise<void>, timeout: number): Promise<void> {
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
 * On Linux, anvil runs under `setpriv --pdeathsig SIGKILL` (util-linux), so the kernel kills it
 * even when its parent dies without running any handler (SIGKILL, a crash). `setpriv` execs
 * anvil, so the pid stays anvil's own.
 */
function commandLine(binary: string, args: string[]): [string, string[]] {
  const launch: [string, string[]] = binary.endsWith('.mjs') || binary.endsWith('.js') ? [process.execPath, [binary, ...args]] : [binary, args]
  const setpriv = process.platform === 'linux' ? ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path)) : undefined
  if (!setpriv) return launch
  return [setpriv, ['--pdeathsig', 'SIGKILL', '--', launch[0], ...launch[1]]]
}

// Every anvil still running in this process. On exit they are killed synchronously; on a fatal
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

let resolvedBinary: string | undefined
const foundryArch: Partial<Record<string, string>> = { x64: 'amd64', arm64: 'arm64' }

/**
 * Path of the anvil executable that ships in `@foundry-rs/anvil`: the native binary of this
 * platform's package (`@foundry-rs/anvil-linux-amd64`, …), else the binary its postinstall
 * downloaded, else the package's Node wrapper (`bin.mjs`).
 *
 * @example
 * resolveAnvilBinary() // '/repo/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil'
 */
export function resolveAnvilBinary(): string {
  if (resolvedBinary) return resolvedBinary
  const require = createRequire(import.meta.url)
  let wrapperManifest: string
  try {
    wrapperManifest = require.resolve('@foundry-rs/anvil/package.json')
  } catch (cause) {
    throw new StartFailedError({ name: 'anvil', reason: 'the npm package @foundry-rs/anvil is not installed (run npm install)', cause })
  }
  const wrapperDir = dirname(wrapperManifest)
  const executable = process.platform === 'win32' ? 'anvil.exe' : 'anvil'
  const arch = foundryArch[process.arch]
  const candidates: string[] = []
  if (arch) {
    try {
      const platformManifest = createRequire(wrapperManifest).resolve(`@foundry-rs/anvil-${process.platform}-${arch}/package.json`)
      const { bin } = JSON.parse(readFileSync(platformManifest, 'utf8')) as { bin?: string | Record<string, string> }
      const relative = typeof bin === 'string' ? bin : (bin?.anvil ?? `bin/${executable}`)
      candidates.push(join(dirname(platformManifest), relative))
    } catch {
      // Optional dependency not installed for this platform; try the other places.
    }
  }
  candidates.push(join(wrapperDir, executable))
  const { bin } = JSON.parse(readFileSync(wrapperManifest, 'utf8')) as { bin?: string | Record<string, string> }
  const wrapperBin = typeof bin === 'string' ? bin : bin?.anvil
  if (wrapperBin) candidates.push(join(wrapperDir, wrapperBin))
  const found = candidates.find((path) => existsSync(path))
  if (!found)
    throw new StartFailedError({
      name: 'anvil',
      reason: `no anvil executable for ${process.platform}-${process.arch} in @foundry-rs/anvil (looked at ${candidates.join(', ')})`,
    })
  resolvedBinary = found
  return found
}
