import { type AnvilInstance, anvil, deployEntryPoint, deployTestToken, ENTRY_POINT_ADDRESS, getFreePort, TEST_TOKEN_ADDRESS } from '@latchkey/devnet'
import { generateApiKeyPair } from '@latchkey/kms'
import type { Database } from '@latchkey/service/database'
import { sql } from 'kysely'
import {
  type Address,
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeFunctionData,
  getAddress,
  type Hex,
  http,
  numberToHex,
  parseAbi,
  parseGwei,
  recoverTypedDataAddress,
  zeroAddress,
} from 'viem'
import { createPaymasterClient, entryPoint08Abi, toPackedUserOperation } from 'viem/account-abstraction'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { anvil as anvilChain } from 'viem/chains'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { type BatchCall, executeCallData } from '../../../test/batch.js'
import { anvilKeys } from '../../../test/chains.js'
import { freshDatabaseUrl } from '../../service/test/testDatabase.js'
import { createAppServer, createServerApp, openStore, type ServerAppOptions, type Store } from '../src/index.js'
import { decodeSponsorData, decodeTokenData, sponsorTypedData, tokenTypedData } from '../src/paymaster/data.js'
import type { PaymasterPolicyInput } from '../src/paymaster/policy.js'
import { budgetsOf, type PaymasterSchema, utcDay } from '../src/paymaster/schema.js'
import { createPaymaster, erc20Cost, GUARANTEED_POST_OP_COST, PAYMASTER_GAS, TOKEN_POST_OP_COST } from '../src/paymaster/service.js'

// The ERC-7677 paymaster service at POST /paymaster, against a real anvil with EntryPoint v0.8 and
// the test token: its answers, each refusal (budget unchanged, audited), the signatures, the
// budgets under concurrency on two instances, settlement from the EntryPoint's real events and the
// release of reservations whose window passed on the chain's clock.

const CHAIN_ID = 31337
const origin = 'http://localhost:5173'
const SPONSOR_PAYMASTER = getAddress('0x00000000000000000000000000000000005050aA')
const TOKEN_PAYMASTER = getAddress('0x00000000000000000000000000000000005050bB')
const GUARANTOR = getAddress('0x0000000000000000000000000000000000009a9A')
const TARGET = getAddress('0x000000000000000000000000000000000000A11c')
const SELECTIVE = getAddress('0x000000000000000000000000000000000000b0B0')
const TRANSFER = '0xa9059cbb'
const TOKEN_PER_NATIVE = 10n ** 21n
const signerKey = generatePrivateKey()
const signer = privateKeyToAccount(signerKey).address
const keys = generateApiKeyPair()
const MAX_FEE = parseGwei('2')
/** The gas of `operation()`: call 100k, verification 100k, preVerification 50k, and the sponsor paymaster's own. */
const GAS = 250_000n + PAYMASTER_GAS.sponsor.verification + PAYMASTER_GAS.sponsor.postOp
const MAX_COST = GAS * MAX_FEE

let chain: AnvilInstance
beforeAll(async () => {
  chain = anvil({ port: await getFreePort(), chainId: CHAIN_ID })
  await chain.start()
  await deployEntryPoint(chain.url)
  await deployTestToken(chain.url)
}, 60_000)
afterAll(() => chain?.stop())

const stores: Store[] = []
afterAll(async () => {
  for (const store of stores.splice(0)) await store.close()
})

function policy(overrides: Partial<PaymasterPolicyInput> = {}, chainOverrides: Record<string, unknown> = {}): PaymasterPolicyInput {
  return {
    accounts: 'any',
    chains: [
      {
        chainId: CHAIN_ID,
        rpcUrl: chain.url,
        entryPoint: ENTRY_POINT_ADDRESS,
        sponsorPaymaster: SPONSOR_PAYMASTER,
        tokenPaymaster: TOKEN_PAYMASTER,
        tokens: [{ address: TEST_TOKEN_ADDRESS, tokenPerNative: TOKEN_PER_NATIVE.toString(), guarantor: GUARANTOR }],
        targets: [{ address: TARGET }, { address: SELECTIVE, selectors: [TRANSFER] }],
        perUserPerDayWei: (10n * MAX_COST).toString(),
        globalPerDayWei: (100n * MAX_COST).toString(),
        maxGasPerOperation: 1_000_000,
        ...chainOverrides,
      },
    ],
    ...overrides,
  }
}

/** A backend on a fresh database, with `options` on top of the tests' own. */
async function newBackend(options: Partial<ServerAppOptions> = {}, url?: string) {
  const store = await openStore(url ?? (await freshDatabaseUrl()))
  stores.push(store)
  const app = createServerApp({
    store,
    kmsUrl: 'http://127.0.0.1:9',
    organizationId: 'organization',
    ...keys,
    appName: 'Demo',
    allowedOrigins: [origin],
    ...options,
  })
  return { app, store }
}

