import { BATCH_CALLS_PARAMETERS, BATCH_EXECUTOR_ABI, BATCH_MODE } from '@latchkey/constants/batch-executor'
import type { TurnkeyClient } from '@turnkey/http'
import {
  type Address,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  encodeFunctionData,
  getTypesForEIP712Domain,
  type Hex,
  http,
  keccak256,
  maxUint256,
  parseAbi,
  parseEther,
  parseTransaction,
  parseUnits,
  serializeTransaction,
  serializeTypedData,
  type TransactionSerializable,
  toHex,
} from 'viem'
import { getUserOperationTypedData } from 'viem/account-abstraction'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { testTokenAddress as token } from '../../../contracts/index.js'
import { ACTIVITIES, generateApiKeyPair } from '../src/index.js'
import { FRESH_VERIFICATION_ACTIVITIES } from '../src/policies/freshVerification.js'
import { type ApiKeyPair, post, startKms } from './harness.js'

// ERC-7715 grants (src/grants/): a dedicated key the kms checks against its rule and its ledger on
// every signature, through the official @turnkey/http client, with real transactions on the unit
// run's anvil (chain A), where test/globalSetup.ts deployed the test token (TKN, 18 decimals).

const CHAIN_ID = 31337
const transport = http(inject('chainARpc'))
const chain = createPublicClient({ transport })
const recipient = privateKeyToAccount(keccak256(toHex('latchkey grants recipient'))).address
const other = privateKeyToAccount(keccak256(toHex('latchkey grants other contract'))).address
const TOKEN_ABI = parseAbi([
  'function transfer(address to, uint256 amount)',
  'function approve(address spender, uint256 amount)',
  'function mint(address to, uint256 amount)',
  'function balanceOf(address owner) view returns (uint256)',
])
const TKN = (amount: string) => parseUnits(amount, 18)
const transfer = (amount: bigint, to: Address = recipient) => encodeFunctionData({ abi: TOKEN_ABI, functionName: 'transfer', args: [to, amount] })
const batch = (calls: readonly { to: Address; value: bigint; data: Hex }[]) =>
  encodeFunctionData({ abi: BATCH_EXECUTOR_ABI, functionName: 'execute', args: [BATCH_MODE, encodeAbiParameters(BATCH_CALLS_PARAMETERS, [calls])] })
const HOUR = 3600
/** A rolling window well inside a grant's hour. */
const WINDOW = 600

const setup = await startKms({ maxCredentialSeconds: 86_400 })
const { kms, clock, timestampMs } = setup
afterAll(() => kms.stop())

