import { readFileSync } from 'node:fs'
import {
  type Address,
  type BaseError,
  type ContractFunctionRevertedError,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  parseAbi,
  parseEther,
} from 'viem'
import { entryPoint08Address, type UserOperation } from 'viem/account-abstraction'
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { toBatchExecutorAccount } from '../packages/devnet/test/batchExecutorAccount.js'
import { encodeSponsorData, sponsorTypedData } from '../packages/server/src/paymaster/data.js'
import { artifactPath, compileContract, serializeArtifact } from './build.js'
import { batchExecutorAddress, sponsorPaymasterArtifact, sponsorPaymasterDeployment, testTokenAddress } from './index.js'
import { depositOf, entryPointVerdict, type PaymasterStack, startPaymasterStack } from './paymasterTesting.js'

// The sponsor paymaster as checked in, rebuilt with the pinned solc and OpenZeppelin; then on the
// local stack's chain A as `npm start` deploys and funds it, through the real EntryPoint v0.8 and
// the Alto bundler, with the paymaster service's messages from packages/server/src/paymaster/data.ts.

const PAYMASTER_ABI = parseAbi([
  'function signer() view returns (address)',
  'function owner() view returns (address)',
  'function entryPoint() view returns (address)',
  'function eip712Domain() view returns (bytes1, string, string, uint256, address, bytes32, uint256[])',
  'function deposit() payable',
  'function withdraw(address to, uint256 value)',
  'function setSigner(address signer)',
  'error OwnableUnauthorizedAccount(address account)',
])
const TOKEN_ABI = parseAbi(['function mint(address to, uint256 amount)', 'function balanceOf(address) view returns (uint256)'])
const FAR_FUTURE = 4_000_000_000

describe('build', () => {
  test('default: the checked-in artifact is what the pinned solc builds from SponsorPaymaster.sol and OpenZeppelin, byte for byte', () => {
    const rebuilt = compileContract('SponsorPaymaster')
    expect(rebuilt.compiler).toBe('0.8.37+commit.f401782d.Emscripten.clang')
    expect(rebuilt.openzeppelin).toBe('5.7.0')
    expect(serializeArtifact(rebuilt)).toBe(readFileSync(artifactPath('SponsorPaymaster'), 'utf8'))
  })

  test('behavior: the CREATE2 address follows the signer and the owner', () => {
    const [a, b] = [privateKeyToAccount(generatePrivateKey()).address, privateKeyToAccount(generatePrivateKey()).address]
    const addresses = new Set([
      sponsorPaymasterDeployment({ signer: a, owner: b }).address,
      sponsorPaymasterDeployment({ signer: b, owner: a }).address,
      sponsorPaymasterDeployment({ signer: a, owner: a }).address,
    ])
    expect(addresses.size).toBe(3)
    expect(sponsorPaymasterDeployment({ signer: a, owner: b })).toEqual(sponsorPaymasterDeployment({ signer: a, owner: b }))
  })
})

