import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto'
import { createServer, type ServerResponse } from 'node:http'
import { getFreePort } from '@latchkey/devnet'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { sql } from 'kysely'
import { Webhook } from 'standardwebhooks'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { afterEach, expect, inject, test, vi } from 'vitest'
import { anvilKeys } from '../../../test/chains.js'
import { listening, startCli } from '../../service/test/cliProcess.js'
import { freshDatabaseUrl, testEngine } from '../../service/test/testDatabase.js'
import { createAppServer, LIMITS, oauthNonce, openStore } from '../src/index.js'
import { cookieOf, generateApiKeyPair, newEmail, oauthRedirectUri, origin, softwareAuthenticator, useBackend } from './backend.js'

// Two backend instances on one database (PostgreSQL in `npm run test:server-postgres`, a SQLite
// file in the default run), as behind a load balancer: each over HTTP with its own store
// connection, one session JWT key, the requests of one browser landing on either; one of them
// killed mid-load.

const { t, mailTo, frameAnswer, stampLogin, withPasskey, userStamped } = useBackend({ oidc: true })
const alice = privateKeyToAccount(anvilKeys[9])
const sessionJwtKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()

const started: ReturnType<typeof createAppServer>[] = []
afterEach(async () => {
  for (const server of started.splice(0)) await server.stop()
})

/**
 * `sharedSqliteStore`: on SQLite, both instances on one store (one connection). Linking calls the
 * kms inside its transaction; a second connection to the file would wait for the lock with
 * better-sqlite3's synchronous busy timeout, which in this one process stalls the kms answering
 * the first. Separate processes (and PostgreSQL, here) have no such stall.
 */
async function twoInstances(options: { sharedSqliteStore?: boolean } = {}) {
  const url = await freshDatabaseUrl()
  const shared = options.sharedSqliteStore && testEngine === 'sqlite' ? await openStore(url) : undefined
  const instance = async () => {
    const server = createAppServer({
      ...t.options,
      store: shared ?? (await openStore(url)),
      port: await getFreePort(),
      sessionJwtKey,
      sessionJwtIssuer: 'https://api.example',
      chains: [{ id: 31337, rpcUrl: inject('chainARpc') }],
    })
    await server.start()
    started.push(server)
    return server.url
  }
  // The third: the database both are on, to look at what they wrote.
  return [await instance(), await instance(), url] as const
}

/** A backend instance in a process of its own (to be killed), on the database at `url`. */
async function cliInstance(url: string, args: readonly string[] = []) {
  const portB = await getFreePort()
  const b = startCli(
    'packages/server/src/cli.ts',
    [
      '--port',
      String(portB),
      ...(testEngine === 'postgres' ? [] : ['--db', url]),
      '--kms-url',
      t.options.kmsUrl,
      '--organization-id',
      t.options.organizationId,
      '--api-public-key',
      t.backendKey.apiPublicKey,
      '--session-signer-public-key',
      t.kms.signerPublicKey,
      '--allowed-origin',
      origin,
      '--chain',
      `31337=${inject('chainARpc')}`,
      ...args,
    ],
    {
      LATCHKEY_API_PRIVATE_KEY: t.backendKey.apiPrivateKey,
      LATCHKEY_SESSION_JWT_KEY: sessionJwtKey,
      ...(testEngine === 'postgres' ? { DATABASE_URL: url } : {}),
    },
  )
  await b.waitForLog(listening)
  return { b, urlB: `http://127.0.0.1:${portB}` }
}

type SiweRequest = { json: unknown; cookie: string | undefined }
/**
 * One wallet's sign-in on `base`: a nonce, the signed message; the request's exact body and cookie,
 * to send again. `sending` gets the request before it goes out: if the instance dies while the
 * request is on the wire, the client still has the bytes it may have committed.
 */
async function signIn(base: string, wallet: ReturnType<typeof privateKeyToAccount>, sending?: (request: SiweRequest) => void) {
  const nonceResponse = await call(base, '/auth/nonce')
  const { nonce } = (await nonceResponse.json()) as { nonce: string }
  const message = createSiweMessage({
    address: wallet.address,
    chainId: 31337,
    domain: 'localhost:5173',
    uri: origin,
    version: '1',
    nonce,
    issuedAt: new Date(),
  })
  const request: SiweRequest = { json: { message, signature: await wallet.signMessage({ message }) }, cookie: cookieOf(nonceResponse) }
  sending?.(request)
  return { request, response: await call(base, '/auth/siwe', request) }
}

/** `ip` is the client address the instances see (the test's ipOf reads x-test-ip): forty clients, not one over the per-IP limit. */
const call = (base: string, path: string, init: { json?: unknown; cookie?: string | undefined; ip?: string } = {}) =>
  fetch(`${base}${path}`, {
    method: init.json === undefined ? 'GET' : 'POST',
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
    headers: {
      origin,
      'content-type': 'application/json',
      ...(init.cookie ? { cookie: init.cookie } : {}),
      ...(init.ip ? { 'x-test-ip': init.ip } : {}),
    },
  })