/** A sub-organization whose account holds 100 TKN and 10 ETH on chain A. */
async function fundedUser() {
  const sub = await setup.subOrganization()
  await chain.request({ method: 'anvil_setBalance', params: [sub.address, toHex(parseEther('10'))] } as never)
  const minter = createWalletClient({ account: privateKeyToAccount(keccak256(toHex('latchkey grants minter'))), transport })
  await chain.request({ method: 'anvil_setBalance', params: [minter.account.address, toHex(parseEther('1'))] } as never)
  const hash = await minter.writeContract({ address: token, abi: TOKEN_ABI, functionName: 'mint', args: [sub.address, TKN('100')], chain: null })
  expect((await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success')
  return sub
}
type User = Awaited<ReturnType<typeof fundedUser>>

/** The ERC-20 allowance of the demo: `allowance` TKN per `period` seconds. */
const tokenAllowance = (allowance: string, period = 86_400) => ({
  type: 'erc20-recurring-allowance',
  data: { address: token, allowance: TKN(allowance).toString(), start: '0', period: String(period), symbol: 'TKN', decimals: 18 },
})
/** A native allowance: `allowance` ETH per `period` seconds, which pays network fees too (a transaction's fee ceiling is native spend). */
const nativeAllowance = (allowance: string, period = 86_400) => ({
  type: 'native-token-recurring-allowance',
  data: { allowance: parseEther(allowance).toString(), start: '0', period: String(period) },
})
/** Room for the network fees of every transaction a test signs (`unsigned`'s ceiling is 0.0006 ETH). */
const FEES = nativeAllowance('1')
const expiryIn = (seconds: number) => String(Math.floor(clock.now / 1000) + seconds)

/** create_grant, stamped by the user's own key; its answer's activity. */
async function createGrant(user: User, grant: Record<string, unknown>, keys: ApiKeyPair = generateApiKeyPair()) {
  const body = {
    type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
    timestampMs: timestampMs(),
    organizationId: user.organizationId,
    parameters: { userId: user.userId, apiKey: { apiKeyName: 'grant', publicKey: keys.apiPublicKey }, grant },
  }
  const { activity } = await user.client.request<
    typeof body,
    { activity: { status: string; result: { createGrantResult: { grantId: string; apiKeyId: string } } } }
  >('/public/v1/submit/create_grant', body)
  expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  return { ...activity.result.createGrantResult, keys, client: setup.client(keys) }
}

/** A grant for `user` on chain A with `permissions`, for an hour; its key's client. */
const grantFor = (user: User, permissions: unknown[]) =>
  createGrant(user, { chainId: String(CHAIN_ID), account: user.address, expiry: expiryIn(HOUR), permissions })

let nonce = 0
/** An EIP-1559 transaction from `user`, unsigned, as sign_transaction takes it (hex without 0x). */
const unsigned = (to: Address, data: Hex = '0x', value = 0n, chainId = CHAIN_ID) =>
  serializeTransaction({
    chainId,
    type: 'eip1559',
    to,
    data,
    value,
    nonce: nonce++,
    gas: 300_000n,
    maxFeePerGas: 2_000_000_000n,
    maxPriorityFeePerGas: 1_000_000n,
  }).slice(2)

/** An unsigned transaction from `user` with the fee fields given (and no others: a field left out is absent), as sign_transaction takes it. */
const withFees = (fields: Omit<TransactionSerializable, 'chainId' | 'nonce' | 'to' | 'data'>, to: Address = token, data: Hex = transfer(1n)) =>
  serializeTransaction({ chainId: CHAIN_ID, to, data, nonce: nonce++, ...fields } as TransactionSerializable).slice(2)

/** sign_transaction stamped by `client` for `user`: the signed transaction (hex without 0x). */
async function sign(client: TurnkeyClient, user: User, unsignedTransaction: string) {
  const { activity } = await client.signTransaction({
    type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
    timestampMs: timestampMs(),
    organizationId: user.organizationId,
    parameters: { signWith: user.address, unsignedTransaction, type: 'TRANSACTION_TYPE_ETHEREUM' },
  })
  return activity.result.signTransactionResult!.signedTransaction
}
/** 'signed', or the refusal as the client reports it ("Turnkey error {code}: {message}"), without the details it appends. */
const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => 'signed',
    (error: Error) => error.message.replace(/ \(Details: .*\)$/s, ''),
  )

const listGrants = async (user: User) =>
  (
    await user.client.request<{ organizationId: string }, { grants: { grantId: string; apiKeyId: string; expiry: string; permissions: unknown[] }[] }>(
      '/public/v1/query/list_grants',
      { organizationId: user.organizationId },
    )
  ).grants

describe('signing inside a grant', () => {
  let user: User
  beforeAll(async () => {
    user = await fundedUser()
  })

  test('default: a transfer inside the grant is signed with no approval and lands on chain', async () => {
    const grant = await grantFor(user, [tokenAllowance('5'), FEES])
    const before = await chain.readContract({ address: token, abi: TOKEN_ABI, functionName: 'balanceOf', args: [recipient] })
    nonce = await chain.getTransactionCount({ address: user.address })
    const signed = await sign(grant.client, user, unsigned(token, transfer(TKN('1.5'))))
    const hash = await chain.request({ method: 'eth_sendRawTransaction', params: [`0x${signed}`] })
    expect((await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success')
    expect(await chain.readContract({ address: token, abi: TOKEN_ABI, functionName: 'balanceOf', args: [recipient] })).toBe(before + TKN('1.5'))
  })

  test('error: refuses what goes over the ERC-20 allowance, counting what was already signed in the rolling window', async () => {
    const grant = await grantFor(user, [tokenAllowance('5', WINDOW), FEES])
    for (let index = 0; index < 3; index++) await sign(grant.client, user, unsigned(token, transfer(TKN('1.5'))))
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(TKN('1.5')))))).toBe(
      'Turnkey error 7: Grant limit: 5 TKN per 10 minutes; 4.5 TKN already spent',
    )
    // What is left still signs; then nothing does.
    await sign(grant.client, user, unsigned(token, transfer(TKN('0.5'))))
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(1n))))).toBe(
      'Turnkey error 7: Grant limit: 5 TKN per 10 minutes; 5 TKN already spent',
    )
    // An approval spends the allowance too: it lets another spend it.
    expect(await refusal(sign(grant.client, user, unsigned(token, encodeFunctionData({ abi: TOKEN_ABI, functionName: 'approve', args: [other, 1n] }))))).toBe(
      'Turnkey error 7: Grant limit: 5 TKN per 10 minutes; 5 TKN already spent',
    )
    // Rolling: the first three leave the window an hour after they were signed, not at a calendar boundary.
    clock.now += WINDOW * 1000 - 1
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(TKN('1')))))).toBe(
      'Turnkey error 7: Grant limit: 5 TKN per 10 minutes; 5 TKN already spent',
    )
    clock.now += 2
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(TKN('4.5')))))).toBe('signed')
  })

  test('error: refuses native value over the native-token allowance, and any value without one', async () => {
    const grant = await grantFor(user, [nativeAllowance('0.01')])
    // 0.006 ETH and a fee ceiling of 0.0006 ETH (300,000 gas at 2 gwei).
    await sign(grant.client, user, unsigned(recipient, '0x', parseEther('0.006')))
    expect(await refusal(sign(grant.client, user, unsigned(recipient, '0x', parseEther('0.0035'))))).toBe(
      'Turnkey error 7: Grant limit: 0.01 ETH per 1 day; 0.0066 ETH already spent',
    )
    const tokensOnly = await grantFor(user, [tokenAllowance('5')])
    expect(await refusal(sign(tokensOnly.client, user, unsigned(recipient, '0x', 1n)))).toBe(
      'Turnkey error 7: Outside the grant: the grant allows no native-token spend',
    )
  })

  test('error: refuses calls to contracts and functions the grant does not list; allows those it lists', async () => {
    const selector = encodeFunctionData({ abi: TOKEN_ABI, functionName: 'mint', args: [recipient, 1n] }).slice(0, 10)
    const grant = await grantFor(user, [tokenAllowance('5'), FEES, { type: 'contract-call', data: { address: other, calls: ['0x12345678'] } }])
    expect(await refusal(sign(grant.client, user, unsigned(token, encodeFunctionData({ abi: TOKEN_ABI, functionName: 'mint', args: [recipient, 1n] }))))).toBe(
      `Turnkey error 7: Outside the grant: function ${selector} of ${token} is not among the calls the grant allows`,
    )
    expect(await refusal(sign(grant.client, user, unsigned(other, transfer(1n))))).toBe(
      `Turnkey error 7: Outside the grant: function 0xa9059cbb of ${other} is not among the calls the grant allows`,
    )
    expect(await refusal(sign(grant.client, user, unsigned(other, '0x12345678')))).toBe('signed')
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(1n), 0n, 31338)))).toBe(
      'Turnkey error 7: Outside the grant: the grant is for chain 31337; this transaction is for chain 31338',
    )
  })

  test('behavior: a batch through the executor is judged call by call, its spends added up', async () => {
    const grant = await grantFor(user, [tokenAllowance('5'), FEES])
    const call = (amount: string) => ({ to: token, value: 0n, data: transfer(TKN(amount)) })
    expect(await refusal(sign(grant.client, user, unsigned(user.address, batch([call('2'), call('2')]))))).toBe('signed')
    expect(await refusal(sign(grant.client, user, unsigned(user.address, batch([call('0.5'), call('1')]))))).toBe(
      'Turnkey error 7: Grant limit: 5 TKN per 1 day; 4 TKN already spent',
    )
    expect(await refusal(sign(grant.client, user, unsigned(user.address, batch([call('0.5'), { to: other, value: 0n, data: '0x12345678' }]))))).toBe(
      `Turnkey error 7: Outside the grant: function 0x12345678 of ${other} is not among the calls the grant allows`,
    )
    expect(await refusal(sign(grant.client, user, unsigned(user.address, '0xdeadbeef')))).toBe(
      'Turnkey error 7: Outside the grant: a call to the account itself that is not the batch executor’s execute of a batch',
    )
  })

  test('error: a grant key signs nothing but transactions: no messages, credentials or reads', async () => {
    const grant = await grantFor(user, [tokenAllowance('5')])
    const answers = await Promise.all(
      (
        [
          [
            'sign_raw_payload',
            {
              type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
              parameters: { signWith: user.address, payload: '0x1900', encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
            },
          ],
          ['create_api_keys', { type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2', parameters: { userId: user.userId, apiKeys: [] } }],
          ['export_wallet', { type: 'ACTIVITY_TYPE_EXPORT_WALLET', parameters: { walletId: user.walletId, targetPublicKey: grant.keys.apiPublicKey } }],
        ] as const
      ).map(([op, body]) => post(kms, grant.keys, `/public/v1/submit/${op}`, { ...body, timestampMs: timestampMs(), organizationId: user.organizationId })),
    )
    expect(answers.map((answer) => [answer.status, answer.body['message']])).toEqual(
      ['sign_raw_payload', 'create_api_keys', 'export_wallet'].map((op) => [403, `A grant's key signs transactions only; /public/v1/submit/${op} is refused`]),
    )
    const read = await post(kms, grant.keys, '/public/v1/query/get_wallets', { organizationId: user.organizationId })
    expect(read).toEqual({
      status: 403,
      body: {
        code: 7,
        message: "A grant's key signs transactions only; /public/v1/query/get_wallets is refused",
        details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'GRANT_ACTIVITY_NOT_ALLOWED', domain: 'latchkey.grants', metadata: {} }],
      },
    })
  })

  test('error: a grant key cannot sign a UserOperation, even one whose calls the grant allows: its gas and calls would escape the window; refused, writing nothing', async () => {
    const grant = await grantFor(user, [tokenAllowance('5'), FEES])
    // EntryPoint v0.8's PackedUserOperation for the account, whose execute transfers 1 TKN: inside the grant as a transaction.
    const typed = getUserOperationTypedData({
      chainId: CHAIN_ID,
      entryPointAddress: '0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108',
      userOperation: {
        sender: user.address,
        nonce: 0n,
        callData: batch([{ to: token, value: 0n, data: transfer(TKN('1')) }]),
        callGasLimit: 200_000n,
        verificationGasLimit: 100_000n,
        preVerificationGas: 50_000n,
        maxFeePerGas: 2_000_000_000n,
        maxPriorityFeePerGas: 1_000_000_000n,
        signature: '0x',
      },
    })
    const payload = serializeTypedData({ ...typed, types: { EIP712Domain: getTypesForEIP712Domain({ domain: typed.domain }), ...typed.types } } as Parameters<
      typeof serializeTypedData
    >[0])
    const activities = async () => (await user.client.getActivities({ organizationId: user.organizationId })).activities.length
    const before = await activities()
    const answer = await post(kms, grant.keys, '/public/v1/submit/sign_raw_payload', {
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: timestampMs(),
      organizationId: user.organizationId,
      parameters: { signWith: user.address, payload, encoding: 'PAYLOAD_ENCODING_EIP712', hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' },
    })
    expect(answer).toEqual({
      status: 403,
      body: {
        code: 7,
        message: "A grant's key signs transactions only; /public/v1/submit/sign_raw_payload is refused",
        details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'GRANT_ACTIVITY_NOT_ALLOWED', domain: 'latchkey.grants', metadata: {} }],
      },
    })
    expect(await activities()).toBe(before)
    // Nothing was charged: the whole allowance still signs.
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(TKN('5')))))).toBe('signed')
  })

  test('error: a grant signs for its own account only', async () => {
    const grant = await grantFor(user, [tokenAllowance('5')])
    const { privateKeyId } = await setup.createPrivateKey(user.client, user.organizationId, `other key ${nonce}`)
    const { activity } = await grant.client
      .signTransaction({
        type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
        timestampMs: timestampMs(),
        organizationId: user.organizationId,
        parameters: { signWith: privateKeyId, unsignedTransaction: unsigned(token, transfer(1n)), type: 'TRANSACTION_TYPE_ETHEREUM' },
      })
      .catch((error: Error) => ({ activity: error.message.replace(/ \(Details: .*\)$/s, '') }))
    expect(activity).toBe(`Turnkey error 7: Outside the grant: it signs for ${user.address} only`)
  })

  test('error: an expired grant’s key is refused as expired', async () => {
    const grant = await createGrant(user, { chainId: String(CHAIN_ID), account: user.address, expiry: expiryIn(60), permissions: [tokenAllowance('5')] })
    clock.now += 60_000
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(1n))))).toBe(
      `Turnkey error 16: rpc error: code = Unauthenticated desc = expired api key publicKey: ${grant.keys.apiPublicKey}`,
    )
  })

  test('behavior: a refusal writes nothing but its audit event: no activity, no spend', async () => {
    const grant = await grantFor(user, [tokenAllowance('1'), FEES])
    const activities = async () => (await user.client.getActivities({ organizationId: user.organizationId })).activities.length
    const before = await activities()
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(TKN('2')))))).toBe(
      'Turnkey error 7: Grant limit: 1 TKN per 1 day; 0 TKN already spent',
    )
    expect(await activities()).toBe(before)
    // Nothing was charged: the whole allowance still signs.
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(TKN('1')))))).toBe('signed')
  })

  test('behavior: forty requests at once sign exactly as many as the allowance holds', async () => {
    const grant = await grantFor(user, [tokenAllowance('5'), FEES])
    const answers = await Promise.all(Array.from({ length: 40 }, () => refusal(sign(grant.client, user, unsigned(token, transfer(TKN('1')))))))
    expect(answers.filter((answer) => answer === 'signed')).toHaveLength(5)
    expect(answers.filter((answer) => answer === 'Turnkey error 7: Grant limit: 5 TKN per 1 day; 5 TKN already spent')).toHaveLength(35)
  })
})

