import { readFileSync } from 'node:fs'
import { BATCH_EXECUTOR_ADDRESS as embeddedDefault } from '@latchkey/embedded'
import {
  type AbiItem,
  type BaseError,
  type ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  encodeErrorResult,
  encodeFunctionData,
  type Hex,
  hashMessage,
  http,
  pad,
  parseAbi,
  parseEther,
  zeroAddress,
} from 'viem'
import { entryPoint08Address } from 'viem/account-abstraction'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { formatAbiItem } from 'viem/utils'
import { beforeAll, describe, expect, inject, test } from 'vitest'
import { ARTIFACT_PATH, compileBatchExecutor, serializeArtifact } from './build.js'
import { batchExecutorAddress, batchExecutorArtifact } from './index.js'

// The executor as checked in, rebuilt with the pinned solc and OpenZeppelin; then its contract on a real chain:
// the unit run's anvil (chain A, Prague), where test/globalSetup.ts deployed it as `npm start` does.
// UserOperations through a real EntryPoint and bundler: packages/devnet/test/userOperation.test.ts.

// Written out for viem's types; the build test holds every item of it to the compiled ABI.
const EXECUTOR_ABI = [
  {
    type: 'function',
    name: 'execute',
    stateMutability: 'payable',
    inputs: [
      { name: 'mode', type: 'bytes32' },
      { name: 'executionData', type: 'bytes' },
    ],
    outputs: [],
  },
  { type: 'function', name: 'supportsExecutionMode', stateMutability: 'pure', inputs: [{ name: 'mode', type: 'bytes32' }], outputs: [{ type: 'bool' }] },
  {
    type: 'function',
    name: 'isValidSignature',
    stateMutability: 'view',
    inputs: [
      { name: 'hash', type: 'bytes32' },
      { name: 'signature', type: 'bytes' },
    ],
    outputs: [{ type: 'bytes4' }],
  },
  { type: 'function', name: 'entryPoint', stateMutability: 'pure', inputs: [], outputs: [{ type: 'address' }] },
  { type: 'function', name: 'getNonce', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint256' }] },
  { type: 'error', name: 'AccountUnauthorized', inputs: [{ name: 'sender', type: 'address' }] },
  { type: 'error', name: 'UnsupportedExecutionMode', inputs: [] },
] as const
const VALIDATE_ABI = [
  {
    type: 'function',
    name: 'validateUserOp',
    stateMutability: 'nonpayable',
    inputs: [
      {
        name: 'userOp',
        type: 'tuple',
        components: [
          { name: 'sender', type: 'address' },
          { name: 'nonce', type: 'uint256' },
          { name: 'initCode', type: 'bytes' },
          { name: 'callData', type: 'bytes' },
          { name: 'accountGasLimits', type: 'bytes32' },
          { name: 'preVerificationGas', type: 'uint256' },
          { name: 'gasFees', type: 'bytes32' },
          { name: 'paymasterAndData', type: 'bytes' },
          { name: 'signature', type: 'bytes' },
        ],
      },
      { name: 'userOpHash', type: 'bytes32' },
      { name: 'missingAccountFunds', type: 'uint256' },
    ],
    outputs: [{ name: 'validationData', type: 'uint256' }],
  },
  { type: 'error', name: 'AccountUnauthorized', inputs: [{ name: 'sender', type: 'address' }] },
] as const
const BATCH_MODE: Hex = '0x0100000000000000000000000000000000000000000000000000000000000000'
const CALLS = [
  {
    type: 'tuple[]',
    components: [
      { name: 'to', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'data', type: 'bytes' },
    ],
  },
] as const
type Call = { to: `0x${string}`; value: bigint; data: Hex }
const execute = (calls: Call[], mode: Hex = BATCH_MODE) =>
  encodeFunctionData({ abi: EXECUTOR_ABI, functionName: 'execute', args: [mode, encodeAbiParameters(CALLS, [calls])] })

describe('build', () => {
  test('default: the checked-in artifact is what the pinned solc builds from BatchExecutor.sol and OpenZeppelin, byte for byte', () => {
    const rebuilt = compileBatchExecutor()
    expect(rebuilt.compiler).toBe(`0.8.37+commit.f401782d.Emscripten.clang`)
    expect(rebuilt.openzeppelin).toBe('5.7.0')
    expect(serializeArtifact(rebuilt)).toBe(readFileSync(ARTIFACT_PATH, 'utf8'))
  })

  test('default: the executor address is the CREATE2 address of the checked-in bytecode, the embedded wallet defaults to it, and the ABI written out here is the compiled one', () => {
    expect(batchExecutorAddress).toBe(embeddedDefault)
    const signature = (item: AbiItem) => `${item.type} ${formatAbiItem(item)}`
    const compiled = new Set((batchExecutorArtifact.abi as readonly AbiItem[]).filter((item) => 'name' in item).map(signature))
    for (const item of [...EXECUTOR_ABI, ...VALIDATE_ABI]) expect(compiled).toContain(signature(item))
  })
})

describe('on chain (EIP-7702)', () => {
  const transport = http(inject('chainARpc'))
  const chain = createPublicClient({ transport })
  const owner = privateKeyToAccount(generatePrivateKey())
  const stranger = privateKeyToAccount(generatePrivateKey())
  const wallet = createWalletClient({ account: owner, transport })
  const recipients = [privateKeyToAccount(generatePrivateKey()).address, privateKeyToAccount(generatePrivateKey()).address] as const
  const balances = () => Promise.all(recipients.map((address) => chain.getBalance({ address })))
  const send = async (data: Hex) => {
    const hash = await wallet.sendTransaction({ to: owner.address, data, chain: null })
    return chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  }
  const revertName = (error: unknown) =>
    ((error as BaseError).walk((cause) => (cause as { name?: string }).name === 'ContractFunctionRevertedError') as ContractFunctionRevertedError | null)?.data
      ?.errorName

  beforeAll(async () => {
    for (const account of [owner, stranger]) await chain.request({ method: 'anvil_setBalance', params: [account.address, '0x8AC7230489E80000'] } as never)
    expect(await chain.getCode({ address: batchExecutorAddress })).toBe(batchExecutorArtifact.deployedBytecode)
    const authorization = await wallet.signAuthorization({ contractAddress: batchExecutorAddress, executor: 'self', chainId: await chain.getChainId() })
    const hash = await wallet.sendTransaction({ to: owner.address, data: '0x', authorizationList: [authorization], chain: null })
    expect((await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success')
    expect(await chain.getCode({ address: owner.address })).toBe(`0xef0100${batchExecutorAddress.slice(2).toLowerCase()}`)
  })

  test('default: the account runs two transfers in one transaction', async () => {
    const before = await balances()
    const receipt = await send(execute(recipients.map((to) => ({ to, value: parseEther('0.001'), data: '0x' }))))
    expect(receipt.status).toBe('success')
    expect((await balances()).map((balance, index) => balance - before[index]!)).toEqual([parseEther('0.001'), parseEther('0.001')])
  })

  test('behavior: the EntryPoint (v0.8, at its canonical address) may run a batch for the account (ERC-4337)', async () => {
    expect(await chain.readContract({ address: owner.address, abi: EXECUTOR_ABI, functionName: 'entryPoint' })).toBe(entryPoint08Address)
    const before = await balances()
    // The EntryPoint's address, impersonated: what it sends after validateUserOp accepted the operation.
    await chain.request({ method: 'anvil_impersonateAccount', params: [entryPoint08Address] } as never)
    await chain.request({ method: 'anvil_setBalance', params: [entryPoint08Address, '0xde0b6b3a7640000'] } as never)
    try {
      const hash = await createWalletClient({ account: entryPoint08Address, transport }).sendTransaction({
        to: owner.address,
        data: execute([{ to: recipients[1], value: 3n, data: '0x' }]),
        chain: null,
      })
      expect((await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success')
    } finally {
      await chain.request({ method: 'anvil_stopImpersonatingAccount', params: [entryPoint08Address] } as never)
    }
    expect((await balances()).map((balance, index) => balance - before[index]!)).toEqual([0n, 3n])
  })

  test('error: validateUserOp answers the EntryPoint only', async () => {
    const userOperation = {
      sender: owner.address,
      nonce: 0n,
      initCode: '0x',
      callData: '0x',
      accountGasLimits: pad('0x00', { size: 32 }),
      preVerificationGas: 0n,
      gasFees: pad('0x00', { size: 32 }),
      paymasterAndData: '0x',
      signature: '0x',
    } as const
    const error = await chain
      .simulateContract({
        account: stranger,
        address: owner.address,
        abi: VALIDATE_ABI,
        functionName: 'validateUserOp',
        args: [userOperation, pad('0x00', { size: 32 }), 0n],
      })
      .catch((caught: unknown) => caught)
    expect(revertName(error)).toBe('AccountUnauthorized')
  })

  test('behavior: supportsExecutionMode answers true for the batch mode only', async () => {
    const supports = (mode: Hex) => chain.readContract({ address: owner.address, abi: EXECUTOR_ABI, functionName: 'supportsExecutionMode', args: [mode] })
    expect(await supports(BATCH_MODE)).toBe(true)
    expect(await supports(`0x01000000000078210001${'00'.repeat(22)}`)).toBe(false)
    expect(await supports(`0x00${'00'.repeat(31)}`)).toBe(false)
  })

  test('behavior: plain transfers to the upgraded account still arrive', async () => {
    const before = await chain.getBalance({ address: owner.address })
    const hash = await createWalletClient({ account: stranger, transport }).sendTransaction({ to: owner.address, value: 5n, chain: null })
    expect((await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success')
    expect(await chain.getBalance({ address: owner.address })).toBe(before + 5n)
  })

  test('behavior: isValidSignature (ERC-1271) accepts the account key, and nothing else', async () => {
    const hash = hashMessage('hello')
    const check = (signature: Hex) =>
      chain.readContract({ address: owner.address, abi: EXECUTOR_ABI, functionName: 'isValidSignature', args: [hash, signature] })
    expect(await check(await owner.sign({ hash }))).toBe('0x1626ba7e')
    expect(await check(await stranger.sign({ hash }))).toBe('0xffffffff')
    expect(await check('0x1234')).toBe('0xffffffff')
  })

  test('error: anyone but the account itself gets AccountUnauthorized and nothing moves', async () => {
    const before = await balances()
    const error = await chain
      .simulateContract({
        account: stranger,
        address: owner.address,
        abi: EXECUTOR_ABI,
        functionName: 'execute',
        args: [BATCH_MODE, encodeAbiParameters(CALLS, [[{ to: recipients[0], value: 1n, data: '0x' }]])],
      })
      .catch((caught: unknown) => caught)
    expect(revertName(error)).toBe('AccountUnauthorized')
    expect(await balances()).toEqual(before)
  })

  test('error: another mode gets UnsupportedExecutionMode', async () => {
    const error = await chain
      .simulateContract({
        account: owner,
        address: owner.address,
        abi: EXECUTOR_ABI,
        functionName: 'execute',
        args: [`0x01000000000078210001${'00'.repeat(22)}`, encodeAbiParameters(CALLS, [[]])],
      })
      .catch((caught: unknown) => caught)
    expect(revertName(error)).toBe('UnsupportedExecutionMode')
  })

  test('error: when one call reverts the whole batch reverts with its error, and the first transfer is undone', async () => {
    const before = await balances()
    // The second call asks the executor contract itself to execute: the account is not that contract.
    const unauthorized = encodeErrorResult({ abi: EXECUTOR_ABI, errorName: 'AccountUnauthorized', args: [owner.address] })
    const failing = execute([
      { to: recipients[0], value: parseEther('0.001'), data: '0x' },
      { to: batchExecutorAddress, value: 0n, data: execute([]) },
    ])
    const error = await chain.call({ account: owner, to: owner.address, data: failing }).catch((caught: unknown) => caught)
    expect((error as BaseError).walk((cause) => typeof (cause as { data?: unknown }).data === 'string')).toMatchObject({ data: unauthorized })
    const hash = await wallet.sendTransaction({ to: owner.address, data: failing, gas: 200_000n, chain: null })
    expect((await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('reverted')
    expect(await balances()).toEqual(before)
  })

  test('behavior: `to` zero means the account itself (ERC-7821; OpenZeppelin maps it to address(this))', async () => {
    // Only the account may call execute, so the inner batch moves funds only if `to = 0` reached the account.
    const before = await balances()
    const inner = execute([{ to: recipients[0], value: 7n, data: '0x' }])
    const receipt = await send(execute([{ to: zeroAddress, value: 0n, data: inner }]))
    expect(receipt.status).toBe('success')
    expect((await balances()).map((balance, index) => balance - before[index]!)).toEqual([7n, 0n])
  })

  test('behavior: the account answers the ERC-721 and ERC-1155 receiver hooks', async () => {
    const hooks = parseAbi([
      'function onERC721Received(address, address, uint256, bytes) returns (bytes4)',
      'function onERC1155Received(address, address, uint256, uint256, bytes) returns (bytes4)',
    ])
    const from = stranger.address
    expect(await chain.readContract({ address: owner.address, abi: hooks, functionName: 'onERC721Received', args: [from, from, 1n, '0x'] })).toBe('0x150b7a02')
    expect(await chain.readContract({ address: owner.address, abi: hooks, functionName: 'onERC1155Received', args: [from, from, 1n, 1n, '0x'] })).toBe(
      '0xf23a6e61',
    )
  })
})
