/**
 * The key-management service under load: stamped sign_raw_payload requests per second through
 * HTTP (SQLite store, or PostgreSQL when DATABASE_URL is set; stamp verification, activity stored), printed beside the raw rate of the
 * same crypto measured in this run (P-256 stamp verification + secp256k1 signing, on one core, the
 * fastest way this machine has: node:crypto for P-256, noble with the service's precomputed base
 * table for secp256k1 — OpenSSL's secp256k1 is no faster and signs only what it hashes itself);
 * then the email sign-in round trip through the app backend.
 *
 * The organization is set up as a production app's is (createBenchUser with policies): its
 * delegated user signs under one of BENCH_POLICY_COUNT policies, with a grant beside them, the rate
 * limit and the audit trail on, so that every signature pays the permission model and every rule.
 *
 * Then the floor (bench/kms/floor.ts): the same load against a server that only reads, verifies,
 * signs, writes an activity and an audit row and answers, so that what the kms's own rules cost is
 * told apart from what no implementation on Node and SQLite can skip.
 *
 * Then the profile: the same signatures one at a time (`--profile-requests`), each submission's
 * main-thread time split into its stages (packages/kms/src/http/stages.ts) in µs per request,
 * beside the process's CPU over the same window and the raw crypto of this run.
 *
 *   npm run bench:kms [-- --requests 6000 --warmup 5000 --concurrency 32 --profile-requests 1500 --compare-requests 3000] [--no-compare]
 *
 * Then the stores side by side, each instance a `latchkey-kms` process of its own: one on SQLite,
 * one on PostgreSQL, two on one PostgreSQL (clients spread over both), with throughput and
 * p50/p99 for each (targets: one PostgreSQL ≥ 0.8× SQLite; two ≥ 1.5× one).
 *
 * The server runs in this process; the client (bench/kms/load.ts) runs in its own process, stamps
 * every body before timing and keeps `concurrency` requests in flight over keep-alive connections.
 * Both processes' CPU time over the timed window is printed, so it shows who set the pace.
 */
import { fork } from 'node:child_process'
import { createPublicKey, generateKeyPairSync, randomBytes, sign, verify } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { getFreePort } from '@latchkey/devnet'
import { generateApiKeyPair as apiKeyPair, createKms, createStageProfile, STAGES, type Stage } from '@latchkey/kms'
import { createServerApp, openStore } from '@latchkey/server'
import { secp256k1 } from '@noble/curves/secp256k1'
import pg from 'pg'
import { startPostgres } from '../scripts/ensure-postgres.mjs'
import { wholeNumberArg as arg } from './args.js'
import { startFloor } from './kms/floor.js'
import { sealCodeAsFrame } from './kms/frameCode.js'
import { BENCH_POLICY_COUNT, createBenchUser, measureInstances, percentile } from './kms/instances.js'
import type { LoadResult, LoadStart } from './kms/load.js'

const requests = arg('--requests', 6000)
// Untimed requests first, as the raw crypto's first round is: V8 keeps compiling the kms's hot path
// for its first few thousand requests (about 8 s at this bench's rate), and a service's steady
// state is what every signature of a long-running instance costs.
const warmup = arg('--warmup', 5000)
const concurrency = arg('--concurrency', 32)
const compareRequests = arg('--compare-requests', 3000)
const profileRequests = arg('--profile-requests', 1500)
// `--no-compare`: the in-process figures and the profile only, without the stores side by side.
const compare = !process.argv.includes('--no-compare')
const fixed = (value: number, digits = 0) => value.toFixed(digits)
const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000

/**
 * The crypto one request needs, alone, on one core: verify a P-256 stamp over a body of the
 * bench's size (node:crypto, key object made once, as the service keeps it), then sign a 32-byte
 * digest with secp256k1 (noble, low-S, with the recovery bit). Best of three rounds, per CPU second.
 */
function rawCryptoRates() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const key = createPublicKey({ key: publicKey.export({ format: 'der', type: 'spki' }), format: 'der', type: 'spki' })
  const body = randomBytes(180).toString('base64')
  const stamp = sign('sha256', Buffer.from(body), privateKey)
  const signingKey = secp256k1.utils.randomPrivateKey()
  const digests = Array.from({ length: 1000 }, () => randomBytes(32))
  // Per CPU second of this process, not per wall second: on a machine shared with other work a
  // round may wait for a core, and that wait is not the crypto's cost.
  const rate = (work: (i: number) => void) => {
    let best = 0
    for (let round = 0; round < 4; round++) {
      const started = process.cpuUsage()
      for (let i = 0; i < digests.length; i++) work(i)
      // The first round warms the JIT and builds the tables.
      if (round > 0) best = Math.max(best, digests.length / (cpuMs(process.cpuUsage(started)) / 1000))
    }
    return best
  }
  const verifies = () => {
    if (!verify('sha256', Buffer.from(body), key, stamp)) throw new Error('stamp did not verify')
  }
  const signs = (i: number) => void secp256k1.sign(digests[i]!, signingKey, { lowS: true })
  return {
    verify: rate(verifies),
    sign: rate(signs),
    both: rate((i) => {
      verifies()
      signs(i)
    }),
  }
}

