import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { BATCH_CALLS_PARAMETERS, BATCH_EXECUTOR_ABI, BATCH_MODE } from '@latchkey/constants/batch-executor'
import { rolldown } from 'rolldown'
import {
  concatHex,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  encodeFunctionData,
  getTypesForEIP712Domain,
  type Hex,
  http,
  keccak256,
  maxUint160,
  maxUint256,
  parseAbi,
  parseEther,
  parseUnits,
  serializeTypedData,
  stringToHex,
  toHex,
  zeroAddress,
} from 'viem'
import { getUserOperationTypedData, type UserOperation } from 'viem/account-abstraction'
import { privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { beforeAll, describe, expect, inject, test } from 'vitest'
import { batchExecutorAddress, testTokenAddress as token } from '../../../contracts/index.js'
import { ReviewError, reviewRequest } from '../src/frames/browser/review/index.js'
import type { ReviewContext, WalletRequest } from '../src/frames/browser/review/types.js'
import { PERMIT_TYPES } from './fixtures/permit.js'

// What the consent frame shows, decoded from real requests against the unit run's anvil (chain A),
// where test/globalSetup.ts deployed the test token (TKN, 18 decimals) as `npm start` does.

const transport = http(inject('chainARpc'))
const chain = createPublicClient({ transport })
const owner = privateKeyToAccount(keccak256(toHex('latchkey review test account')))
const account = owner.address
const spender = privateKeyToAccount(keccak256(toHex('latchkey review spender'))).address
const recipient = privateKeyToAccount(keccak256(toHex('latchkey review recipient'))).address
const session = privateKeyToAccount(keccak256(toHex('latchkey review session key'))).address
const origin = 'https://app.example.com'
const context: ReviewContext = {
  origin,
  account,
  chainId: 31337,
  rpc: (method, params) => chain.request({ method, params } as never),
  executor: batchExecutorAddress,
}
const TOKEN_ABI = parseAbi([
  'function transfer(address to, uint256 amount)',
  'function approve(address spender, uint256 amount)',
  'function mint(address to, uint256 amount)',
  'function setApprovalForAll(address operator, bool approved)',
])
const review = (request: WalletRequest, reviewContext = context) => reviewRequest(request, reviewContext)
const rejection = (request: WalletRequest) =>
  review(request).then(
    () => undefined,
    (error: unknown) => error,
  )
/** 2030-01-01 00:00:00 UTC. */
const NEW_YEAR_2030 = 1893456000
const FEES = { gas: '0x186a0', maxFeePerGas: '0x77359400' } // 100 000 gas at 2 gwei: up to 0.0002 ETH
const transfer = (to: Hex, amount: bigint) => encodeFunctionData({ abi: TOKEN_ABI, functionName: 'transfer', args: [to, amount] })

beforeAll(async () => {
  await chain.request({ method: 'anvil_setBalance', params: [account, toHex(parseEther('10'))] } as never)
  const wallet = createWalletClient({ account: owner, transport })
  const hash = await wallet.writeContract({ address: token, abi: TOKEN_ABI, functionName: 'mint', args: [account, parseUnits('100', 18)], chain: null })
  expect((await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success')
})

describe('messages', () => {
  test('default: a UTF-8 message is shown as its text', async () => {
    const result = await review({ method: 'personal_sign', params: [stringToHex('Hello, Latchkey ✓\nline two'), account] })
    expect(result).toEqual({
      kind: 'message',
      title: 'Sign a message',
      origin,
      rows: [{ label: 'Message', value: 'Hello, Latchkey ✓\nline two' }],
      raw: 'Hello, Latchkey ✓\nline two',
      warnings: [],
    })
  })

  test('behavior: bytes that are not UTF-8 are shown as hex, with a warning', async () => {
    const result = await review({ method: 'personal_sign', params: ['0xFF00FE80', account] })
    expect(result.rows).toEqual([{ label: 'Message (hex)', value: '0xff00fe80' }])
    expect(result.warnings).toEqual([
      { level: 'warning', text: 'This message is not text: it is shown as hex. Sign it only if you know what these bytes are.' },
    ])
  })

  test('behavior: invisible and direction-changing characters are shown as code points, with a warning', async () => {
    const result = await review({ method: 'personal_sign', params: [stringToHex('Pay 10\u202E01 TKN\u200B'), account] })
    expect(result.rows).toEqual([{ label: 'Message', value: 'Pay 10<U+202E>01 TKN<U+200B>' }])
    expect(result.raw).toBe('Pay 10\u202E01 TKN\u200B')
    expect(result.warnings).toEqual([
      {
        level: 'warning',
        text: 'This message contains invisible or direction-changing characters, shown as <U+…>: what it seems to say may not be what you sign.',
      },
    ])
  })

  const siwe = (domain: string) =>
    createSiweMessage({
      domain,
      address: account,
      statement: 'Sign in to the demo.',
      uri: `https://${domain}/login`,
      version: '1',
      chainId: 31337,
      nonce: 'abcdef12345678',
      issuedAt: new Date('2026-11-28T01:00:00Z'),
      expirationTime: new Date('2026-11-28T02:00:00Z'),
    })

  test('behavior: a SIWE message for the requesting origin gets its rows and no warning', async () => {
    const result = await review({ method: 'personal_sign', params: [stringToHex(siwe('app.example.com')), account] })
    expect(result.title).toBe('Sign in with Ethereum')
    expect(result.rows).toEqual([
      { label: 'Domain', value: 'app.example.com' },
      { label: 'Address', value: account },
      { label: 'Statement', value: 'Sign in to the demo.' },
      { label: 'URI', value: 'https://app.example.com/login' },
      { label: 'Chain', value: 'Anvil A (31337)' },
      { label: 'Nonce', value: 'abcdef12345678' },
      { label: 'Issued at', value: '2026-11-28 01:00:00 UTC' },
      { label: 'Expires', value: '2026-11-28 02:00:00 UTC' },
    ])
    expect(result.warnings).toEqual([])
  })

  test("error: a SIWE message for another domain than the origin's is a danger", async () => {
    const result = await review({ method: 'personal_sign', params: [stringToHex(siwe('bank.example')), account] })
    expect(result.rows[0]).toEqual({ label: 'Domain', value: 'bank.example', tone: 'danger' })
    expect(result.warnings).toEqual([
      {
        level: 'danger',
        text: 'This sign-in is for bank.example, but the request comes from app.example.com: signing it may let this site sign in to bank.example as you.',
      },
    ])
  })
})

describe('typed data', () => {
  const permitTypes = PERMIT_TYPES
  const permit = (value: bigint) => ({
    types: permitTypes,
    primaryType: 'Permit',
    domain: { name: 'Test Token', version: '1', chainId: 31337, verifyingContract: token },
    message: { owner: account, spender, value: value.toString(), nonce: '0', deadline: String(NEW_YEAR_2030) },
  })

  test('default: an EIP-2612 Permit reads as what it allows, with the symbol and decimals from the chain, and its tree', async () => {
    const result = await review({ method: 'eth_signTypedData_v4', params: [account, JSON.stringify(permit(parseUnits('1.5', 18)))] })
    expect(result.title).toBe('Sign a token permit')
    expect(result.rows).toEqual([
      { label: 'Type', value: 'Permit' },
      { label: 'Domain', value: 'Test Token' },
      { label: 'Chain', value: 'Anvil A (31337)' },
      { label: 'Contract', value: token },
      { label: 'Permission', value: `Allows ${spender} to spend 1.5 TKN until 2030-01-01 00:00:00 UTC` },
    ])
    expect(result.tree).toEqual([
      {
        label: 'Domain',
        children: [
          { label: 'name', value: 'Test Token' },
          { label: 'version', value: '1' },
          { label: 'chainId', value: '31337' },
          { label: 'verifyingContract', value: token },
        ],
      },
      {
        label: 'Permit',
        children: [
          { label: 'owner', value: account },
          { label: 'spender', value: spender },
          { label: 'value', value: '1500000000000000000' },
          { label: 'nonce', value: '0' },
          { label: 'deadline', value: String(NEW_YEAR_2030) },
        ],
      },
    ])
    expect(result.warnings).toEqual([])
    expect(result.simulation).toBeUndefined()
  })

  test('behavior: a Permit2 PermitSingle for max uint160 reads "unlimited TKN" and is a danger', async () => {
    const permit2 = {
      types: {
        PermitSingle: [
          { name: 'details', type: 'PermitDetails' },
          { name: 'spender', type: 'address' },
          { name: 'sigDeadline', type: 'uint256' },
        ],
        PermitDetails: [
          { name: 'token', type: 'address' },
          { name: 'amount', type: 'uint160' },
          { name: 'expiration', type: 'uint48' },
          { name: 'nonce', type: 'uint48' },
        ],
      },
      primaryType: 'PermitSingle',
      domain: { name: 'Permit2', chainId: 31337, verifyingContract: '0x000000000022D473030F116dDEE9F6B43aC78BA3' },
      message: { details: { token, amount: maxUint160.toString(), expiration: NEW_YEAR_2030, nonce: 0 }, spender, sigDeadline: NEW_YEAR_2030 },
    }
    const result = await review({ method: 'eth_signTypedData_v4', params: [account, permit2] })
    expect(result.rows.at(-1)).toEqual({ label: 'Permission', value: `Allows ${spender} to spend unlimited TKN until 2030-01-01 00:00:00 UTC`, tone: 'danger' })
    expect(result.warnings).toEqual([{ level: 'danger', text: `Unlimited approval: ${spender} may take all your TKN, now and later, until you revoke it.` }])
    expect(result.tree?.[1]).toEqual({
      label: 'PermitSingle',
      children: [
        {
          label: 'details',
          children: [
            { label: 'token', value: token },
            { label: 'amount', value: maxUint160.toString() },
            { label: 'expiration', value: String(NEW_YEAR_2030) },
            { label: 'nonce', value: '0' },
          ],
        },
        { label: 'spender', value: spender },
        { label: 'sigDeadline', value: String(NEW_YEAR_2030) },
      ],
    })
  })

  test('behavior: a Permit2 PermitTransferFrom of 2 TKN reads with its deadline', async () => {
    const transferFrom = {
      types: {
        PermitTransferFrom: [
          { name: 'permitted', type: 'TokenPermissions' },
          { name: 'spender', type: 'address' },
          { name: 'nonce', type: 'uint256' },
          { name: 'deadline', type: 'uint256' },
        ],
        TokenPermissions: [
          { name: 'token', type: 'address' },
          { name: 'amount', type: 'uint256' },
        ],
      },
      primaryType: 'PermitTransferFrom',
      domain: { name: 'Permit2', chainId: 31337, verifyingContract: '0x000000000022D473030F116dDEE9F6B43aC78BA3' },
      message: { permitted: { token, amount: parseUnits('2', 18).toString() }, spender, nonce: '7', deadline: String(NEW_YEAR_2030) },
    }
    const result = await review({ method: 'eth_signTypedData_v4', params: [account, JSON.stringify(transferFrom)] })
    expect(result.rows.at(-1)).toEqual({ label: 'Permission', value: `Allows ${spender} to spend 2 TKN until 2030-01-01 00:00:00 UTC` })
    expect(result.warnings).toEqual([])
  })

  test('error: typed data whose values do not match its types is refused', async () => {
    const bad = permit(1n)
    const error = await rejection({ method: 'eth_signTypedData_v4', params: [account, { ...bad, message: { ...bad.message, spender: '0x1234' } }] })
    expect(error).toBeInstanceOf(ReviewError)
    expect((error as ReviewError).code).toBe('MALFORMED_TYPED_DATA')
    expect((error as ReviewError).message).toBe('The typed data does not match its types: Address "0x1234" is invalid.')
  })

  test('error: typed data that is not JSON, or whose primary type is missing, is refused', async () => {
    expect(await rejection({ method: 'eth_signTypedData_v4', params: [account, '{"types":'] })).toMatchObject({
      code: 'MALFORMED_TYPED_DATA',
      message: 'The typed data is not valid JSON',
    })
    expect(await rejection({ method: 'eth_signTypedData_v4', params: [account, { ...permit(1n), primaryType: 'Mail' }] })).toMatchObject({
      code: 'MALFORMED_TYPED_DATA',
      message: 'The typed data\'s primary type "Mail" is not among its types',
    })
  })
})

describe('transactions', () => {
  test('default: an ERC-20 transfer of 1.5 TKN shows network, recipient, value, fee and the decoded call, and simulates "You send 1.5 TKN"', async () => {
    const data = transfer(recipient, parseUnits('1.5', 18))
    const result = await review({ method: 'eth_sendTransaction', params: [{ from: account, to: token, data, ...FEES }] })
    expect(result.kind).toBe('transaction')
    expect(result.rows).toEqual([
      { label: 'Network', value: 'Anvil A (31337)' },
      { label: 'To', value: token },
      { label: 'Value', value: '0 ETH' },
      { label: 'Network fee', value: 'up to 0.0002 ETH' },
      { label: 'Action', value: `Send 1.5 TKN to ${recipient}` },
    ])
    expect(result.tree).toEqual([
      {
        label: 'transfer(address,uint256)',
        children: [
          { label: 'to', value: recipient },
          { label: 'amount', value: '1500000000000000000' },
        ],
      },
    ])
    expect(result.raw).toBe(data)
    expect(result.warnings).toEqual([])
    expect(await result.simulation).toEqual({ status: 'ok', sends: ['You send 1.5 TKN'], receives: ['You receive nothing'] })
  })

  test('behavior: without fee fields the fee is estimated from the chain (eth_estimateGas, eth_gasPrice + eth_maxPriorityFeePerGas)', async () => {
    const result = await review({ method: 'eth_sendTransaction', params: [{ to: recipient, value: toHex(parseEther('0.5')) }] })
    expect(result.rows.slice(2)).toEqual([
      { label: 'Value', value: '0.5 ETH' },
      { label: 'Network fee', value: expect.stringMatching(/^about 0\.0000\d+ ETH$/) },
      { label: 'Action', value: `Send 0.5 ETH to ${recipient}` },
    ])
    expect(await result.simulation).toEqual({ status: 'ok', sends: ['You send 0.5 ETH'], receives: ['You receive nothing'] })
  })

  test('error: an unlimited approve is a danger', async () => {
    const data = encodeFunctionData({ abi: TOKEN_ABI, functionName: 'approve', args: [spender, maxUint256] })
    const result = await review({ method: 'eth_sendTransaction', params: [{ to: token, data, ...FEES }] })
    expect(result.rows.at(-1)).toEqual({ label: 'Action', value: `Allow ${spender} to spend unlimited TKN` })
    expect(result.warnings).toEqual([{ level: 'danger', text: `Unlimited approval: ${spender} may take all your TKN, now and later, until you revoke it.` }])
    expect(await result.simulation).toEqual({ status: 'ok', sends: ['You send nothing'], receives: ['You receive nothing'] })
  })

  test('error: setApprovalForAll is a danger', async () => {
    const collection = privateKeyToAccount(keccak256(toHex('latchkey review collection'))).address
    const data = encodeFunctionData({ abi: TOKEN_ABI, functionName: 'setApprovalForAll', args: [spender, true] })
    const result = await review({ method: 'eth_sendTransaction', params: [{ to: collection, data, ...FEES }] })
    expect(result.rows.at(-1)).toEqual({ label: 'Action', value: `Allow ${spender} to move all your tokens of ${collection}` })
    expect(result.tree).toEqual([
      {
        label: 'setApprovalForAll(address,bool)',
        children: [
          { label: 'operator', value: spender },
          { label: 'approved', value: 'true' },
        ],
      },
    ])
    expect(result.warnings).toEqual([
      { level: 'danger', text: `${spender} may move every token you hold of ${collection}, now and later, until you revoke it.` },
    ])
  })

  test('behavior: calldata it cannot decode is an "unknown contract call", and its revert is the simulation\'s answer', async () => {
    const result = await review({ method: 'eth_sendTransaction', params: [{ to: token, data: '0xdeadbeef00', ...FEES }] })
    expect(result.rows.at(-1)).toEqual({ label: 'Action', value: `Unknown contract call to ${token} (selector 0xdeadbeef)` })
    expect(result.tree).toEqual([{ label: 'Unknown call', value: '0xdeadbeef00' }])
    expect(result.warnings).toEqual([
      {
        level: 'warning',
        text: `Unknown contract call: the data sent to ${token} could not be decoded. Approve only if you trust this app and this contract.`,
      },
    ])
    expect(await result.simulation).toEqual({ status: 'reverted', reason: 'the contract reverted without a reason' })
  })

  test("behavior: a transfer that exceeds the balance simulates as reverted, with the token's error", async () => {
    const result = await review({ method: 'eth_sendTransaction', params: [{ to: token, data: transfer(recipient, parseUnits('1000', 18)), ...FEES }] })
    expect(await result.simulation).toEqual({
      status: 'reverted',
      reason: `ERC20InsufficientBalance(${account}, ${parseUnits('100', 18)}, ${parseUnits('1000', 18)})`,
    })
  })

  test('behavior: a token that does not answer symbol() and decimals() is shown raw, with its address and a warning', async () => {
    const result = await review({ method: 'eth_sendTransaction', params: [{ to: spender, data: transfer(recipient, parseUnits('1.5', 18)), ...FEES }] })
    expect(result.rows.at(-1)).toEqual({ label: 'Action', value: `Send 1500000000000000000 tokens of ${spender} (raw amount) to ${recipient}` })
    expect(result.warnings).toEqual([
      {
        level: 'warning',
        text: `The token at ${spender} did not answer symbol() and decimals(): its amount is shown raw, in the token's smallest unit.`,
      },
    ])
  })

  test('behavior: ERC-721 safeTransferFrom and ERC-1155 safeTransferFrom / safeBatchTransferFrom are decoded', async () => {
    const collection = privateKeyToAccount(keccak256(toHex('latchkey review collection'))).address
    const nftAbi = parseAbi([
      'function safeTransferFrom(address from, address to, uint256 tokenId)',
      'function safeTransferFrom(address from, address to, uint256 id, uint256 amount, bytes data)',
      'function safeBatchTransferFrom(address from, address to, uint256[] ids, uint256[] amounts, bytes data)',
    ])
    const action = async (data: Hex) => (await review({ method: 'eth_sendTransaction', params: [{ to: collection, data, ...FEES }] })).rows.at(-1)
    expect(await action(encodeFunctionData({ abi: nftAbi, functionName: 'safeTransferFrom', args: [account, recipient, 7n] }))).toEqual({
      label: 'Action',
      value: `Move NFT #7 of ${collection} from ${account} to ${recipient}`,
    })
    expect(await action(encodeFunctionData({ abi: nftAbi, functionName: 'safeTransferFrom', args: [account, recipient, 3n, 5n, '0x'] }))).toEqual({
      label: 'Action',
      value: `Move 5 of token #3 of ${collection} from ${account} to ${recipient}`,
    })
    expect(
      await action(encodeFunctionData({ abi: nftAbi, functionName: 'safeBatchTransferFrom', args: [account, recipient, [1n, 2n], [10n, 20n], '0x'] })),
    ).toEqual({ label: 'Action', value: `Move 10 of #1, 20 of #2 of ${collection} from ${account} to ${recipient}` })
  })

  test('error: a transaction for another chain warns of the mismatch', async () => {
    const result = await review({ method: 'eth_sendTransaction', params: [{ to: recipient, value: '0x1', chainId: '0x1', ...FEES }] })
    expect(result.rows[0]).toEqual({ label: 'Network', value: 'Ethereum (1)' })
    expect(result.warnings).toEqual([{ level: 'danger', text: 'This request is for Ethereum (1), but the wallet is on Anvil A (31337).' }])
  })

  test('behavior: with no chain connection the simulation says it is unavailable, never "nothing"', async () => {
    const result = await review({ method: 'eth_sendTransaction', params: [{ to: recipient, value: '0x1', ...FEES }] }, { ...context, rpc: undefined })
    expect(result.rows[3]).toEqual({ label: 'Network fee', value: 'up to 0.0002 ETH' })
    expect(await result.simulation).toEqual({
      status: 'unavailable',
      reason: 'There is no connection to Anvil A (31337): the asset changes cannot be simulated.',
    })
  })

  test('behavior: an RPC error makes the simulation unavailable, with the reason', async () => {
    const failing: ReviewContext = {
      ...context,
      rpc: (method, params) => (method === 'eth_simulateV1' ? Promise.reject(new Error('method not found')) : context.rpc!(method, params)),
    }
    const result = await review({ method: 'eth_sendTransaction', params: [{ to: recipient, value: '0x1', ...FEES }] }, failing)
    expect(await result.simulation).toEqual({ status: 'unavailable', reason: 'The chain could not simulate this request: method not found' })
  })

  test('error: a malformed transaction is refused', async () => {
    expect(await rejection({ method: 'eth_sendTransaction', params: [{ to: '0x12', value: '0x1' }] })).toMatchObject({
      name: 'ReviewError',
      code: 'MALFORMED_TRANSACTION',
      message: 'The transaction\'s "to" is not an address: 0x12',
    })
    expect(await rejection({ method: 'eth_sendTransaction', params: [{ to: recipient, value: 'lots' }] })).toMatchObject({
      code: 'MALFORMED_TRANSACTION',
      message: 'The transaction\'s "value" is not a quantity: lots',
    })
    expect(await rejection({ method: 'eth_sendTransaction', params: [{ from: spender, to: recipient }] })).toMatchObject({
      code: 'MALFORMED_TRANSACTION',
      message: `The transaction is from ${spender}, not from this wallet's account ${account}`,
    })
  })
})

describe('batches', () => {
  test('default: each call of a wallet_sendCalls batch is decoded, and the batch simulates in order', async () => {
    const result = await review({
      method: 'wallet_sendCalls',
      params: [
        {
          version: '2.0.0',
          chainId: '0x7a69',
          from: account,
          atomicRequired: true,
          calls: [
            { to: token, data: transfer(recipient, parseUnits('1', 18)) },
            { to: spender, value: toHex(parseEther('0.01')) },
          ],
        },
      ],
    })
    expect(result.kind).toBe('batch')
    expect(result.title).toBe('Send 2 calls at once')
    expect(result.rows).toEqual([
      { label: 'Network', value: 'Anvil A (31337)' },
      { label: 'Call 1', value: `Send 1 TKN to ${recipient}` },
      { label: 'Call 2', value: `Send 0.01 ETH to ${spender}` },
      { label: 'Total value', value: '0.01 ETH' },
    ])
    expect(result.tree).toEqual([
      {
        label: `Call 1 to ${token}`,
        children: [
          {
            label: 'transfer(address,uint256)',
            children: [
              { label: 'to', value: recipient },
              { label: 'amount', value: '1000000000000000000' },
            ],
          },
        ],
      },
      { label: `Call 2 to ${spender}`, children: [{ label: 'Transfer', value: '0.01 ETH' }] },
    ])
    expect(result.warnings).toEqual([])
    expect(await result.simulation).toEqual({ status: 'ok', sends: ['You send 1 TKN', 'You send 0.01 ETH'], receives: ['You receive nothing'] })
  })

  test('behavior: a warning several calls raise word for word shows once, naming the calls (a run of three as a range); dangers first; one call is titled as a transaction', async () => {
    const mint = { to: token, data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'mint', args: [recipient, 1n] }) }
    const approve = { to: token, data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'approve', args: [spender, maxUint256] }) }
    const result = await review({ method: 'wallet_sendCalls', params: [{ version: '2.0.0', chainId: '0x7a69', calls: [mint, mint, mint, approve, mint] }] })
    expect(result.title).toBe('Send 5 calls at once')
    expect(result.warnings).toEqual([
      { level: 'danger', text: `Unlimited approval: ${spender} may take all your TKN, now and later, until you revoke it.` },
      {
        level: 'warning',
        text: `Calls 1–3 and 5: Unknown contract call: the data sent to ${token} could not be decoded. Approve only if you trust this app and this contract.`,
      },
    ])
    const single = await review({ method: 'wallet_sendCalls', params: [{ version: '2.0.0', chainId: '0x7a69', calls: [mint] }] })
    expect(single.title).toBe('Send a transaction')
    expect(single.warnings).toEqual([
      {
        level: 'warning',
        text: `Unknown contract call: the data sent to ${token} could not be decoded. Approve only if you trust this app and this contract.`,
      },
    ])
  })

  test('error: a batch with a malformed call is refused', async () => {
    expect(
      await rejection({ method: 'wallet_sendCalls', params: [{ version: '2.0.0', chainId: '0x7a69', calls: [{ to: token, data: '0x123' }] }] }),
    ).toMatchObject({
      code: 'MALFORMED_CALLS',
      message: 'Call 1\'s "data" is not hex bytes: 0x123',
    })
  })
})

