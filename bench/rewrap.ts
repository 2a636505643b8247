/**
 * A rewrap of 10,000 sealed rows while the kms signs: signing throughput (stamped
 * sign_raw_payload over HTTP, `--concurrency` in flight) idle and during `keys rewrap`, in the same
 * run on the same kms (SQLite), with the failed requests. The rewrap runs in this process too, as
 * the harsher case (the `keys rewrap` command runs in a process of its own). Side by side, each
 * after its own idle measurement: the rewrap as it was (batches of 200, no rest) and as it is
 * (REWRAP_DEFAULTS: small batches, resting between them). Target: 0 failures, signing during the
 * rewrap ≥ 0.8× idle.
 *
 *   npm run bench:rewrap [-- --rows 10000 --concurrency 8 --idle-requests 600]
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { getFreePort } from '@latchkey/devnet'
import { generateApiKeyPair as apiKeyPair, createKms } from '@latchkey/kms'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { REWRAP_DEFAULTS, rewrapRows, rotateDataKey } from '../packages/kms/src/keyring/operations.js'
import { wholeNumberArg as arg } from './args.js'

const rows = arg('--rows', 10_000)
const concurrency = arg('--concurrency', 8)
const idleRequests = arg('--idle-requests', 600)

const directory = await mkdtemp(join(tmpdir(), 'latchkey-bench-rewrap-'))
const kms = createKms({
  port: await getFreePort(),
  databasePath: join(directory, 'kms.db'),
  masterKey: randomBytes(32),
  keyRefreshMs: 100,
  mailRetryIntervalMs: 0,
})
await kms.start()
const parentKey = apiKeyPair()
const parent = await kms.createParentOrganization({ name: 'bench', userName: 'backend', publicKey: parentKey.apiPublicKey })
const client = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(parentKey))
let sequence = Date.now()
const { activity } = await client.createWallet({
  type: 'ACTIVITY_TYPE_CREATE_WALLET',
  timestampMs: String(++sequence),
  organizationId: parent.organizationId,
  parameters: {
    walletName: 'bench',
    accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
  },
})
const signWith = activity.result.createWalletResult!.addresses[0]!

// The rows to rewrap: sealed mail in the outbox (never sent: the outbox timer is off).
await kms.db.transaction(async (trx) => {
  for (let i = 0; i < rows; i++) {
    const id = `bench-${String(i).padStart(6, '0')}`
    await trx.insertOutbox({
      id,
      activity_id: null,
      to_address: 'bench@example.com',
      sealed_mail: kms.keyring.seal(`outbox:${id}`, JSON.stringify({ to: 'bench@example.com', subject: 'x', text: 'x'.repeat(200), html: '' })),
      status: 'failed',
      attempts: 0,
      next_attempt_at: 0,
      last_error: null,
      created_at: 0,
      expires_at: 0,
    })
  }
})

let firstError: string | undefined

/** Signs with `concurrency` in flight until `until()` says stop: requests done and failed. */
async function signing(until: (done: number) => boolean) {
  let done = 0
  let failed = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!until(done)) {
        try {
          await client.signRawPayload({
            type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
            timestampMs: String(++sequence),
            organizationId: parent.organizationId,
            parameters: {
              signWith,
              payload: `0x${randomBytes(32).toString('hex')}`,
              encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
              hashFunction: 'HASH_FUNCTION_NO_OP',
            },
          })
        } catch (error) {
          failed++
          firstError ??= (error as Error).message
        }
        done++
      }
    }),
  )
  return { done, failed, perSecond: done / ((performance.now() - started) / 1000) }
}

await signing((done) => done >= 100) // warm-up

/** Idle signing, then signing while `keys rewrap` runs with `options`: the two rates and the rewrap. */
async function measure(name: string, options: { batchSize: number; dutyCycle: number }) {
  const idle = await signing((done) => done >= idleRequests)
  const { activeInMs } = await rotateDataKey(kms.db, kms.keyring)
  await delay(activeInMs)
  let rewrapping = true
  const rewrapStarted = performance.now()
  const rewrap = rewrapRows(kms.db, kms.keyring, options).finally(() => {
    rewrapping = false
  })
  const during = await signing(() => !rewrapping)
  const rewrapped = await rewrap
  const rewrapSeconds = (performance.now() - rewrapStarted) / 1000
  const ratio = during.perSecond / idle.perSecond
  console.log(`${name} (batch ${options.batchSize}, duty cycle ${options.dutyCycle}):`)
  console.log(`  rewrap of ${rewrapped.moved} rows in ${rewrapSeconds.toFixed(1)} s (${rewrapped.left} left), load average ${loadavg()[0]!.toFixed(1)}`)
  console.log(`  signing idle:   ${idle.perSecond.toFixed(0)}/s (${idle.done} requests, ${idle.failed} failed)`)
  console.log(`  signing during: ${during.perSecond.toFixed(0)}/s (${during.done} requests, ${during.failed} failed)`)
  console.log(`  ratio ${ratio.toFixed(2)} (target ≥ 0.8), failures ${idle.failed + during.failed} (target 0)`)
  return { failed: idle.failed + during.failed, left: rewrapped.left }
}

const before = await measure('unthrottled, as before', { batchSize: 200, dutyCycle: 1 })
const after = await measure('REWRAP_DEFAULTS', REWRAP_DEFAULTS)
await kms.stop()
await rm(directory, { recursive: true, force: true })
if (firstError) console.log(`first failure: ${firstError}`)
if (before.failed + after.failed > 0 || before.left + after.left > 0) process.exitCode = 1
