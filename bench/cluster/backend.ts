/**
 * bench:cluster's backend section: Sign-In with Ethereum (GET /auth/nonce, the wallet signs, POST
 * /auth/siwe: a nonce written, spent and a session written, all in the store) against one backend
 * on SQLite, one on PostgreSQL and two on one PostgreSQL (clients spread over both), each
 * instance a `latchkey-server` process behind a trusted proxy (each sign-in from its own address,
 * so the per-IP limits, shared by the instances, do not cap the bench), in interleaved rounds.
 * Signatures are verified through a local anvil. With `quotas`, also the one and the two
 * PostgreSQL instances each capped at `instanceCpus` cores (bench/cluster/cpuQuota.ts), the same
 * processes with the cap set for those rows only.
 */
import type { ChildProcess } from 'node:child_process'
import { generateKeyPairSync } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { anvil, getFreePort } from '@latchkey/devnet'
import { createKms, generateApiKeyPair } from '@latchkey/kms'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { percentile } from '../kms/instances.js'
import { startService, stopService } from '../services.js'
import { fixed, freshDatabase, type Labels, quotaLabels, type Row, report, roundRatios } from './common.js'
import type { CpuGroup, CpuQuotas } from './cpuQuota.js'

const LABELS = { sqlite: 'backend, 1 instance (SQLite)', one: 'backend, 1 (PostgreSQL)', two: 'backend, 2 (one PostgreSQL)' }
const origin = 'http://localhost:5173'

type Shared = { kmsUrl: string; organizationId: string; apiPublicKey: string; apiPrivateKey: string; signerPublicKey: string; rpcUrl: string; jwtKey: string }

/** A latchkey-server process on `store`; resolves once it answers /readyz. */
async function startBackend(shared: Shared, store: { databaseUrl: string } | { databasePath: string }) {
  const args = [
    ...('databasePath' in store ? ['--db', store.databasePath] : []),
    ...['--kms-url', shared.kmsUrl, '--organization-id', shared.organizationId, '--api-public-key', shared.apiPublicKey],
    ...['--session-signer-public-key', shared.signerPublicKey, '--allowed-origin', origin, '--chain', `31337=${shared.rpcUrl}`, '--trust-proxy'],
  ]
  return startService('latchkey-server', 'packages/server/src/cli.ts', await getFreePort(), args, {
    DATABASE_URL: 'databaseUrl' in store ? store.databaseUrl : '',
    LATCHKEY_API_PRIVATE_KEY: shared.apiPrivateKey,
    LATCHKEY_SESSION_JWT_KEY: shared.jwtKey,
  })
}

let ipCounter = 0
/** One wallet's sign-in on `url`, from an address of its own; the status of the sign-in. */
async function signIn(url: string, wallet: ReturnType<typeof privateKeyToAccount>) {
  ipCounter++
  const headers = { origin, 'x-forwarded-proto': 'http', 'x-forwarded-for': `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}` }
  const nonceResponse = await fetch(`${url}/auth/nonce`, { headers })
  const { nonce } = (await nonceResponse.json()) as { nonce: string }
  const cookie = nonceResponse.headers
    .getSetCookie()
    .map((line) => line.split(';')[0])
    .join('; ')
  const message = createSiweMessage({
    address: wallet.address,
    chainId: 31337,
    domain: 'localhost:5173',
    uri: origin,
    version: '1',
    nonce,
    issuedAt: new Date(),
  })
  const signature = await wallet.signMessage({ message })
  const response = await fetch(`${url}/auth/siwe`, {
    method: 'POST',
    body: JSON.stringify({ message, signature }),
    headers: { ...headers, cookie, 'content-type': 'application/json' },
  })
  await response.arrayBuffer()
  return response.status
}