/** A backend with the paymaster on `paymasterPolicy`, its store, and the service alone. */
async function newApp(paymasterPolicy = policy(), url?: string, limitsPerIp?: ServerAppOptions['limitsPerIp']) {
  const { app, store } = await newBackend({ paymaster: { signerPrivateKey: signerKey, policy: paymasterPolicy }, ...(limitsPerIp ? { limitsPerIp } : {}) }, url)
  const paymaster = createPaymaster({
    policy: (await import('../src/paymaster/policy.js')).parsePaymasterPolicy(paymasterPolicy),
    signerPrivateKey: signerKey,
    database: store.database as unknown as Database<PaymasterSchema>,
    audit: { record: async () => {} } as never,
    appName: 'Demo',
    isUserWallet: async () => true,
    webhooks: { enqueue: (trx, events, at) => store.webhooks.enqueue(trx as never, events, at), queued: () => store.webhooksQueued() },
  })
  return { app, store, paymaster }
}

function operation(sender: Address, nonce: bigint, calls: BatchCall[] = [{ to: TARGET, data: '0x12345678' }], overrides: Record<string, unknown> = {}) {
  return {
    sender,
    nonce: numberToHex(nonce),
    factory: '0x7702',
    factoryData: '0x',
    callData: executeCallData(calls),
    callGasLimit: numberToHex(100_000),
    verificationGasLimit: numberToHex(100_000),
    preVerificationGas: numberToHex(50_000),
    maxFeePerGas: numberToHex(MAX_FEE),
    maxPriorityFeePerGas: numberToHex(parseGwei('1')),
    signature: '0x',
    ...overrides,
  } as Record<string, unknown>
}

let ids = 0
async function rpc(app: { request: (path: string, init: RequestInit) => Response | Promise<Response> }, method: string, params: unknown) {
  const response = await app.request('/paymaster', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++ids, method, params }),
  })
  expect(response.status).toBe(200)
  return (await response.json()) as {
    result?: Record<string, unknown> & { paymasterData: Hex }
    error?: { code: number; message: string; data?: { reason: string } }
  }
}
const chainIdHex = numberToHex(CHAIN_ID)
const getData = (app: Parameters<typeof rpc>[0], op: Record<string, unknown>, context: unknown = {}) =>
  rpc(app, 'pm_getPaymasterData', [op, ENTRY_POINT_ADDRESS, chainIdHex, context])

const newSender = () => privateKeyToAccount(generatePrivateKey()).address
const today = () => utcDay(Date.now())

/** Every budget row and reservation the store holds: what a refusal must leave as it was. */
async function written(store: Store) {
  const db = store.database.db
  return {
    budgets: await db.selectFrom('paymaster_budgets').selectAll().orderBy('key').execute(),
    reservations: await db.selectFrom('paymaster_reservations').select(['sender', 'nonce', 'amount', 'status']).orderBy('nonce').execute(),
  }
}
async function auditCount(store: Store) {
  const rows = await sql<{ count: number | string }>`select count(*) as count from server_audit_events`.execute(store.database.db)
  return Number(rows.rows[0]!.count)
}
async function lastAudit(store: Store) {
  const rows = await sql<{
    action: string
    outcome: string
    reason: string | null
  }>`select action, outcome, reason from server_audit_events order by seq desc limit 1`.execute(store.database.db)
  return rows.rows[0]
}

test('default: pm_getPaymasterStubData answers the sponsor paymaster, stub data of the real length, its gas and the sponsor', async () => {
  const { app, store } = await newApp(policy({ sponsorName: 'Demo App' }))
  const answer = await rpc(app, 'pm_getPaymasterStubData', [operation(newSender(), 0n), ENTRY_POINT_ADDRESS, chainIdHex, {}])
  expect(answer.result).toEqual({
    paymaster: SPONSOR_PAYMASTER,
    paymasterData: expect.stringMatching(/^0x[0-9a-f]{154}$/),
    paymasterVerificationGasLimit: numberToHex(PAYMASTER_GAS.sponsor.verification),
    paymasterPostOpGasLimit: '0x0',
    sponsor: { name: 'Demo App' },
    isFinal: false,
  })
  // A stub reserves nothing.
  expect(await written(store)).toEqual({ budgets: [], reservations: [] })
})

test('behavior: the stub takes an operation without gas limits, names the app by default, and answers the token paymaster for a token context', async () => {
  const { app } = await newApp()
  const op = operation(newSender(), 0n, undefined, { callGasLimit: undefined, verificationGasLimit: undefined, preVerificationGas: undefined })
  const answer = await rpc(app, 'pm_getPaymasterStubData', [op, ENTRY_POINT_ADDRESS, chainIdHex, { token: TEST_TOKEN_ADDRESS }])
  expect(answer.result).toEqual({
    paymaster: TOKEN_PAYMASTER,
    paymasterData: expect.stringMatching(/^0x[0-9a-fA-F]{298}$/),
    paymasterVerificationGasLimit: numberToHex(PAYMASTER_GAS.token.verification),
    paymasterPostOpGasLimit: numberToHex(PAYMASTER_GAS.token.postOp),
    sponsor: { name: 'Demo' },
    isFinal: false,
  })
})