describe('network fees under a grant', () => {
  let user: User
  beforeAll(async () => {
    user = await fundedUser()
  })
  const activities = async () => (await user.client.getActivities({ organizationId: user.organizationId })).activities.length
  /** The finding: no value, no token, a fee price of the whole balance (10 ETH) over 21,000 gas. */
  const drain = () => withFees({ type: 'eip1559', gas: 21_000n, maxFeePerGas: parseEther('10') / 21_000n }, recipient, '0x')

  test('error: a transaction’s fee ceiling is native spend: charged to the native allowance in its rolling window, refused past it', async () => {
    const grant = await grantFor(user, [tokenAllowance('5'), nativeAllowance('0.002', WINDOW)])
    // Three transfers of 1 TKN, each with a fee ceiling of 0.0006 ETH (300,000 gas at 2 gwei): 0.0018 ETH of 0.002.
    for (let index = 0; index < 3; index++) expect(await refusal(sign(grant.client, user, unsigned(token, transfer(TKN('1')))))).toBe('signed')
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(TKN('1')))))).toBe(
      'Turnkey error 7: Grant limit: 0.002 ETH per 10 minutes; 0.0018 ETH already spent',
    )
    expect(await refusal(sign(grant.client, user, drain()))).toBe('Turnkey error 7: Grant limit: 0.002 ETH per 10 minutes; 0.0018 ETH already spent')
    // A fee and a value add up: 0.0002 ETH of fee and 1 wei is past what is left; the fee alone fits, then nothing does.
    expect(
      await refusal(sign(grant.client, user, withFees({ type: 'eip1559', gas: 100_000n, maxFeePerGas: 2_000_000_000n, value: 1n }, recipient, '0x'))),
    ).toBe('Turnkey error 7: Grant limit: 0.002 ETH per 10 minutes; 0.0018 ETH already spent')
    expect(await refusal(sign(grant.client, user, withFees({ type: 'eip1559', gas: 100_000n, maxFeePerGas: 2_000_000_000n }, recipient, '0x')))).toBe('signed')
    expect(await refusal(sign(grant.client, user, withFees({ type: 'eip1559', gas: 21_000n, maxFeePerGas: 1n })))).toBe(
      'Turnkey error 7: Grant limit: 0.002 ETH per 10 minutes; 0.002 ETH already spent',
    )
    // Rolling: past the window the fees paid leave it.
    clock.now += WINDOW * 1000 + 1
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(TKN('1')))))).toBe('signed')
  })

  test('error: a grant with no native allowance refuses a transaction that pays network fees (GRANT_FEES_NOT_ALLOWED), writing nothing', async () => {
    const grant = await grantFor(user, [tokenAllowance('5')])
    const before = await activities()
    const answer = await post(kms, grant.keys, '/public/v1/submit/sign_transaction', {
      type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
      timestampMs: timestampMs(),
      organizationId: user.organizationId,
      parameters: { signWith: user.address, unsignedTransaction: drain(), type: 'TRANSACTION_TYPE_ETHEREUM' },
    })
    expect(answer).toEqual({
      status: 403,
      body: {
        code: 7,
        message: 'Outside the grant: network fees of up to 9.999999999999996 ETH need a native-token allowance; the grant has none',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'GRANT_FEES_NOT_ALLOWED',
            domain: 'latchkey.grants',
            metadata: { asset: 'native', asked: '9999999999999996000' },
          },
        ],
      },
    })
    // A transfer inside the token allowance is refused for its fee alone; a ceiling past any balance reads whole.
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(TKN('1')))))).toBe(
      'Turnkey error 7: Outside the grant: network fees of up to 0.0006 ETH need a native-token allowance; the grant has none',
    )
    expect(await refusal(sign(grant.client, user, withFees({ type: 'eip1559', gas: 30_000_000n, maxFeePerGas: maxUint256 })))).toBe(
      'Turnkey error 7: Outside the grant: network fees of up to 3473762677119485862707129550260637235598099539969216921183727520237.39388919805 ETH need a native-token allowance; the grant has none',
    )
    expect(await activities()).toBe(before)
    // Nothing was charged: the whole token allowance still signs, in a transaction that offers the network no fee.
    expect(await refusal(sign(grant.client, user, withFees({ type: 'eip1559', gas: 100_000n }, token, transfer(TKN('5')))))).toBe('signed')
  })

  test('behavior: a transaction with no gas limit or no fee price is charged nothing, and the chain runs neither: leaving a field out dodges no charge', async () => {
    const grant = await grantFor(user, [tokenAllowance('5'), nativeAllowance('0.0006')])
    nonce = await chain.getTransactionCount({ address: user.address })
    const noGas = await sign(grant.client, user, withFees({ type: 'eip1559', maxFeePerGas: parseEther('1') }))
    nonce--
    // The kms signs the fields as it parsed them: no gas limit, which no chain runs.
    expect(parseTransaction(`0x${noGas}`).gas).toBeUndefined()
    await expect(chain.request({ method: 'eth_sendRawTransaction', params: [`0x${noGas}`] })).rejects.toThrow(/intrinsic gas too low/)
    const noPrice = await sign(grant.client, user, withFees({ type: 'eip1559', gas: 100_000n }))
    nonce--
    expect(parseTransaction(`0x${noPrice}`).maxFeePerGas).toBeUndefined()
    await expect(chain.request({ method: 'eth_sendRawTransaction', params: [`0x${noPrice}`] })).rejects.toThrow(/max fee per gas less than block base fee/)
    expect(await refusal(sign(grant.client, user, withFees({ type: 'legacy', gas: 100_000n })))).toBe('signed')
    // Neither was charged: the whole native allowance pays one fee of 0.0006 ETH, then nothing is left.
    expect(await refusal(sign(grant.client, user, unsigned(token, transfer(1n))))).toBe('signed')
    expect(await refusal(sign(grant.client, user, withFees({ type: 'eip1559', gas: 21_000n, maxFeePerGas: 1n })))).toBe(
      'Turnkey error 7: Grant limit: 0.0006 ETH per 1 day; 0.0006 ETH already spent',
    )
  })

  test('behavior: a legacy or EIP-2930 transaction’s fee ceiling is its gas limit times its gasPrice', async () => {
    const grant = await grantFor(user, [tokenAllowance('5'), nativeAllowance('0.001')])
    // 100,000 gas at 5 gwei: 0.0005 ETH.
    expect(await refusal(sign(grant.client, user, withFees({ type: 'legacy', gas: 100_000n, gasPrice: 5_000_000_000n })))).toBe('signed')
    expect(await refusal(sign(grant.client, user, withFees({ type: 'eip2930', gas: 100_000n, gasPrice: 6_000_000_000n, accessList: [] })))).toBe(
      'Turnkey error 7: Grant limit: 0.001 ETH per 1 day; 0.0005 ETH already spent',
    )
    expect(await refusal(sign(grant.client, user, withFees({ type: 'eip2930', gas: 100_000n, gasPrice: 5_000_000_000n, accessList: [] })))).toBe('signed')
    const tokensOnly = await grantFor(user, [tokenAllowance('5')])
    expect(await refusal(sign(tokensOnly.client, user, withFees({ type: 'legacy', gas: 21_000n, gasPrice: 1_000_000_000n })))).toBe(
      'Turnkey error 7: Outside the grant: network fees of up to 0.000021 ETH need a native-token allowance; the grant has none',
    )
  })

  test('behavior: forty requests at once sign exactly as many as the native allowance holds fees for', async () => {
    // 0.0024 ETH: four fee ceilings of 0.0006 ETH; the 4 TKN they move leave the token allowance room.
    const grant = await grantFor(user, [tokenAllowance('5'), nativeAllowance('0.0024')])
    const answers = await Promise.all(Array.from({ length: 40 }, () => refusal(sign(grant.client, user, unsigned(token, transfer(TKN('1')))))))
    expect(answers.filter((answer) => answer === 'signed')).toHaveLength(4)
    expect(answers.filter((answer) => answer === 'Turnkey error 7: Grant limit: 0.0024 ETH per 1 day; 0.0024 ETH already spent')).toHaveLength(36)
  })
})

