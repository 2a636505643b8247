import { readFileSync } from 'node:fs'
import {
  type Abi,
  type Address,
  type BaseError,
  type ContractFunctionRevertedError,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  maxUint256,
  parseAbi,
  parseEther,
  parseEventLogs,
  zeroAddress,
} from 'viem'
import { entryPoint08Address, type SmartAccount, type UserOperation } from 'viem/account-abstraction'
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { toBatchExecutorAccount } from '../packages/devnet/test/batchExecutorAccount.js'
import { encodeTokenData, type TokenQuote, tokenTypedData } from '../packages/server/src/paymaster/data.js'
import { artifactPath, compileContract, serializeArtifact } from './build.js'
import { batchExecutorAddress, testTokenAddress, tokenPaymasterArtifact, tokenPaymasterDeployment } from './index.js'
import { depositOf, entryPointVerdict, type PaymasterStack, startPaymasterStack } from './paymasterTesting.js'

// The token paymaster as checked in, rebuilt with the pinned solc and OpenZeppelin; then on the
// local stack's chain A as `npm start` deploys it (with its guarantor), through the real EntryPoint
// v0.8 and the Alto bundler, with the paymaster service's messages from packages/server/src/paymaster/data.ts.

const PAYMASTER_ABI = parseAbi([
  'function signer() view returns (address)',
  'function owner() view returns (address)',
  'function entryPoint() view returns (address)',
  'function eip712Domain() view returns (bytes1, string, string, uint256, address, bytes32, uint256[])',
  'function withdrawTokens(address token, address recipient, uint256 amount)',
  'error OwnableUnauthorizedAccount(address account)',
])
const TOKEN_ABI = parseAbi([
  'function mint(address to, uint256 amount)',
  'function balanceOf(address) view returns (uint256)',
  'function allowance(address, address) view returns (uint256)',
  'function approve(address spender, uint256 amount) returns (bool)',
  'function transfer(address to, uint256 amount) returns (bool)',
])
const FAR_FUTURE = 4_000_000_000
/** 1,000 TKN per ETH, in OpenZeppelin's unit: token units per 1e18 wei. */
const PRICE = 1000n * 10n ** 18n
const STUB_SIGNATURE: Hex = `0x${'ff'.repeat(32)}${'7a'.repeat(32)}1c`

describe('build', () => {
  test('default: the checked-in artifact is what the pinned solc builds from TokenPaymaster.sol and OpenZeppelin, byte for byte', () => {
    const rebuilt = compileContract('TokenPaymaster')
    expect(rebuilt.compiler).toBe('0.8.37+commit.f401782d.Emscripten.clang')
    expect(rebuilt.openzeppelin).toBe('5.7.0')
    expect(serializeArtifact(rebuilt)).toBe(readFileSync(artifactPath('TokenPaymaster'), 'utf8'))
  })
})