test('default: pm_getPaymasterData reserves the maximum cost and signs the exact typed data with the signer key', async () => {
  const { app, store } = await newApp()
  const sender = newSender()
  const op = operation(sender, 0n)
  const before = Math.floor(Date.now() / 1000)
  const answer = await getData(app, op)
  expect(answer.error).toBeUndefined()
  expect(answer.result).toEqual({
    paymaster: SPONSOR_PAYMASTER,
    paymasterData: expect.any(String),
    paymasterVerificationGasLimit: numberToHex(PAYMASTER_GAS.sponsor.verification),
    paymasterPostOpGasLimit: '0x0',
  })
  const data = decodeSponsorData(answer.result!.paymasterData)!
  expect(data.validAfter).toBe(0)
  expect(data.validUntil - before).toBeGreaterThanOrEqual(300)
  expect(data.validUntil - before).toBeLessThanOrEqual(301)
  const typed = sponsorTypedData({
    chainId: CHAIN_ID,
    paymaster: SPONSOR_PAYMASTER,
    validAfter: 0,
    validUntil: data.validUntil,
    userOperation: {
      sender,
      nonce: 0n,
      factory: '0x7702',
      factoryData: '0x',
      callData: op.callData as Hex,
      callGasLimit: 100_000n,
      verificationGasLimit: 100_000n,
      preVerificationGas: 50_000n,
      maxFeePerGas: MAX_FEE,
      maxPriorityFeePerGas: parseGwei('1'),
      paymasterVerificationGasLimit: PAYMASTER_GAS.sponsor.verification,
      paymasterPostOpGasLimit: 0n,
    },
  })
  expect(await recoverTypedDataAddress({ ...typed, signature: data.signature })).toBe(signer)
  expect(await budgetsOf(store.database.db, CHAIN_ID, sender, today())).toEqual({ user: MAX_COST, global: MAX_COST })
  expect(await lastAudit(store)).toEqual({ action: 'paymaster pm_getPaymasterData', outcome: 'completed', reason: null })
})

test('behavior: a new request for the same nonce replaces its reservation; another nonce adds to it', async () => {
  const { app, store } = await newApp()
  const sender = newSender()
  expect((await getData(app, operation(sender, 0n))).error).toBeUndefined()
  expect((await getData(app, operation(sender, 0n, undefined, { maxFeePerGas: numberToHex(MAX_FEE * 2n) }))).error).toBeUndefined()
  expect(await budgetsOf(store.database.db, CHAIN_ID, sender, today())).toEqual({ user: 2n * MAX_COST, global: 2n * MAX_COST })
  expect((await getData(app, operation(sender, 1n))).error).toBeUndefined()
  expect(await budgetsOf(store.database.db, CHAIN_ID, sender, today())).toEqual({ user: 3n * MAX_COST, global: 3n * MAX_COST })
})

const walletOf = (key: Hex) => createWalletClient({ account: privateKeyToAccount(key), chain: { ...anvilChain, id: CHAIN_ID }, transport: http(chain.url) })
const publicClient = () => createPublicClient({ chain: { ...anvilChain, id: CHAIN_ID }, transport: http(chain.url) })

