import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { type RunningChild, spawnUntilReady, terminate } from './childProcess.js'
import { defineInstance, formatAddress, type Instance, StartFailedError } from './instance.js'

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
  let running: RunningChild | undefined

  const instance = defineInstance({
    name,
    host,
    port,
    url: `http://${formatAddress(host, port)}`,
    async start() {
      const binary = parameters.binary ?? resolveAnvilBinary()
      const anvilArgs = ['--port', String(port), '--chain-id', String(chainId), '--host', host, ...args]
      running = await spawnUntilReady({ name, program: 'anvil', host, port, binary, args: anvilArgs, ready: /^Listening on /m, timeout: startTimeout })
    },
    async stop() {
      if (!running) return
      const stopping = running
      running = undefined
      await terminate(stopping, stopTimeout)
    },
  })

  return Object.defineProperties(instance, {
    chainId: { value: chainId, enumerable: true },
    pid: { get: () => running?.child.pid, enumerable: true },
  }) as AnvilInstance
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