/** Forty copies of one request at once, alternating between the two instances: each answer's status and body. */
const fortyAtOnce = (a: string, b: string, path: string, json: unknown) =>
  Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      const response = await call(i % 2 ? b : a, path, { json, ip: `203.0.113.${i}` })
      return { status: response.status, body: (await response.json()) as Record<string, unknown>, cookie: response.headers.get('set-cookie') }
    }),
  )

/** The rows of `table` (of the instances' shared database at `url`) where `column` is `value`. */
async function rowsOf(url: string, table: 'sessions' | 'accounts' | 'spent_session_tokens' | 'oauth_nonces', column: string, value: string) {
  const store = await openStore(url)
  try {
    return (await sql<Record<string, unknown>>`select * from ${sql.table(table)} where ${sql.ref(column)} = ${value}`.execute(store.database.db)).rows
  } finally {
    await store.close()
  }
}

test('behavior: an account made on one instance signs in on the other; its session is the same on both, and ends on both', async () => {
  const [a, b] = await twoInstances()
  const email = newEmail()
  // Sign-up on A: the code is asked for on A, redeemed on B.
  const start = await call(a, '/auth/email/start', { json: { email } })
  expect(start.status).toBe(200)
  const sent = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
  const code = /sign-in code is (\d{6})\./.exec((await mailTo(email))[0]!.text)![1]!
  const verify = await call(b, '/auth/email/verify', { json: await frameAnswer(sent, code) })
  expect(verify.status).toBe(200)
  const account = (await verify.json()) as { organizationId: string; userId: string; address: string }
  const cookie = cookieOf(verify)

  const sessionOn = async (base: string) => (await call(base, '/auth/session', { cookie })).json()
  const expected = {
    email,
    organizationId: account.organizationId,
    userId: account.userId,
    address: account.address,
    kind: 'email',
    expiresAt: expect.any(String),
  }
  expect(await sessionOn(a)).toEqual(expected)
  expect(await sessionOn(b)).toEqual(expected)
  // A second sign-in of the same email, on B, finds the account A created: no second sub-organization.
  const again = await call(b, '/auth/email/start', { json: { email } })
  expect(again.status).toBe(200)
  const suborganizations = await t.backend.getSubOrgIds({ organizationId: t.parentOrganizationId, filterType: 'EMAIL', filterValue: email })
  expect(suborganizations.organizationIds).toEqual([account.organizationId])

  // A token from A refreshes on B and verifies against either's JWKS; signing out on B ends it on A.
  const token = (await (await call(a, '/auth/token', { json: {}, cookie })).json()) as { accessToken: string; refreshToken: string }
  const { payload } = await jwtVerify(token.accessToken, createRemoteJWKSet(new URL(`${b}/.well-known/jwks.json`)), { issuer: 'https://api.example' })
  expect(payload).toMatchObject({ sub: account.address, org: account.organizationId, email })
  const refreshed = await call(b, '/auth/token/refresh', { json: { refreshToken: token.refreshToken } })
  expect(refreshed.status).toBe(200)
  expect((await call(b, '/auth/signout', { json: {}, cookie })).status).toBe(204)
  expect(await sessionOn(a)).toBeNull()
  const { refreshToken } = (await refreshed.json()) as { refreshToken: string }
  expect((await call(a, '/auth/token/refresh', { json: { refreshToken } })).status).toBe(401)
})

test('behavior: the first sign-in of one email, started on both instances at once, makes one account; its newest code signs in there, through the start it was sent for', async () => {
  const [a, b] = await twoInstances()
  const email = newEmail()
  // Both find no account and make a sub-organization; one account is stored, and each start's code must be in it.
  const starts = await Promise.all([a, b].map((base) => call(base, '/auth/email/start', { json: { email } })))
  expect(starts.map((start) => start.status)).toEqual([200, 200])
  const [newest] = await mailTo(email)
  const code = /sign-in code is (\d{6})\./.exec(newest!.text)![1]!
  const answers = []
  for (const start of starts) {
    const sent = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
    answers.push(await call(a, '/auth/email/verify', { json: await frameAnswer(sent, code) }))
  }
  // One start signs in; the other's code is an older one of the same account, which the newest replaced.
  const statuses = answers.map((answer) => answer.status)
  expect([...statuses].sort()).toEqual([200, 400])
  const signedIn = (await answers[statuses.indexOf(200)]!.json()) as { organizationId: string }
  expect(await answers[statuses.indexOf(400)]!.json()).toEqual({ error: { code: 'invalid_code', message: 'a newer code was sent: use the latest one' } })
  // The account a later sign-in finds is that one.
  const again = await call(b, '/auth/email/start', { json: { email } })
  const [latest] = await mailTo(email)
  const verify = await call(b, '/auth/email/verify', { json: await frameAnswer(await again.json(), /sign-in code is (\d{6})\./.exec(latest!.text)![1]!) })
  expect(((await verify.json()) as { organizationId: string }).organizationId).toBe(signedIn.organizationId)
})