type Refused = {
  name: string
  policy?: () => PaymasterPolicyInput
  prepare?: (app: Parameters<typeof rpc>[0]) => Promise<void>
  params: () => Promise<unknown> | unknown
  code: number
  reason: string
  message: string | RegExp
}
const staleKey = anvilKeys[3]
const budgetSender = newSender()
const refusals: Refused[] = [
  {
    name: 'a chain that is not configured',
    params: () => [operation(newSender(), 0n), ENTRY_POINT_ADDRESS, numberToHex(31338), {}],
    code: -32001,
    reason: 'chain',
    message: 'Chain 31338 is not sponsored',
  },
  {
    name: 'another entry point',
    params: () => [operation(newSender(), 0n), '0x0000000071727De22E5E9d8BAf0edAc6f37da032', chainIdHex, {}],
    code: -32002,
    reason: 'entryPoint',
    message: `EntryPoint 0x0000000071727De22E5E9d8BAf0edAc6f37da032 is not the one sponsored on chain ${CHAIN_ID}`,
  },
  {
    name: 'a target that is not allowed',
    params: () => [
      operation(newSender(), 0n, [{ to: TARGET }, { to: getAddress('0x000000000000000000000000000000000000dead') }]),
      ENTRY_POINT_ADDRESS,
      chainIdHex,
      {},
    ],
    code: -32003,
    reason: 'target',
    message: 'The call to 0x000000000000000000000000000000000000dEaD is not sponsored',
  },
  {
    name: 'a selector that is not allowed',
    params: () => [operation(newSender(), 0n, [{ to: SELECTIVE, data: '0x095ea7b3' }]), ENTRY_POINT_ADDRESS, chainIdHex, {}],
    code: -32003,
    reason: 'target',
    message: `The call to ${SELECTIVE} is not sponsored`,
  },
  {
    name: 'callData of an account the paymaster does not read',
    params: () => [operation(newSender(), 0n, undefined, { callData: '0xdeadbeef' }), ENTRY_POINT_ADDRESS, chainIdHex, {}],
    code: -32003,
    reason: 'target',
    message: "The operation's calls are not in a form the paymaster reads",
  },
  {
    name: 'an ERC-7821 mode other than a plain batch',
    params: () => [
      operation(newSender(), 0n, undefined, {
        callData: executeCallData([{ to: TARGET }], `0x01000000000078210001${'00'.repeat(22)}`),
      }),
      ENTRY_POINT_ADDRESS,
      chainIdHex,
      {},
    ],
    code: -32003,
    reason: 'target',
    message: "The operation's calls are not in a form the paymaster reads",
  },
  {
    name: 'gas over the cap',
    params: () => [operation(newSender(), 0n, undefined, { callGasLimit: numberToHex(900_000) }), ENTRY_POINT_ADDRESS, chainIdHex, {}],
    code: -32004,
    reason: 'gas',
    message: `The operation's gas, ${GAS + 800_000n}, is over the cap of 1000000`,
  },
  {
    name: 'over the sender’s budget',
    policy: () => policy({}, { perUserPerDayWei: ((3n * MAX_COST) / 2n).toString() }),
    prepare: async (app) => {
      expect((await getData(app, operation(budgetSender, 0n))).error).toBeUndefined()
    },
    params: () => [operation(budgetSender, 1n), ENTRY_POINT_ADDRESS, chainIdHex, {}],
    code: -32005,
    reason: 'budget',
    message: `The sponsorship budget for today has no room for ${MAX_COST} wei`,
  },
  {
    name: 'over the global budget',
    policy: () => policy({}, { globalPerDayWei: ((3n * MAX_COST) / 2n).toString() }),
    prepare: async (app) => {
      expect((await getData(app, operation(newSender(), 0n))).error).toBeUndefined()
    },
    params: () => [operation(newSender(), 0n), ENTRY_POINT_ADDRESS, chainIdHex, {}],
    code: -32005,
    reason: 'budget',
    message: `The sponsorship budget for today has no room for ${MAX_COST} wei`,
  },
  {
    name: 'a sender that is not a wallet of the app’s users',
    policy: () => policy({ accounts: 'users' }),
    params: () => [operation(getAddress('0x000000000000000000000000000000000000f00d'), 0n), ENTRY_POINT_ADDRESS, chainIdHex, {}],
    code: -32006,
    reason: 'account',
    message: "0x000000000000000000000000000000000000F00D is not a wallet of this app's users",
  },
  {
    name: 'a nonce the EntryPoint has used (a replayed sponsorship)',
    prepare: async () => {
      const wallet = walletOf(staleKey)
      const hash = await wallet.writeContract({ address: ENTRY_POINT_ADDRESS, abi: entryPoint08Abi, functionName: 'incrementNonce', args: [0n] })
      await publicClient().waitForTransactionReceipt({ hash })
    },
    params: () => [operation(privateKeyToAccount(staleKey).address, 0n), ENTRY_POINT_ADDRESS, chainIdHex, {}],
    code: -32007,
    reason: 'stale',
    message: 'Nonce 0 has been used; the account is at 1',
  },
  {
    name: 'a token that is not configured',
    params: () => [operation(newSender(), 0n), ENTRY_POINT_ADDRESS, chainIdHex, { token: TARGET }],
    code: -32008,
    reason: 'token',
    message: `Gas is not paid in ${TARGET} on chain ${CHAIN_ID}`,
  },
  {
    name: 'an account that can neither prefund in tokens nor be guaranteed',
    params: () => [operation(newSender(), 0n), ENTRY_POINT_ADDRESS, chainIdHex, { token: TEST_TOKEN_ADDRESS }],
    code: -32008,
    reason: 'token',
    message: /^0x[0-9a-fA-F]{40} can pay up to \d+ of 0x[0-9a-fA-F]{40} neither by allowance nor through an approval first in its batch$/,
  },
  {
    name: 'a malformed operation (no sender)',
    params: () => [{ ...operation(newSender(), 0n), sender: undefined }, ENTRY_POINT_ADDRESS, chainIdHex, {}],
    code: -32602,
    reason: 'malformed',
    message: 'Invalid params: 0.sender: Invalid input: expected string, received undefined',
  },
  {
    name: 'a malformed operation (a gas limit that is not a quantity)',
    params: () => [operation(newSender(), 0n, undefined, { callGasLimit: '100000' }), ENTRY_POINT_ADDRESS, chainIdHex, {}],
    code: -32602,
    reason: 'malformed',
    message: 'Invalid params: 0.callGasLimit: a hex quantity',
  },
  {
    name: 'a final operation without its gas limits',
    params: () => [operation(newSender(), 0n, undefined, { callGasLimit: undefined }), ENTRY_POINT_ADDRESS, chainIdHex, {}],
    code: -32602,
    reason: 'malformed',
    message: 'The operation must carry its gas limits',
  },
]

