/**
 * One-click sign-in (WalletConnect `wc_sessionAuthenticate`) from a fresh URI to a signed-in
 * session at the backend, beside plain pairing (URI to settled session) in the same run, on
 * loopback: our relay, our backend (`POST /auth/cacao`, SIWE checks against anvil), our Sign
 * client in both roles, a real key signing.
 *
 *   npm run bench:oneclick [-- --runs 20]
 *
 * Target: one-click ≤ 300 ms (median). Prints the median and p90 of each.
 */
import { performance } from 'node:perf_hooks'
import { anvil, getFreePort } from '@latchkey/devnet'
import { generateApiKeyPair } from '@latchkey/kms'
import { createRelay } from '@latchkey/relay'
import { createServerApp, openStore } from '@latchkey/server'
import { buildApprovedNamespaces, type Cacao, createSignClient, type WebSocketConstructor } from '@latchkey/walletconnect'
import { createCacao, formatAuthMessage, populateAuthPayload } from '@latchkey/walletconnect/cacao'
import { privateKeyToAccount } from 'viem/accounts'
import { WebSocket } from 'ws'

const index = process.argv.indexOf('--runs')
const runs = index > 0 ? Number(process.argv[index + 1]) : 20
if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs must be a positive whole number')

const TARGET_MS = 300
const origin = 'http://dapp.bench'
const signer = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d')
const CHAINS = ['eip155:31337']

const chain = anvil({ port: await getFreePort(), chainId: 31337 })
await chain.start()
const relay = createRelay({ port: await getFreePort() })
await relay.start()
const store = await openStore(':memory:')
const app = createServerApp({
  store,
  // The CACAO route never calls the key-management API.
  kmsUrl: 'http://127.0.0.1:9',
  organizationId: 'bench',
  ...generateApiKeyPair(),
  appName: 'Bench',
  allowedOrigins: [origin],
  chains: [{ id: 31337, rpcUrl: `http://127.0.0.1:${chain.port}` }],
})

const options = { relayUrl: relay.url, WebSocket: WebSocket as unknown as WebSocketConstructor }
const dapp = await createSignClient({ ...options, metadata: { name: 'bench dapp', description: '', url: origin, icons: [] } })
const wallet = await createSignClient({ ...options, metadata: { name: 'bench wallet', description: '', url: 'http://wallet.bench', icons: [] } })
wallet.events.on('session_proposal', ({ id, params }) => {
  const supported = { eip155: { chains: CHAINS, methods: ['personal_sign'], events: ['chainChanged'], accounts: [`eip155:31337:${signer.address}`] } }
  void wallet.approve({ id, namespaces: buildApprovedNamespaces({ proposal: params, supported }) })
})
wallet.events.on('session_authenticate', async ({ id, params }) => {
  const payload = populateAuthPayload({ authPayload: params.authPayload, chains: CHAINS, methods: ['personal_sign'] })
  const iss = `did:pkh:eip155:31337:${signer.address}`
  const auths: Cacao[] = [
    createCacao({ payload, iss, signature: { t: 'eip191', s: await signer.signMessage({ message: formatAuthMessage({ payload, iss }) }) } }),
  ]
  await wallet.approveAuthenticate({ id, auths })
})

async function pairing(): Promise<number> {
  const started = performance.now()
  const { uri, approval } = await dapp.connect({ optionalNamespaces: { eip155: { chains: CHAINS, methods: ['personal_sign'], events: ['chainChanged'] } } })
  await wallet.pair({ uri })
  await approval()
  return performance.now() - started
}

async function oneClick(): Promise<number> {
  const started = performance.now()
  const nonceResponse = await app.request('/auth/nonce', { headers: { origin } })
  const cookie = nonceResponse.headers.get('set-cookie')!.split(';')[0]!
  const { nonce } = (await nonceResponse.json()) as { nonce: string }
  const { uri, response } = await dapp.authenticate({
    chains: CHAINS,
    domain: 'dapp.bench',
    uri: origin,
    nonce,
    statement: 'Sign in to Bench.',
    methods: ['personal_sign'],
  })
  await wallet.pair({ uri })
  const { cacaos } = await response()
  const signedIn = await app.request('/auth/cacao', {
    method: 'POST',
    headers: { origin, cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ cacao: cacaos![0], walletKind: 'walletConnect' }),
  })
  if (signedIn.status !== 200) throw new Error(`the backend refused the CACAO: ${await signedIn.text()}`)
  return performance.now() - started
}

const times = { pairing: [] as number[], oneClick: [] as number[] }
try {
  // Interleaved, so drift on this machine hits both alike; the first of each warms up.
  await pairing()
  await oneClick()
  for (let run = 0; run < runs; run++) {
    times.pairing.push(await pairing())
    times.oneClick.push(await oneClick())
  }
} finally {
  dapp.close()
  wallet.close()
  await store.close()
  await relay.stop()
  await chain.stop()
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!
const line = (name: string, values: number[]) =>
  `${name.padEnd(44)} median ${percentile(values, 50).toFixed(0).padStart(4)} ms   p90 ${percentile(values, 90).toFixed(0).padStart(4)} ms`
console.log(`WalletConnect on loopback, ${runs} runs each`)
console.log(line('pairing: URI → settled session (reference)', times.pairing))
console.log(line('one-click: URI → signed in at the backend', times.oneClick))
const median = percentile(times.oneClick, 50)
console.log(`one-click target ≤ ${TARGET_MS} ms: ${median <= TARGET_MS ? 'met' : 'missed'}`)
