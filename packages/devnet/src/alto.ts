import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { type Address, createPublicClient, type Hex, http, keccak256, toHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { type RunningChild, spawnUntilReady, terminate } from './childProcess.js'
import { defineInstance, type Instance, StartFailedError } from './instance.js'

export type AltoParameters = {
  /** Port for its JSON-RPC endpoint. */
  port: number
  /** The anvil chain it bundles for. */
  rpcUrl: string
  /** The EntryPoint it serves. */
  entryPoint: Address
  /** Name in messages. Default: `alto`. */
  name?: string
  /** How long to wait for "Server listening". Default: 30 000 ms. */
  startTimeout?: number
  /** How long to wait after SIGTERM before SIGKILL. Default: 5 000 ms. */
  stopTimeout?: number
}

export type AltoInstance = Instance & {
  /** The key that signs and pays for its bundles (funded by anvil when it starts). */
  readonly executor: Address
  /** Process id of the running bundler; `undefined` when it is not running. */
  readonly pid: number | undefined
}

// Throwaway keys funded by anvil when the bundler starts, so anvil's test accounts keep their nonces
// and balances: the executor signs the bundles, the utility key deploys Alto's simulation contracts.
const EXECUTOR_KEY: Hex = keccak256(toHex('latchkey devnet bundler executor'))
const UTILITY_KEY: Hex = keccak256(toHex('latchkey devnet bundler utility'))
const FUNDS = '0x21e19e0c9bab2400000' // 10 000 ether

// Alto 0.0.20 listens on 0.0.0.0 and has no option for it; every devnet service listens on
// loopback only, so Node's `listen` is pointed at 127.0.0.1 before Alto loads.
const LOOPBACK_ONLY = `data:text/javascript,${encodeURIComponent(
  "import net from 'node:net';const listen=net.Server.prototype.listen;net.Server.prototype.listen=function(options,...rest){if(options&&typeof options==='object'&&options.host==='0.0.0.0')options={...options,host:'127.0.0.1'};return listen.call(this,options,...rest)}",
)}`

/**
 * Pimlico's Alto ERC-4337 bundler (`@pimlico/alto`, GPL-3.0, run as a separate program) for one
 * local anvil chain, as an {@link Instance}. `start()` funds its keys on the chain, spawns it and
 * resolves when it is listening; `stop()` sends SIGTERM, then SIGKILL after `stopTimeout`.
 *
 * Safe mode (ERC-7562's rules, traced with `debug_traceCall`) is off: on anvil, Alto's tracer-based
 * validation of EntryPoint v0.8 fails on every UserOperation (the trace ends in the EntryPoint's
 * `delegateAndRevert`, whose error Alto does not decode). It guards a public mempool against
 * denial of service; the devnet has none.
 *
 * @example
 * const bundler = alto({ port: 4337, rpcUrl: chain.url, entryPoint: ENTRY_POINT_ADDRESS })
 * await bundler.start()
 * console.log(bundler.url) // http://127.0.0.1:4337
 * await bundler.stop()
 */
export function alto(parameters: AltoParameters): AltoInstance {
  const { port, rpcUrl, entryPoint, name = 'alto', startTimeout = 30_000, stopTimeout = 5_000 } = parameters
  const host = '127.0.0.1'
  const executor = privateKeyToAccount(EXECUTOR_KEY).address
  let running: RunningChild | undefined

  const instance = defineInstance({
    name,
    host,
    port,
    url: `http://${host}:${port}`,
    async start() {
      const chain = createPublicClient({ transport: http(rpcUrl) })
      for (const key of [EXECUTOR_KEY, UTILITY_KEY])
        await chain.request({ method: 'anvil_setBalance', params: [privateKeyToAccount(key).address, FUNDS] } as never)
      running = await spawnUntilReady({
        name,
        program: 'alto',
        host,
        port,
        binary: resolveAltoCli(),
        nodeOptions: ['--import', LOOPBACK_ONLY],
        env: altoEnvironment(),
        args: [
          ...['--rpc-url', rpcUrl, '--entrypoints', entryPoint, '--port', String(port)],
          ...['--executor-private-keys', EXECUTOR_KEY, '--utility-private-key', UTILITY_KEY],
          ...['--safe-mode', 'false'],
          // anvil mines each transaction at once: look for blocks every 20 ms, and bundle what waits
          // every 5 to 20 ms (Alto's default of 100 ms grows by 10 ms per operation of the last
          // minute, to 1 s: a busy local chain would wait for its bundles).
          ...['--block-time', '20'],
          ...['--min-bundle-interval', '5', '--max-bundle-interval', '20'],
          // The embedded wallet calls it from the demo's origin.
          ...['--enable-cors', 'true'],
          // Nothing refills the executor on a dev chain; the balance check would only poll.
          ...['--utility-wallet-monitor', 'false'],
          // Only the line that says it is listening (the rpc module's), in JSON: cheap to drain.
          ...['--json', '--log-level', 'warn', '--rpc-log-level', 'info'],
        ],
        ready: /"Server listening at /,
        timeout: startTimeout,
      })
    },
    async stop() {
      if (!running) return
      const stopping = running
      running = undefined
      await terminate(stopping, stopTimeout)
    },
  })

  return Object.defineProperties(instance, {
    executor: { value: executor, enumerable: true },
    pid: { get: () => running?.child.pid, enumerable: true },
  }) as AltoInstance
}

/**
 * This process's environment without what Alto would read as settings: its `ALTO_*` variables,
 * `SENTRY_DSN`, and a `.env` file in the working directory. The command line says it all.
 */
function altoEnvironment(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('ALTO_') && name !== 'SENTRY_DSN'))
  return { ...env, DOTENV_CONFIG_PATH: '/dev/null' }
}

/** Path of Alto's command-line entry in the installed `@pimlico/alto`. */
function resolveAltoCli(): string {
  try {
    // The package exports only its library entry (esm/index.js); the CLI sits beside it.
    return join(dirname(createRequire(import.meta.url).resolve('@pimlico/alto')), 'cli', 'alto.js')
  } catch (cause) {
    throw new StartFailedError({ name: 'alto', reason: 'the npm package @pimlico/alto is not installed (run npm install)', cause })
  }
}
