/**
 * The app backend's sign-in routes on PostgreSQL beside SQLite, in the same run: per-route
 * latency (p50, p99) of the routes whose work is the store's, called in-process through
 * `app.request` so that the figure is the route's own time, not HTTP's. The target (issue 14):
 * PostgreSQL within 1.5× of SQLite.
 *
 *   npm run bench:backend [-- --requests 400 --concurrency 8]
 *
 * Per round, as a browser signing in with a passkey and an app service using the session:
 * `POST /auth/login` (a kms session JWT: verify, check unspent, look the account up, spend it,
 * start the session), `GET /auth/session`, `POST /auth/token` (a refresh token stored, an ES256
 * JWT signed), `POST /auth/token/refresh` (a rotation in one serializable transaction), and
 * `GET /auth/nonce` (SIWE's first step: prune and insert). The kms is never called: the accounts
 * are in the store, as after their sign-up. SQLite is a WAL file in a temp directory; PostgreSQL a
 * throwaway local cluster (scripts/ensure-postgres.mjs), both on this machine. Rounds run
 * sequentially, then `--concurrency` at a time (login only) to show contention; the two stores
 * take turns round by round (and chunk by chunk), so both see the same process and machine.
 */
import { generateKeyPairSync } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { createServerApp, openStore, type Store } from '@latchkey/server'
import { generateP256KeyPair } from '@turnkey/crypto'
import { startPostgres } from '../scripts/ensure-postgres.mjs'
import { jwtSigner } from '../test/jwtSigner.js'
import { wholeNumberArg as arg } from './args.js'

/** The app page the requests come from, as a browser names it. */
const PAGE = 'http://localhost:5173'
const requests = arg('--requests', 400)
const concurrency = arg('--concurrency', 8)
const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN

const routes = ['POST /auth/login', 'GET /auth/session', 'POST /auth/token', 'POST /auth/token/refresh', 'GET /auth/nonce'] as const
type Route = (typeof routes)[number]
type Figures = { sequential: Record<Route, number[]>; concurrentLogin: number[] }

/** A backend app on `store` with its accounts written; its rounds are run by the caller, interleaved with the other store's. */
async function prepare(store: Store) {
  const signer = jwtSigner()
  const backendKey = generateP256KeyPair()
  const app = createServerApp({
    store,
    // Never called: every account the bench signs in is in the store.
    kmsUrl: 'http://127.0.0.1:9',
    organizationId: 'parent',
    apiPublicKey: backendKey.publicKey,
    apiPrivateKey: backendKey.privateKey,
    sessionSignerPublicKey: signer.publicKey,
    appName: 'Bench',
    allowedOrigins: [PAGE],
    sessionJwtKey: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    sessionJwtIssuer: 'https://api.bench.example',
    // Each round is another client: the per-IP nonce limit stays out of the figures.
    ipOf: (request) => request.headers.get('x-bench-client') ?? 'unknown',
  })
  const total = requests + 50 + requests
  for (let i = 0; i < total; i++)
    await store.insertPasskeyAccount({
      credential_id: `credential-${i}`,
      organization_id: `org-${i}`,
      user_id: `user-${i}`,
      address: `0x${i.toString(16).padStart(40, '0')}`,
      unverified_email: null,
      passkey_identifier: null,
      created_at: Date.now(),
    })
  const jwtFor = (i: number) =>
    signer.sign({
      exp: Math.floor(Date.now() / 1000) + 3600,
      public_key: backendKey.publicKey,
      session_type: 'SESSION_TYPE_READ_WRITE',
      user_id: `user-${i}`,
      organization_id: `org-${i}`,
    })
  const json = (body: unknown, cookie?: string) => ({
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', origin: PAGE, ...(cookie ? { cookie } : {}) },
  })
  const timed = async (latencies: number[] | undefined, call: () => Response | Promise<Response>) => {
    const started = performance.now()
    const response = await call()
    const elapsed = performance.now() - started
    if (response.status >= 300) throw new Error(`${response.status}: ${await response.text()}`)
    latencies?.push(elapsed)
    return response
  }
  const sequential = Object.fromEntries(routes.map((route) => [route, [] as number[]])) as Record<Route, number[]>
  const round = async (i: number, record: boolean) => {
    const at = (route: Route) => (record ? sequential[route] : undefined)
    const login = await timed(at('POST /auth/login'), () => app.request('/auth/login', json({ session: jwtFor(i) })))
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!
    await timed(at('GET /auth/session'), () => app.request('/auth/session', { headers: { cookie } }))
    const token = await timed(at('POST /auth/token'), () => app.request('/auth/token', json({}, cookie)))
    const { refreshToken } = (await token.json()) as { refreshToken: string }
    await timed(at('POST /auth/token/refresh'), () => app.request('/auth/token/refresh', json({ refreshToken })))
    await timed(at('GET /auth/nonce'), () => app.request('/auth/nonce', { headers: { 'x-bench-client': String(i) } }))
  }
  const concurrentLogin: number[] = []
  /** Logins `from` to `to` (exclusive), `concurrency` at a time. */
  const concurrent = async (from: number, to: number) => {
    let next = from
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < to) {
          const i = next++
          await timed(concurrentLogin, () => app.request('/auth/login', json({ session: jwtFor(i) })))
        }
      }),
    )
  }
  const figures: Figures = { sequential, concurrentLogin }
  return { round, concurrent, figures }
}