describe('UserOperations (EntryPoint v0.8 typed data)', () => {
  const ENTRY_POINT = '0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108'
  const sponsor = privateKeyToAccount(keccak256(toHex('latchkey review sponsor paymaster'))).address
  const tokenPaymaster = privateKeyToAccount(keccak256(toHex('latchkey review token paymaster'))).address
  const withPaymasters: ReviewContext = { ...context, paymasters: { sponsor, token: tokenPaymaster }, appName: 'Demo App' }
  const execute = (calls: readonly { to: Hex; value: bigint; data: Hex }[], mode: Hex = BATCH_MODE) =>
    encodeFunctionData({ abi: BATCH_EXECUTOR_ABI, functionName: 'execute', args: [mode, encodeAbiParameters(BATCH_CALLS_PARAMETERS, [calls])] })
  /** 350,000 gas at up to 2 gwei: 0.0007 ETH before any paymaster. */
  const operation = (fields: Partial<UserOperation<'0.8'>> = {}): UserOperation<'0.8'> => ({
    sender: account,
    nonce: 0n,
    callData: execute([{ to: token, value: 0n, data: transfer(recipient, parseUnits('1', 18)) }]),
    callGasLimit: 200_000n,
    verificationGasLimit: 100_000n,
    preVerificationGas: 50_000n,
    maxFeePerGas: 2_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
    signature: '0x',
    ...fields,
  })
  const typedData = (userOperation: UserOperation<'0.8'>, entryPointAddress: Hex = ENTRY_POINT, chainId = 31337) => {
    const typed = getUserOperationTypedData({ chainId, entryPointAddress, userOperation })
    return JSON.parse(
      serializeTypedData({ ...typed, types: { EIP712Domain: getTypesForEIP712Domain({ domain: typed.domain }), ...typed.types } } as Parameters<
        typeof serializeTypedData
      >[0]),
    )
  }
  const signTyped = (data: unknown): WalletRequest => ({ method: 'eth_signTypedData_v4', params: [account, JSON.stringify(data)] })
  const tokenData = (tokenAddress: Hex, tokenPerNative: bigint, guarantor: Hex = zeroAddress) =>
    concatHex([toHex(0, { size: 6 }), toHex(1_900_000_000, { size: 6 }), tokenAddress, toHex(tokenPerNative, { size: 32 }), guarantor, `0x${'22'.repeat(65)}`])
  const refusalOf = (data: unknown, reviewContext = withPaymasters) =>
    reviewRequest(signTyped(data), reviewContext).then(
      () => undefined,
      (error: ReviewError) => ({ code: error.code, message: error.message }),
    )

  test('default: the calls of the executor’s execute, reviewed and simulated as a batch, and the gas the account pays', async () => {
    const result = await reviewRequest(signTyped(typedData(operation())), withPaymasters)
    expect(result.kind).toBe('userOperation')
    expect(result.title).toBe('Send a transaction')
    expect(result.rows).toEqual([
      { label: 'Network', value: 'Anvil A (31337)' },
      { label: 'Call 1', value: `Send 1 TKN to ${recipient}` },
      { label: 'Total value', value: '0 ETH' },
      { label: 'Network fee', value: 'up to 0.0007 ETH' },
    ])
    expect(result.warnings).toEqual([])
    expect(await result.simulation).toEqual({ status: 'ok', sends: ['You send 1 TKN'], receives: ['You receive nothing'] })
  })

  test('behavior: the demo’s sponsored batch (two mints) reads as the EIP-7702 batch of its calls: the same title, rows and warnings (once, naming both calls), and the fee row', async () => {
    const mint = encodeFunctionData({ abi: TOKEN_ABI, functionName: 'mint', args: [account, parseUnits('1', 18)] })
    const calls = [
      { to: token, value: 0n, data: mint },
      { to: token, value: 0n, data: mint },
    ]
    const sponsored = await reviewRequest(
      signTyped(
        typedData(
          operation({ callData: execute(calls), paymaster: sponsor, paymasterVerificationGasLimit: 60_000n, paymasterPostOpGasLimit: 0n, paymasterData: '0x' }),
        ),
      ),
      withPaymasters,
    )
    const batch = await reviewRequest(
      { method: 'wallet_sendCalls', params: [{ version: '2.0.0', chainId: '0x7a69', from: account, calls: calls.map(({ to, data }) => ({ to, data })) }] },
      withPaymasters,
    )
    const unknown = `Unknown contract call to ${token} (selector 0x40c10f19)`
    expect(sponsored.title).toBe('Send 2 calls at once')
    expect(sponsored.title).toBe(batch.title)
    expect(sponsored.rows).toEqual([
      { label: 'Network', value: 'Anvil A (31337)' },
      { label: 'Call 1', value: unknown },
      { label: 'Call 2', value: unknown },
      { label: 'Total value', value: '0 ETH' },
      { label: 'Network fee', value: 'sponsored by Demo App' },
    ])
    expect(sponsored.rows.slice(0, -1)).toEqual(batch.rows)
    expect(sponsored.warnings).toEqual([
      {
        level: 'warning',
        text: `Calls 1 and 2: Unknown contract call: the data sent to ${token} could not be decoded. Approve only if you trust this app and this contract.`,
      },
    ])
    expect(sponsored.warnings).toEqual(batch.warnings)
    expect(sponsored.tree).toEqual(batch.tree)
  })

  test('behavior: a sponsored op with no app name in the settings reads "sponsored by the app"', async () => {
    const result = await reviewRequest(
      signTyped(typedData(operation({ paymaster: sponsor, paymasterVerificationGasLimit: 60_000n, paymasterPostOpGasLimit: 0n, paymasterData: '0x' }))),
      { ...withPaymasters, appName: undefined },
    )
    expect(result.rows.at(-1)).toEqual({ label: 'Network fee', value: 'sponsored by the app' })
  })

  test('behavior: the token cost rounds up as PaymasterERC20 charges; a token that does not answer is shown in units, with a warning', async () => {
    const paid = (tokenAddress: Hex, tokenPerNative: bigint, guarantor?: Hex) =>
      reviewRequest(
        signTyped(
          typedData(
            operation({
              paymaster: tokenPaymaster,
              paymasterVerificationGasLimit: 60_000n,
              paymasterPostOpGasLimit: 30_000n,
              paymasterData: tokenData(tokenAddress, tokenPerNative, guarantor),
            }),
          ),
        ),
        withPaymasters,
      )
    // A guarantor fronting the operation costs the account its 15,000 postOp gas too:
    // (440,000 + 30,000 + 15,000) × 2 gwei = 0.00097 ETH, at 1,000 TKN per ETH.
    expect((await paid(token, 1000n * 10n ** 18n, recipient)).rows.at(-1)).toEqual({ label: 'Network fee', value: 'up to 0.97 TKN' })
    expect((await paid(token, 1000n * 10n ** 18n)).rows.at(-1)).toEqual({ label: 'Network fee', value: 'up to 0.94 TKN' })
    // (440,000 gas + 30,000 postOp, no penalty under 40,000) × 2 gwei = 0.00094 ETH; at 1 unit per ETH, 1 unit (rounded up).
    expect((await paid(token, 1n)).rows.at(-1)).toEqual({ label: 'Network fee', value: 'up to 0.000000000000000001 TKN' })
    const unreadable = await paid(spender, 10n ** 18n)
    expect(unreadable.rows.at(-1)).toEqual({ label: 'Network fee', value: `up to 940000000000000 units of ${spender}` })
    expect(unreadable.warnings[0]).toEqual({
      level: 'warning',
      text: `The token at ${spender} did not answer symbol() and decimals(): its amount is shown raw, in the token's smallest unit.`,
    })
  })

  test('error: what is not a UserOperation of this account, through the executor, for EntryPoint v0.8 on this chain is refused', async () => {
    const v07 = '0x0000000071727De22E5E9d8BAf0edAc6f37da032'
    const base = typedData(operation())
    const other = privateKeyToAccount(keccak256(toHex('latchkey review other delegate'))).address
    const cases: [unknown, string, ReviewContext?][] = [
      [typedData(operation(), v07), `The UserOperation is for the EntryPoint at ${v07}, not for EntryPoint v0.8 at ${ENTRY_POINT}`],
      [typedData(operation(), ENTRY_POINT, 31338), 'The UserOperation is for chain 31338, but the wallet is on Anvil A (31337)'],
      [typedData(operation({ sender: recipient })), `The UserOperation is sent from ${recipient}, not from this wallet's account ${account}`],
      [
        { ...base, domain: { ...base.domain, version: '2' } },
        `The UserOperation is for the EntryPoint at ${ENTRY_POINT}, not for EntryPoint v0.8 at ${ENTRY_POINT}`,
      ],
      [
        {
          ...base,
          types: { ...base.types, PackedUserOperation: base.types.PackedUserOperation.slice(0, 7) },
          message: { ...base.message, paymasterAndData: undefined },
        },
        "The UserOperation is not EntryPoint v0.8's PackedUserOperation message",
      ],
      [
        { ...base, primaryType: 'Mail', types: { ...base.types, Mail: [{ name: 'text', type: 'string' }] }, message: { text: 'hi' } },
        "The UserOperation is not EntryPoint v0.8's PackedUserOperation message",
      ],
      [typedData(operation({ callData: transfer(recipient, 1n) })), "The UserOperation's callData is not the batch executor's execute of a batch of calls"],
      [
        typedData(operation({ callData: execute([{ to: token, value: 0n, data: '0x' }], `0x${'01'.padEnd(20, '0')}${'1'.padStart(44, '0')}`) })),
        "The UserOperation's callData is not the batch executor's execute of a batch of calls",
      ],
      [typedData(operation({ callData: execute([]) })), 'The UserOperation runs no calls'],
      [
        typedData(
          operation({ factory: '0x7702', factoryData: '0x', authorization: { address: other, chainId: 31337, nonce: 0, r: '0x0', s: '0x0', yParity: 0 } }),
        ),
        `The UserOperation delegates the account to ${other}, not to the wallet's batch executor`,
      ],
      [
        typedData(
          operation({
            factory: '0x7702',
            factoryData: '0x',
            authorization: { address: batchExecutorAddress, chainId: 31337, nonce: 0, r: '0x0', s: '0x0', yParity: 0 },
          }),
        ),
        `The UserOperation delegates the account to ${batchExecutorAddress}, not to the wallet's batch executor`,
        { ...withPaymasters, executor: undefined },
      ],
      [
        typedData(operation({ factory: other, factoryData: '0x1234' })),
        "The UserOperation's initCode deploys or initializes an account; this wallet only delegates to its batch executor",
      ],
      [
        { ...base, message: { ...base.message, paymasterAndData: concatHex([tokenPaymaster, toHex(1, { size: 16 })]) } },
        "The UserOperation's paymasterAndData is shorter than a paymaster and its two gas limits (52 bytes)",
      ],
      [
        typedData(
          operation({
            paymaster: tokenPaymaster,
            paymasterVerificationGasLimit: 1n,
            paymasterPostOpGasLimit: 1n,
            paymasterData: tokenData(token, 1n).slice(0, 2 + 63 * 2) as Hex,
          }),
        ),
        "The token paymaster's data is too short to hold its quote (token and price)",
      ],
    ]
    const codes = await Promise.all(cases.map(([data, , reviewContext]) => refusalOf(data, reviewContext)))
    expect(codes.map((refusal) => refusal?.message)).toEqual(cases.map(([, message]) => message))
    expect(new Set(codes.map((refusal) => refusal?.code))).toEqual(new Set(['REFUSED_USER_OPERATION', 'MALFORMED_USER_OPERATION']))
  })
})