describe('creating, listing and revoking grants', () => {
  let user: User
  beforeAll(async () => {
    user = await setup.subOrganization()
  })
  const grant = (overrides: Record<string, unknown>) => ({
    chainId: String(CHAIN_ID),
    account: user.address,
    expiry: expiryIn(HOUR),
    permissions: [tokenAllowance('5')],
    ...overrides,
  })

  test('error: refuses a grant with no expiry, an expiry past or beyond the cap, an unknown permission or a malformed amount, writing nothing', async () => {
    const keysBefore = (await user.client.getApiKeys({ organizationId: user.organizationId, userId: user.userId })).apiKeys.length
    const { expiry: _, ...withoutExpiry } = grant({})
    const cases = [
      [withoutExpiry, 'GRANT_EXPIRY_REQUIRED', 'invalid parameters: grant.expiry: is required: a grant never lasts for ever'],
      [grant({ expiry: expiryIn(-1) }), 'GRANT_EXPIRY_PAST', 'invalid parameters: grant.expiry: is in the past'],
      [
        grant({ expiry: expiryIn(86_401) }),
        'GRANT_EXPIRY_TOO_LONG',
        'invalid parameters: grant.expiry: must be at most 86400 seconds from now, the longest lifetime this kms gives a credential',
      ],
      [
        grant({ permissions: [{ type: 'native-token-stream', data: {} }] }),
        'GRANT_UNKNOWN_PERMISSION_TYPE',
        'invalid parameters: grant.permissions.0.type: unknown permission type "native-token-stream"; this kms grants native-token-recurring-allowance, erc20-recurring-allowance, contract-call',
      ],
    ] as const
    for (const [parameters, reason, message] of cases) {
      const keys = generateApiKeyPair()
      const answer = await post(kms, user.keys, '/public/v1/submit/create_grant', {
        type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
        timestampMs: timestampMs(),
        organizationId: user.organizationId,
        parameters: { userId: user.userId, apiKey: { apiKeyName: 'grant', publicKey: keys.apiPublicKey }, grant: parameters },
      })
      expect(answer).toEqual({
        status: 400,
        body: { code: 3, message, details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'latchkey.grants', metadata: {} }] },
      })
    }
    const malformed = await post(kms, user.keys, '/public/v1/submit/create_grant', {
      type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
      timestampMs: timestampMs(),
      organizationId: user.organizationId,
      parameters: {
        userId: user.userId,
        apiKey: { apiKeyName: 'grant', publicKey: generateApiKeyPair().apiPublicKey },
        grant: grant({ permissions: [{ ...tokenAllowance('5'), data: { ...tokenAllowance('5').data, allowance: '1.5' } }] }),
      },
    })
    expect([malformed.status, malformed.body['message']]).toEqual([
      400,
      'invalid parameters: grant.permissions.0.data.allowance: must be a whole number of the smallest unit, as a decimal string',
    ])
    expect(await listGrants(user)).toEqual([])
    expect((await user.client.getApiKeys({ organizationId: user.organizationId, userId: user.userId })).apiKeys).toHaveLength(keysBefore)
  })

  test('error: refuses a grant with two allowances for one asset (native, or one token however its address is cased), writing nothing', async () => {
    const keysBefore = (await user.client.getApiKeys({ organizationId: user.organizationId, userId: user.userId })).apiKeys.length
    const native = (allowance: string, period: string) => ({
      type: 'native-token-recurring-allowance',
      data: { allowance: parseEther(allowance).toString(), start: '0', period },
    })
    const lowercaseToken = { ...tokenAllowance('1', HOUR), data: { ...tokenAllowance('1', HOUR).data, address: token.toLowerCase() } }
    const cases = [
      [
        [native('10', '86400'), native('1', '3600')],
        'invalid parameters: grant.permissions.1: a second allowance for the native token (the first is grant.permissions.0); a grant has one allowance per asset',
      ],
      [
        [tokenAllowance('10'), { type: 'contract-call', data: { address: other, calls: ['0x12345678'] } }, lowercaseToken],
        `invalid parameters: grant.permissions.2: a second allowance for token ${token} (the first is grant.permissions.0); a grant has one allowance per asset`,
      ],
    ] as const
    for (const [permissions, message] of cases) {
      const answer = await post(kms, user.keys, '/public/v1/submit/create_grant', {
        type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
        timestampMs: timestampMs(),
        organizationId: user.organizationId,
        parameters: { userId: user.userId, apiKey: { apiKeyName: 'grant', publicKey: generateApiKeyPair().apiPublicKey }, grant: grant({ permissions }) },
      })
      expect(answer).toEqual({
        status: 400,
        body: {
          code: 3,
          message,
          details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'GRANT_DUPLICATE_ALLOWANCE', domain: 'latchkey.grants', metadata: {} }],
        },
      })
    }
    expect(await listGrants(user)).toEqual([])
    expect((await user.client.getApiKeys({ organizationId: user.organizationId, userId: user.userId })).apiKeys).toHaveLength(keysBefore)
  })

  test('behavior: list_grants answers the grants in force; revoke_grant deletes the key and its rule', async () => {
    const created = await createGrant(user, grant({}))
    const listed = await listGrants(user)
    expect(listed).toEqual([
      {
        grantId: created.grantId,
        userId: user.userId,
        apiKeyId: created.apiKeyId,
        publicKey: created.keys.apiPublicKey,
        chainId: String(CHAIN_ID),
        account: user.address,
        expiry: expiryIn(HOUR),
        permissions: [tokenAllowance('5')],
        createdAt: { seconds: String(Math.floor(clock.now / 1000)), nanos: '0' },
      },
    ])
    const key = (await user.client.getApiKeys({ organizationId: user.organizationId, userId: user.userId })).apiKeys.find(
      (each) => each.apiKeyId === created.apiKeyId,
    )
    // The key lapses with the grant.
    expect(key?.expirationSeconds).toBe(String(Math.round((Number(expiryIn(HOUR)) * 1000 - clock.now) / 1000)))
    const { activity } = await user.client.request<Record<string, unknown>, { activity: { status: string } }>('/public/v1/submit/revoke_grant', {
      type: 'ACTIVITY_TYPE_LATCHKEY_REVOKE_GRANT',
      timestampMs: timestampMs(),
      organizationId: user.organizationId,
      parameters: { grantId: created.grantId },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect(await listGrants(user)).toEqual([])
    expect(await refusal(sign(created.client, user, unsigned(token, transfer(1n))))).toBe(
      'Turnkey error 16: could not find public key in organization or its parent organization',
    )
  })
})