describe('on chain (EntryPoint v0.8, Alto)', () => {
  let env: PaymasterStack
  let paymaster: Address
  beforeAll(async () => {
    env = await startPaymasterStack()
    paymaster = env.stack.paymasters[env.chainId]!.sponsor
  }, 90_000)
  afterAll(() => env?.stack.stop())

  /** How the paymaster data is signed: the window, the key, and the operation the signature covers. */
  type Signing = {
    validAfter?: number
    validUntil?: number
    signer?: PrivateKeyAccount
    tamper?: (userOperation: UserOperation<'0.8'>) => UserOperation<'0.8'>
  }

  /** A fresh account holding no ETH, its first UserOperation (carrying the delegation) with the paymaster's signed data. */
  async function sponsoredOperation(calls: { to: Address; value?: bigint; data?: Hex }[], signing: Signing = {}) {
    const { client, bundler, chainId } = env
    const owner = privateKeyToAccount(generatePrivateKey())
    const account = await toBatchExecutorAccount(client, owner)
    const signer = signing.signer ?? privateKeyToAccount(env.keys.signer.privateKey)
    const window = { validAfter: signing.validAfter ?? 0, validUntil: signing.validUntil ?? FAR_FUTURE }
    const authorization = await owner.signAuthorization({ chainId, contractAddress: batchExecutorAddress, nonce: 0 })
    const prepared = (await bundler.prepareUserOperation({
      account,
      authorization,
      calls,
      paymaster: {
        // Well-formed but signed by no one: validation fails softly while the bundler estimates.
        getPaymasterStubData: async () => ({
          paymaster,
          paymasterData: encodeSponsorData({ validAfter: 0, validUntil: FAR_FUTURE, signature: `0x${'ff'.repeat(32)}${'7a'.repeat(32)}1c` }),
          paymasterVerificationGasLimit: 60_000n,
          paymasterPostOpGasLimit: 0n,
        }),
        getPaymasterData: async (userOperation) => {
          const signed = signing.tamper ? signing.tamper(userOperation as unknown as UserOperation<'0.8'>) : userOperation
          const signature = await signer.signTypedData(sponsorTypedData({ chainId, paymaster, userOperation: signed as never, ...window }))
          return { paymaster, paymasterData: encodeSponsorData({ ...window, signature }) }
        },
      },
    })) as UserOperation<'0.8'>
    const userOperation = { ...prepared, signature: await account.signUserOperation(prepared) }
    return { owner, account, userOperation }
  }

  const balances = async (addresses: Address[]) => Promise.all(addresses.map((address) => env.client.getBalance({ address })))

  test('default: a sponsored UserOperation from a 7702 account holding 0 ETH lands; its calls take effect, the paymaster deposit pays', async () => {
    const { client, bundler } = env
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    const depositBefore = await depositOf(client, paymaster)
    const { owner, userOperation } = await sponsoredOperation([
      { to: testTokenAddress, data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'mint', args: [recipient, 42n] }) },
    ])
    expect(userOperation.factory).toBe('0x7702')
    expect(await client.getBalance({ address: owner.address })).toBe(0n)

    const hash = await bundler.sendUserOperation(userOperation as never)
    const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 20_000 })

    expect(receipt.success).toBe(true)
    expect(receipt.paymaster?.toLowerCase()).toBe(paymaster.toLowerCase())
    expect(await client.readContract({ address: testTokenAddress, abi: TOKEN_ABI, functionName: 'balanceOf', args: [recipient] })).toBe(42n)
    expect(await client.getBalance({ address: owner.address })).toBe(0n)
    expect(await depositOf(client, owner.address)).toBe(0n)
    expect(await depositOf(client, paymaster)).toBe(depositBefore - receipt.actualGasCost)
  })
  /** The EntryPoint refuses it, the bundler too, and nothing moves: no ETH, no deposit, no call. */
  async function expectRefused(userOperation: UserOperation<'0.8'>, reason: string, watched: Address[]) {
    const { client, bundler } = env
    const before = { deposit: await depositOf(client, paymaster), balances: await balances(watched) }
    expect(await entryPointVerdict(client, userOperation)).toBe(`FailedOp: ${reason}`)
    const error = await bundler.sendUserOperation(userOperation as never).catch((caught: unknown) => caught)
    expect((error as { details?: string }).details).toBe(`UserOperation reverted with reason: ${reason}`)
    expect(await depositOf(client, paymaster)).toBe(before.deposit)
    expect(await balances(watched)).toEqual(before.balances)
  }

  const transfer = (to: Address) => [{ to: testTokenAddress, data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'mint', args: [to, 1n] }) }]
  const minted = (to: Address) => env.client.readContract({ address: testTokenAddress, abi: TOKEN_ABI, functionName: 'balanceOf', args: [to] })

  test('error: a signature by another key than the paymaster signer is refused (AA34)', async () => {
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    const { owner, userOperation } = await sponsoredOperation(transfer(recipient), { signer: privateKeyToAccount(generatePrivateKey()) })
    await expectRefused(userOperation, 'AA34 signature error', [owner.address])
    expect(await minted(recipient)).toBe(0n)
  })

  test('error: an expired validUntil is refused (AA32)', async () => {
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    const now = Number((await env.client.getBlock()).timestamp)
    const { owner, userOperation } = await sponsoredOperation(transfer(recipient), { validUntil: now - 1 })
    await expectRefused(userOperation, 'AA32 paymaster expired or not due', [owner.address])
    expect(await minted(recipient)).toBe(0n)
  })

  test('error: a signature made for another nonce is refused (AA34)', async () => {
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    const { owner, userOperation } = await sponsoredOperation(transfer(recipient), { tamper: (op) => ({ ...op, nonce: op.nonce + 1n }) })
    await expectRefused(userOperation, 'AA34 signature error', [owner.address])
    expect(await minted(recipient)).toBe(0n)
  })

  test('error: mixed block-range flags in the window are refused (AA34), even signed by the signer', async () => {
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    // validAfter as a block number (flag bit set), validUntil as a timestamp.
    const { owner, userOperation } = await sponsoredOperation(transfer(recipient), { validAfter: 0x800000000000, validUntil: FAR_FUTURE })
    await expectRefused(userOperation, 'AA34 signature error', [owner.address])
    expect(await minted(recipient)).toBe(0n)
  })

  test('error: the same UserOperation replayed after it landed is refused (AA25)', async () => {
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    const { owner, userOperation } = await sponsoredOperation(transfer(recipient))
    const hash = await env.bundler.sendUserOperation(userOperation as never)
    expect((await env.bundler.waitForUserOperationReceipt({ hash, timeout: 20_000 })).success).toBe(true)
    await expectRefused(userOperation, 'AA25 invalid account nonce', [owner.address])
    expect(await minted(recipient)).toBe(1n)
  })

  test('behavior: as `npm start` leaves it: the devnet signer and owner, EntryPoint v0.8, the EIP-712 domain, 100 ETH deposited', async () => {
    const { client, chainId, keys } = env
    const read = <name extends 'signer' | 'owner' | 'entryPoint'>(functionName: name) =>
      client.readContract({ address: paymaster, abi: PAYMASTER_ABI, functionName })
    expect([await read('signer'), await read('owner'), await read('entryPoint')]).toEqual([keys.signer.address, keys.owner.address, entryPoint08Address])
    const [, name, version, domainChainId, verifyingContract] = await client.readContract({
      address: paymaster,
      abi: PAYMASTER_ABI,
      functionName: 'eip712Domain',
    })
    expect([name, version, domainChainId, verifyingContract]).toEqual(['Latchkey Sponsor Paymaster', '1', BigInt(chainId), paymaster])
    expect(paymaster).toBe(sponsorPaymasterDeployment({ signer: keys.signer.address, owner: keys.owner.address }).address)
    expect((await client.getCode({ address: paymaster }))?.length).toBe(sponsorPaymasterArtifact.deployedBytecode.length)
  })

  test('behavior: anyone may deposit; only the owner withdraws and rotates the signer, after which the old key is refused', async () => {
    const { client, keys } = env
    const stranger = privateKeyToAccount(generatePrivateKey())
    const owner = privateKeyToAccount(keys.owner.privateKey)
    for (const address of [stranger.address, owner.address])
      await client.request({ method: 'anvil_setBalance', params: [address, '0x56BC75E2D63100000'] } as never)
    const write = async (account: PrivateKeyAccount, functionName: 'deposit' | 'withdraw' | 'setSigner', args: readonly unknown[], value?: bigint) => {
      const wallet = createWalletClient({ account, chain: client.chain, transport: http() })
      const hash = await wallet.writeContract({ address: paymaster, abi: PAYMASTER_ABI, functionName, args, value } as never)
      return (await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status
    }
    const refusal = async (account: PrivateKeyAccount, functionName: 'withdraw' | 'setSigner', args: readonly unknown[]) => {
      const error = await client
        .simulateContract({ account, address: paymaster, abi: PAYMASTER_ABI, functionName, args } as never)
        .catch((caught: unknown) => caught)
      return (
        (error as BaseError).walk((cause) => (cause as { name?: string }).name === 'ContractFunctionRevertedError') as ContractFunctionRevertedError | null
      )?.data
    }

    const before = await depositOf(client, paymaster)
    expect(await write(stranger, 'deposit', [], parseEther('1'))).toBe('success')
    expect(await depositOf(client, paymaster)).toBe(before + parseEther('1'))
    expect(await refusal(stranger, 'withdraw', [stranger.address, 1n])).toMatchObject({ errorName: 'OwnableUnauthorizedAccount', args: [stranger.address] })
    expect(await refusal(stranger, 'setSigner', [stranger.address])).toMatchObject({ errorName: 'OwnableUnauthorizedAccount', args: [stranger.address] })
    expect(await depositOf(client, paymaster)).toBe(before + parseEther('1'))

    const receiver = privateKeyToAccount(generatePrivateKey()).address
    expect(await write(owner, 'withdraw', [receiver, parseEther('1')])).toBe('success')
    expect([await client.getBalance({ address: receiver }), await depositOf(client, paymaster)]).toEqual([parseEther('1'), before])

    const rotated = privateKeyToAccount(generatePrivateKey())
    expect(await write(owner, 'setSigner', [rotated.address])).toBe('success')
    try {
      const recipient = privateKeyToAccount(generatePrivateKey()).address
      const old = await sponsoredOperation(transfer(recipient))
      await expectRefused(old.userOperation, 'AA34 signature error', [old.owner.address])
      const fresh = await sponsoredOperation(transfer(recipient), { signer: rotated })
      expect(await entryPointVerdict(client, fresh.userOperation)).toBeUndefined()
    } finally {
      expect(await write(owner, 'setSigner', [keys.signer.address])).toBe('success')
    }
  })
})
