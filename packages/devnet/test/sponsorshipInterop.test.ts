import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import simple7702Artifact from '@account-abstraction/contracts/artifacts/Simple7702Account.json' with { type: 'json' }
import { createAppServer } from '@latchkey/server'
import BetterSqlite3 from 'better-sqlite3'
import {
  type Address,
  concatHex,
  createPublicClient,
  defineChain,
  encodeFunctionData,
  getContractAddress,
  type Hex,
  http,
  maxUint256,
  pad,
  parseAbi,
  parseEther,
  parseEventLogs,
} from 'viem'
import { createBundlerClient, createPaymasterClient, toSimple7702SmartAccount } from 'viem/account-abstraction'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { getFreePort, type Stack, startStack, TEST_TOKEN_ADDRESS } from '../src/index.js'
import { demoSponsorshipPolicy } from '../src/sponsorship.js'

// Our paymaster service and contracts driven by clients we did not write: viem's account-abstraction
// module (createBundlerClient with createPaymasterClient pointed at the backend's /paymaster) for
// viem's own EIP-7702 account (toSimple7702SmartAccount, over eth-infinitism's Simple7702Account
// v0.8), through the stack's Alto bundler and EntryPoint v0.8 on anvil. The account holds no ETH.

const TOKEN_ABI = parseAbi([
  'function mint(address to, uint256 amount)',
  'function transfer(address to, uint256 amount) returns (bool)',
  'function approve(address spender, uint256 amount) returns (bool)',
  'function balanceOf(address) view returns (uint256)',
])
const SPONSORED_EVENT = parseAbi([
  'event UserOperationSponsored(bytes32 indexed userOpHash, address indexed token, uint256 tokenAmount, uint256 tokenPerNative)',
  'event UserOperationGuaranteed(bytes32 indexed userOpHash, address indexed guarantor, uint256 prefundAmount)',
])
const CREATE2_FACTORY: Address = '0x4e59b44847b379578588920ca78fbf26c0b4956c'
const chain = (rpcUrl: string) =>
  defineChain({ id: 31337, name: 'Anvil A', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } })

describe('sponsored UserOperations from viem', () => {
  let stack: Stack<false>
  let backend: ReturnType<typeof createAppServer>
  let paymasterUrl: string
  let implementation: Address
  let stateDir: string

  beforeAll(async () => {
    const ports = Object.fromEntries(
      await Promise.all(
        ['chainA', 'chainB', 'bundlerA', 'bundlerB', 'relay', 'kms', 'frames', 'server', 'oidc'].map(async (name) => [name, await getFreePort()]),
      ),
    )
    stateDir = join(await mkdtemp(join(tmpdir(), 'latchkey-sponsorship-')), 'state')
    stack = await startStack({ ports, stateDir, demo: false, relay: false })
    const rpcUrl = stack.urls.chainA
    // viem's 7702 account delegates to eth-infinitism's Simple7702Account: deployed here from
    // @account-abstraction/contracts' artifact through the CREATE2 factory (salt 0).
    const salt = pad('0x00', { size: 32 })
    implementation = getContractAddress({ opcode: 'CREATE2', from: CREATE2_FACTORY, salt, bytecode: simple7702Artifact.bytecode as Hex })
    const client = createPublicClient({ chain: chain(rpcUrl), transport: http() })
    const [deployer] = (await client.request({ method: 'eth_accounts' } as never)) as Address[]
    const hash = (await client.request({
      method: 'eth_sendTransaction',
      params: [{ from: deployer, to: CREATE2_FACTORY, data: concatHex([salt, simple7702Artifact.bytecode as Hex]) }],
    } as never)) as Hex
    await client.waitForTransactionReceipt({ hash })
    // A backend of its own with the demo's policy, open to any account: viem's account is no user's.
    const kms = stack.kms!
    const port = await getFreePort()
    backend = createAppServer({
      port,
      databasePath: join(stateDir, 'interop.db'),
      kmsUrl: stack.urls.kms!,
      organizationId: kms.parentOrganizationId,
      apiPublicKey: kms.apiPublicKey,
      apiPrivateKey: kms.apiPrivateKey,
      appName: 'Interop',
      allowedOrigins: ['http://localhost:5173'],
      paymaster: {
        signerPrivateKey: stack.paymasterSigner.privateKey,
        policy: {
          ...demoSponsorshipPolicy({ chains: [{ id: 31337, rpcUrl }], paymasters: stack.paymasters[31337]!, guarantor: stack.guarantor, appName: 'Interop' }),
          accounts: 'any',
        },
      },
    })
    await backend.start()
    paymasterUrl = `http://127.0.0.1:${port}/paymaster`
  })
  afterAll(async () => {
    await backend?.stop()
    await stack?.stop()
  })

  /** The backend's reservation of an account's one operation (viem picks its nonce key) once its settlement has ended it (polled, at most 20 s). */
  async function settled(sender: Address) {
    const database = new BetterSqlite3(join(stateDir, 'interop.db'), { readonly: true })
    try {
      const deadline = Date.now() + 20_000
      for (;;) {
        const row = database.prepare('select status, actual from paymaster_reservations where chain_id = 31337 and sender = ?').get(sender.toLowerCase()) as
          | { status: string; actual: string | null }
          | undefined
        if ((row && row.status !== 'reserved') || Date.now() > deadline) return row
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    } finally {
      database.close()
    }
  }

  async function viemAccount() {
    const client = createPublicClient({ chain: chain(stack.urls.chainA), transport: http(), pollingInterval: 50 })
    const owner = privateKeyToAccount(generatePrivateKey())
    const account = await toSimple7702SmartAccount({ client, owner, implementation })
    const bundler = (paymasterContext?: { token: Address }) =>
      createBundlerClient({
        account,
        client,
        transport: http(stack.bundlers![31337]),
        paymaster: createPaymasterClient({ transport: http(paymasterUrl) }),
        ...(paymasterContext ? { paymasterContext } : {}),
        pollingInterval: 50,
      })
    const authorization = await owner.signAuthorization({ address: implementation, chainId: 31337, nonce: 0 })
    return { client, owner, account, bundler, authorization }
  }

  test('default: a sponsored UserOperation lands, its calls run, and the account holds no ETH before or after', async () => {
    const { client, account, bundler, authorization } = await viemAccount()
    expect(await client.getBalance({ address: account.address })).toBe(0n)
    const hash = await bundler().sendUserOperation({
      calls: [{ to: TEST_TOKEN_ADDRESS, data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'mint', args: [account.address, parseEther('5')] }) }],
      authorization,
    })
    const receipt = await bundler().waitForUserOperationReceipt({ hash })
    expect(receipt.success).toBe(true)
    expect(receipt.paymaster).toBe(stack.paymasters[31337]!.sponsor)
    expect(await client.readContract({ address: TEST_TOKEN_ADDRESS, abi: TOKEN_ABI, functionName: 'balanceOf', args: [account.address] })).toBe(parseEther('5'))
    expect(await client.getBalance({ address: account.address })).toBe(0n)
    // The service's settlement reads the EntryPoint's UserOperationEvent of our paymaster: the
    // reservation becomes what the operation really cost (its loop runs every 5 s).
    expect(await settled(account.address)).toEqual({ status: 'settled', actual: receipt.actualGasCost.toString() })
  })

  test('behavior: gas paid in TKN: a first operation that approves the token paymaster is guaranteed, and the account pays in TKN, never in ETH', async () => {
    const { client, account, bundler, authorization } = await viemAccount()
    const tokenPaymaster = stack.paymasters[31337]!.token
    const mint = await bundler().sendUserOperation({
      calls: [{ to: TEST_TOKEN_ADDRESS, data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'mint', args: [account.address, parseEther('5')] }) }],
      authorization,
    })
    await bundler().waitForUserOperationReceipt({ hash: mint })
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    const hash = await bundler({ token: TEST_TOKEN_ADDRESS }).sendUserOperation({
      calls: [
        { to: TEST_TOKEN_ADDRESS, data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'approve', args: [tokenPaymaster, maxUint256] }) },
        { to: TEST_TOKEN_ADDRESS, data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'transfer', args: [recipient, parseEther('1')] }) },
      ],
    })
    const receipt = await bundler().waitForUserOperationReceipt({ hash })
    expect(receipt.success).toBe(true)
    expect(receipt.paymaster).toBe(tokenPaymaster)
    const left = await client.readContract({ address: TEST_TOKEN_ADDRESS, abi: TOKEN_ABI, functionName: 'balanceOf', args: [account.address] })
    // 5 minted, 1 sent, and exactly what the token paymaster says it charged, at the policy's price.
    const [charged] = parseEventLogs({ abi: SPONSORED_EVENT, logs: receipt.logs, eventName: 'UserOperationSponsored' })
    expect(charged?.args).toMatchObject({ userOpHash: hash, token: TEST_TOKEN_ADDRESS, tokenPerNative: parseEther('1000') })
    expect(charged!.args.tokenAmount > 0n).toBe(true)
    // The account had not approved the paymaster when the operation was validated: the guarantor
    // fronted it (an event of the validation phase, so in the bundle's transaction, not the op's own logs).
    const [guaranteed] = parseEventLogs({ abi: SPONSORED_EVENT, logs: receipt.receipt.logs, eventName: 'UserOperationGuaranteed' })
    expect(guaranteed?.args).toMatchObject({ userOpHash: hash, guarantor: stack.guarantor })
    expect(left).toBe(parseEther('4') - charged!.args.tokenAmount)
    expect(await client.readContract({ address: TEST_TOKEN_ADDRESS, abi: TOKEN_ABI, functionName: 'balanceOf', args: [recipient] })).toBe(parseEther('1'))
    expect(await client.getBalance({ address: account.address })).toBe(0n)
  })

  test('error: an operation outside the policy is refused by our service with an ERC-7677 error, and nothing is sent', async () => {
    const { client, account, bundler, authorization } = await viemAccount()
    const elsewhere = privateKeyToAccount(generatePrivateKey()).address
    const refused = await bundler()
      .sendUserOperation({ calls: [{ to: elsewhere, data: '0x' }], authorization })
      .then(
        () => undefined,
        (error: unknown) => error,
      )
    expect(refused).toBeInstanceOf(Error)
    const rpc = (refused as { walk(fn: (error: unknown) => boolean): unknown }).walk((error) => typeof (error as { code?: unknown }).code === 'number') as {
      code: number
      details: string
    }
    expect(rpc.code).toBe(-32003)
    expect(rpc.details).toBe(`The call to ${elsewhere} is not sponsored`)
    expect(await client.getTransactionCount({ address: account.address })).toBe(0)
  })
})