test.each(refusals)('error: $name is refused with its reason, budget unchanged', async (refusal) => {
  const { app, store } = await newApp(refusal.policy?.())
  await refusal.prepare?.(app)
  const before = await written(store)
  const answer = await rpc(app, 'pm_getPaymasterData', await refusal.params())
  expect(answer.result).toBeUndefined()
  expect(answer.error).toEqual({
    code: refusal.code,
    message: refusal.message instanceof RegExp ? expect.stringMatching(refusal.message) : refusal.message,
    data: { reason: refusal.reason },
  })
  expect(await written(store)).toEqual(before)
  const audited = await lastAudit(store)
  expect(audited).toEqual({ action: 'paymaster pm_getPaymasterData', outcome: 'refused', reason: `${refusal.reason}: ${answer.error!.message}` })
})

test('error: a body that is not JSON-RPC, and an unknown method', async () => {
  const { app } = await newApp()
  const notJson = await app.request('/paymaster', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' })
  expect(await notJson.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid request' } })
  expect(await rpc(app, 'eth_sendUserOperation', [])).toEqual({
    jsonrpc: '2.0',
    id: ids,
    error: { code: -32601, message: 'Method eth_sendUserOperation is not served here' },
  })
})

test('error: past its per-IP limit a caller gets 429 and a JSON-RPC error, before anything is read, reserved or audited', async () => {
  const { app, store } = await newApp(policy(), undefined, { paymaster: 2 })
  const sender = newSender()
  expect((await getData(app, operation(sender, 0n))).error).toBeUndefined()
  expect((await getData(app, operation(sender, 0n))).error).toBeUndefined()
  const before = await written(store)
  const audits = await auditCount(store)
  const flooded = await app.request('/paymaster', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'pm_getPaymasterData', params: [operation(sender, 1n), ENTRY_POINT_ADDRESS, chainIdHex, {}] }),
  })
  expect(flooded.status).toBe(429)
  expect(flooded.headers.get('retry-after')).toMatch(/^[0-9]+$/)
  expect(await flooded.json()).toEqual({
    jsonrpc: '2.0',
    id: null,
    error: { code: -32009, message: expect.stringMatching(/^Too many paymaster requests from this network; try again in [0-9]+ s$/), data: { reason: 'rate' } },
  })
  expect(await written(store)).toEqual(before)
  expect(await auditCount(store)).toBe(audits)
})