describe('EIP-7702 authorizations', () => {
  test('error: a delegation to a contract other than the executor is refused', async () => {
    const result = await review({ method: 'eip7702_authorization', params: [{ address: token, chainId: 31337, nonce: 0 }] })
    expect(result.refusal).toBe("Delegation to a contract other than the wallet's executor is refused")
    expect(result.rows).toEqual([
      { label: 'Network', value: 'Anvil A (31337)' },
      { label: 'Delegate to', value: token, tone: 'danger' },
      { label: 'Valid on', value: 'Anvil A (31337)' },
      { label: 'Nonce', value: '0' },
    ])
  })

  test('behavior: a delegation to the executor may be approved', async () => {
    const result = await review({ method: 'eip7702_authorization', params: [{ contractAddress: batchExecutorAddress, chainId: 31337, nonce: 3 }] })
    expect(result.refusal).toBeUndefined()
    expect(result.rows[1]).toEqual({ label: 'Delegate to', value: batchExecutorAddress })
  })

  test('error: a transaction carrying an authorization to a foreign contract is refused too', async () => {
    const result = await review({
      method: 'eth_sendTransaction',
      params: [{ to: account, ...FEES, authorizationList: [{ address: token, chainId: '0x7a69', nonce: '0x0' }] }],
    })
    expect(result.refusal).toBe("Delegation to a contract other than the wallet's executor is refused")
  })
})