const dir = await mkdtemp(join(tmpdir(), 'latchkey-bench-kms-'))
const databaseUrl = process.env.DATABASE_URL
// The stage profile times only the profile pass (one request in flight); under the load it is off,
// each hook a call that returns.
const stages = createStageProfile()
const kms = createKms({ port: await getFreePort(), ...(databaseUrl ? { databaseUrl } : { databasePath: join(dir, 'kms.db') }), stageProfile: stages })
await kms.start()
try {
  const backendKey = apiKeyPair()
  const parent = await kms.createParentOrganization({ name: 'Bench', userName: 'backend', publicKey: backendKey.apiPublicKey })

  const user = await createBenchUser(kms.url, backendKey, parent.organizationId, 'bench@example.test', { policies: true })

  /**
   * A load client in its own process: it stamps and warms up, says `ready`; the window opens on
   * `go`. `window` brackets the timed window (called at `go` and at the result).
   */
  async function runLoad(start: LoadStart, window: { open(): void; close(): void }) {
    const client = fork(new URL('./kms/load.ts', import.meta.url).pathname, [], {
      execArgv: ['--conditions=source', '--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const messages = (async function* () {
      while (true)
        yield await new Promise<{ type: string }>((resolve, reject) => {
          client.once('message', (message) => resolve(message as { type: string }))
          client.once('exit', (code) => reject(new Error(`the load client exited (${code})`)))
        })
    })()
    client.send(start)
    if ((await messages.next()).value?.type !== 'ready') throw new Error('the load client did not get ready')
    window.open()
    client.send({ type: 'go' })
    const result = (await messages.next()).value as LoadResult
    window.close()
    return result
  }
  const start: LoadStart = {
    type: 'start',
    url: kms.url,
    organizationId: user.organizationId,
    signWith: user.signWith,
    ...user.userKey,
    requests,
    concurrency,
    warmup,
  }
  let loadBefore = 0
  let loadAfter = 0
  let serverCpu = process.cpuUsage()
  let serverMs = 0
  const load = await runLoad(start, {
    open() {
      loadBefore = loadavg()[0]!
      serverCpu = process.cpuUsage()
    },
    close() {
      serverMs = cpuMs(process.cpuUsage(serverCpu))
      loadAfter = loadavg()[0]!
    },
  })
  const latencies = load.latencies.sort((a, b) => a - b)
  const rate = load.served / load.seconds
  // After the load: noble's secp256k1 is the service's own instance, with the base table it signed with.
  const raw = rawCryptoRates()

  // The floor: the same load against a server that does only what no implementation can skip.
  const floor = await startFloor(join(dir, 'floor.db'))
  let floorCpu = process.cpuUsage()
  let floorMs = 0
  const floorLoad = await runLoad(
    { ...start, url: floor.url, tag: 'floor' },
    {
      open() {
        floorCpu = process.cpuUsage()
      },
      close() {
        floorMs = cpuMs(process.cpuUsage(floorCpu))
      },
    },
  ).finally(() => floor.stop())

  // The profile: one request in flight, so that each lap of the stage clock is this request's.
  let profileCpu = process.cpuUsage()
  let profileMs = 0
  let profile = stages.take()
  const profiled = await runLoad(
    { ...start, requests: profileRequests, concurrency: 1, warmup: 200, tag: 'profile' },
    {
      open() {
        stages.take()
        stages.enable(true)
        profileCpu = process.cpuUsage()
      },
      close() {
        profileMs = cpuMs(process.cpuUsage(profileCpu))
        stages.enable(false)
        profile = stages.take()
      },
    },
  )

  // Email sign-in round trip: backend start → code from the dev inbox → verify, as a browser does it.
  const store = await openStore(':memory:')
  const app = createServerApp({
    store,
    kmsUrl: kms.url,
    organizationId: parent.organizationId,
    ...backendKey,
    appName: 'Bench',
    allowedOrigins: ['http://localhost:5173'],
  })
  const rounds: number[] = []
  const sealings: number[] = []
  for (let i = 0; i < 10; i++) {
    const email = `round${i}@example.test`
    const begun = performance.now()
    const started = await app.request('/auth/email/start', {
      method: 'POST',
      body: JSON.stringify({ email }),
      headers: { 'content-type': 'application/json', origin: 'http://localhost:5173' },
    })
    const sent = (await started.json()) as { otpId: string; otpEncryptionTargetBundle: string }
    const inbox = (await (await fetch(`${kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
    const code = /code is (\d{6})/.exec(inbox.messages.find((message) => message.to === email)!.text)![1]!
    // The code as the consent frame answers it, by the frame's own code on WebCrypto: the bundle
    // checked, the code sealed to the kms, with the frame key's signature of its login.
    const sealing = performance.now()
    const sealed = await sealCodeAsFrame({ otpEncryptionTargetBundle: sent.otpEncryptionTargetBundle, email, code, signerPublicKey: kms.signerPublicKey })
    sealings.push(performance.now() - sealing)
    const verifyResponse = await app.request('/auth/email/verify', {
      method: 'POST',
      body: JSON.stringify({ otpId: sent.otpId, ...sealed }),
      headers: { 'content-type': 'application/json', origin: 'http://localhost:5173' },
    })
    if (verifyResponse.status !== 200) throw new Error(`sign-in failed: ${await verifyResponse.text()}`)
    rounds.push(performance.now() - begun)
  }
  await store.close()
  rounds.sort((a, b) => a - b)
  sealings.sort((a, b) => a - b)

  const serverShare = serverMs / 1000 / load.seconds
  console.log(
    `\nkms: ${load.served} stamped sign_raw_payload requests over HTTP, ${concurrency} in flight, client in its own process (${databaseUrl ? 'PostgreSQL store' : 'SQLite store, WAL'}), signed by a delegated user under ${BENCH_POLICY_COUNT} policies and a grant, rate limit and audit on\n`,
  )
  console.log(`  requests per second      ${fixed(rate)}   (target ≥ 1000: ${rate >= 1000 ? 'met' : 'missed'})`)
  console.log(`  latency p50 / p99        ${fixed(percentile(latencies, 50), 1)} / ${fixed(percentile(latencies, 99), 1)} ms`)
  console.log(`  failed                   ${load.failed}${load.firstFailure ? ` (first: ${load.firstFailure})` : ''}`)
  console.log(
    `  server CPU               ${fixed((serverMs * 1000) / load.served)} µs per request, ${fixed(serverShare * 100)} % of one core (one event loop, plus V8's helper threads)`,
  )
  console.log(`  per server CPU second    ${fixed((load.served * 1000) / serverMs)} requests (what the service does with one core to itself)`)
  console.log(
    `  client CPU               ${fixed((load.cpuMs * 1000) / load.served)} µs per request, ${fixed((load.cpuMs / 1000 / load.seconds) * 100)} % of one core`,
  )
  console.log(
    `  machine load average     ${fixed(loadBefore, 2)} before, ${fixed(loadAfter, 2)} after (this bench adds about 1.2 on its own; more is other work sharing the 2 cores)`,
  )
  console.log(
    `\n  raw crypto on one core, same run: P-256 verify ${fixed(raw.verify)}/s, secp256k1 sign ${fixed(raw.sign)}/s, both ${fixed(raw.both)}/s (${fixed(1e6 / raw.both)} µs)`,
  )
  // Rates on the wall clock (the issue's figure, for an idle machine, where the kms has its core),
  // and per CPU second (what holds on a busy machine: neither side is charged for waiting for a core).
  const ratio = rate / raw.both
  const cpuRatio = (load.served * 1000) / serverMs / raw.both
  console.log(
    `  kms / raw crypto         ${fixed(ratio, 2)}× requests per second over the crypto's per CPU second (on an idle machine, where the kms has its core)`,
  )
  console.log(
    `  per CPU second / raw     ${fixed(cpuRatio, 2)}× (a signature at ${fixed(1 / cpuRatio, 2)}× its crypto's CPU; target ≥ 0.5, at most 2×: ${cpuRatio >= 0.5 ? 'met' : 'missed'})`,
  )
  const floorRatio = (floorLoad.served * 1000) / floorMs / raw.both
  console.log(
    `  the floor                ${fixed((floorMs * 1000) / floorLoad.served)} µs per request, ${fixed(floorRatio, 2)}× the raw crypto per CPU second: Node's HTTP server, the stamp, the signature, an activity and an audit row, nothing looked up (bench/kms/floor.ts)${floorLoad.failed ? `; ${floorLoad.failed} failed, first: ${floorLoad.firstFailure}` : ''}`,
  )
  console.log(
    `  kms / floor              ${fixed(cpuRatio / floorRatio, 2)}× per server CPU second (what the kms's own rules cost: authentication, policies and grant, rate limit, idempotency, the envelope)`,
  )

  // The profile's table: each stage's main-thread time per request, then what the process spent outside them.
  const perRequest = (micros: number) => micros / profile.requests
  const staged = STAGES.reduce((sum, stage) => sum + profile.micros[stage], 0)
  const profileCpuPerRequest = (profileMs * 1000) / profiled.served
  const names: Record<Stage, string> = {
    http: 'HTTP parse and body read',
    rateLimit: 'rate-limit check',
    stamp: 'stamp verification',
    authentication: 'authentication',
    authorization: 'authorization and policies',
    activity: 'idempotency and activity write',
    signature: 'the signature',
    serialisation: 'result serialisation',
    audit: 'the audit event',
  }
  console.log(
    `\nWhere a signature's time goes: ${profiled.served} more, one in flight (${profile.requests} timed by the stage clock, ${profiled.failed} failed), µs per request\n`,
  )
  for (const stage of STAGES)
    console.log(
      `  ${names[stage].padEnd(32)} ${fixed(perRequest(profile.micros[stage])).padStart(5)} µs  ${fixed((profile.micros[stage] / staged) * 100).padStart(3)} % of the stages`,
    )
  console.log(`  ${'all stages (the app)'.padEnd(32)} ${fixed(perRequest(staged)).padStart(5)} µs`)
  console.log(
    `  ${'outside them'.padEnd(32)} ${fixed(profileCpuPerRequest - perRequest(staged)).padStart(5)} µs  (Node's HTTP server, the event loop, V8's helper threads: the process's CPU less the stages)`,
  )
  console.log(
    `  ${'process CPU, this pass'.padEnd(32)} ${fixed(profileCpuPerRequest).padStart(5)} µs  (under the load above: ${fixed((serverMs * 1000) / load.served)} µs)`,
  )
  console.log(`  ${'raw crypto, same run'.padEnd(32)} ${fixed(1e6 / raw.both).padStart(5)} µs  (verify + sign, above)`)
  console.log(
    `\nEmail sign-in round trip through the app backend (first sign-in: sub-organization, wallet, code, verify), 10 runs: median ${fixed(rounds[5]!, 1)} ms, max ${fixed(rounds[9]!, 1)} ms (target ≤ 50: ${rounds[5]! <= 50 ? 'met' : 'missed'}; of it the frame's sealing of the code, median ${fixed(sealings[5]!, 1)} ms)`,
  )
  if (load.failed || floorLoad.failed || profiled.failed) process.exitCode = 1
} finally {
  await kms.stop()
}

if (!compare) await rm(dir, { recursive: true, force: true })
const postgres: { url: string; stop: () => Promise<void> } | undefined = compare ? await startPostgres() : undefined
if (postgres)
  try {
    const databaseOf = async (name: string) => {
      const admin = new pg.Client({ connectionString: postgres.url })
      await admin.connect()
      await admin.query(`create database ${name}`)
      await admin.end()
      const url = new URL(postgres.url)
      url.pathname = `/${name}`
      return { databaseUrl: url.href }
    }
    const rows = [
      await measureInstances('SQLite, 1 instance', 1, { databasePath: join(dir, 'compare.db') }, compareRequests, concurrency, { policies: true }, warmup),
      await measureInstances('PostgreSQL, 1 instance', 1, await databaseOf('bench_one'), compareRequests, concurrency, { policies: true }, warmup),
      await measureInstances('PostgreSQL, 2 instances', 2, await databaseOf('bench_two'), compareRequests, concurrency, { policies: true }, warmup),
    ]
    console.log(`
Stores side by side: ${compareRequests} stamped sign_raw_payload requests each, ${concurrency} in flight, each kms instance its own process, after ${warmup} to warm it up
`)
    for (const row of rows)
      console.log(
        `  ${row.label.padEnd(26)} ${fixed(row.rate).padStart(6)} requests/s   p50 ${fixed(row.p50, 1)} ms   p99 ${fixed(row.p99, 1)} ms   failed ${row.failed}`,
      )
    const [sqlite, one, two] = rows as [(typeof rows)[0], (typeof rows)[0], (typeof rows)[0]]
    console.log(`
  1 PostgreSQL / SQLite     ${fixed(one.rate / sqlite.rate, 2)}× (target ≥ 0.8: ${one.rate / sqlite.rate >= 0.8 ? 'met' : 'missed'})`)
    // Unconstrained, the instances share this machine's cores with PostgreSQL and the client: the
    // target is judged in bench:cluster, each instance capped at its own CPU (bench/README.md).
    console.log(
      `  2 PostgreSQL / 1          ${fixed(two.rate / one.rate, 2)}× (every process sharing this machine's cores; the ≥ 1.5 target is judged by bench:cluster under CPU quotas)`,
    )
    console.log(`  (${loadavg()[0]!.toFixed(2)} load average now: the instances, PostgreSQL and the client share this machine's cores)`)
    if (rows.some((row) => row.failed)) process.exitCode = 1
  } finally {
    await postgres.stop()
    await rm(dir, { recursive: true, force: true })
  }