const directory = await mkdtemp(join(tmpdir(), 'latchkey-bench-backend-'))
const postgres: { url: string; stop: () => Promise<void> } = await startPostgres()
let sqlite: Figures
let onPostgres: Figures
try {
  const stores = [await openStore(join(directory, 'server.db')), await openStore(postgres.url)] as const
  const [onSqlite, onPg] = [await prepare(stores[0]), await prepare(stores[1])]
  // Round by round, the two stores alternate (and swap who goes first), so that the process's
  // warm-up, garbage collection and the machine's other work fall on both alike.
  const both = async (work: (side: typeof onSqlite) => Promise<void>, i: number) => {
    for (const side of i % 2 ? [onPg, onSqlite] : [onSqlite, onPg]) await work(side)
  }
  for (let i = 0; i < 50; i++) await both((side) => side.round(i, false), i)
  for (let i = 50; i < 50 + requests; i++) await both((side) => side.round(i, true), i)
  const chunk = Math.max(concurrency, Math.ceil(requests / 10))
  for (let from = 50 + requests, turn = 0; from < 50 + 2 * requests; from += chunk, turn++)
    await both((side) => side.concurrent(from, Math.min(from + chunk, 50 + 2 * requests)), turn)
  sqlite = onSqlite.figures
  onPostgres = onPg.figures
  for (const store of stores) await store.close()
} finally {
  await postgres.stop()
  await rm(directory, { recursive: true, force: true })
}

const ms = (value: number) => `${value.toFixed(2)} ms`
const row = (name: string, a: number[], b: number[]) => {
  const [sa, sb] = [[...a].sort((x, y) => x - y), [...b].sort((x, y) => x - y)]
  const [p50a, p50b] = [percentile(sa, 50), percentile(sb, 50)]
  return `  ${name.padEnd(34)} ${ms(p50a).padStart(9)} ${ms(percentile(sa, 99)).padStart(9)}   ${ms(p50b).padStart(9)} ${ms(percentile(sb, 99)).padStart(9)}   ${`${(p50b / p50a).toFixed(2)}×`.padStart(6)}`
}
console.log(`\nbackend sign-in routes, in-process (app.request), ${requests} sequential rounds, then ${requests} logins ${concurrency} at a time\n`)
console.log(
  `  ${'route'.padEnd(34)} ${'SQLite p50'.padStart(9)} ${'p99'.padStart(9)}   ${'PG p50'.padStart(9)} ${'p99'.padStart(9)}   ${'PG/SQLite'.padStart(6)}`,
)
for (const route of routes) console.log(row(route, sqlite.sequential[route], onPostgres.sequential[route]))
console.log(row(`POST /auth/login ×${concurrency} concurrent`, sqlite.concurrentLogin, onPostgres.concurrentLogin))
const signIn = (figures: Figures) =>
  percentile(
    [...figures.sequential['POST /auth/login']].sort((x, y) => x - y),
    50,
  )
console.log(`\n  sign-in (POST /auth/login, p50): PostgreSQL ${(signIn(onPostgres) / signIn(sqlite)).toFixed(2)}× SQLite (target ≤ 1.5×)\n`)