describe('grants (ERC-7715)', () => {
  const grant = (overrides: Record<string, unknown> = {}) => ({
    chainId: '0x7a69',
    address: account,
    expiry: NEW_YEAR_2030,
    signer: { type: 'account', data: { address: session } },
    permissions: [
      { type: 'native-token-recurring-allowance', data: { allowance: toHex(parseEther('0.1')), start: 1767225600, period: 86400 } },
      { type: 'erc20-recurring-allowance', data: { token, allowance: toHex(parseUnits('10', 18)), start: 1767225600, period: 604800 } },
      { type: 'contract-call', data: { address: token, calls: ['transfer(address,uint256)', '0x095ea7b3'] } },
    ],
    ...overrides,
  })

  test('default: a grant shows its expiry, the per-period limits, and the allowed contracts and selectors', async () => {
    const result = await review({ method: 'wallet_grantPermissions', params: [grant()] })
    expect(result.title).toBe('Grant a permission')
    expect(result.rows).toEqual([
      { label: 'Network', value: 'Anvil A (31337)' },
      { label: 'Expires', value: '2030-01-01 00:00:00 UTC' },
      { label: 'Signer', value: `account ${session}` },
      { label: 'ETH limit', value: '0.1 ETH per day, from 2026-01-01 00:00:00 UTC, network fees included' },
      { label: 'TKN limit', value: '10 TKN per week, from 2026-01-01 00:00:00 UTC' },
      { label: 'Allowed call', value: `${token}: transfer(address,uint256) (0xa9059cbb)` },
      { label: 'Allowed call', value: `${token}: 0x095ea7b3` },
    ])
    expect(result.tree).toEqual([
      {
        label: `Grant to account ${session}`,
        children: [
          { label: 'expiry', value: '2030-01-01 00:00:00 UTC' },
          {
            label: 'native-token-recurring-allowance',
            children: [
              { label: 'allowance', value: '0.1 ETH' },
              { label: 'period', value: '86400 seconds' },
              { label: 'start', value: '2026-01-01 00:00:00 UTC' },
            ],
          },
          {
            label: 'erc20-recurring-allowance',
            children: [
              { label: 'token', value: token },
              { label: 'allowance', value: '10 TKN' },
              { label: 'period', value: '604800 seconds' },
              { label: 'start', value: '2026-01-01 00:00:00 UTC' },
            ],
          },
          {
            label: 'contract-call',
            children: [
              { label: 'address', value: token },
              { label: 'calls[0]', value: 'transfer(address,uint256) (0xa9059cbb)' },
              { label: 'calls[1]', value: '0x095ea7b3' },
            ],
          },
        ],
      },
    ])
    expect(result.warnings).toEqual([])
  })

  test("behavior: the ERC's later shape (permission, rules with an expiry, to) reads the same", async () => {
    const result = await review({
      method: 'wallet_grantPermissions',
      params: [
        {
          chainId: '0x7a69',
          to: session,
          rules: [{ type: 'expiry', data: { timestamp: NEW_YEAR_2030 } }],
          permission: { type: 'erc20-token-periodic', data: { tokenAddress: token, periodAmount: toHex(parseUnits('5', 18)), periodDuration: 3600 } },
          isAdjustmentAllowed: false,
        },
      ],
    })
    expect(result.rows).toEqual([
      { label: 'Network', value: 'Anvil A (31337)' },
      { label: 'Expires', value: '2030-01-01 00:00:00 UTC' },
      { label: 'Signer', value: `account ${session}` },
      { label: 'TKN limit', value: '5 TKN per hour' },
      { label: 'Network fee', value: 'none: without an ETH limit, this grant cannot pay network fees' },
    ])
    expect(
      await rejection({
        method: 'wallet_grantPermissions',
        params: [
          { chainId: '0x7a69', to: session, rules: [{ type: 'redeemer', data: { addresses: [] } }], permission: { type: 'native-token-periodic', data: {} } },
        ],
      }),
    ).toMatchObject({ code: 'UNKNOWN_PERMISSION', message: 'Unknown rule type "redeemer": the wallet enforces only expiry' })
  })

  test('behavior: the native limit says it pays the network fees too; a grant without one says it cannot pay them', async () => {
    const native = await review({
      method: 'wallet_grantPermissions',
      params: [grant({ permissions: [{ type: 'native-token-periodic', data: { periodAmount: toHex(parseEther('0.01')), periodDuration: 3600 } }] })],
    })
    expect(native.rows.slice(3)).toEqual([{ label: 'ETH limit', value: '0.01 ETH per hour, network fees included' }])
    const tokensOnly = await review({
      method: 'wallet_grantPermissions',
      params: [
        grant({
          permissions: [
            { type: 'erc20-recurring-allowance', data: { token, allowance: toHex(parseUnits('10', 18)), period: 86400 } },
            { type: 'contract-call', data: { address: token, calls: ['0x095ea7b3'] } },
          ],
        }),
      ],
    })
    expect(tokensOnly.rows.slice(3)).toEqual([
      { label: 'TKN limit', value: '10 TKN per day' },
      { label: 'Allowed call', value: `${token}: 0x095ea7b3` },
      { label: 'Network fee', value: 'none: without an ETH limit, this grant cannot pay network fees' },
    ])
    expect(tokensOnly.warnings).toEqual([])
  })

  test('error: a grant with two allowances for one asset is refused before it is shown (native twice, or one token in both of the ERC’s shapes)', async () => {
    const native = (allowance: string, period: number) => ({
      type: 'native-token-recurring-allowance',
      data: { allowance: toHex(parseEther(allowance)), period },
    })
    expect(await rejection({ method: 'wallet_grantPermissions', params: [grant({ permissions: [native('10', 86400), native('1', 3600)] })] })).toMatchObject({
      code: 'MALFORMED_GRANT',
      message: 'The grant asks for two allowances for ETH: a grant limits each token once',
    })
    const tokenTwice = [
      { type: 'erc20-recurring-allowance', data: { token, allowance: toHex(parseUnits('10', 18)), period: 86400 } },
      { type: 'erc20-token-periodic', data: { tokenAddress: token.toLowerCase(), periodAmount: toHex(parseUnits('1', 18)), periodDuration: 3600 } },
    ]
    expect(await rejection({ method: 'wallet_grantPermissions', params: [grant({ permissions: tokenTwice })] })).toMatchObject({
      code: 'MALFORMED_GRANT',
      message: `The grant asks for two allowances for ${token}: a grant limits each token once`,
    })
  })

  test('error: a grant without an expiry is refused', async () => {
    const { expiry: _, ...noExpiry } = grant()
    expect(await rejection({ method: 'wallet_grantPermissions', params: [noExpiry] })).toMatchObject({
      code: 'GRANT_WITHOUT_EXPIRY',
      message: 'The grant has no expiry: a permission that never ends is refused',
    })
  })

  test('error: an unknown permission type is refused', async () => {
    const result = await rejection({ method: 'wallet_grantPermissions', params: [grant({ permissions: [{ type: 'rate-limit', data: { count: 10 } }] })] })
    expect(result).toBeInstanceOf(ReviewError)
    expect(result).toMatchObject({
      code: 'UNKNOWN_PERMISSION',
      message:
        'Unknown permission type "rate-limit": the wallet can grant only native-token-recurring-allowance, erc20-recurring-allowance, native-token-periodic, erc20-token-periodic, contract-call',
    })
  })

  test('error: a grant for another account, or already expired, is refused', async () => {
    expect(await rejection({ method: 'wallet_grantPermissions', params: [grant({ address: spender })] })).toMatchObject({
      code: 'MALFORMED_GRANT',
      message: `The grant is for the account ${spender}, not this wallet's account ${account}`,
    })
    expect(await rejection({ method: 'wallet_grantPermissions', params: [grant({ expiry: 1700000000 })] })).toMatchObject({
      code: 'MALFORMED_GRANT',
      message: 'The grant expired already, at 2023-11-14 22:13:20 UTC',
    })
  })
})

describe('the frame bundle', () => {
  test('default: review/index.ts bundles for the browser (no Node APIs) within its share of the frame budget', async () => {
    const bundle = await rolldown({
      input: fileURLToPath(new URL('../src/frames/browser/review/index.ts', import.meta.url)),
      platform: 'browser',
      resolve: { conditionNames: ['source', 'browser', 'import', 'default'] },
      logLevel: 'silent',
    })
    try {
      const { output } = await bundle.generate({ format: 'esm', minify: true, codeSplitting: false })
      const code = output.map((chunk) => (chunk.type === 'chunk' ? chunk.code : '')).join('')
      expect(code).not.toMatch(/\bfrom\s*["']node:/)
      const gzip = gzipSync(code).length
      // 20.0 KiB (20 441 bytes) measured on 2026-11-28 (mostly viem's ABI coding, keccak and error classes); 22.0 KiB
      // (22 541 bytes) on 2026-11-29 with the UserOperation review (review/userOperation.ts); 23.0 KiB (23 571 bytes) later
      // that day with a batch's warnings each once (review/warnings.ts callWarnings, orderWarnings); the whole frame may take 60 KiB.
      expect(gzip).toBeLessThan(23.5 * 1024)
    } finally {
      await bundle.close()
    }
  })
})
