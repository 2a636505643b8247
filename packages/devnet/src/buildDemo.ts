import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** @internal Root of the monorepo (this file is `packages/devnet/src/buildDemo.ts`). */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))

/** @internal The demo app's directory. */
export const demoRoot = resolve(repoRoot, 'apps/demo')

/** @internal The reference wallet's directory. */
export const walletRoot = resolve(repoRoot, 'apps/wallet')

export type BuildDemoParameters = {
  /** RPC url of chain A (31337) baked into the build. */
  chainARpc: string
  /** RPC url of chain B (31338) baked into the build. */
  chainBRpc: string
  /** WalletConnect relay URL baked into the build (`VITE_LATCHKEY_RELAY_URL`). Default: the demo's own default. */
  relayUrl?: string | undefined
  /** The app backend as the browser reaches it (`VITE_LATCHKEY_SERVER_URL`): a localhost URL, same-site with the demo for its cookie. */
  serverUrl?: string | undefined
  /** The EIP-7702 batch executor on both chains (`VITE_LATCHKEY_BATCH_EXECUTOR`), from dev.json. Default: the embedded wallet's default. */
  batchExecutor?: string | undefined
  /** The demo's test token (TKN) on both chains (`VITE_LATCHKEY_TOKEN`), from dev.json. Default: the demo's own default, the same CREATE2 address. */
  token?: string | undefined
  /** Each chain's ERC-4337 bundler (`VITE_LATCHKEY_BUNDLER_A_URL`, `_B_URL`: the chains' `rpcUrls.bundler`), from dev.json. Default: none (no sponsored gas). */
  bundlerA?: string | undefined
  bundlerB?: string | undefined
  /** The backend's ERC-7677 paymaster service (`VITE_LATCHKEY_PAYMASTER_URL`), from dev.json. Default: none (no sponsored gas). */
  paymasterUrl?: string | undefined
  /** The token paymaster on both chains (`VITE_LATCHKEY_TOKEN_PAYMASTER`), from dev.json: "Pay gas in TKN" approves it. Default: none (no gas in TKN). */
  tokenPaymaster?: string | undefined
  /** Where to write the build. Default: `dist` in the app's directory. */
  outDir?: string
}

/** Absolute path of the directory holding the built demo (`index.html` and its assets). */
export type BuildDemoReturnType = string

// Builds change process.env while they run, so two of them must never overlap.
let queue: Promise<unknown> = Promise.resolve()

/**
 * Builds the demo app with Vite for the given chains: the RPC urls reach the app as
 * `import.meta.env.VITE_LATCHKEY_CHAIN_A_RPC` / `_B_RPC`. Always a production build, whatever
 * `NODE_ENV` the caller runs under (vitest sets `test`); the environment is restored afterwards.
 *
 * @example
 * const dir = await buildDemo({ chainARpc: 'http://127.0.0.1:8545', chainBRpc: 'http://127.0.0.1:8546' })
 */
export function buildDemo(parameters: BuildDemoParameters): Promise<BuildDemoReturnType> {
  return enqueue(demoRoot, parameters)
}

/**
 * Builds the reference wallet (apps/wallet) the same way: it signs and sends on the chains and
 * pairs through the relay baked in here.
 *
 * @example
 * const dir = await buildWallet({ chainARpc, chainBRpc, relayUrl: 'ws://127.0.0.1:5555', outDir: '.latchkey/wallet' })
 */
export function buildWallet(parameters: BuildDemoParameters): Promise<BuildDemoReturnType> {
  return enqueue(walletRoot, parameters)
}

function enqueue(root: string, parameters: BuildDemoParameters): Promise<string> {
  const run = queue.then(() => build(root, parameters))
  queue = run.catch(() => undefined)
  return run
}

async function build(root: string, parameters: BuildDemoParameters): Promise<string> {
  const outDir = resolve(parameters.outDir ?? resolve(root, 'dist'))
  // Vite is heavy; load it only when a build is asked for.
  const vite = await import('vite')
  const overrides = {
    VITE_LATCHKEY_CHAIN_A_RPC: parameters.chainARpc,
    VITE_LATCHKEY_CHAIN_B_RPC: parameters.chainBRpc,
    ...(parameters.relayUrl ? { VITE_LATCHKEY_RELAY_URL: parameters.relayUrl } : {}),
    ...(parameters.serverUrl ? { VITE_LATCHKEY_SERVER_URL: parameters.serverUrl } : {}),
    ...(parameters.batchExecutor ? { VITE_LATCHKEY_BATCH_EXECUTOR: parameters.batchExecutor } : {}),
    ...(parameters.token ? { VITE_LATCHKEY_TOKEN: parameters.token } : {}),
    ...(parameters.bundlerA ? { VITE_LATCHKEY_BUNDLER_A_URL: parameters.bundlerA } : {}),
    ...(parameters.bundlerB ? { VITE_LATCHKEY_BUNDLER_B_URL: parameters.bundlerB } : {}),
    ...(parameters.paymasterUrl ? { VITE_LATCHKEY_PAYMASTER_URL: parameters.paymasterUrl } : {}),
    ...(parameters.tokenPaymaster ? { VITE_LATCHKEY_TOKEN_PAYMASTER: parameters.tokenPaymaster } : {}),
    NODE_ENV: 'production',
  }
  const saved = Object.fromEntries(Object.keys(overrides).map((key) => [key, process.env[key]]))
  Object.assign(process.env, overrides)
  try {
    await vite.build({
      root,
      configFile: resolve(root, 'vite.config.ts'),
      mode: 'production',
      logLevel: 'warn',
      clearScreen: false,
      build: { outDir, emptyOutDir: true },
    })
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key]
      else process.env[key] = value
    }
  }
  return outDir
}
