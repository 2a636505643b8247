/**
 * Linking a second login, and a webhook's way from the commit to the app's receiver, on the local
 * stack (`npm start`'s services without the demo or the bundlers: anvil, kms, backend), over HTTP,
 * each beside a reference in the same run (issue 28, Targets):
 *
 * - linking an external wallet by SIWE to a signed-in (guest) user: `GET /auth/nonce`, the
 *   wallet's signature, `POST /auth/user/link/wallet`; beside the same wallet flow signing in
 *   (`POST /auth/siwe`, the sign-in itself) and `GET /auth/user`. Target: under 1 s.
 * - webhook delivery: each link's `account.linked` event, from its time (taken in the linking
 *   transaction, just before the commit: the figure is an upper bound) to its arrival at a local
 *   receiver that verifies it with `standardwebhooks`; beside a plain POST of the same body from
 *   this process to the same receiver. Target: ≤ 1 s p50.
 *
 * The backend runs in this process, so both sides read one clock. Links and sign-ins alternate,
 * one at a time. The guests are few (the local stack counts guests per IP: 10 a window), each
 * linking several wallets.
 *
 *   npm run bench:linking [-- --links 40]
 */

import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { getFreePort, startStack } from '@latchkey/devnet'
import { generateApiKeyPair } from '@latchkey/kms'
import { Webhook } from 'standardwebhooks'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { wholeNumberArg as arg } from './args.js'

const links = arg('--links', 40)
const GUESTS = 4
const TARGET_MS = 1000
const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN
}
const clock = () => performance.timeOrigin + performance.now()

// The app's receiver: verifies each webhook, and notes when each arrived (epoch ms) by its body's id.
const arrivals = new Map<string, { at: number; eventAt?: number }>()
const waiting = new Map<string, () => void>()
let verifier: Webhook | undefined
const receiver = createServer((request, response) => {
  let body = ''
  request.on('data', (chunk) => {
    body += chunk
  })
  request.on('end', () => {
    const at = clock()
    let key: string
    if (request.headers['webhook-id']) {
      const event = verifier!.verify(body, {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      }) as { type: string; timestamp: string; data: { login: { id: string } } }
      key = `${event.type} ${event.data.login.id}`
      arrivals.set(key, { at, eventAt: Date.parse(event.timestamp) })
    } else {
      key = `plain ${(JSON.parse(body) as { id: string }).id}`
      arrivals.set(key, { at })
    }
    waiting.get(key)?.()
    response.writeHead(204).end()
  })
})
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`
/** When `key` arrived at the receiver (epoch ms), and its event's time, once it has. */
const arrived = (key: string) =>
  arrivals.has(key)
    ? Promise.resolve(arrivals.get(key)!)
    : new Promise<{ at: number; eventAt?: number }>((resolve) => waiting.set(key, () => resolve(arrivals.get(key)!)))

const stateDir = await mkdtemp(join(tmpdir(), 'latchkey-bench-linking-'))
const ports = Object.fromEntries(
  await Promise.all(
    ['chainA', 'chainB', 'relay', 'kms', 'frames', 'server', 'demo', 'wallet', 'oidc', 'bundlerA', 'bundlerB'].map(async (name) => [name, await getFreePort()]),
  ),
)
console.log('starting the local stack (no demo)…')
const stack = await startStack({ ports, stateDir, demo: false, bundlers: false })
const server = stack.urls.server!
const { adminToken } = JSON.parse(await readFile(stack.devJson, 'utf8')) as { adminToken: string }
const origin = `http://localhost:${ports['demo']}`

type Answer = { status: number; json: Record<string, unknown>; cookie: string | undefined }
async function call(path: string, init: { json?: unknown; cookies?: readonly (string | undefined)[]; headers?: Record<string, string> } = {}): Promise<Answer> {
  const response = await fetch(`${server}${path}`, {
    method: init.json === undefined ? 'GET' : 'POST',
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
    headers: {
      origin,
      'content-type': 'application/json',
      ...(init.cookies?.some(Boolean) ? { cookie: init.cookies.filter(Boolean).join('; ') } : {}),
      ...init.headers,
    },
  })
  const text = await response.text()
  return { status: response.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {}, cookie: response.headers.get('set-cookie')?.split(';')[0] }
}
const expectOk = (answer: Answer, what: string) => {
  if (answer.status !== 200 && answer.status !== 201) throw new Error(`${what}: ${answer.status} ${JSON.stringify(answer.json)}`)
  return answer
}

