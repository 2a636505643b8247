import { getFreePort } from '@latchkey/devnet'
import { createKms, generateApiKeyPair, type Kms } from '@latchkey/kms'
import { createRelay, type Relay } from '@latchkey/relay'
import { createAppServer } from '@latchkey/server'
import { createMetrics } from '@latchkey/service'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { connectClient } from '../packages/relay/test/client.js'
import { checkMetrics } from '../scripts/ensure-promtool.mjs'

// The three bins' metrics, after traffic that carries every kind of personal value a label could
// leak (emails, addresses, organization and user ids, API keys, topics, client ids): the
// expositions pass `promtool check metrics`, count what happened, and hold none of those values.

const origin = 'http://localhost:5173'
const email = 'ada.lovelace@example.com'
const address = '0x1b3cB81E51011b549d78bf720b0d924ac763A7C2'
const topic = 'a1'.repeat(32)
const backendKey = generateApiKeyPair()
const metrics = { kms: createMetrics('latchkey-kms'), server: createMetrics('latchkey-server'), relay: createMetrics('latchkey-relay') }
let kms: Kms
let server: ReturnType<typeof createAppServer>
let relay: Relay
let organizationId: string
/** Every value the traffic carried that no label may hold. */
const personal: string[] = [email, address.slice(2).toLowerCase(), topic, backendKey.apiPublicKey]

beforeAll(async () => {
  kms = createKms({ port: await getFreePort(), metrics: metrics.kms })
  await kms.start()
  organizationId = (await kms.createParentOrganization({ name: 'Demo', userName: 'backend', publicKey: backendKey.apiPublicKey })).organizationId
  personal.push(organizationId)
  server = createAppServer({
    port: await getFreePort(),
    kmsUrl: kms.url,
    organizationId,
    ...backendKey,
    sessionSignerPublicKey: kms.signerPublicKey,
    appName: 'Metrics',
    allowedOrigins: [origin],
    metrics: metrics.server,
    // The webhook follower's own kms queries would count beside the one below, as often as time allows.
    kmsEventPollMs: 3_600_000,
  })
  await server.start()
  relay = createRelay({ port: await getFreePort(), metrics: metrics.relay })
  await relay.start()

  const post = (path: string, json: unknown) =>
    fetch(`${server.url}${path}`, { method: 'POST', body: JSON.stringify(json), headers: { 'content-type': 'application/json', origin } })
  // An email sign-in refused (a wrong code), past the per-email limit of codes.
  const start = await post('/auth/email/start', { email })
  expect(start.status).toBe(200)
  const { otpId } = (await start.json()) as { otpId: string }
  personal.push(otpId)
  expect((await post('/auth/email/verify', { otpId, code: '000000', targetPublicKey: generateApiKeyPair().apiPublicKey })).status).toBe(400)
  for (let sent = 1; (await post('/auth/email/start', { email })).status !== 429; sent++) expect(sent).toBeLessThan(20)
  // A SIWE sign-in naming an address, refused; a session read (none: no cookie).
  expect((await post('/auth/siwe', { message: `localhost wants you to sign in with your Ethereum account:\n${address}`, signature: '0x00' })).status).toBe(400)
  expect((await fetch(`${server.url}/auth/session`, { headers: { origin } })).status).toBe(200)
  // The kms: a query and a refused activity, naming the organization.
  const backend = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(backendKey))
  await backend.getWhoami({ organizationId })
  await expect(
    backend.createPolicy({
      type: 'ACTIVITY_TYPE_CREATE_POLICY_V3',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: { policyName: email, effect: 'EFFECT_ALLOW', condition: 'nonsense(', consensus: '', notes: '' },
    }),
  ).rejects.toThrow()
  // The relay: a subscriber and a publisher on one topic.
  const subscriber = await connectClient(relay.url)
  const publisher = await connectClient(relay.url)
  personal.push(subscriber.seed, publisher.seed)
  await subscriber.request('irn_subscribe', { topic })
  await publisher.request('irn_publish', { topic, message: 'aGVsbG8=', ttl: 300, tag: 1100, prompt: false })
  await subscriber.nextPush()
  await relay.connections()
})

afterAll(async () => {
  await relay?.stop()
  await server?.stop()
  await kms?.stop()
})

const series = (exposition: string, name: string) => exposition.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))

test.each(['kms', 'server', 'relay'] as const)('behavior: the %s exposition passes promtool check metrics', async (service) => {
  expect(checkMetrics(await metrics[service].exposition())).toBe('')
})

test.each(['kms', 'server', 'relay'] as const)('behavior: no label of the %s exposition holds an email, an address, an id or a key', async (service) => {
  const exposition = (await metrics[service].exposition()).toLowerCase()
  for (const value of personal) expect(exposition).not.toContain(value.toLowerCase())
  expect(exposition).not.toMatch(/@example\.com|0x[0-9a-f]{40}/)
})

test('behavior: the backend counts requests by route, sign-ins by kind and outcome, and rate-limit hits', async () => {
  const exposition = await metrics.server.exposition()
  expect(series(exposition, 'latchkey_server_sign_ins_total')).toEqual([
    'latchkey_server_sign_ins_total{kind="email",outcome="refused",service="latchkey-server"} 1',
    'latchkey_server_sign_ins_total{kind="siwe",outcome="refused",service="latchkey-server"} 1',
  ])
  expect(series(exposition, 'latchkey_server_rate_limited_total')).toEqual([
    'latchkey_server_rate_limited_total{limit="codes-per-email",service="latchkey-server"} 1',
  ])
  expect(exposition).toMatch(/^latchkey_http_requests_total\{route="\/auth\/session",method="GET",status="200",service="latchkey-server"\} 1$/m)
  expect(exposition).toMatch(/^latchkey_db_transactions_total\{outcome="committed",service="latchkey-server"\} [1-9]/m)
})

test('behavior: the kms counts activities by type and status, and its outbox', async () => {
  const exposition = await metrics.kms.exposition()
  expect(exposition).toMatch(/^latchkey_kms_activities_total\{type="ACTIVITY_TYPE_INIT_OTP_V3",status="completed",service="latchkey-kms"\} [1-9]/m)
  expect(exposition).toMatch(/^latchkey_kms_activities_total\{type="ACTIVITY_TYPE_CREATE_POLICY_V3",status="refused",service="latchkey-kms"\} 1$/m)
  expect(exposition).toMatch(/^latchkey_http_requests_total\{route="\/public\/v1\/query\/:op",method="POST",status="200",service="latchkey-kms"\} 1$/m)
  expect(series(exposition, 'latchkey_kms_outbox_messages')).toEqual([
    'latchkey_kms_outbox_messages{status="pending",service="latchkey-kms"} 0',
    'latchkey_kms_outbox_messages{status="failed",service="latchkey-kms"} 0',
  ])
})

test('behavior: the relay counts sockets, subscriptions, publishes and deliveries', async () => {
  const exposition = await metrics.relay.exposition()
  expect(
    ['latchkey_relay_sockets', 'latchkey_relay_subscriptions', 'latchkey_relay_publishes_total', 'latchkey_relay_deliveries_total'].map((name) =>
      series(exposition, name),
    ),
  ).toEqual([
    ['latchkey_relay_sockets{service="latchkey-relay"} 2'],
    ['latchkey_relay_subscriptions{service="latchkey-relay"} 1'],
    ['latchkey_relay_publishes_total{service="latchkey-relay"} 1'],
    ['latchkey_relay_deliveries_total{service="latchkey-relay"} 1'],
  ])
})
