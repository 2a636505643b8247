import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { getFreePort } from '@latchkey/devnet'
import { Webhook } from 'standardwebhooks'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { freshDatabaseUrl } from '../../service/test/testDatabase.js'
import { createAppServer, createServerApp, openStore, type SessionRow, type Store } from '../src/index.js'
import { createWebhookSender } from '../src/webhooks/dispatcher.js'
import { retryDelayMs, WEBHOOK_RETRY_MS } from '../src/webhooks/outbox.js'
import { sinceOf } from '../src/webhooks/since.js'
import { generateApiKeyPair } from './backend.js'

// Signed webhooks (issue 28 item 5): events written with the change they report, sent as Standard
// Webhooks at least once, verified here by the `standardwebhooks` package, a verifier we did not write.

type Received = { id: string; timestamp: string; signature: string; body: string }

/** An app's webhook endpoint on a real socket: what it received, and how it answers (`answer` may hold a request). */
async function receiver() {
  const received: Received[] = []
  let answer: (request: IncomingMessage, response: ServerResponse) => void = (_request, response) => response.writeHead(204).end()
  const waiters: (() => void)[] = []
  const server: Server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk) => {
      body += chunk
    })
    request.on('end', () => {
      received.push({
        id: String(request.headers['webhook-id']),
        timestamp: String(request.headers['webhook-timestamp']),
        signature: String(request.headers['webhook-signature']),
        body,
      })
      for (const wake of waiters.splice(0)) wake()
      answer(request, response)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    answerWith(next: typeof answer) {
      answer = next
    },
    /** Resolves once `count` requests have arrived. */
    async until(count: number) {
      while (received.length < count) await new Promise<void>((resolve) => waiters.push(resolve))
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

// Standard Webhooks' verifier checks the timestamp against the real clock: the test's starts there.
let clock = Date.now()
const now = () => clock
let store: Store
let endpoint: Awaited<ReturnType<typeof receiver>>
const cleanups: (() => Promise<unknown>)[] = []

beforeEach(async () => {
  clock = Date.now()
  store = await openStore(await freshDatabaseUrl({ memory: true }))
  endpoint = await receiver()
  cleanups.push(
    () => store.close(),
    () => endpoint.close(),
  )
})
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

let sessions = 0
/** A session row as `startSession` writes it: an embedded account's (`organization`) or a SIWE wallet's. */
const sessionOf = (organization: string | null, kind: SessionRow['kind'] = organization ? 'email' : 'siwe'): SessionRow => ({
  id: `session-${++sessions}`,
  email: organization ? `${organization}@example.test` : null,
  organization_id: organization,
  user_id: organization ? `user-of-${organization}` : null,
  address: `0x${String(sessions).padStart(40, '0')}`,
  kind,
  chain_id: organization ? null : 31337,
  wallet_kind: organization ? null : 'injected',
  session_public_key: null,
  expires_at: clock + 3_600_000,
  created_at: clock,
})

const sender = () => createWebhookSender({ outbox: store.webhooks, now, timeoutMs: 2_000 })
const verify = (secret: string, message: Received) =>
  new Webhook(secret).verify(message.body, { 'webhook-id': message.id, 'webhook-timestamp': message.timestamp, 'webhook-signature': message.signature }) as {
    type: string
    timestamp: string
    data: Record<string, unknown>
  }

describe('events and their delivery', () => {
  test('behavior: a user’s first session sends user.created, wallet.created and user.authenticated; the next only user.authenticated; each verifies', async () => {
    const { secret } = await store.webhooks.createEndpoint({ url: endpoint.url, eventTypes: null, at: clock })
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    await store.insertSession(sessionOf('org-a'))
    expect(await sender().runOnce()).toBe(3)
    await store.insertSession(sessionOf('org-a', 'passkey'))
    expect(await sender().runOnce()).toBe(1)
    const verified = endpoint.received.map((message) => verify(secret, message))
    expect(verified.map((event) => event.type).sort()).toEqual(['user.authenticated', 'user.authenticated', 'user.created', 'wallet.created'])
    expect(verified.find((event) => event.type === 'user.created')).toEqual({
      type: 'user.created',
      timestamp: new Date(clock).toISOString(),
      data: { userId: 'user-of-org-a', organizationId: 'org-a', address: expect.stringMatching(/^0x/), email: 'org-a@example.test', loginMethod: 'email' },
    })
    expect(new Set(endpoint.received.map((message) => message.id)).size).toBe(4)
  }, 20_000)

  test('behavior: a SIWE session of an outside wallet sends user.authenticated with its chain and wallet kind, and no user.created', async () => {
    const { secret } = await store.webhooks.createEndpoint({ url: endpoint.url, eventTypes: null, at: clock })
    await store.insertSession(sessionOf(null))
    await sender().runOnce()
    expect(endpoint.received.map((message) => verify(secret, message))).toEqual([
      {
        type: 'user.authenticated',
        timestamp: new Date(clock).toISOString(),
        data: { address: expect.stringMatching(/^0x/), loginMethod: 'siwe', chainId: 31337, walletKind: 'injected' },
      },
    ])
  })

  test('error: a signature made with another secret, or over another body, fails the verifier', async () => {
    const { secret } = await store.webhooks.createEndpoint({ url: endpoint.url, eventTypes: null, at: clock })
    await store.insertSession(sessionOf(null))
    await sender().runOnce()
    const [message] = endpoint.received
    expect(() => verify(secret, { ...message!, body: message!.body.replace('siwe', 'email') })).toThrow('No matching signature found')
    const other = await store.webhooks.createEndpoint({ url: endpoint.url, eventTypes: null, at: clock })
    expect(() => verify(other.secret, message!)).toThrow('No matching signature found')
  })

  test('behavior: an endpoint gets only the types it subscribed to', async () => {
    const { secret } = await store.webhooks.createEndpoint({ url: endpoint.url, eventTypes: ['user.created'], at: clock })
    await store.insertSession(sessionOf('org-b'))
    await store.insertSession(sessionOf('org-b'))
    await sender().runOnce()
    expect(endpoint.received.map((message) => verify(secret, message).type)).toEqual(['user.created'])
  })

  test('behavior: a failed delivery is tried again with backoff, under the same webhook-id, and given up 24 h after the event', async () => {
    await store.webhooks.createEndpoint({ url: endpoint.url, eventTypes: ['user.authenticated'], at: clock })
    endpoint.answerWith((_request, response) => response.writeHead(503).end())
    const start = clock
    await store.insertSession(sessionOf(null))
    const send = sender()
    expect(await send.runOnce()).toBe(1)
    // Not due again until its backoff has passed.
    clock += retryDelayMs(1) - 1
    expect(await send.runOnce()).toBe(0)
    clock += 1
    expect(await send.runOnce()).toBe(1)
    // Every later retry, until 24 h after the event.
    let attempts = 2
    while (clock < start + WEBHOOK_RETRY_MS) {
      clock += retryDelayMs(attempts)
      attempts += await send.runOnce()
    }
    const [endpointRow] = await store.webhooks.endpoints()
    const [delivery] = await store.webhooks.deliveries(endpointRow!.id, 10)
    expect(delivery).toMatchObject({ attempts, last_status: 503, last_error: 'answered 503' })
    expect(delivery!.given_up_at).not.toBeNull()
    expect(new Set(endpoint.received.map((message) => message.id)).size).toBe(1)
    expect(endpoint.received).toHaveLength(attempts)
    clock += 86_400_000
    expect(await send.runOnce()).toBe(0)
  })

  test('behavior: a redirect or a refused connection is a failure, kept for a retry; then a 2xx delivers it', async () => {
    await store.webhooks.createEndpoint({ url: endpoint.url, eventTypes: ['user.authenticated'], at: clock })
    endpoint.answerWith((_request, response) => response.writeHead(302, { location: 'http://127.0.0.1:9/' }).end())
    await store.insertSession(sessionOf(null))
    const send = sender()
    await send.runOnce()
    endpoint.answerWith((_request, response) => response.writeHead(200).end('ok'))
    clock += retryDelayMs(1)
    await send.runOnce()
    expect(endpoint.received).toHaveLength(2)
    expect(endpoint.received[0]!.id).toBe(endpoint.received[1]!.id)
    const [delivery] = await store.webhooks.deliveries((await store.webhooks.endpoints())[0]!.id, 10)
    expect(delivery).toMatchObject({ attempts: 2, last_status: 200, last_error: null })
    expect(delivery!.delivered_at).not.toBeNull()
  })

  test('behavior: a delivery whose sender died after claiming it is sent again once its lease ends, with the same id', async () => {
    await store.webhooks.createEndpoint({ url: endpoint.url, eventTypes: ['user.authenticated'], at: clock })
    await store.insertSession(sessionOf(null))
    // A sender that claimed it and died before sending (kill -9).
    const [claimed] = await store.webhooks.claim(clock, 12_000, 10)
    expect(await sender().runOnce()).toBe(0)
    clock += 12_000
    expect(await sender().runOnce()).toBe(1)
    expect(endpoint.received.map((message) => message.id)).toEqual([claimed!.event_id])
  })

  test('behavior: two senders on one database (two instances) claim each of 40 deliveries once at a time, and deliver each once', async () => {
    const url = await freshDatabaseUrl()
    const [one, two] = [await openStore(url), await openStore(url)]
    cleanups.push(
      () => one.close(),
      () => two.close(),
    )
    await one.webhooks.createEndpoint({ url: endpoint.url, eventTypes: ['user.authenticated'], at: clock })
    for (let index = 0; index < 40; index++) await (index % 2 ? one : two).insertSession(sessionOf(null))
    // 40 claims at once, half on each instance: no delivery is claimed twice.
    const claims = await Promise.all(Array.from({ length: 40 }, (_, index) => (index % 2 ? one : two).webhooks.claim(clock, 15_000, 3)))
    const claimed = claims.flat().map((delivery) => delivery.event_id)
    expect(new Set(claimed).size).toBe(claimed.length)
    // Then two senders share what is left and what the claims' leases give back.
    clock += 15_000
    const [a, b] = [createWebhookSender({ outbox: one.webhooks, now, batch: 7 }), createWebhookSender({ outbox: two.webhooks, now, batch: 7 })]
    const counts = await Promise.all([a.runOnce(), b.runOnce(), a.runOnce(), b.runOnce()])
    expect(counts.reduce((sum, count) => sum + count, 0)).toBe(40)
    expect(endpoint.received).toHaveLength(40)
    expect(new Set(endpoint.received.map((message) => message.id)).size).toBe(40)
  })

  test('behavior: 40 concurrent first sessions of one user make one user.created', async () => {
    const { secret } = await store.webhooks.createEndpoint({ url: endpoint.url, eventTypes: ['user.created'], at: clock })
    await Promise.all(Array.from({ length: 40 }, () => store.insertSession(sessionOf('org-race'))))
    await sender().runOnce()
    expect(endpoint.received.map((message) => verify(secret, message).type)).toEqual(['user.created'])
  })

  test('behavior: an endpoint that does not answer slows no session: the session is stored while its delivery is in flight', async () => {
    await store.webhooks.createEndpoint({ url: endpoint.url, eventTypes: ['user.authenticated'], at: clock })
    const held: ServerResponse[] = []
    endpoint.answerWith((_request, response) => held.push(response))
    const send = sender()
    const unsubscribe = store.onWebhooksQueued(send.nudge)
    cleanups.push(async () => {
      unsubscribe()
      for (const response of held) response.writeHead(204).end()
      await send.stop()
    })
    await store.insertSession(sessionOf(null))
    await endpoint.until(1)
    const next = sessionOf(null)
    await store.insertSession(next)
    expect(await store.session(next.id)).toMatchObject({ id: next.id })
    expect(held).toHaveLength(1)
  })

  test('behavior: a running backend sends the events its sessions make, signed', async () => {
    const { secret } = await store.webhooks.createEndpoint({ url: endpoint.url, eventTypes: ['user.authenticated'], at: clock })
    const server = createAppServer({
      port: await getFreePort(),
      store,
      kmsUrl: 'http://127.0.0.1:9',
      organizationId: 'org-parent',
      ...generateApiKeyPair(),
      appName: 'Demo',
      allowedOrigins: ['http://localhost:5173'],
      now,
    })
    await server.start()
    await store.insertSession(sessionOf(null))
    await endpoint.until(1)
    expect(verify(secret, endpoint.received[0]!).type).toBe('user.authenticated')
    // stop() closes the store, which afterEach closes again harmlessly.
    await server.stop()
    store = await openStore(':memory:')
  })

  test('behavior: webhooks replay sends delivered events again with their ids; a deleted endpoint gets nothing more', async () => {
    const created = await store.webhooks.createEndpoint({ url: endpoint.url, eventTypes: ['user.authenticated'], at: clock })
    await store.insertSession(sessionOf(null))
    await sender().runOnce()
    clock += 60_000
    expect(await store.webhooks.replay(sinceOf('2m', clock), clock)).toBe(1)
    expect(await store.webhooks.replay(clock, clock)).toBe(0)
    await sender().runOnce()
    expect(endpoint.received.map((message) => message.id)).toEqual([endpoint.received[0]!.id, endpoint.received[0]!.id])
    expect(await store.webhooks.deleteEndpoint(created.id)).toBe(true)
    await store.insertSession(sessionOf(null))
    expect(await sender().runOnce()).toBe(0)
    expect(await store.webhooks.deleteEndpoint(created.id)).toBe(false)
  })

  test('error: --since must be an ISO time or a span', () => {
    expect(sinceOf('2026-11-28T08:00:00Z', 0)).toBe(Date.UTC(2026, 10, 28, 8))
    expect(sinceOf('6h', 10 * 3_600_000)).toBe(4 * 3_600_000)
    expect(() => sinceOf('yesterday', 0)).toThrow('--since must be an ISO 8601 time (2026-11-28T08:00:00Z) or a span ago (30m, 6h, 2d), not yesterday')
  })
})

describe('the admin API', () => {
  const token = 'admin-token-of-the-tests-0123456789abcdef'
  const appOf = (adminToken: string | undefined) =>
    createServerApp({
      store,
      kmsUrl: 'http://127.0.0.1:9',
      organizationId: 'org-parent',
      ...generateApiKeyPair(),
      appName: 'Demo',
      allowedOrigins: ['http://localhost:5173'],
      now,
      adminToken,
    })
  const call = (app: ReturnType<typeof appOf>, method: string, path: string, body?: unknown, bearer: string | null = token) =>
    app.request(path, {
      method,
      headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    })

  test('behavior: creates, lists and deletes endpoints; the secret is shown once', async () => {
    const app = appOf(token)
    const created = await call(app, 'POST', '/admin/webhooks', { url: endpoint.url, eventTypes: ['user.created'] })
    expect(created.status).toBe(201)
    const endpointJson = (await created.json()) as { id: string; secret: string }
    expect(endpointJson).toEqual({
      id: expect.stringMatching(/^ep_/),
      url: endpoint.url,
      eventTypes: ['user.created'],
      createdAt: clock,
      secret: expect.stringMatching(/^whsec_/),
    })
    const listed = await (await call(app, 'GET', '/admin/webhooks')).json()
    expect(listed).toEqual({ endpoints: [{ id: endpointJson.id, url: endpoint.url, eventTypes: ['user.created'], createdAt: clock }] })
    expect((await call(app, 'GET', `/admin/webhooks/${endpointJson.id}/deliveries`)).status).toBe(200)
    expect((await call(app, 'DELETE', `/admin/webhooks/${endpointJson.id}`)).status).toBe(204)
    expect(await (await call(app, 'DELETE', `/admin/webhooks/${endpointJson.id}`)).json()).toEqual({
      error: { code: 'unknown_endpoint', message: 'No webhook endpoint has this id' },
    })
  })

  test('error: without the token, or with a wrong one, 401 and nothing created', async () => {
    const app = appOf(token)
    for (const bearer of [null, `${token}x`, token.slice(1)]) {
      const response = await call(app, 'POST', '/admin/webhooks', { url: endpoint.url }, bearer)
      expect(response.status).toBe(401)
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="latchkey-admin"')
      expect(await response.json()).toEqual({ error: { code: 'admin_unauthorized', message: 'The admin API needs the admin token as a bearer token' } })
    }
    expect(await store.webhooks.endpoints()).toEqual([])
  })

  test('error: a URL that is not http(s), or an unknown event type, is 400 and nothing created', async () => {
    const app = appOf(token)
    const refused = await call(app, 'POST', '/admin/webhooks', { url: 'ftp://hooks.example/in' })
    expect(await refused.json()).toEqual({ error: { code: 'invalid_request', message: 'url: must be an http:// or https:// URL' } })
    const unknown = await call(app, 'POST', '/admin/webhooks', { url: endpoint.url, eventTypes: ['user.deleted'] })
    expect(unknown.status).toBe(400)
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toMatch(/^eventTypes\.0: /)
    expect(await store.webhooks.endpoints()).toEqual([])
  })

  test('behavior: without an admin token configured the admin API does not exist', async () => {
    expect((await call(appOf(undefined), 'GET', '/admin/webhooks')).status).toBe(404)
  })
})