test('behavior: without paymaster settings there is no /paymaster', async () => {
  const { app } = await newBackend()
  const response = await app.request('/paymaster', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  expect(response.status).toBe(404)
})

test('behavior: accounts "users" sponsors a wallet of this backend’s users', async () => {
  const { app, store } = await newApp(policy({ accounts: 'users' }))
  const address = newSender()
  await store.insertAccount({ email: 'user@example.test', organization_id: 'o', user_id: 'u', address: address.toLowerCase(), created_at: 1 })
  expect((await getData(app, operation(address, 0n))).error).toBeUndefined()
})

const TOKEN_ABI = parseAbi(['function mint(address to, uint256 amount)', 'function approve(address spender, uint256 amount) returns (bool)'])

/** The most the token paymaster may pull for `operation()` with its token gas, as OpenZeppelin's PaymasterERC20 computes it. */
const tokenGas = 250_000n + PAYMASTER_GAS.token.verification + PAYMASTER_GAS.token.postOp
const maxTokenCost = erc20Cost((TOKEN_POST_OP_COST + PAYMASTER_GAS.token.postOp / 10n) * MAX_FEE + tokenGas * MAX_FEE, TOKEN_PER_NATIVE)
const guaranteedCost = maxTokenCost + erc20Cost(GUARANTEED_POST_OP_COST * MAX_FEE, TOKEN_PER_NATIVE)

async function send(key: Hex, call: { functionName: 'mint' | 'approve'; args: readonly [Address, bigint] }) {
  const hash = await walletOf(key).writeContract({ address: TEST_TOKEN_ADDRESS, abi: TOKEN_ABI, ...call } as never)
  await publicClient().waitForTransactionReceipt({ hash })
}

test('behavior: gas in tokens: an account with allowance and balance prefunds itself (no guarantor), signed with the quote', async () => {
  const { app, store } = await newApp()
  const key = anvilKeys[4]
  const sender = privateKeyToAccount(key).address
  await send(key, { functionName: 'mint', args: [sender, maxTokenCost] })
  await send(key, { functionName: 'approve', args: [TOKEN_PAYMASTER, maxTokenCost] })
  const op = operation(sender, 0n)
  const answer = await getData(app, op, { token: TEST_TOKEN_ADDRESS })
  expect(answer.result?.paymaster).toBe(TOKEN_PAYMASTER)
  const data = decodeTokenData(answer.result!.paymasterData)!
  expect({ token: data.token, tokenPerNative: data.tokenPerNative, guarantor: data.guarantor }).toEqual({
    token: TEST_TOKEN_ADDRESS,
    tokenPerNative: TOKEN_PER_NATIVE,
    guarantor: zeroAddress,
  })
  const typed = tokenTypedData({
    chainId: CHAIN_ID,
    paymaster: TOKEN_PAYMASTER,
    validAfter: 0,
    validUntil: data.validUntil,
    token: TEST_TOKEN_ADDRESS,
    tokenPerNative: TOKEN_PER_NATIVE,
    guarantor: zeroAddress,
    userOperation: {
      sender,
      nonce: 0n,
      factory: '0x7702',
      factoryData: '0x',
      callData: op.callData as Hex,
      callGasLimit: 100_000n,
      verificationGasLimit: 100_000n,
      preVerificationGas: 50_000n,
      maxFeePerGas: MAX_FEE,
      maxPriorityFeePerGas: parseGwei('1'),
      paymasterVerificationGasLimit: PAYMASTER_GAS.token.verification,
      paymasterPostOpGasLimit: PAYMASTER_GAS.token.postOp,
    },
  })
  expect(await recoverTypedDataAddress({ ...typed, signature: data.signature })).toBe(signer)
  expect(await budgetsOf(store.database.db, CHAIN_ID, sender, today())).toEqual({ user: tokenGas * MAX_FEE, global: tokenGas * MAX_FEE })
})

test('behavior: gas in tokens: an account short of allowance that approves first in its batch is guaranteed; one token short of that is refused', async () => {
  const { app } = await newApp()
  const key = anvilKeys[5]
  const sender = privateKeyToAccount(key).address
  await send(key, { functionName: 'mint', args: [sender, guaranteedCost - 1n] })
  const approve = (amount: bigint) => ({
    to: TEST_TOKEN_ADDRESS,
    data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'approve', args: [TOKEN_PAYMASTER, amount] }),
  })
  const short = await getData(app, operation(sender, 0n, [approve(guaranteedCost), { to: TARGET }]), { token: TEST_TOKEN_ADDRESS })
  expect(short.error?.data).toEqual({ reason: 'token' })
  await send(key, { functionName: 'mint', args: [sender, 1n] })
  const tooLittle = await getData(app, operation(sender, 0n, [approve(guaranteedCost - 1n), { to: TARGET }]), { token: TEST_TOKEN_ADDRESS })
  expect(tooLittle.error?.data).toEqual({ reason: 'token' })
  const granted = await getData(app, operation(sender, 0n, [approve(guaranteedCost), { to: TARGET }]), { token: TEST_TOKEN_ADDRESS })
  expect(granted.error).toBeUndefined()
  expect(decodeTokenData(granted.result!.paymasterData)!.guarantor).toBe(GUARANTOR)
})

test('behavior: 50 concurrent pm_getPaymasterData over two instances on one database never over-spend, per sender or in all', async () => {
  const url = await freshDatabaseUrl()
  const limits = policy({}, { perUserPerDayWei: (3n * MAX_COST).toString(), globalPerDayWei: (20n * MAX_COST).toString() })
  const [a, b] = [await newApp(limits, url), await newApp(limits, url)]
  const senders = Array.from({ length: 10 }, newSender)
  const answers = await Promise.all(
    Array.from({ length: 50 }, (_, i) => getData(i % 2 ? b.app : a.app, operation(senders[i % 10]!, BigInt(Math.floor(i / 10))))),
  )
  const granted = answers.filter((answer) => answer.result)
  expect(answers.filter((answer) => answer.error).map((answer) => answer.error!.data)).toEqual(Array(30).fill({ reason: 'budget' }))
  expect(granted).toHaveLength(20)
  const db = a.store.database.db
  for (const sender of senders) {
    const { user } = await budgetsOf(db, CHAIN_ID, sender, today())
    const reserved = await db.selectFrom('paymaster_reservations').select('amount').where('sender', '=', sender.toLowerCase()).execute()
    expect(user).toBe(BigInt(reserved.length) * MAX_COST)
    expect(user).toBeLessThanOrEqual(3n * MAX_COST)
  }
  expect((await budgetsOf(db, CHAIN_ID, senders[0]!, today())).global).toBe(20n * MAX_COST)
}, 60_000)

// A paymaster that accepts every operation (`validatePaymasterUserOp` answers an empty context and
// validation data 0), and an account whose every call succeeds with 32 zero bytes (`validateUserOp`
// answers 0): enough for the EntryPoint to run an operation and emit its real UserOperationEvent.
const ACCEPTING_PAYMASTER: Hex = '0x604060005260606000f3'
const ACCEPTING_ACCOUNT: Hex = '0x60206000f3'