describe('on chain (EntryPoint v0.8, Alto)', () => {
  let env: PaymasterStack
  let paymaster: Address
  let guarantor: Address
  beforeAll(async () => {
    env = await startPaymasterStack()
    paymaster = env.stack.paymasters[env.chainId]!.token
    guarantor = env.stack.guarantor
  }, 90_000)
  afterAll(() => env?.stack.stop())

  const tokens = (address: Address) => env.client.readContract({ address: testTokenAddress, abi: TOKEN_ABI, functionName: 'balanceOf', args: [address] })
  const call = <name extends 'mint' | 'approve' | 'transfer'>(functionName: name, args: readonly [Address, bigint]) => ({
    to: testTokenAddress,
    data: encodeFunctionData({ abi: TOKEN_ABI, functionName, args } as never),
  })

  /** A fresh EOA holding `tkn` TKN and no ETH, as a smart account. */
  async function fundedAccount(tkn: bigint) {
    const owner = privateKeyToAccount(generatePrivateKey())
    const minter = privateKeyToAccount(generatePrivateKey())
    await env.client.request({ method: 'anvil_setBalance', params: [minter.address, '0xde0b6b3a7640000'] } as never)
    const hash = await createWalletClient({ account: minter, chain: env.client.chain, transport: http() }).writeContract({
      address: testTokenAddress,
      abi: TOKEN_ABI,
      functionName: 'mint',
      args: [owner.address, tkn],
    })
    expect((await env.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success')
    return { owner, account: await toBatchExecutorAccount(env.client, owner) }
  }

  type Signing = {
    validAfter?: number
    validUntil?: number
    signer?: PrivateKeyAccount
    /** The quote in paymasterData, when it differs from the signed one. */
    sent?: Partial<TokenQuote>
    /** The operation the signature covers, when it differs from the one sent. */
    signedAs?: (userOperation: UserOperation<'0.8'>) => UserOperation<'0.8'>
  }

  /** The account's next UserOperation, paid in TKN at {@link PRICE}, with `guarantor` (zero: none) and the signer's quote. */
  async function tokenOperation(
    { owner, account }: { owner: PrivateKeyAccount; account: SmartAccount },
    calls: { to: Address; data: Hex }[],
    quoteGuarantor: Address,
    signing: Signing = {},
  ) {
    const { bundler, chainId } = env
    const signer = signing.signer ?? privateKeyToAccount(env.keys.signer.privateKey)
    const window = { validAfter: signing.validAfter ?? 0, validUntil: signing.validUntil ?? FAR_FUTURE }
    const quote: TokenQuote = { token: testTokenAddress, tokenPerNative: PRICE, guarantor: quoteGuarantor }
    const delegated = (await env.client.getCode({ address: owner.address })) !== undefined
    const authorization = delegated ? undefined : await owner.signAuthorization({ chainId, contractAddress: batchExecutorAddress, nonce: 0 })
    const prepared = (await bundler.prepareUserOperation({
      account,
      ...(authorization ? { authorization } : {}),
      calls,
      paymaster: {
        // Signed by no one: validation fails softly (nothing is pulled) while the bundler estimates;
        // the paymaster's own limits are set here, for the prefund and the refund.
        getPaymasterStubData: async () => ({
          paymaster,
          paymasterData: encodeTokenData({ validAfter: 0, validUntil: FAR_FUTURE, ...quote, signature: STUB_SIGNATURE }),
          paymasterVerificationGasLimit: 150_000n,
          paymasterPostOpGasLimit: 120_000n,
        }),
        getPaymasterData: async (userOperation) => {
          const signed = signing.signedAs ? signing.signedAs(userOperation as unknown as UserOperation<'0.8'>) : userOperation
          const signature = await signer.signTypedData(tokenTypedData({ chainId, paymaster, userOperation: signed as never, ...window, ...quote }))
          return { paymaster, paymasterData: encodeTokenData({ ...window, ...quote, ...signing.sent, signature }) }
        },
      },
    })) as UserOperation<'0.8'>
    return { ...prepared, signature: await account.signUserOperation(prepared) } as UserOperation<'0.8'>
  }

  async function land(userOperation: UserOperation<'0.8'>) {
    const hash = await env.bundler.sendUserOperation(userOperation as never)
    const receipt = await env.bundler.waitForUserOperationReceipt({ hash, timeout: 20_000 })
    expect(receipt.success).toBe(true)
    const events = parseEventLogs({ abi: tokenPaymasterArtifact.abi as Abi, logs: receipt.receipt.logs }) as unknown as {
      eventName: string
      args: Record<string, unknown>
    }[]
    return { receipt, events }
  }

  test('default: an account holding only TKN pays its gas in TKN: a first operation guaranteed, then one it prefunds itself', async () => {
    const { client } = env
    const holder = await fundedAccount(parseEther('100'))
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    const before = { guarantor: await tokens(guarantor), paymaster: await tokens(paymaster), deposit: await depositOf(client, paymaster) }

    // The batch approves the paymaster, which only runs after validation: the guarantor prefunds.
    const first = await tokenOperation(holder, [call('approve', [paymaster, maxUint256]), call('mint', [recipient, 5n])], guarantor)
    expect(first.factory).toBe('0x7702')
    const one = await land(first)
    const charged1 = one.events.find((event) => event.eventName === 'UserOperationSponsored')!.args
    expect(charged1).toMatchObject({ userOpHash: one.receipt.userOpHash, token: testTokenAddress, tokenPerNative: PRICE })
    expect(one.events.find((event) => event.eventName === 'UserOperationGuaranteed')?.args).toMatchObject({ userOpHash: one.receipt.userOpHash, guarantor })
    const amount1 = charged1['tokenAmount'] as bigint
    expect(amount1).toBeGreaterThan(0n)
    expect(await tokens(holder.owner.address)).toBe(parseEther('100') - amount1)
    expect(await tokens(recipient)).toBe(5n)
    // The guarantor is made whole; the paymaster keeps what the account paid; its deposit paid the ETH.
    expect(await tokens(guarantor)).toBe(before.guarantor)
    expect(await tokens(paymaster)).toBe(before.paymaster + amount1)
    expect(await depositOf(client, paymaster)).toBe(before.deposit - one.receipt.actualGasCost)

    // Approved now: the account prefunds its next operation itself (no guarantor in the quote).
    const second = await tokenOperation(holder, [call('transfer', [recipient, parseEther('1')])], zeroAddress)
    expect(second.factory).toBeUndefined()
    const two = await land(second)
    const amount2 = two.events.find((event) => event.eventName === 'UserOperationSponsored')!.args['tokenAmount'] as bigint
    expect(two.events.map((event) => event.eventName)).not.toContain('UserOperationGuaranteed')
    expect(await tokens(holder.owner.address)).toBe(parseEther('99') - amount1 - amount2)
    expect(await tokens(recipient)).toBe(parseEther('1') + 5n)
    expect(await tokens(guarantor)).toBe(before.guarantor)
    expect(await tokens(paymaster)).toBe(before.paymaster + amount1 + amount2)
    // Never any ETH: neither in the account nor as its EntryPoint deposit.
    expect([await client.getBalance({ address: holder.owner.address }), await depositOf(client, holder.owner.address)]).toEqual([0n, 0n])
  })

  /** The EntryPoint refuses it, the bundler too, and nothing moves: no ETH, no deposit, no TKN. */
  async function expectRefused(userOperation: UserOperation<'0.8'>, reason: string, holder: Address) {
    const { client, bundler } = env
    const snapshot = async () => [
      await depositOf(client, paymaster),
      await tokens(paymaster),
      await tokens(guarantor),
      await tokens(holder),
      await client.getBalance({ address: holder }),
    ]
    const before = await snapshot()
    expect(await entryPointVerdict(client, userOperation)).toBe(`FailedOp: ${reason}`)
    const error = await bundler.sendUserOperation(userOperation as never).catch((caught: unknown) => caught)
    expect((error as { details?: string }).details).toBe(`UserOperation reverted with reason: ${reason}`)
    expect(await snapshot()).toEqual(before)
  }

  const otherKey = privateKeyToAccount(generatePrivateKey())
  test.each([
    ['a signature by another key', { signer: otherKey }, 'AA34 signature error'],
    ['a changed token price in the quote', { sent: { tokenPerNative: PRICE / 2n } }, 'AA34 signature error'],
    ['another guarantor than the signed one', { sent: { guarantor: otherKey.address } }, 'AA34 signature error'],
    ['mixed block-range flags', { validAfter: 0x800000000000 }, 'AA34 signature error'],
    ['an expired validUntil', { validUntil: 1 }, 'AA32 paymaster expired or not due'],
  ] as const)('error: %s is refused by the EntryPoint, and nothing moves', async (_name, signing, reason) => {
    const holder = await fundedAccount(parseEther('100'))
    const first = await tokenOperation(holder, [call('approve', [paymaster, maxUint256])], guarantor, signing)
    await expectRefused(first, reason, holder.owner.address)
  })

  test('error: a signature made for another nonce is refused (AA34); the same operation replayed after it landed is refused (AA25)', async () => {
    const holder = await fundedAccount(parseEther('100'))
    const first = await tokenOperation(holder, [call('approve', [paymaster, maxUint256])], guarantor)
    await land(first)
    await expectRefused(first, 'AA25 invalid account nonce', holder.owner.address)
    // Signed for the nonce after its own.
    const next = await tokenOperation(holder, [call('transfer', [holder.owner.address, 1n])], zeroAddress, {
      signedAs: (userOperation) => ({ ...userOperation, nonce: userOperation.nonce + 1n }),
    })
    await expectRefused(next, 'AA34 signature error', holder.owner.address)
  })

  test('behavior: as `npm start` leaves it: the devnet signer and owner, EntryPoint v0.8, the EIP-712 domain, a guarantor that approved it', async () => {
    const { client, chainId, keys } = env
    const read = <name extends 'signer' | 'owner' | 'entryPoint'>(functionName: name) =>
      client.readContract({ address: paymaster, abi: PAYMASTER_ABI, functionName })
    expect([await read('signer'), await read('owner'), await read('entryPoint')]).toEqual([keys.signer.address, keys.owner.address, entryPoint08Address])
    const [, name, version, domainChainId, verifyingContract] = await client.readContract({
      address: paymaster,
      abi: PAYMASTER_ABI,
      functionName: 'eip712Domain',
    })
    expect([name, version, domainChainId, verifyingContract]).toEqual(['Latchkey Token Paymaster', '1', BigInt(chainId), paymaster])
    expect(paymaster).toBe(tokenPaymasterDeployment({ signer: keys.signer.address, owner: keys.owner.address }).address)
    expect(await client.readContract({ address: testTokenAddress, abi: TOKEN_ABI, functionName: 'allowance', args: [guarantor, paymaster] })).toBe(maxUint256)
    expect(await depositOf(client, paymaster)).toBeGreaterThan(parseEther('99'))
  })

  test('error: only the owner withdraws the collected tokens', async () => {
    const { client, keys } = env
    const stranger = privateKeyToAccount(generatePrivateKey())
    const owner = privateKeyToAccount(keys.owner.privateKey)
    await client.request({ method: 'anvil_setBalance', params: [owner.address, '0xde0b6b3a7640000'] } as never)
    const error = await client
      .simulateContract({
        account: stranger,
        address: paymaster,
        abi: PAYMASTER_ABI,
        functionName: 'withdrawTokens',
        args: [testTokenAddress, stranger.address, 1n],
      })
      .catch((caught: unknown) => caught)
    const revert = (error as BaseError).walk((cause) => (cause as { name?: string }).name === 'ContractFunctionRevertedError') as ContractFunctionRevertedError
    expect(revert.data).toMatchObject({ errorName: 'OwnableUnauthorizedAccount', args: [stranger.address] })
    const held = await tokens(paymaster)
    const receiver = privateKeyToAccount(generatePrivateKey()).address
    const hash = await createWalletClient({ account: owner, chain: client.chain, transport: http() }).writeContract({
      address: paymaster,
      abi: PAYMASTER_ABI,
      functionName: 'withdrawTokens',
      args: [testTokenAddress, receiver, maxUint256],
    })
    expect((await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success')
    expect([await tokens(receiver), await tokens(paymaster)]).toEqual([held, 0n])
  })
})
