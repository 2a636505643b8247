import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Call, createPublicClient, defineChain, encodeFunctionData, getAddress, http, parseAbi, parseEther } from 'viem'
import { createBundlerClient, entryPoint08Abi, entryPoint08Address, type SmartAccount } from 'viem/account-abstraction'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { BATCH_EXECUTOR_ADDRESS, type DevJson, ENTRY_POINT_ADDRESS, getFreePort, type Stack, startStack, TEST_TOKEN_ADDRESS } from '../src/index.js'
import { toBatchExecutorAccount } from './batchExecutorAccount.js'

// `npm start`'s chains and bundlers (kms, relay and demo left out): an EOA delegated to the batch
// executor with EIP-7702 sends UserOperations through Alto with viem's account-abstraction client,
// a client we did not write, paying its own gas.

const TOKEN_ABI = parseAbi(['function mint(address to, uint256 amount)', 'function balanceOf(address) view returns (uint256)'])

let stack: Stack<false>
let devJson: DevJson

beforeAll(async () => {
  const ports = { chainA: await getFreePort(), chainB: await getFreePort(), bundlerA: await getFreePort(), bundlerB: await getFreePort() }
  const stateDir = join(await mkdtemp(join(tmpdir(), 'latchkey-aa-')), 'state')
  stack = await startStack({ ports, stateDir, demo: false, relay: false, kms: false })
  devJson = JSON.parse(await readFile(stack.devJson, 'utf8')) as DevJson
}, 90_000)
afterAll(() => stack?.stop())

describe('the stack', () => {
  test('default: dev.json names EntryPoint v0.8 and a bundler per chain that serves it', async () => {
    expect(ENTRY_POINT_ADDRESS).toBe(entryPoint08Address)
    expect(devJson.entryPoint).toBe(entryPoint08Address)
    expect(devJson.bundlers).toEqual({ 31337: stack.instances[2]!.url, 31338: stack.instances[3]!.url })
    expect(stack.instances.map((instance) => [instance.name, instance.status])).toEqual([
      ['chain A', 'started'],
      ['chain B', 'started'],
      ['bundler A', 'started'],
      ['bundler B', 'started'],
    ])
    for (const chain of stack.chains) {
      const bundler = createBundlerClient({ transport: http(devJson.bundlers![chain.id]) })
      expect(await bundler.getSupportedEntryPoints()).toEqual([entryPoint08Address])
      expect(await bundler.getChainId()).toBe(chain.id)
      const client = createPublicClient({ transport: http(chain.rpcUrl) })
      expect(
        await client.readContract({
          address: BATCH_EXECUTOR_ADDRESS,
          abi: parseAbi(['function entryPoint() view returns (address)']),
          functionName: 'entryPoint',
        }),
      ).toBe(entryPoint08Address)
    }
  })

  test('behavior: the bundlers listen on loopback only', async () => {
    for (const url of Object.values(devJson.bundlers!)) expect(new URL(url).hostname).toBe('127.0.0.1')
    const port = new URL(devJson.bundlers![31337]!).port
    const listening = await readFile('/proc/net/tcp', 'utf8')
    // 0100007F is 127.0.0.1, 00000000 is 0.0.0.0; state 0A is LISTEN.
    const hexPort = Number(port).toString(16).toUpperCase().padStart(4, '0')
    expect(listening).toMatch(new RegExp(`: 0100007F:${hexPort} 00000000:0000 0A `))
    expect(listening).not.toMatch(new RegExp(`: 00000000:${hexPort} 00000000:0000 0A `))
  })
})