test('behavior: one SIWE nonce sent to both instances at once signs in exactly once', async () => {
  const [a, b] = await twoInstances()
  const nonceResponse = await call(a, '/auth/nonce')
  const { nonce } = (await nonceResponse.json()) as { nonce: string }
  const message = createSiweMessage({
    address: alice.address,
    chainId: 31337,
    domain: 'localhost:5173',
    uri: origin,
    version: '1',
    nonce,
    issuedAt: new Date(),
  })
  const body = { message, signature: await alice.signMessage({ message }) }
  const answers = await Promise.all([a, b, a, b].map((base) => call(base, '/auth/siwe', { json: body, cookie: cookieOf(nonceResponse) })))
  expect(answers.map((response) => response.status).sort()).toEqual([200, 401, 401, 401])
})

test('behavior: a rate limit is one limit across instances: the codes for one email count on both', async () => {
  const [a, b] = await twoInstances()
  const email = newEmail()
  const statuses: number[] = []
  for (let i = 0; i < LIMITS.perEmail + 1; i++) statuses.push((await call(i % 2 ? b : a, '/auth/email/start', { json: { email } })).status)
  expect(statuses).toEqual([...Array(LIMITS.perEmail).fill(200), 429])
  // Refused on either: the window is the database's, not one process's.
  const onA = await call(a, '/auth/email/start', { json: { email } })
  expect([onA.status, ((await onA.json()) as { error: { code: string } }).error.code]).toEqual([429, 'rate_limited'])
  expect(Number(onA.headers.get('retry-after'))).toBeGreaterThan(0)
})

test('behavior: SIGKILL on one of two instances mid-load loses no acknowledged sign-in, runs none twice, answers no 500', async () => {
  const url = await freshDatabaseUrl()
  const a = createAppServer({
    ...t.options,
    store: await openStore(url),
    port: await getFreePort(),
    sessionJwtKey,
    chains: [{ id: 31337, rpcUrl: inject('chainARpc') }],
  })
  await a.start()
  started.push(a)
  // Instance B a process of its own, to be killed, on the same database.
  const { b, urlB } = await cliInstance(url)

  const wallets = Array.from({ length: 40 }, () => privateKeyToAccount(generatePrivateKey()))
  let acknowledgedByB = 0
  let killed = false
  let fiveAcknowledged!: () => void
  const afterFive = new Promise<void>((resolve) => {
    fiveAcknowledged = resolve
  })
  // Spread over both. Half of B's sign-ins start at once; the other half wait until B has
  // acknowledged five, and B dies as the first of those is about to leave: the kill always lands
  // after acknowledged sign-ins and before at least one that was signed and sent, whatever the
  // machine's speed, with any of the first half still on the wire.
  const first = await Promise.all(
    wallets.map(async (wallet, index) => {
      const base = index % 2 ? urlB : a.url
      let request: SiweRequest | undefined
      try {
        if (base === urlB && index >= 20) await afterFive
        const attempt = await signIn(base, wallet, (sent) => {
          request = sent
          if (base === urlB && acknowledgedByB >= 5 && !killed) {
            killed = true
            b.child.kill('SIGKILL')
          }
        })
        if (base === urlB && attempt.response.status === 200 && ++acknowledgedByB === 5) fiveAcknowledged()
        return { wallet, request, status: attempt.response.status, cookie: cookieOf(attempt.response) }
      } catch {
        // The connection died with B: not acknowledged.
        return { wallet, request, status: 0, cookie: undefined }
      }
    }),
  )
  expect(killed).toBe(true)
  expect((await b.exited).signal).toBe('SIGKILL')
  expect(first.filter((answer) => answer.status !== 200 && answer.status !== 0)).toEqual([])
  expect(first.some((answer) => answer.status === 0)).toBe(true)

  // Every acknowledged sign-in holds on the instance left.
  for (const answer of first.filter((answer) => answer.status === 200)) {
    const session = (await (await call(a.url, '/auth/session', { cookie: answer.cookie })).json()) as { address: string } | null
    expect(session?.address).toBe(answer.wallet.address)
  }
  // What was not acknowledged the client sends again, the same bytes, to A. The nonce is spent
  // as verification starts, so a sign-in B began before it died is refused there ("used"),
  // whether or not B got as far as its session; one B never received runs now. A sign-in whose
  // request never left starts again on A.
  const signedIn = new Set(first.filter((answer) => answer.status === 200).map((answer) => answer.wallet.address))
  for (const answer of first.filter((answer) => answer.status === 0)) {
    const again = answer.request ? await call(a.url, '/auth/siwe', answer.request) : (await signIn(a.url, answer.wallet)).response
    if (again.status === 200) signedIn.add(answer.wallet.address)
    else expect(await again.json()).toEqual({ error: { code: 'invalid_nonce', message: 'This nonce has been used; ask for a new one' } })
  }
  // No signed message makes two sessions; every sign-in answered 200 has exactly its one.
  const store = await openStore(url)
  try {
    for (const wallet of wallets) {
      const rows = await store.database.db.selectFrom('sessions').select('id').where(sql<boolean>`lower(address) = ${wallet.address.toLowerCase()}`).execute()
      // A refused retry leaves B's session if B got that far before it died, none if not.
      if (signedIn.has(wallet.address)) expect(rows, wallet.address).toHaveLength(1)
      else expect(rows.length, wallet.address).toBeLessThanOrEqual(1)
    }
  } finally {
    await store.close()
  }
}, 120_000)