/** A wallet's SIWE message for a fresh nonce, signed: the body and the nonce's cookie. */
async function signedMessage(wallet: ReturnType<typeof privateKeyToAccount>) {
  const nonce = expectOk(await call('/auth/nonce'), 'nonce')
  const message = createSiweMessage({
    address: wallet.address,
    chainId: 31337,
    domain: new URL(origin).host,
    uri: origin,
    version: '1',
    nonce: nonce.json['nonce'] as string,
    issuedAt: new Date(),
  })
  return { json: { message, signature: await wallet.signMessage({ message }) }, cookie: nonce.cookie }
}

const figures = { link: [] as number[], signIn: [] as number[], user: [] as number[], delivery: [] as number[], plain: [] as number[] }
try {
  const endpoint = expectOk(
    await call('/admin/webhooks', { json: { url: receiverUrl, eventTypes: ['account.linked'] }, headers: { authorization: `Bearer ${adminToken}` } }),
    'POST /admin/webhooks',
  )
  verifier = new Webhook(endpoint.json['secret'] as string)
  const guests = await Promise.all(
    Array.from({ length: GUESTS }, async () => {
      const sessionKey = generateApiKeyPair()
      const answer = expectOk(await call('/auth/guest', { json: { sessionPublicKey: sessionKey.apiPublicKey } }), 'guest')
      return { cookie: answer.cookie }
    }),
  )
  const warmUp = 5
  for (let i = 0; i < warmUp + links; i++) {
    const record = i >= warmUp
    const guest = guests[i % GUESTS]!
    const session = guest.cookie
    // Linking a wallet: nonce, signature, link.
    const wallet = privateKeyToAccount(generatePrivateKey())
    let started = performance.now()
    const signed = await signedMessage(wallet)
    const linked = expectOk(await call('/auth/user/link/wallet', { json: signed.json, cookies: [session, signed.cookie] }), 'link')
    if (record) figures.link.push(performance.now() - started)
    // Its account.linked webhook: from the event's time to its arrival.
    const login = linked.json['login'] as { id: string; label: string }
    if (login.label.toLowerCase() !== wallet.address.toLowerCase()) throw new Error(`linked ${login.label}, not ${wallet.address}`)
    const event = await arrived(`account.linked ${login.id}`)
    if (record) figures.delivery.push(event.at - event.eventAt!)
    // The reference: another wallet signing in, the same steps.
    const other = privateKeyToAccount(generatePrivateKey())
    started = performance.now()
    const otherSigned = await signedMessage(other)
    expectOk(await call('/auth/siwe', { json: otherSigned.json, cookies: [otherSigned.cookie] }), 'siwe')
    if (record) figures.signIn.push(performance.now() - started)
    started = performance.now()
    expectOk(await call('/auth/user', { cookies: [session] }), 'GET /auth/user')
    if (record) figures.user.push(performance.now() - started)
    // A plain POST of a body that size to the receiver: from its send to its arrival.
    const sent = clock()
    await fetch(receiverUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: String(i), pad: 'x'.repeat(300) }) })
    if (record) figures.plain.push((await arrived(`plain ${i}`)).at - sent)
  }
} finally {
  await stack.stop()
  await new Promise<void>((resolve) => receiver.close(() => resolve()))
  await rm(stateDir, { recursive: true, force: true })
}

const ms = (value: number) => `${value.toFixed(1)} ms`.padStart(10)
const row = (name: string, values: readonly number[], reference?: readonly number[]) =>
  `  ${name.padEnd(48)} ${ms(percentile(values, 50))} ${ms(percentile(values, 95))}${reference ? `   ${`${(percentile(values, 50) / percentile(reference, 50)).toFixed(2)}×`.padStart(7)}` : ''}`
console.log(
  `\nlinking and webhooks on the local stack, ${links} links after 5 warm-up; load average ${loadavg()
    .map((load) => load.toFixed(2))
    .join(' ')}\n`,
)
console.log(`  ${''.padEnd(48)} ${'p50'.padStart(10)} ${'p95'.padStart(10)}   ${'p50 ×ref'.padStart(7)}`)
console.log(row('link a wallet (nonce, signature, link)', figures.link, figures.signIn))
console.log(row('  reference: SIWE sign-in (nonce, signature, siwe)', figures.signIn))
console.log(row('  reference: GET /auth/user', figures.user))
console.log(row('webhook account.linked: event time → receipt', figures.delivery, figures.plain))
console.log(row('  reference: plain POST → receipt', figures.plain))
console.log(
  `\n  link p50 ${percentile(figures.link, 50) < TARGET_MS ? 'under' : 'OVER'} ${TARGET_MS} ms; delivery p50 ${percentile(figures.delivery, 50) <= TARGET_MS ? 'within' : 'OVER'} ${TARGET_MS} ms\n`,
)