test('behavior: settlement turns a reservation into the actualGasCost of the EntryPoint’s UserOperationEvent, once, on any instance', async () => {
  const url = await freshDatabaseUrl()
  const [a, b] = [await newApp(undefined, url), await newApp(undefined, url)]
  const sender = newSender()
  const test = createTestClient({ mode: 'anvil', transport: http(chain.url) })
  await test.setCode({ address: SPONSOR_PAYMASTER, bytecode: ACCEPTING_PAYMASTER })
  await test.setCode({ address: sender, bytecode: ACCEPTING_ACCOUNT })
  const funder = walletOf(anvilKeys[6])
  await publicClient().waitForTransactionReceipt({
    hash: await funder.writeContract({
      address: ENTRY_POINT_ADDRESS,
      abi: entryPoint08Abi,
      functionName: 'depositTo',
      args: [SPONSOR_PAYMASTER],
      value: 10n ** 18n,
    }),
  })
  await a.paymaster.settle()
  const op = operation(sender, 0n, undefined, { factory: undefined, factoryData: undefined })
  const answer = await getData(a.app, op)
  expect(answer.error).toBeUndefined()
  const packed = toPackedUserOperation({
    sender,
    nonce: 0n,
    callData: op.callData as Hex,
    callGasLimit: 100_000n,
    verificationGasLimit: 100_000n,
    preVerificationGas: 50_000n,
    maxFeePerGas: MAX_FEE,
    maxPriorityFeePerGas: parseGwei('1'),
    paymaster: SPONSOR_PAYMASTER,
    paymasterVerificationGasLimit: PAYMASTER_GAS.sponsor.verification,
    paymasterPostOpGasLimit: 0n,
    paymasterData: answer.result!.paymasterData,
    signature: '0x',
  })
  const hash = await funder.writeContract({
    address: ENTRY_POINT_ADDRESS,
    abi: entryPoint08Abi,
    functionName: 'handleOps',
    args: [[packed], funder.account.address],
    gas: 2_000_000n,
  })
  const receipt = await publicClient().waitForTransactionReceipt({ hash })
  const events = await publicClient().getContractEvents({
    address: ENTRY_POINT_ADDRESS,
    abi: entryPoint08Abi,
    eventName: 'UserOperationEvent',
    blockHash: receipt.blockHash,
  })
  expect(events.map((event) => [event.args.sender, event.args.paymaster, event.args.success])).toEqual([[sender, SPONSOR_PAYMASTER, true]])
  const actual = events[0]!.args.actualGasCost!
  expect(actual).toBeGreaterThan(0n)
  expect(actual).toBeLessThan(MAX_COST)
  expect(await budgetsOf(a.store.database.db, CHAIN_ID, sender, today())).toEqual({ user: MAX_COST, global: MAX_COST })
  expect(await a.paymaster.settle()).toEqual({ [CHAIN_ID]: { settled: 1, released: 0 } })
  // The other instance reads the same event (its cursor is the shared one, so start it over): nothing changes.
  await a.store.database.db.deleteFrom('paymaster_cursors').execute()
  expect(await b.paymaster.settle()).toEqual({ [CHAIN_ID]: { settled: 0, released: 0 } })
  expect(await budgetsOf(a.store.database.db, CHAIN_ID, sender, today())).toEqual({ user: actual, global: actual })
  expect(await a.store.database.db.selectFrom('paymaster_reservations').select(['status', 'actual']).execute()).toEqual([
    { status: 'settled', actual: actual.toString() },
  ])
  // sponsorship.spent, written with the settlement: once for the UserOperation, though both instances read it.
  const spent = await a.store.database.db.selectFrom('webhook_events').select('body').where('type', '=', 'sponsorship.spent').execute()
  expect(spent.map((row) => JSON.parse(row.body))).toEqual([
    {
      type: 'sponsorship.spent',
      timestamp: expect.any(String),
      data: {
        chainId: CHAIN_ID,
        userOpHash: events[0]!.args.userOpHash,
        sender,
        nonce: '0',
        paymaster: SPONSOR_PAYMASTER,
        paymasterKind: 'sponsor',
        actualGasCost: actual.toString(),
        success: true,
        transactionHash: hash,
      },
    },
  ])
}, 60_000)