test('behavior: a kill -9 of the backend under sign-in load loses no webhook: every committed user.created and user.authenticated arrives, verified, and a redelivery keeps its webhook-id', async () => {
  // The app's receiver, verifying with standardwebhooks: what arrived, by webhook-id. It holds its
  // answers until the backend is killed, so deliveries the backend sent die with it unanswered.
  const arrivals = new Map<string, string[]>()
  const unverified: string[] = []
  const held: ServerResponse[] = []
  let holding = true
  let verifier: Webhook | undefined
  let firstHeld!: () => void
  const oneHeld = new Promise<void>((resolve) => {
    firstHeld = resolve
  })
  const receiver = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk) => {
      body += chunk
    })
    request.on('end', () => {
      const id = String(request.headers['webhook-id'])
      try {
        verifier!.verify(body, {
          'webhook-id': id,
          'webhook-timestamp': String(request.headers['webhook-timestamp']),
          'webhook-signature': String(request.headers['webhook-signature']),
        })
      } catch (error) {
        unverified.push(`${id}: ${(error as Error).message}`)
        response.writeHead(400).end()
        return
      }
      arrivals.set(id, [...(arrivals.get(id) ?? []), body])
      if (!holding) return void response.writeHead(204).end()
      held.push(response)
      firstHeld()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  try {
    const url = await freshDatabaseUrl()
    const setup = await openStore(url)
    const endpoint = await setup.webhooks.createEndpoint({
      url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`,
      eventTypes: ['user.created', 'user.authenticated'],
      at: Date.now(),
    })
    await setup.close()
    verifier = new Webhook(endpoint.secret)
    // The backend, a process of its own: an endpoint has 1 s to answer, so a delivery it dies
    // holding is claimed again 6 s after (its lease), by whichever instance runs then.
    const { b, urlB } = await cliInstance(url, ['--webhook-timeout', '1', '--guests'])

    // Sign-in load: SIWE sign-ins (user.authenticated) and guests (user.created too). Half start at
    // once; the rest wait until the backend acknowledged five and sent a webhook, and it dies as
    // the first of those is about to leave.
    let acknowledged = 0
    let killed = false
    let fiveAcknowledged!: () => void
    const afterFive = new Promise<void>((resolve) => {
      fiveAcknowledged = resolve
    })
    const load = Array.from({ length: 20 }, (_, index) => ({ index, wallet: index % 4 === 3 ? undefined : privateKeyToAccount(generatePrivateKey()) }))
    // The second half's first request, as it is about to leave, kills the backend.
    const killAsItLeaves = (index: number) => {
      if (index >= 10 && !killed) {
        killed = true
        b.child.kill('SIGKILL')
      }
    }
    const guestSignIn = (base: string, ip?: string) =>
      call(base, '/auth/guest', { json: { sessionPublicKey: generateApiKeyPair().apiPublicKey }, ...(ip ? { ip } : {}) })
    const first = await Promise.all(
      load.map(async ({ index, wallet }) => {
        let request: SiweRequest | undefined
        try {
          if (index >= 10) await Promise.all([afterFive, oneHeld])
          let response: Response
          if (wallet)
            response = (
              await signIn(urlB, wallet, (sent) => {
                request = sent
                killAsItLeaves(index)
              })
            ).response
          else {
            killAsItLeaves(index)
            response = await guestSignIn(urlB)
          }
          if (response.status === 200 && ++acknowledged === 5) fiveAcknowledged()
          return { wallet, request, status: response.status }
        } catch {
          // The connection died with the backend: not acknowledged.
          return { wallet, request, status: 0 }
        }
      }),
    )
    expect(killed).toBe(true)
    expect((await b.exited).signal).toBe('SIGKILL')
    expect(first.filter((answer) => answer.status !== 200 && answer.status !== 0)).toEqual([])
    expect(first.some((answer) => answer.status === 0)).toBe(true)
    holding = false
    for (const response of held.splice(0)) response.writeHead(204).end()

    // The backend again (an instance on the same database): what was not acknowledged is sent
    // again, the same bytes for a SIWE sign-in, a new guest for a guest.
    const a = createAppServer({
      ...t.options,
      store: await openStore(url),
      port: await getFreePort(),
      sessionJwtKey,
      chains: [{ id: 31337, rpcUrl: inject('chainARpc') }],
      webhookTimeoutMs: 1_000,
      // Real time, as the killed process's: its claims' leases end in it.
      now: Date.now,
    })
    await a.start()
    started.push(a)
    for (const [index, answer] of first.entries()) {
      if (answer.status === 200) continue
      const again = answer.wallet
        ? answer.request
          ? await call(a.url, '/auth/siwe', { ...answer.request, ip: `203.0.113.${index}` })
          : (await signIn(a.url, answer.wallet)).response
        : await guestSignIn(a.url, `203.0.113.${index}`)
      if (again.status !== 200) expect(await again.json()).toEqual({ error: { code: 'invalid_nonce', message: 'This nonce has been used; ask for a new one' } })
    }

    // Every event committed (each with its sign-in's session, in one transaction) arrives.
    const store = await openStore(url)
    try {
      const committed = async () => {
        const events = await store.database.db
          .selectFrom('webhook_events')
          .select(['id', 'type', 'body'])
          .where('type', 'in', ['user.created', 'user.authenticated'])
          .execute()
        const sessions = await store.database.db.selectFrom('sessions').select(['address', 'organization_id']).execute()
        return { events, sessions }
      }
      await vi.waitFor(
        async () => {
          // Until no delivery is pending: those the killed backend held have come again by then.
          const pending = await store.database.db.selectFrom('webhook_deliveries').select('event_id').where('delivered_at', 'is', null).execute()
          expect(pending).toEqual([])
        },
        { timeout: 30_000, interval: 200 },
      )
      const { events, sessions } = await committed()
      expect(unverified).toEqual([])
      expect(events.filter((event) => !arrivals.has(event.id)).map((event) => event.type)).toEqual([])
      // Nothing arrived that was not committed; each id kept one body across its redeliveries.
      expect([...arrivals.keys()].sort()).toEqual(events.map((event) => event.id).sort())
      for (const event of events) expect(new Set(arrivals.get(event.id))).toEqual(new Set([event.body]))
      // Every session has its user.authenticated; every guest its user.created.
      const bodies = events.map((event) => JSON.parse(event.body) as { type: string; data: { address: string; organizationId?: string } })
      const authenticated = bodies.filter((body) => body.type === 'user.authenticated').map((body) => body.data.address.toLowerCase())
      expect(authenticated.sort()).toEqual(sessions.map((session) => session.address.toLowerCase()).sort())
      const created = bodies.filter((body) => body.type === 'user.created').map((body) => body.data.organizationId)
      expect(created.sort()).toEqual(sessions.flatMap((session) => (session.organization_id ? [session.organization_id] : [])).sort())
      expect(created.length).toBeGreaterThan(0)
      // The deliveries the killed backend held unanswered came again, with their webhook-ids.
      expect([...arrivals.values()].some((copies) => copies.length > 1)).toBe(true)
    } finally {
      await store.close()
    }
  } finally {
    await new Promise<void>((resolve) => receiver.close(() => resolve()))
  }
}, 120_000)

test('behavior: the tries of one emailed code are one count across instances: guesses racing on both reach the kms three times', async () => {
  const [a, b] = await twoInstances()
  const email = newEmail()
  const start = await call(a, '/auth/email/start', { json: { email } })
  const sent = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
  const code = /sign-in code is (\d{6})\./.exec((await mailTo(email))[0]!.text)![1]!
  const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0')
  const answers = await Promise.all(Array.from({ length: 16 }, () => frameAnswer(sent, wrong)))
  const guesses = await Promise.all(answers.map((json, i) => call(i % 2 ? b : a, '/auth/email/verify', { json })))
  const codes = await Promise.all(guesses.map(async (response) => `${response.status} ${((await response.json()) as { error: { code: string } }).error.code}`))
  expect(codes.filter((answer) => answer === '400 invalid_code')).toHaveLength(LIMITS.verifiesPerCode)
  expect(codes.filter((answer) => answer === '429 rate_limited')).toHaveLength(16 - LIMITS.verifiesPerCode)
})

test('behavior: one refresh token sent forty times at once over both instances renews once; the replays end the session', async () => {
  const [a, b] = await twoInstances()
  const email = newEmail()
  const sent = (await (await call(a, '/auth/email/start', { json: { email } })).json()) as { otpId: string; otpEncryptionTargetBundle: string }
  const code = /sign-in code is (\d{6})\./.exec((await mailTo(email))[0]!.text)![1]!
  const verify = await call(b, '/auth/email/verify', { json: await frameAnswer(sent, code) })
  const cookie = cookieOf(verify)
  const { refreshToken } = (await (await call(a, '/auth/token', { json: {}, cookie })).json()) as { refreshToken: string }
  const answers = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      const response = await call(i % 2 ? b : a, '/auth/token/refresh', { json: { refreshToken } })
      return { status: response.status, body: (await response.json()) as { refreshToken?: string; error?: { code: string } } }
    }),
  )
  const renewed = answers.filter((entry) => entry.status === 200)
  expect(renewed).toHaveLength(1)
  expect(answers.filter((entry) => entry.status === 401 && entry.body.error?.code === 'invalid_refresh_token')).toHaveLength(39)
  // A refresh token used twice ends its session: the one renewal's token is dead too, and so is the cookie.
  expect((await call(b, '/auth/token/refresh', { json: { refreshToken: renewed[0]!.body.refreshToken } })).status).toBe(401)
  expect(await (await call(a, '/auth/session', { cookie })).json()).toBeNull()
})

test('error: one session JWT sent to /auth/login forty times at once over both instances signs in once', async () => {
  const [a, b, url] = await twoInstances()
  // A passkey account made on A; later the passkey stamps a login, and the browser sends its JWT.
  const authenticator = softwareAuthenticator()
  const challenge = randomBytes(32).toString('base64url')
  const signup = await call(a, '/auth/passkey/signup', {
    json: { passkeyIdentifier: 'my passkey', challenge, attestation: authenticator.register(challenge), sessionPublicKey: generateApiKeyPair().apiPublicKey },
  })
  expect(signup.status).toBe(200)
  const account = (await signup.json()) as { organizationId: string; userId: string; address: string }
  const sessionKey = generateApiKeyPair()
  const jwt = await stampLogin(withPasskey(authenticator), sessionKey.apiPublicKey)
  const answers = await fortyAtOnce(a, b, '/auth/login', { session: jwt })
  const won = answers.filter((entry) => entry.status === 200)
  expect(won.map((entry) => entry.body)).toEqual([{ organizationId: account.organizationId, userId: account.userId, address: account.address }])
  const refused = answers.filter((entry) => entry.status !== 200)
  expect(refused.map(({ status, body, cookie }) => ({ status, body, cookie }))).toEqual(
    Array(39).fill({
      status: 401,
      body: { error: { code: 'invalid_session', message: 'This session token has already signed in; sign in again' } },
      cookie: null,
    }),
  )
  // One session of the JWT's key, the winner's cookie; the token spent once.
  const sessions = await rowsOf(url, 'sessions', 'session_public_key', sessionKey.apiPublicKey)
  expect(sessions.map((row) => [row['id'], row['kind'], row['organization_id']])).toEqual([
    [won[0]!.cookie!.split(';')[0]!.split('=')[1], 'passkey', account.organizationId],
  ])
  const digest = createHash('sha256')
    .update(jwt.slice(0, jwt.lastIndexOf('.')))
    .digest('base64url')
  expect(await rowsOf(url, 'spent_session_tokens', 'digest', digest)).toHaveLength(1)
})

test('error: one ID token and nonce sent to /auth/oauth forty times at once over both instances signs in once, and makes one account', async () => {
  const [a, b, url] = await twoInstances()
  const email = newEmail()
  const sessionKey = generateApiKeyPair()
  const nonce = oauthNonce(sessionKey.apiPublicKey)
  const idToken = await t.oidc!.idToken({ provider: 'google', email, nonce, redirectUri: oauthRedirectUri })
  const answers = await fortyAtOnce(a, b, '/auth/oauth', { provider: 'google', sessionPublicKey: sessionKey.apiPublicKey, idToken })
  const won = answers.filter((entry) => entry.status === 200)
  expect(won).toHaveLength(1)
  const account = won[0]!.body as { organizationId: string; userId: string; address: string }
  const refused = answers.filter((entry) => entry.status !== 200)
  expect(refused.map(({ status, body, cookie }) => ({ status, body, cookie }))).toEqual(
    Array(39).fill({ status: 400, body: { error: { code: 'invalid_token', message: 'This ID token was used already' } }, cookie: null }),
  )
  // One account, one sub-organization for the email; one session, of the winner's cookie; the nonce spent once.
  expect((await rowsOf(url, 'accounts', 'email', email)).map((row) => row['organization_id'])).toEqual([account.organizationId])
  const suborganizations = await t.backend.getSubOrgIds({ organizationId: t.parentOrganizationId, filterType: 'EMAIL', filterValue: email })
  expect(suborganizations.organizationIds).toEqual([account.organizationId])
  const sessions = await rowsOf(url, 'sessions', 'session_public_key', sessionKey.apiPublicKey)
  expect(sessions.map((row) => [row['id'], row['kind'], row['email']])).toEqual([[won[0]!.cookie!.split(';')[0]!.split('=')[1], 'oauth', email]])
  expect(await rowsOf(url, 'oauth_nonces', 'nonce', nonce)).toHaveLength(1)
})

/** A passkey sign-up over HTTP at `base`: its account, session cookie and passkey. */
async function passkeyUser(base: string, ip: string) {
  const challenge = randomBytes(32).toString('base64url')
  const passkey = softwareAuthenticator()
  const response = await call(base, '/auth/passkey/signup', {
    json: { passkeyIdentifier: 'first passkey', challenge, attestation: passkey.register(challenge), sessionPublicKey: generateApiKeyPair().apiPublicKey },
    ip,
  })
  expect(response.status).toBe(200)
  return { ...((await response.json()) as { organizationId: string; userId: string }), cookie: cookieOf(response), passkey }
}

/**
 * The body of `POST /auth/user/link/passkey` registering `authenticator` (a new attestation of the
 * same credential) for `user`, stamped by the user's passkey (a fresh verification), as their
 * consent frame hands it over.
 */
const passkeyLink = (user: Awaited<ReturnType<typeof passkeyUser>>, authenticator: ReturnType<typeof softwareAuthenticator>) => {
  const challenge = randomBytes(32).toString('base64url')
  return userStamped(user.passkey, {
    type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
    organizationId: user.organizationId,
    parameters: { userId: user.userId, authenticators: [{ authenticatorName: 'Shared', challenge, attestation: authenticator.register(challenge) }] },
  })
}

test('error: one passkey linked forty times at once by two users over both instances: one link, 39 refused with 409, one row, one authenticator in the kms', async () => {
  const [a, b, url] = await twoInstances({ sharedSqliteStore: true })
  const users = [await passkeyUser(a, '198.51.100.1'), await passkeyUser(b, '198.51.100.2')]
  const shared = softwareAuthenticator()
  // Stamped one after another (the passkeys take turns), then sent all at once.
  const bodies: Awaited<ReturnType<typeof passkeyLink>>[] = []
  for (let i = 0; i < 40; i++) bodies.push(await passkeyLink(users[Math.floor(i / 2) % 2]!, shared))
  const answers = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      const user = users[Math.floor(i / 2) % 2]!
      const response = await call(i % 2 ? b : a, '/auth/user/link/passkey', { json: bodies[i], cookie: user.cookie, ip: `203.0.113.${i}` })
      return { status: response.status, body: (await response.json()) as { error?: { code: string } }, user: Math.floor(i / 2) % 2 }
    }),
  )
  const won = answers.filter((entry) => entry.status === 200)
  expect(won).toHaveLength(1)
  const winner = won[0]!.user
  const codes = answers.filter((entry) => entry.status !== 200).map((entry) => [entry.status, entry.body.error?.code, entry.user === winner])
  expect(codes.filter(([, , same]) => same)).toEqual(Array(19).fill([409, 'already_linked', true]))
  expect(codes.filter(([, , same]) => !same)).toEqual(Array(20).fill([409, 'account_already_linked', false]))
  const store = await openStore(url)
  try {
    const rows = await store.database.db.selectFrom('logins').select(['organization_id', 'subject']).where('subject', '=', shared.credentialId).execute()
    expect(rows).toEqual([{ organization_id: users[winner]!.organizationId, subject: shared.credentialId }])
  } finally {
    await store.close()
  }
  const names = await Promise.all(
    users.map(async ({ organizationId, userId }) =>
      (await t.backend.getAuthenticators({ organizationId, userId })).authenticators.map((one) => one.authenticatorName).sort(),
    ),
  )
  expect(names[winner]).toEqual(['Passkey', 'Shared'])
  expect(names[1 - winner]).toEqual(['Passkey'])
})

test('error: forty unlinks at once of a user’s two logins over both instances leave exactly one', async () => {
  const [a, b, url] = await twoInstances({ sharedSqliteStore: true })
  const user = await passkeyUser(a, '198.51.100.3')
  const json = await passkeyLink(user, softwareAuthenticator())
  expect((await call(b, '/auth/user/link/passkey', { json, cookie: user.cookie, ip: '198.51.100.3' })).status).toBe(200)
  const { logins } = (await (await call(a, '/auth/user', { cookie: user.cookie })).json()) as { logins: { id: string }[] }
  expect(logins).toHaveLength(2)
  const answers = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      const response = await fetch(`${i % 2 ? b : a}/auth/user/logins/${logins[Math.floor(i / 2) % 2]!.id}`, {
        method: 'DELETE',
        headers: { origin, 'content-type': 'application/json', cookie: user.cookie, 'x-test-ip': `203.0.113.${i}` },
      })
      return response.status === 204 ? 'unlinked' : ((await response.json()) as { error: { code: string } }).error.code
    }),
  )
  expect(answers.filter((outcome) => outcome === 'unlinked')).toHaveLength(1)
  expect(new Set(answers.filter((outcome) => outcome !== 'unlinked'))).toEqual(new Set(['last_login', 'unknown_login']))
  const store = await openStore(url)
  try {
    expect(await store.loginsOf(user.organizationId)).toHaveLength(1)
  } finally {
    await store.close()
  }
  const { authenticators } = await t.backend.getAuthenticators({ organizationId: user.organizationId, userId: user.userId })
  expect(authenticators).toHaveLength(1)
})

test.for([
  ['two accounts linking the email', false],
  ['two accounts linking the email and its owner signing in', true],
] as const)(
  'error: an email start no sign-in completed, raced by %s (forty requests over both instances): exactly one wins whole, and email sign-in then opens the winner',
  async ([, ownerSignsIn]) => {
    const [a, b, url] = await twoInstances({ sharedSqliteStore: true })
    const email = newEmail()
    const newestCode = async () => /sign-in code is (\d{6})\./.exec((await mailTo(email))[0]!.text)![1]!
    // The squatter's start; then the owner's sign-in start on the other instance, a code of the account the squatter made.
    expect((await call(a, '/auth/email/start', { json: { email }, ip: '198.51.100.10' })).status).toBe(200)
    const [squatted] = (await rowsOf(url, 'accounts', 'email', email)) as { organization_id: string; user_id: string }[]
    const ownerStart = ownerSignsIn ? await call(b, '/auth/email/start', { json: { email }, ip: '198.51.100.11' }) : undefined
    const signIn = ownerStart && (await frameAnswer(await ownerStart.json(), await newestCode()))
    const linkers = [await passkeyUser(a, '198.51.100.12'), await passkeyUser(b, '198.51.100.13')]
    const links: unknown[] = []
    for (const linker of linkers) {
      const start = await call(a, '/auth/user/link/email/start', { json: { email }, cookie: linker.cookie, ip: '198.51.100.14' })
      expect(start.status).toBe(200)
      const proof = await frameAnswer(await start.json(), await newestCode())
      // Stamped by the linker's passkey: a new email needs a fresh verification in the kms.
      const update = await userStamped(linker.passkey, {
        type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
        organizationId: linker.organizationId,
        parameters: { userId: linker.userId, userEmail: email },
      })
      links.push({ ...proof, ...update })
    }

    // Each request is the owner's sign-in (when it races) or one linker's link, taking turns; the instances alternate.
    const contenders = ownerSignsIn ? (['owner', 'linker 0', 'linker 1'] as const) : (['linker 0', 'linker 1'] as const)
    const answers = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const who = contenders[i % contenders.length]!
        const base = Math.floor(i / contenders.length) % 2 ? b : a
        const ip = `203.0.113.${i}`
        const linker = Number(who.slice(-1))
        const response =
          who === 'owner'
            ? await call(base, '/auth/email/verify', { json: signIn, ip })
            : await call(base, '/auth/user/link/email', { json: links[linker], cookie: linkers[linker]!.cookie, ip })
        return { who, status: response.status, code: ((await response.json()) as { error?: { code: string } }).error?.code }
      }),
    )

    const won = answers.filter((entry) => entry.status === 200)
    expect(won).toHaveLength(1)
    const winner = won[0]!.who
    // Every other request is refused: its proof spent or limited, or the email taken; none half-done.
    const lost = new Set(answers.filter((entry) => entry.status !== 200).map((entry) => `${entry.who === winner ? 'winner' : entry.who} ${entry.code}`))
    const spent = ['invalid_code', 'unknown_code', 'rate_limited']
    const allowed = new Set([
      ...spent.map((code) => `winner ${code}`),
      ...(winner === 'owner' ? [] : ['winner email_already_linked']),
      ...contenders
        .filter((name) => name !== winner)
        .flatMap((name) => [...spent, ...(name === 'owner' ? [] : ['account_already_linked'])].map((code) => `${name} ${code}`)),
    ])
    expect([...lost].filter((outcome) => !allowed.has(outcome))).toEqual([])
    const winnerAccount = winner === 'owner' ? { organizationId: squatted!.organization_id, userId: squatted!.user_id } : linkers[Number(winner.slice(-1))]!
    const store = await openStore(url)
    try {
      const db = store.database.db
      expect(
        await db.selectFrom('logins').select(['organization_id', 'unproven_since']).where('kind', '=', 'email').where('subject', '=', email).execute(),
      ).toEqual([{ organization_id: winnerAccount.organizationId, unproven_since: null }])
      expect((await db.selectFrom('accounts').select('organization_id').where('email', '=', email).execute()).map((row) => row.organization_id)).toEqual([
        winnerAccount.organizationId,
      ])
      expect(await db.selectFrom('webhook_events').select('type').where('type', '=', 'account.linked').execute()).toHaveLength(winner === 'owner' ? 0 : 1)
    } finally {
      await store.close()
    }
    // In the kms, only the winner's user has the email.
    const kmsEmails = await Promise.all(
      [{ organizationId: squatted!.organization_id, userId: squatted!.user_id }, ...linkers].map(
        async ({ organizationId, userId }) => (await t.backend.getUser({ organizationId, userId })).user.userEmail || null,
      ),
    )
    expect(kmsEmails).toEqual(['owner', 'linker 0', 'linker 1'].map((name) => (name === winner ? email : null)))
    // A later email sign-in, on either instance, opens the winner's wallet.
    const again = await call(b, '/auth/email/start', { json: { email }, ip: '198.51.100.15' })
    const verify = await call(a, '/auth/email/verify', { json: await frameAnswer(await again.json(), await newestCode()), ip: '198.51.100.15' })
    expect(await verify.json()).toMatchObject({ organizationId: winnerAccount.organizationId, userId: winnerAccount.userId })
  },
)
