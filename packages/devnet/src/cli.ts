/**
 * `npm start`: runs the local stack until Ctrl-C (SIGINT) or SIGTERM, then stops every service
 * and exits 0.
 *
 *   npm start                    chains, relay, demo and reference wallet (built, then served)
 *   npm start -- --no-build      serve the demo built by an earlier run
 *   npm start -- --no-demo       chains only (also LATCHKEY_DEMO=0)
 */
import { isAbsolute, relative } from 'node:path'
import { PortInUseError } from './instance.js'
import { type Stack, startStack } from './stack.js'

const usage = `Usage: npm start -- [--no-demo] [--no-build]

  --no-demo    start the chains and the relay only (same as LATCHKEY_DEMO=0)
  --no-build   serve the demo and wallet built by an earlier run instead of building them

Environment: LATCHKEY_CHAIN_A_PORT (8545), LATCHKEY_CHAIN_B_PORT (8546), LATCHKEY_RELAY_PORT (5555),
LATCHKEY_KMS_PORT (8090), LATCHKEY_SERVER_PORT (8787), LATCHKEY_DEMO_PORT (5173), LATCHKEY_WALLET_PORT (5174), LATCHKEY_OIDC_PORT (8092),
LATCHKEY_BUNDLER_A_PORT (4337), LATCHKEY_BUNDLER_B_PORT (4338),
LATCHKEY_STATE_DIR (.latchkey), LATCHKEY_DEMO=0, REDIS_URL (the relay keeps messages in Redis instead of SQLite)`

const flags = new Set(process.argv.slice(2))
if (flags.has('--help') || flags.has('-h')) {
  console.log(usage)
  process.exit(0)
}
const unknown = [...flags].filter((flag) => flag !== '--no-demo' && flag !== '--no-build')
if (unknown.length) {
  console.error(`Unknown option ${unknown.join(' ')}\n\n${usage}`)
  process.exit(2)
}

const demo = !flags.has('--no-demo') && process.env['LATCHKEY_DEMO'] !== '0'
const build = !flags.has('--no-build')

let stack: Stack | undefined
let stopping = false

// Registered before anything starts, so a Ctrl-C during start-up still stops what started.
// Repeated signals are ignored: npm forwards the terminal's SIGINT, so each Ctrl-C arrives twice,
// and stopping is bounded anyway (SIGKILL after a timeout).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return
    stopping = true
    console.log('\nStopping…')
    if (stack) void shutdown(stack)
    // Otherwise start-up is still running; it sees `stopping` when it is done.
  })
}

console.log(
  demo ? (build ? 'Starting Latchkey devnet (building the demo and the wallet)…' : 'Starting Latchkey devnet…') : 'Starting Latchkey devnet (no demo)…',
)
try {
  stack = await startStack({ demo, build })
} catch (error) {
  console.error(`\nCould not start the devnet: ${error instanceof Error ? error.message : String(error)}`)
  if (error instanceof PortInUseError)
    console.error(
      'Stop whatever holds the port, or choose others with LATCHKEY_CHAIN_A_PORT, LATCHKEY_CHAIN_B_PORT, LATCHKEY_RELAY_PORT, LATCHKEY_KMS_PORT, LATCHKEY_KMS_FRAMES_PORT, LATCHKEY_SERVER_PORT, LATCHKEY_DEMO_PORT, LATCHKEY_WALLET_PORT, LATCHKEY_OIDC_PORT, LATCHKEY_BUNDLER_A_PORT and LATCHKEY_BUNDLER_B_PORT.',
    )
  // Every service that had started was stopped by startStack.
  process.exit(stopping ? 0 : 1)
}

if (stopping) await shutdown(stack)
else console.log(banner(stack))

function banner(stack: Stack): string {
  const rows: [string, string][] = [
    ['Chain A', `${stack.urls.chainA}   chain id 31337`],
    ['Chain B', `${stack.urls.chainB}   chain id 31338`],
    ['Executor', `${stack.contracts.batchExecutor}   EIP-7702 batch executor, on both chains`],
    ['Token', `${stack.contracts.token}   Test Token (TKN), on both chains`],
    ['EntryPoint', `${stack.entryPoint}   ERC-4337 v0.8, on both chains`],
    ['Sponsor', `${stack.contracts.sponsorPaymaster}   paymaster: sponsored gas, on both chains`],
    ['Gas in TKN', `${stack.contracts.tokenPaymaster}   paymaster: gas paid in TKN, on both chains`],
    ['Guarantor', `${stack.contracts.paymasterGuarantor}   prefunds an account's first operation paid in TKN`],
  ]
  if (stack.bundlers) {
    rows.push(['Bundler A', `${stack.bundlers[31337]}   ERC-4337 bundler (Alto) for chain A`])
    rows.push(['Bundler B', `${stack.bundlers[31338]}   ERC-4337 bundler (Alto) for chain B`])
  }
  if (stack.urls.relay) rows.push(['Relay', stack.urls.relay])
  if (stack.urls.kms) rows.push(['KMS', `${stack.urls.kms}   dev inbox ${stack.urls.kms}/dev/mailbox`])
  if (stack.urls.frames) rows.push(['Frames', `${stack.urls.frames}   /auth /recovery /export /import`])
  // Browsers call it on localhost, same-site with the demo, for its SameSite cookies.
  if (stack.urls.server) rows.push(['Backend', `${stack.urls.server.replace('127.0.0.1', 'localhost')}   sign-in, sessions (listens on 127.0.0.1)`])
  if (stack.urls.demo) rows.push(['Demo', stack.urls.demo])
  if (stack.urls.wallet) rows.push(['Wallet', `${stack.urls.wallet}   reference WalletConnect wallet`])
  const devJson = relative(process.cwd(), stack.devJson)
  rows.push(['dev.json', devJson.startsWith('..') || isAbsolute(devJson) ? stack.devJson : devJson])
  const width = Math.max(...rows.map(([label]) => label.length))
  return ['', 'Latchkey devnet is running', '', ...rows.map(([label, value]) => `  ${label.padEnd(width)}   ${value}`), '', 'Press Ctrl-C to stop', ''].join(
    '\n',
  )
}

async function shutdown(stack: Stack): Promise<never> {
  try {
    await stack.stop()
  } catch (error) {
    console.error(`Some services did not stop cleanly: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  }
  console.log('Stopped.')
  process.exit(0)
}