test('behavior: a reservation whose window passes on the chain’s clock with no operation is released', async () => {
  const { app, store, paymaster } = await newApp(policy({ validitySeconds: 60 }))
  const sender = newSender()
  expect((await getData(app, operation(sender, 0n))).error).toBeUndefined()
  expect(await paymaster.settle()).toEqual({ [CHAIN_ID]: { settled: 0, released: 0 } })
  expect(await budgetsOf(store.database.db, CHAIN_ID, sender, today())).toEqual({ user: MAX_COST, global: MAX_COST })
  const test = createTestClient({ mode: 'anvil', transport: http(chain.url) })
  const now = Number((await publicClient().getBlock()).timestamp)
  await test.setNextBlockTimestamp({ timestamp: BigInt(Math.max(now, Math.floor(Date.now() / 1000)) + 120) })
  await test.mine({ blocks: 1 })
  expect(await paymaster.settle()).toEqual({ [CHAIN_ID]: { settled: 0, released: 1 } })
  expect(await paymaster.settle()).toEqual({ [CHAIN_ID]: { settled: 0, released: 0 } })
  expect(await budgetsOf(store.database.db, CHAIN_ID, sender, today())).toEqual({ user: 0n, global: 0n })
  expect(await store.database.db.selectFrom('paymaster_reservations').select(['status', 'actual']).execute()).toEqual([{ status: 'released', actual: null }])
})

test('behavior: viem’s paymaster client (a client we did not write) gets a stub, a signed sponsorship and a typed refusal from createAppServer over HTTP', async () => {
  const server = createAppServer({
    port: await getFreePort(),
    databaseUrl: await freshDatabaseUrl(),
    kmsUrl: 'http://127.0.0.1:9',
    organizationId: 'organization',
    ...keys,
    appName: 'Demo',
    allowedOrigins: [origin],
    paymaster: { signerPrivateKey: signerKey, policy: policy() },
  })
  await server.start()
  try {
    const client = createPaymasterClient({ transport: http(`${server.url}/paymaster`, { retryCount: 0 }) })
    const sender = newSender()
    const fields = {
      chainId: CHAIN_ID,
      entryPointAddress: ENTRY_POINT_ADDRESS,
      sender,
      nonce: 0n,
      factory: '0x7702',
      factoryData: '0x',
      callData: executeCallData([{ to: TARGET }]),
      maxFeePerGas: MAX_FEE,
      maxPriorityFeePerGas: parseGwei('1'),
    } as const
    expect(await client.getPaymasterStubData(fields)).toEqual({
      paymaster: SPONSOR_PAYMASTER,
      paymasterData: expect.any(String),
      paymasterVerificationGasLimit: PAYMASTER_GAS.sponsor.verification,
      paymasterPostOpGasLimit: 0n,
      sponsor: { name: 'Demo' },
      isFinal: false,
    })
    const granted = await client.getPaymasterData({ ...fields, callGasLimit: 100_000n, verificationGasLimit: 100_000n, preVerificationGas: 50_000n })
    expect(granted.paymaster).toBe(SPONSOR_PAYMASTER)
    expect(decodeSponsorData(granted.paymasterData!)!.signature).toMatch(/^0x[0-9a-f]{130}$/)
    const refused = await client
      .getPaymasterData({
        ...fields,
        callData: executeCallData([{ to: SELECTIVE }]),
        callGasLimit: 100_000n,
        verificationGasLimit: 100_000n,
        preVerificationGas: 50_000n,
      })
      .catch((error: { cause?: { code?: number; data?: unknown } }) => error.cause)
    expect(refused).toMatchObject({ code: -32003, data: { reason: 'target' } })
    const preflight = await fetch(`${server.url}/paymaster`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } })
    expect([preflight.status, preflight.headers.get('access-control-allow-origin')]).toEqual([204, origin])
  } finally {
    await server.stop()
  }
})

const SIMPLE_7702_ABI = parseAbi([
  'function execute(address target, uint256 value, bytes data)',
  'function executeBatch((address target, uint256 value, bytes data)[] calls)',
])

test('behavior: Simple7702Account’s execute and executeBatch (viem’s toSimple7702SmartAccount) are read call by call', async () => {
  const { app } = await newApp()
  const stub = (callData: Hex) =>
    rpc(app, 'pm_getPaymasterStubData', [operation(newSender(), 0n, undefined, { callData }), ENTRY_POINT_ADDRESS, chainIdHex, {}])
  const single = await stub(encodeFunctionData({ abi: SIMPLE_7702_ABI, functionName: 'execute', args: [SELECTIVE, 0n, `${TRANSFER}${'00'.repeat(64)}`] }))
  expect(single.result?.paymaster).toBe(SPONSOR_PAYMASTER)
  const batchOf = (targets: Address[]) =>
    encodeFunctionData({
      abi: SIMPLE_7702_ABI,
      functionName: 'executeBatch',
      args: [targets.map((target) => ({ target, value: 0n, data: '0x12345678' as Hex }))],
    })
  expect((await stub(batchOf([TARGET, TARGET]))).result?.paymaster).toBe(SPONSOR_PAYMASTER)
  expect((await stub(batchOf([TARGET, SELECTIVE]))).error).toEqual({
    code: -32003,
    message: `The call to ${SELECTIVE} is not sponsored`,
    data: { reason: 'target' },
  })
  expect((await stub(encodeFunctionData({ abi: SIMPLE_7702_ABI, functionName: 'execute', args: [GUARANTOR, 1n, '0x'] }))).error?.data).toEqual({
    reason: 'target',
  })
})