describe('a grant ends with the session that made it', () => {
  let user: User
  beforeAll(async () => {
    user = await setup.subOrganization()
  })

  /** A session key of the user (an hour), registered by the root key, as a backend registers a browser's: its id and a client of it. */
  async function session() {
    const keys = generateApiKeyPair()
    const { activity } = await user.client.createApiKeys({
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      timestampMs: timestampMs(),
      organizationId: user.organizationId,
      parameters: {
        userId: user.userId,
        apiKeys: [{ apiKeyName: 'session', publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: String(HOUR) }],
      },
    })
    return { apiKeyId: activity.result.createApiKeysResult!.apiKeyIds[0]!, keys, client: setup.client(keys) }
  }
  const deleteKeys = (apiKeyIds: string[]) =>
    user.client.deleteApiKeys({
      type: 'ACTIVITY_TYPE_DELETE_API_KEYS',
      timestampMs: timestampMs(),
      organizationId: user.organizationId,
      parameters: { userId: user.userId, apiKeyIds },
    })
  const keyIds = async () => (await user.client.getApiKeys({ organizationId: user.organizationId, userId: user.userId })).apiKeys.map((key) => key.apiKeyId)
  const grantOf = (by: { client: TurnkeyClient }) =>
    createGrant(
      { ...user, client: by.client },
      { chainId: String(CHAIN_ID), account: user.address, expiry: expiryIn(HOUR), permissions: [tokenAllowance('5'), FEES] },
    )

  test('behavior: deleting the session key that created a grant deletes the grant’s key, rule and ledger; grants of other keys stay', async () => {
    const [signedOut, other] = [await session(), await session()]
    const ended = await grantOf(signedOut)
    const kept = await grantOf(other)
    const byRoot = await grantOf(user)
    // The ended grant has signed: its ledger has a row, deleted with the grant.
    expect(await refusal(sign(ended.client, user, unsigned(token, transfer(TKN('1')))))).toBe('signed')

    const { activity } = await deleteKeys([signedOut.apiKeyId])
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect((await listGrants(user)).map((grant) => grant.grantId)).toEqual([kept.grantId, byRoot.grantId])
    expect(await keyIds()).toEqual(expect.arrayContaining([other.apiKeyId, kept.apiKeyId, byRoot.apiKeyId]))
    expect((await keyIds()).filter((id) => id === signedOut.apiKeyId || id === ended.apiKeyId)).toEqual([])
    // A stamp of the ended grant's key is refused as any unknown key's (the wallet's GRANT_EXPIRED).
    expect(await refusal(sign(ended.client, user, unsigned(token, transfer(1n))))).toBe(
      'Turnkey error 16: could not find public key in organization or its parent organization',
    )
    expect(await refusal(sign(kept.client, user, unsigned(token, transfer(1n))))).toBe('signed')
    expect(await refusal(sign(byRoot.client, user, unsigned(token, transfer(1n))))).toBe('signed')
  })

  test('behavior: a session key deleted with the grant keys it created, in one delete_api_keys, is no error; a grant’s own key deleted leaves its session', async () => {
    const current = await session()
    const [first, second] = [await grantOf(current), await grantOf(current)]
    // Deleting a grant's key alone (as revoke_grant does) ends that grant only.
    await deleteKeys([first.apiKeyId])
    expect((await listGrants(user)).map((grant) => grant.grantId)).toContain(second.grantId)
    expect(await current.client.getWhoami({ organizationId: user.organizationId })).toMatchObject({ userId: user.userId })
    // Every key of the session at once (a sign-out everywhere lists them all): the key the cascade took first is no failure.
    const { activity } = await deleteKeys([current.apiKeyId, second.apiKeyId])
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect((await listGrants(user)).map((grant) => grant.grantId)).not.toContain(second.grantId)
    expect(await refusal(sign(second.client, user, unsigned(token, transfer(1n))))).toBe(
      'Turnkey error 16: could not find public key in organization or its parent organization',
    )
  })

  test('error: a grant asking to outlive the session that makes it is refused, not shortened, and writes nothing', async () => {
    const current = await session()
    const keysBefore = await keyIds()
    const grantsBefore = await listGrants(user)
    const ends = Math.floor((clock.now + HOUR * 1000) / 1000)
    const asked = createGrant(
      { ...user, client: current.client },
      { chainId: String(CHAIN_ID), account: user.address, expiry: expiryIn(HOUR + 60), permissions: [tokenAllowance('5')] },
    )
    expect(await refusal(asked)).toBe(`Turnkey error 3: invalid parameters: grant.expiry: must be at most ${ends}, when the session that asks for it ends`)
    expect([await keyIds(), await listGrants(user)]).toEqual([keysBefore, grantsBefore])
  })

  test('error: a grant’s key runs none of the activities that need a fresh verification, nor create_grant: a grant making grants would outlive its session', async () => {
    const current = await session()
    const grant = await grantOf(current)
    const grantsBefore = await listGrants(user)
    const keysBefore = await keyIds()
    const types = [...FRESH_VERIFICATION_ACTIVITIES, 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT']
    const parameters: Record<string, unknown> = {
      ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT: {
        userId: user.userId,
        apiKey: { apiKeyName: 'grant of a grant', publicKey: generateApiKeyPair().apiPublicKey },
        grant: { chainId: String(CHAIN_ID), account: user.address, expiry: expiryIn(HOUR), permissions: [tokenAllowance('5')] },
      },
      ACTIVITY_TYPE_CREATE_API_KEYS_V2: {
        userId: user.userId,
        apiKeys: [{ apiKeyName: 'key of a grant', publicKey: generateApiKeyPair().apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '600' }],
      },
    }
    const answers = await Promise.all(
      types.map((type) =>
        post(kms, grant.keys, `/public/v1/submit/${ACTIVITIES[type]!.op}`, {
          type,
          timestampMs: timestampMs(),
          organizationId: user.organizationId,
          parameters: parameters[type] ?? { userId: user.userId },
        }),
      ),
    )
    expect(answers.map((answer) => [answer.status, answer.body['message']])).toEqual(
      types.map((type) => [403, `A grant's key signs transactions only; /public/v1/submit/${ACTIVITIES[type]!.op} is refused`]),
    )
    expect(types.map((type) => ACTIVITIES[type]!.op)).toEqual([
      'export_wallet',
      'export_wallet_account',
      'create_api_keys',
      'create_authenticators',
      'create_read_write_session',
      'stamp_login',
      'create_totp_factor',
      'create_passkey_factor',
      'create_users',
      'create_api_only_users',
      'create_invitations',
      'update_root_quorum',
      'create_grant',
    ])
    expect(await listGrants(user)).toEqual(grantsBefore)
    expect(await keyIds()).toEqual(keysBefore)
  })
})