describe.each([
  [31337, 'chain A'],
  [31338, 'chain B'],
] as const)('a UserOperation on %i (%s)', (chainId, _name) => {
  const setup = () => {
    const rpcUrl = stack.chains.find((chain) => chain.id === chainId)!.rpcUrl
    const chain = defineChain({
      id: chainId,
      name: `anvil ${chainId}`,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } },
    })
    const client = createPublicClient({ chain, transport: http(), pollingInterval: 50 })
    const bundler = createBundlerClient({ client, transport: http(devJson.bundlers![chainId]), pollingInterval: 50 })
    return { client, bundler }
  }

  test('default: a fresh EOA delegates to the executor inside its first UserOperation, pays its own gas, and the batch lands', async () => {
    const { client, bundler } = setup()
    const owner = privateKeyToAccount(generatePrivateKey())
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    await client.request({ method: 'anvil_setBalance', params: [owner.address, '0xde0b6b3a7640000'] } as never)
    expect(await client.getCode({ address: owner.address })).toBeUndefined()
    const account = await toBatchExecutorAccount(client, owner)
    // The bundler's transaction carries the EOA's EIP-7702 authorization (its nonce is the EOA's own).
    const authorization = await owner.signAuthorization({
      chainId,
      contractAddress: BATCH_EXECUTOR_ADDRESS,
      nonce: await client.getTransactionCount({ address: owner.address }),
    })

    const hash = await bundler.sendUserOperation({
      account,
      authorization,
      calls: [
        { to: recipient, value: parseEther('0.01') },
        { to: TEST_TOKEN_ADDRESS, data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'mint', args: [recipient, 42n] }) },
      ],
    })
    const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 20_000 })

    expect(receipt.success).toBe(true)
    expect(receipt.sender).toBe(owner.address)
    expect(getAddress(receipt.entryPoint)).toBe(entryPoint08Address)
    expect(receipt.paymaster).toBeUndefined()
    expect(await client.getCode({ address: owner.address })).toBe(`0xef0100${BATCH_EXECUTOR_ADDRESS.slice(2).toLowerCase()}`)
    expect(await client.getBalance({ address: recipient })).toBe(parseEther('0.01'))
    expect(await client.readContract({ address: TEST_TOKEN_ADDRESS, abi: TOKEN_ABI, functionName: 'balanceOf', args: [recipient] })).toBe(42n)
    // The EOA paid the transfer and the gas the EntryPoint charged, nothing else: it prefunded the
    // operation's maximum cost, and what was not spent waits as its deposit in the EntryPoint.
    const deposit = await client.readContract({ address: entryPoint08Address, abi: entryPoint08Abi, functionName: 'balanceOf', args: [owner.address] })
    expect(deposit).toBeGreaterThan(0n)
    expect((await client.getBalance({ address: owner.address })) + deposit).toBe(parseEther('1') - parseEther('0.01') - receipt.actualGasCost)
  })

  test('behavior: once delegated, the next UserOperation carries no authorization', async () => {
    const { client, bundler } = setup()
    const owner = privateKeyToAccount(generatePrivateKey())
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    await client.request({ method: 'anvil_setBalance', params: [owner.address, '0xde0b6b3a7640000'] } as never)
    const account = await toBatchExecutorAccount(client, owner)
    const authorization = await owner.signAuthorization({ chainId, contractAddress: BATCH_EXECUTOR_ADDRESS, nonce: 0 })
    const send = async (calls: readonly Call[], extra: { authorization?: typeof authorization } = {}) =>
      bundler.waitForUserOperationReceipt({ hash: await bundler.sendUserOperation({ account, calls, ...extra }), timeout: 20_000 })

    const first = await send([{ to: recipient, value: 1n }], { authorization })
    const second = await send([{ to: recipient, value: 2n }])
    expect([first.success, second.success]).toEqual([true, true])
    // The bundler sent the first bundle as an EIP-7702 transaction, the second as a plain one.
    const bundles = await Promise.all([first, second].map(({ receipt }) => client.getTransaction({ hash: receipt.transactionHash })))
    expect(bundles.map((bundle) => [bundle.type, bundle.authorizationList?.length])).toEqual([
      ['eip7702', 1],
      ['eip1559', undefined],
    ])
    expect(await client.getBalance({ address: recipient })).toBe(3n)
  })

  test('error: a UserOperation signed by another key is refused by the bundler, and nothing moves', async () => {
    const { client, bundler } = setup()
    const owner = privateKeyToAccount(generatePrivateKey())
    const impostor = privateKeyToAccount(generatePrivateKey())
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    await client.request({ method: 'anvil_setBalance', params: [owner.address, '0xde0b6b3a7640000'] } as never)
    const authorization = await owner.signAuthorization({ chainId, contractAddress: BATCH_EXECUTOR_ADDRESS, nonce: 0 })
    // The impostor's account claims the owner's address: Account's SignerEIP7702 check fails (AA24).
    const account = await toBatchExecutorAccount(client, owner)
    const forged = { ...account, signUserOperation: (await toBatchExecutorAccount(client, impostor)).signUserOperation }

    const error = await bundler
      .sendUserOperation({ account: forged as SmartAccount, authorization, calls: [{ to: recipient, value: 1n }] })
      .catch((caught: unknown) => caught)

    expect((error as Error).name).toBe('UserOperationExecutionError')
    // EntryPoint's AA24: the account's validateUserOp answered "signature failed".
    expect((error as { details?: string }).details).toBe('UserOperation reverted with reason: AA24 signature error')
    expect(await client.getBalance({ address: recipient })).toBe(0n)
    expect(await client.getBalance({ address: owner.address })).toBe(parseEther('1'))
  })
})
