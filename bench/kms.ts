/**
 * The key-management service under load: stamped sign_raw_payload requests per second through
 * HTTP (SQLite store, stamp verification, activity stored), printed beside the raw cost of the
 * same crypto measured in this process (P-256 stamp verification + secp256k1 signing); then the
 * email sign-in round trip through the app backend.
 *
 *   npm run bench:kms [-- --requests 3000 --concurrency 32]
 */
import { generateKeyPairSync, sign, verify } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { generateP256KeyPair } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { getFreePort } from '@latchkey/devnet'
import { createKms, generateApiKeyPair as apiKeyPair } from '@latchkey/kms'
import { createServerApp, openStore } from '@latchkey/server'
import { keccak256, toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(name)
  return index > 0 ? Number(process.argv[index + 1]) : fallback
}
const requests = arg('--requests', 3000)
const concurrency = arg('--concurrency', 32)
const fixed = (value: number, digits = 0) => value.toFixed(digits)


/** The crypto one request needs, alone: verify a P-256 stamp over a body, sign a digest with secp256k1. */
async function rawCryptoRate(): Promise<number> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const account = privateKeyToAccount(generatePrivateKey())
  const body = Buffer.from(JSON.stringify({ type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', padding: 'x'.repeat(200) }))
  const signature = sign('sha256', body, privateKey)
  const rounds = Math.max(500, Math.floor(requests / 2))
  const started = performance.now()
  for (let i = 0; i < rounds; i++) {
    if (!verify('sha256', body, publicKey, signature)) throw new Error('stamp did not verify')
    await account.sign({ hash: keccak256(toHex(i)) })
  }
  return rounds / ((performance.now() - started) / 1000)
}

const dir = await mkdtemp(join(tmpdir(), 'latchkey-bench-kms-'))
const kms = createKms({ port: await getFreePort(), databasePath: join(dir, 'kms.db') })
await kms.start()
try {
  const backendKey = apiKeyPair()
  const parent = kms.createParentOrganization({ name: 'Bench', userName: 'backend', publicKey: backendKey.apiPublicKey })
  const userKey = apiKeyPair()
  const backend = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(backendKey))
  const { activity } = await backend.createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: String(Date.now()),
    organizationId: parent.organizationId,
    parameters: {
      subOrganizationName: 'bench user',
      rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'bench', userEmail: 'bench@example.test', apiKeys: [{ apiKeyName: 'k', publicKey: userKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }],
      wallet: { walletName: 'Turnkey HD', accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }] },
    },
  })
  const result = activity.result.createSubOrganizationResultV8!
  const organizationId = result.subOrganizationId!
  const signWith = result.wallet!.addresses[0]!

  // Stamped before timing, as clients stamp in their own process: the service's work is measured.
  const stamper = new ApiKeyStamper(userKey)
  const prepared = await Promise.all(
    Array.from({ length: requests }, async (_, i) => {
      const body = JSON.stringify({
        type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
        timestampMs: String(Date.now()),
        organizationId,
        parameters: { signWith, payload: keccak256(toHex(`payload ${i}`)), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' },
      })
      const { stampHeaderName, stampHeaderValue } = await stamper.stamp(body)
      return { body, headers: { 'content-type': 'application/json', [stampHeaderName]: stampHeaderValue } }
    }),
  )
  // Warm-up: key derivation and the JIT, outside the figure.
  for (const { body, headers } of prepared.slice(0, 20)) await fetch(`${kms.url}/public/v1/submit/sign_raw_payload`, { method: 'POST', body, headers })

  let next = 20
  let failed = 0
  const latencies: number[] = []
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < prepared.length) {
        const { body, headers } = prepared[next++]!
        const sent = performance.now()
        const response = await fetch(`${kms.url}/public/v1/submit/sign_raw_payload`, { method: 'POST', body, headers })
        const answer = (await response.json()) as { activity?: { status: string } }
        if (answer.activity?.status !== 'ACTIVITY_STATUS_COMPLETED') failed++
        latencies.push(performance.now() - sent)
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  const served = prepared.length - 20
  const rate = served / seconds
  latencies.sort((a, b) => a - b)
  const raw = await rawCryptoRate()

  // Email sign-in round trip: backend start → code from the dev inbox → verify, as a browser does it.
  const store = openStore(':memory:')
  const app = createServerApp({ store, kmsUrl: kms.url, organizationId: parent.organizationId, ...backendKey, appName: 'Bench', allowedOrigins: [] })
  const rounds: number[] = []
  for (let i = 0; i < 10; i++) {
    const email = `round${i}@example.test`
    const begun = performance.now()
    const start = await app.request('/auth/email/start', { method: 'POST', body: JSON.stringify({ email }), headers: { 'content-type': 'application/json' } })
    const { otpId } = (await start.json()) as { otpId: string }
    const inbox = (await (await fetch(`${kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
    const code = /code is (\d{6})/.exec(inbox.messages.find((message) => message.to === email)!.text)![1]!
    const verifyResponse = await app.request('/auth/email/verify', {
      method: 'POST',
      body: JSON.stringify({ otpId, code, targetPublicKey: generateP256KeyPair().publicKeyUncompressed }),
      headers: { 'content-type': 'application/json' },
    })
    if (verifyResponse.status !== 200) throw new Error(`sign-in failed: ${await verifyResponse.text()}`)
    rounds.push(performance.now() - begun)
  }
  store.close()
  rounds.sort((a, b) => a - b)

  console.log(`\nkms: ${served} stamped sign_raw_payload requests over HTTP, ${concurrency} at a time (SQLite store)\n`)
  console.log(`  requests per second   ${fixed(rate)}   (target ≥ 1000: ${rate >= 1000 ? 'met' : 'missed'})`)
  console.log(`  latency p50 / p99     ${fixed(latencies[Math.floor(latencies.length / 2)]!, 1)} / ${fixed(latencies[Math.floor(latencies.length * 0.99)]!, 1)} ms`)
  console.log(`  failed                ${failed}`)
  console.log(`  raw crypto (P-256 verify + secp256k1 sign), same process: ${fixed(raw)} per second`)
  console.log(`  kms / raw crypto      ${fixed(rate / raw, 2)}× (target ≥ 0.33: ${rate / raw >= 1 / 3 ? 'met' : 'missed'})`)
  console.log(`\nEmail sign-in round trip through the app backend (first sign-in: sub-organization, wallet, code, verify), 10 runs: median ${fixed(rounds[5]!, 1)} ms, max ${fixed(rounds[9]!, 1)} ms`)
  if (failed) process.exit(1)
} finally {
  await kms.stop()
  await rm(dir, { recursive: true, force: true })
}