async function measure(label: string, urls: readonly string[], signIns: number, concurrency: number) {
  const wallets = Array.from({ length: signIns }, () => privateKeyToAccount(generatePrivateKey()))
  const latencies: number[] = []
  let failed = 0
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async (_, slot) => {
      const url = urls[slot % urls.length]!
      while (next < wallets.length) {
        const wallet = wallets[next++]!
        const sent = performance.now()
        const status = await signIn(url, wallet).catch(() => 0)
        latencies.push(performance.now() - sent)
        if (status !== 200) failed++
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  return { label, rate: signIns / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), failed }
}

export async function backendSection(options: {
  postgresUrl: string
  rounds: number
  signIns: number
  concurrency: number
  aloneSignIns: number
  quotas?: CpuQuotas | undefined
  instanceCpus: number
}): Promise<number> {
  const labels: Labels = { ...LABELS, quota: options.quotas ? quotaLabels(LABELS, options.instanceCpus) : undefined }
  const dir = await mkdtemp(join(tmpdir(), 'latchkey-bench-cluster-backend-'))
  const chain = anvil({ port: await getFreePort(), chainId: 31337 })
  await chain.start()
  const kms = createKms({ port: await getFreePort() })
  await kms.start()
  const children: ChildProcess[] = []
  const rows: Row[] = []
  // The target is latency: sign-in routes on PostgreSQL within 1.5× their SQLite latency.
  // Under load a request's time is mostly its wait in the queue, so latency is also taken alone.
  const alone: Row[] = []
  try {
    const backendKey = generateApiKeyPair()
    const { organizationId } = await kms.createParentOrganization({ name: 'Bench', userName: 'backend', publicKey: backendKey.apiPublicKey })
    const shared: Shared = {
      kmsUrl: kms.url,
      organizationId,
      ...backendKey,
      signerPublicKey: kms.signerPublicKey,
      rpcUrl: chain.url,
      jwtKey: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    }
    const groups = new Map<string, CpuGroup>()
    const start = async (store: { databaseUrl: string } | { databasePath: string }, group?: string) => {
      const backend = await startBackend(shared, store)
      children.push(backend.child)
      if (group && options.quotas) {
        const made = options.quotas.group(group)
        made.add(backend.child.pid!)
        groups.set(backend.url, made)
      }
      return backend.url
    }
    const two = await freshDatabase(options.postgresUrl, 'cluster_backend_two')
    const setups: { label: string; urls: string[]; cpus?: number }[] = [
      { label: LABELS.sqlite, urls: [await start({ databasePath: join(dir, 'server.db') })] },
      { label: LABELS.one, urls: [await start({ databaseUrl: await freshDatabase(options.postgresUrl, 'cluster_backend_one') }, 'backend-one')] },
      { label: LABELS.two, urls: [await start({ databaseUrl: two }, 'backend-two-1'), await start({ databaseUrl: two }, 'backend-two-2')] },
    ]
    if (labels.quota)
      setups.push(
        { label: labels.quota.one, urls: setups[1]!.urls, cpus: labels.quota.cpus },
        { label: labels.quota.two, urls: setups[2]!.urls, cpus: labels.quota.cpus },
      )
    const limit = (urls: readonly string[], cpus: number | undefined) => {
      for (const url of urls) groups.get(url)?.limit(cpus)
    }
    // Warm-up: each instance's first sign-ins compile its paths.
    for (const setup of setups.slice(0, 3)) await measure(setup.label, setup.urls, 50, options.concurrency)
    for (let round = 1; round <= options.rounds; round++)
      for (const setup of setups) {
        limit(setup.urls, setup.cpus)
        try {
          rows.push({ ...(await measure(setup.label, setup.urls, options.signIns, options.concurrency)), round })
        } finally {
          limit(setup.urls, undefined)
        }
        if (setup.label === LABELS.sqlite || setup.label === LABELS.one)
          alone.push({ ...(await measure(setup.label, setup.urls, options.aloneSignIns, 1)), round })
      }
  } finally {
    await Promise.all(children.map(stopService))
    await kms.stop()
    await chain.stop()
    await rm(dir, { recursive: true, force: true })
  }
  const failed = report(
    `backend scale-out: ${options.signIns} SIWE sign-ins (nonce, signature, session) per setup and round, ${options.concurrency} in flight, the client in the bench's process`,
    'sign-ins',
    rows,
    labels,
    {},
  )
  const latency = roundRatios(alone, LABELS.one, LABELS.sqlite, 'p50')
  const p50 = (label: string) => alone.filter((row) => row.label === label).map((row) => fixed(row.p50, 1))
  console.log(
    `\n  one sign-in at a time, ${options.aloneSignIns} per setup and round: p50 SQLite ${p50(LABELS.sqlite).join(', ')} ms; PostgreSQL ${p50(LABELS.one).join(', ')} ms`,
  )
  console.log(
    `  PostgreSQL / SQLite p50     ${fixed(latency.median, 2)}× median of the rounds' ratios (${fixed(latency.low, 2)}–${fixed(latency.high, 2)}) (target ≤ 1.5: ${latency.median <= 1.5 ? 'met' : 'missed'})`,
  )
  console.log(`  (load average ${loadavg()[0]!.toFixed(2)}: the instances, PostgreSQL, anvil and the client share this machine's cores)`)
  return failed
}
