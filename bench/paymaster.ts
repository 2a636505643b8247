/**
 * The paymaster service's decision time (issue 27: ≤ 10 ms p50, the policy and the budget
 * reservation included): p50/p99 of `pm_getPaymasterData` over HTTP against one local backend
 * (SQLite WAL file, a real anvil with EntryPoint v0.8 for the nonce read), beside the same
 * backend's `GET /healthz` round trip in the same run, the two interleaved request by request.
 * Each request is a new sender's sponsored batch, so each reserves, signs and is audited.
 *
 *   npm run bench:paymaster [-- --requests 400]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { anvil, deployEntryPoint, ENTRY_POINT_ADDRESS, getFreePort } from '@latchkey/devnet'
import { generateApiKeyPair } from '@latchkey/kms'
import { createAppServer } from '@latchkey/server'
import { numberToHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { executeCallData } from '../test/batch.js'
import { wholeNumberArg as arg } from './args.js'

const requests = arg('--requests', 400)
const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN
const TARGET = '0x000000000000000000000000000000000000a11c'

const chain = anvil({ port: await getFreePort(), chainId: 31337 })
await chain.start()
const directory = await mkdtemp(join(tmpdir(), 'latchkey-bench-paymaster-'))
const server = createAppServer({
  port: await getFreePort(),
  databasePath: join(directory, 'server.db'),
  kmsUrl: 'http://127.0.0.1:9',
  organizationId: 'organization',
  ...generateApiKeyPair(),
  appName: 'Bench',
  allowedOrigins: ['http://localhost:5173'],
  paymaster: {
    signerPrivateKey: generatePrivateKey(),
    policy: {
      accounts: 'any',
      chains: [
        {
          chainId: 31337,
          rpcUrl: chain.url,
          entryPoint: ENTRY_POINT_ADDRESS,
          sponsorPaymaster: '0x00000000000000000000000000000000005050aa',
          targets: [{ address: TARGET }],
          perUserPerDayWei: 10n ** 18n,
          globalPerDayWei: 10n ** 24n,
          maxGasPerOperation: 1_000_000,
        },
      ],
    },
  },
})
try {
  await deployEntryPoint(chain.url)
  await server.start()
  const callData = executeCallData([{ to: TARGET, data: '0x12345678' }])
  const decide = async () => {
    const response = await fetch(`${server.url}/paymaster`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'pm_getPaymasterData',
        params: [
          {
            sender: privateKeyToAccount(generatePrivateKey()).address,
            nonce: '0x0',
            callData,
            callGasLimit: numberToHex(100_000),
            verificationGasLimit: numberToHex(100_000),
            preVerificationGas: numberToHex(50_000),
            maxFeePerGas: numberToHex(2_000_000_000),
            maxPriorityFeePerGas: numberToHex(1_000_000_000),
          },
          ENTRY_POINT_ADDRESS,
          '0x7a69',
          {},
        ],
      }),
    })
    const body = (await response.json()) as { result?: unknown; error?: unknown }
    if (!body.result) throw new Error(`refused: ${JSON.stringify(body.error)}`)
  }
  const health = async () => {
    const response = await fetch(`${server.url}/healthz`)
    await response.arrayBuffer()
  }
  const timed = async (run: () => Promise<void>, into: number[]) => {
    const started = performance.now()
    await run()
    into.push(performance.now() - started)
  }
  // Warm-up: connections, the JIT, the first reads.
  for (let i = 0; i < 20; i++) await Promise.all([decide(), health()])
  const figures = { decide: [] as number[], health: [] as number[] }
  for (let i = 0; i < requests; i++) {
    await timed(decide, figures.decide)
    await timed(health, figures.health)
  }
  const line = (name: string, values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b)
    return `${name.padEnd(28)} p50 ${percentile(sorted, 50).toFixed(2).padStart(7)} ms   p99 ${percentile(sorted, 99).toFixed(2).padStart(7)} ms`
  }
  console.log(`${requests} requests each, interleaved, over HTTP to one backend (SQLite WAL):`)
  console.log(line('pm_getPaymasterData', figures.decide))
  console.log(line('GET /healthz (reference)', figures.health))
  const p50 = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    )
  console.log(`decision (p50 minus the round trip): ${(p50(figures.decide) - p50(figures.health)).toFixed(2)} ms (target ≤ 10 ms p50)`)
} finally {
  await server.stop()
  await chain.stop()
  await rm(directory, { recursive: true, force: true })
}
