import { mkdtemp } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  SponsorshipUnavailableError as CoreSponsorshipUnavailableError,
  connect,
  createClient,
  type EIP1193Provider,
  injected,
  sendCalls,
} from '@latchkey/core'
import {
  type AnvilInstance,
  alto,
  anvil,
  deployBatchExecutor,
  deployEntryPoint,
  deployPaymasters,
  deployTestToken,
  ENTRY_POINT_ADDRESS,
  getFreePort,
  loadPaymasters,
  type StackPaymasters,
  TEST_TOKEN_ADDRESS,
} from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import {
  type Chain,
  createPublicClient,
  defineChain,
  encodeFunctionData,
  type Hex,
  hexToBigInt,
  http,
  numberToHex,
  type PublicClient,
  parseAbi,
  parseEther,
} from 'viem'
import { entryPoint08Abi } from 'viem/account-abstraction'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, afterEach, beforeAll, describe, expect, inject, test } from 'vitest'
import { BATCH_EXECUTOR_ADDRESS, createEmbeddedProvider, createEmbeddedWallet, type Sponsorship, SponsorshipUnavailableError } from '../src/index.js'
import { memoryKeys, memoryStorage, useEmbeddedStack } from './harness.js'

// Sponsored calls of the embedded wallet (ERC-4337 UserOperations with an ERC-7677 paymaster's
// data) against a real kms and backend whose ERC-7677 paymaster service is on, this file's own
// anvil (chain id 31337) with the batch executor, the test token, EntryPoint v0.8 and both
// paymasters deployed as `npm start` does, and a real Alto bundler for it.

const TOKEN_ABI = parseAbi(['function mint(address to, uint256 amount)', 'function balanceOf(address) view returns (uint256)'])
let own: AnvilInstance
let paymasters: StackPaymasters
let chainA: Chain
let rpc: PublicClient
// Registered before the stack's: the backend's paymaster policy names this chain.
beforeAll(async () => {
  own = anvil({ port: await getFreePort(), chainId: 31337 })
  await own.start()
  await deployBatchExecutor(own.url)
  await deployTestToken(own.url)
  await deployEntryPoint(own.url)
  paymasters = await loadPaymasters(await mkdtemp(join(tmpdir(), 'latchkey-sponsorship-')))
  await deployPaymasters(own.url, paymasters)
  chainA = defineChain({
    id: 31337,
    name: 'Anvil A',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [own.url] } },
  })
  rpc = createPublicClient({ chain: chainA, transport: http() }) as PublicClient
}, 90_000)
afterAll(() => own?.stop())

const stack = useEmbeddedStack({
  paymaster: () => ({
    signerPrivateKey: paymasters.signer.privateKey,
    policy: {
      sponsorName: 'Embedded test',
      accounts: 'users',
      chains: [
        {
          chainId: 31337,
          rpcUrl: own.url,
          entryPoint: ENTRY_POINT_ADDRESS,
          sponsorPaymaster: paymasters.sponsorPaymaster,
          tokenPaymaster: paymasters.tokenPaymaster,
          tokens: [{ address: TEST_TOKEN_ADDRESS, tokenPerNative: '1000000000000000000000', guarantor: paymasters.guarantor.address }],
          targets: [{ address: TEST_TOKEN_ADDRESS }],
          perUserPerDayWei: '10000000000000000',
          globalPerDayWei: '1000000000000000000',
          maxGasPerOperation: 2_000_000,
        },
      ],
    },
  }),
})
const chainB = defineChain({
  id: 31338,
  name: 'Anvil B',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [inject('chainBRpc')] } },
})
let people = 0
let bundler: ReturnType<typeof alto>
/** A port nobody listens on: a paymaster or bundler that is down. */
let downUrl: string
/** A server that takes each request and never answers: a paymaster that hangs. */
let hanging: Server
let hangingUrl: string

beforeAll(async () => {
  bundler = alto({ port: await getFreePort(), rpcUrl: own.url, entryPoint: ENTRY_POINT_ADDRESS, name: 'bundler A' })
  await bundler.start()
  downUrl = `http://127.0.0.1:${await getFreePort()}/paymaster`
  hanging = createServer(() => undefined)
  const port = await getFreePort()
  await new Promise<void>((resolve) => hanging.listen(port, '127.0.0.1', resolve))
  hangingUrl = `http://127.0.0.1:${port}/paymaster`
}, 60_000)
afterAll(async () => {
  hanging?.closeAllConnections()
  await new Promise((resolve) => hanging?.close(resolve))
  await bundler?.stop()
})

/** A signed-in wallet with sponsorship on chain A (`bundlerUrls`: Alto unless replaced; `chain`: chain A unless replaced) and 1 ETH there (none with `fund: false`). */
async function signedIn(sponsorship: Partial<Sponsorship> | undefined, { fund = true, chain = chainA } = {}) {
  const wallet = createEmbeddedWallet({
    appName: 'Embedded test',
    backendUrl: stack.backendUrl,
    kmsUrl: stack.kms.url,
    organizationId: stack.organizationId,
    chains: [chain, chainB],
    storage: memoryStorage(),
    testOnlySessionKeys: memoryKeys(),
    now: stack.now,
    fetch: stack.browserFetch().fetchFn,
    ...(sponsorship ? { sponsorship: { paymasterUrl: downUrl, bundlerUrls: { 31337: bundler.url }, ...sponsorship } } : {}),
  })
  const sent = await wallet.startEmail(`sponsored${++people}.${stack.clock}@example.test`)
  await wallet.verifyEmail(sent)
  const address = wallet.current!.credential.address
  if (fund) await rpc.request({ method: 'anvil_setBalance' as never, params: [address, '0xDE0B6B3A7640000'] as never })
  return { wallet, address, provider: createEmbeddedProvider(wallet, [chain, chainB]), organizationId: wallet.current!.organizationId }
}

const recipients = () => [privateKeyToAccount(generatePrivateKey()).address, privateKeyToAccount(generatePrivateKey()).address] as const
const transfers = (to: readonly Hex[]) => to.map((address) => ({ to: address, value: parseEther('0.001') }))

/** What the chain and the kms hold for an account: nonces (its own and the EntryPoint's), balance, code, and the kms's activities. */
async function stateOf(address: Hex, organizationId: string) {
  const parent = new TurnkeyClient({ baseUrl: stack.kms.url }, new ApiKeyStamper(stack.parentKey))
  return {
    nonce: await rpc.getTransactionCount({ address }),
    entryPointNonce: await rpc.readContract({ address: ENTRY_POINT_ADDRESS, abi: entryPoint08Abi, functionName: 'getNonce', args: [address, 0n] }),
    balance: await rpc.getBalance({ address }),
    code: await rpc.getCode({ address }),
    activities: (await parent.getActivities({ organizationId })).activities.map((activity) => activity.id),
  }
}

/** Mines until the batch's status leaves 100 (anvil mines on demand here). */
async function mined(provider: ReturnType<typeof createEmbeddedProvider>, id: string) {
  for (;;) {
    const status = (await provider.request({ method: 'wallet_getCallsStatus', params: [id] })) as { status: number }
    if (status.status !== 100) return status as { status: number; atomic: boolean; receipts: { transactionHash: Hex; status: Hex }[] }
    await rpc.request({ method: 'evm_mine' as never })
  }
}

const mint = (to: Hex, amount: bigint) => ({ to: TEST_TOKEN_ADDRESS, data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'mint', args: [to, amount] }) })
const tokensOf = (address: Hex) => rpc.readContract({ address: TEST_TOKEN_ADDRESS, abi: TOKEN_ABI, functionName: 'balanceOf', args: [address] })

describe("sponsored by the backend's paymaster, through Alto", () => {
  test('default: a fresh user with 0 ETH sends a batch; it lands sponsored, their ETH stays 0, and the status answers the receipt', async () => {
    const { wallet, address, provider } = await signedIn({ paymasterUrl: `${stack.backendUrl}/paymaster` }, { fund: false })
    expect(await rpc.getBalance({ address })).toBe(0n)
    const to = recipients()

    const { id } = await wallet.sendCalls({ calls: [mint(to[0], 42n), mint(to[1], 43n)] })

    // A UserOperation's id: chain 31337, flag 02.
    expect(id.slice(0, 66)).toBe(`0x${'00'.repeat(29)}7a6902`)
    const status = await mined(provider, id)
    expect(status).toMatchObject({ status: 200, atomic: true, chainId: '0x7a69', receipts: [{ status: '0x1' }] })
    expect([await tokensOf(to[0]), await tokensOf(to[1])]).toEqual([42n, 43n])
    expect(await rpc.getBalance({ address })).toBe(0n)
    // Delegated to the executor by the same operation (its EIP-7702 authorization rode with the bundle).
    expect(await rpc.getCode({ address })).toBe(`0xef0100${BATCH_EXECUTOR_ADDRESS.slice(2).toLowerCase()}`)
    // The bundler's transaction to the EntryPoint carried it; the sponsor paymaster paid.
    const bundle = await rpc.getTransaction({ hash: status.receipts[0]!.transactionHash })
    expect([bundle.from, bundle.to]).toEqual([bundler.executor.toLowerCase(), ENTRY_POINT_ADDRESS.toLowerCase()])
    const answer = await fetch(bundler.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getUserOperationReceipt', params: [`0x${id.slice(66)}`] }),
    })
    const { result } = (await answer.json()) as { result: { paymaster: string; sender: string; success: boolean } }
    expect([result.paymaster.toLowerCase(), result.sender.toLowerCase(), result.success]).toEqual([
      paymasters.sponsorPaymaster.toLowerCase(),
      address.toLowerCase(),
      true,
    ])

    // Delegated now: the next sponsored call carries no authorization, and sendTransaction answers the bundle's hash.
    const [next] = recipients()
    const hash = await wallet.sendTransaction(mint(next, 7n))
    expect(await rpc.getTransaction({ hash })).toMatchObject({ from: bundler.executor.toLowerCase(), to: ENTRY_POINT_ADDRESS.toLowerCase() })
    expect(await tokensOf(next)).toBe(7n)
    expect(await rpc.getBalance({ address })).toBe(0n)
  })

  test('behavior: two batches sent at once from one account both land: the second takes an EntryPoint nonce key of its own', async () => {
    const { wallet, address, provider } = await signedIn({ paymasterUrl: `${stack.backendUrl}/paymaster` }, { fund: false })
    const to = recipients()
    // Delegated first, so the two below carry no authorization.
    await mined(provider, (await wallet.sendCalls({ calls: [mint(to[0], 1n)] })).id)

    const sent = await Promise.all([wallet.sendCalls({ calls: [mint(to[0], 10n)] }), wallet.sendCalls({ calls: [mint(to[1], 20n)] })])

    const statuses = await Promise.all(sent.map(({ id }) => mined(provider, id)))
    expect(statuses.map((status) => status.status)).toEqual([200, 200])
    expect([await tokensOf(to[0]), await tokensOf(to[1])]).toEqual([11n, 20n])
    // Key 0 moved by two (the delegating batch and one of the pair); the other used a key of its own.
    const keyZero = await rpc.readContract({ address: ENTRY_POINT_ADDRESS, abi: entryPoint08Abi, functionName: 'getNonce', args: [address, 0n] })
    expect(keyZero).toBe(2n)
  })

  test('error: a target the policy does not allow is SponsorshipUnavailableError "target"; nothing is signed or sent', async () => {
    const { wallet, address, organizationId } = await signedIn({ paymasterUrl: `${stack.backendUrl}/paymaster` }, { fund: false })
    const before = await stateOf(address, organizationId)

    const [someone, stranger] = recipients()
    const error = await wallet.sendCalls({ calls: [mint(someone, 1n), { to: stranger, value: 0n }] }).catch((caught: unknown) => caught)

    expect(error).toBeInstanceOf(SponsorshipUnavailableError)
    expect(error).toMatchObject({ code: 'sponsorship_unavailable', reason: 'target' })
    expect((error as SponsorshipUnavailableError).details).toBe(`pm_getPaymasterStubData: The call to ${stranger} is not sponsored (-32003)`)
    expect(await stateOf(address, organizationId)).toEqual(before)
  })
})

type RpcBody = { id?: unknown; method: string; params: [Record<string, string>, ...unknown[]] }

/**
 * A JSON-RPC proxy on a port of its own in front of `target`: `hook` sees each request first and
 * may hold it (its promise) or change the answer it gets back; closed after the test.
 */
async function proxy(target: () => string, hook: (body: RpcBody, answer: () => Promise<string>) => Promise<string>) {
  const server = createServer(async (request, response) => {
    let body = ''
    for await (const chunk of request) body += chunk
    const answer = async () => (await fetch(target(), { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text()
    const text = await hook(JSON.parse(body) as RpcBody, answer)
    response.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': '*' }).end(text)
  })
  const port = await getFreePort()
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  proxies.push(server)
  return `http://127.0.0.1:${port}`
}
const proxies: Server[] = []
afterEach(async () => {
  for (const server of proxies.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

describe("a page's next operation: estimated with the paymaster's last stub while the fresh one is asked for", () => {
  test('behavior: the second batch is estimated before the paymaster answers its stub; both land', { timeout: 20_000 }, async () => {
    const asked: string[] = []
    let estimated!: () => void
    const secondEstimate = new Promise<void>((resolve) => (estimated = resolve))
    let estimates = 0
    const bundlerUrl = await proxy(
      () => bundler.url,
      async (body, answer) => {
        if (body.method === 'eth_estimateUserOperationGas' && ++estimates === 2) estimated()
        return answer()
      },
    )
    let stubs = 0
    const paymasterUrl = await proxy(
      () => `${stack.backendUrl}/paymaster`,
      async (body, answer) => {
        asked.push(body.method)
        // The second stub is answered only once the bundler has the second estimate: on a wallet
        // that waits for the stub before it estimates, this never happens (it fails as unavailable).
        if (body.method === 'pm_getPaymasterStubData' && ++stubs === 2) await secondEstimate
        return answer()
      },
    )
    const { wallet, provider } = await signedIn({ paymasterUrl, bundlerUrls: { 31337: bundlerUrl } }, { fund: false })
    const to = recipients()
    expect((await mined(provider, (await wallet.sendCalls({ calls: [mint(to[0], 3n)] })).id)).status).toBe(200)

    const { id } = await wallet.sendCalls({ calls: [mint(to[1], 4n)] })

    expect((await mined(provider, id)).status).toBe(200)
    expect([await tokensOf(to[0]), await tokensOf(to[1])]).toEqual([3n, 4n])
    expect(asked).toEqual(['pm_getPaymasterStubData', 'pm_getPaymasterData', 'pm_getPaymasterStubData', 'pm_getPaymasterData'])
    expect(estimates).toBe(2)
  })

  test('behavior: a fresh stub unlike the last one is estimated again before the paymaster signs; the operation lands with its limits', async () => {
    const estimatedWith: string[] = []
    const bundlerUrl = await proxy(
      () => bundler.url,
      async (body, answer) => {
        if (body.method === 'eth_estimateUserOperationGas') estimatedWith.push(body.params[0].paymasterVerificationGasLimit!)
        return answer()
      },
    )
    let stubs = 0
    let signedWith: string | undefined
    const paymasterUrl = await proxy(
      () => `${stack.backendUrl}/paymaster`,
      async (body, answer) => {
        if (body.method === 'pm_getPaymasterData') signedWith = body.params[0].paymasterVerificationGasLimit
        const text = await answer()
        if (body.method !== 'pm_getPaymasterStubData' || ++stubs !== 2) return text
        // The second stub asks for 4,096 more gas for the paymaster's validation.
        const answered = JSON.parse(text) as { result: { paymasterVerificationGasLimit: Hex } }
        answered.result.paymasterVerificationGasLimit = numberToHex(hexToBigInt(answered.result.paymasterVerificationGasLimit) + 4096n)
        return JSON.stringify(answered)
      },
    )
    const { wallet, provider } = await signedIn({ paymasterUrl, bundlerUrls: { 31337: bundlerUrl } }, { fund: false })
    const to = recipients()
    expect((await mined(provider, (await wallet.sendCalls({ calls: [mint(to[0], 5n)] })).id)).status).toBe(200)

    const { id } = await wallet.sendCalls({ calls: [mint(to[1], 6n)] })

    expect((await mined(provider, id)).status).toBe(200)
    expect(await tokensOf(to[1])).toBe(6n)
    // The first batch's, the second's with the last stub (80,000), and again with its own.
    expect(estimatedWith).toEqual(['0x13880', '0x13880', '0x14880'])
    expect(signedWith).toBe('0x14880')
  })

  test('behavior: a paymaster whose stubs differ each time is not estimated ahead after the first miss', async () => {
    const estimatedWith: string[] = []
    const bundlerUrl = await proxy(
      () => bundler.url,
      async (body, answer) => {
        if (body.method === 'eth_estimateUserOperationGas') estimatedWith.push(body.params[0].paymasterVerificationGasLimit!)
        return answer()
      },
    )
    let stubs = 0
    const paymasterUrl = await proxy(
      () => `${stack.backendUrl}/paymaster`,
      async (body, answer) => {
        const text = await answer()
        if (body.method !== 'pm_getPaymasterStubData') return text
        // Each stub asks for 4,096 gas more than the one before.
        const answered = JSON.parse(text) as { result: { paymasterVerificationGasLimit: Hex } }
        answered.result.paymasterVerificationGasLimit = numberToHex(hexToBigInt(answered.result.paymasterVerificationGasLimit) + 4096n * BigInt(stubs++))
        return JSON.stringify(answered)
      },
    )
    const { wallet, provider } = await signedIn({ paymasterUrl, bundlerUrls: { 31337: bundlerUrl } }, { fund: false })
    const to = recipients()
    for (const [index, amount] of [1n, 2n].entries())
      expect((await mined(provider, (await wallet.sendCalls({ calls: [mint(to[index]!, amount)] })).id)).status).toBe(200)

    const { id } = await wallet.sendCalls({ calls: [mint(to[0], 3n)] })

    expect((await mined(provider, id)).status).toBe(200)
    expect([await tokensOf(to[0]), await tokensOf(to[1])]).toEqual([4n, 2n])
    // The first batch's; the second's with the first stub, then its own; the third's with its own only.
    expect(estimatedWith).toEqual(['0x13880', '0x13880', '0x14880', '0x15880'])
  })
})

describe("the bundler's EntryPoints", () => {
  test('behavior: a bundler that serves EntryPoint v0.8 is asked once per page; one that did not say so is refused "chain" and asked again', async () => {
    const asked: string[] = []
    const bundlerUrl = await proxy(
      () => bundler.url,
      async (body, answer) => {
        asked.push(body.method)
        // The first answer names no EntryPoint: refused, and not remembered.
        if (body.method === 'eth_supportedEntryPoints' && asked.filter((method) => method === body.method).length === 1)
          return JSON.stringify({ jsonrpc: '2.0', id: body.id, result: [] })
        return answer()
      },
    )
    const { wallet, provider, address, organizationId } = await signedIn(
      { paymasterUrl: `${stack.backendUrl}/paymaster`, bundlerUrls: { 31337: bundlerUrl } },
      { fund: false },
    )
    const to = recipients()
    const before = await stateOf(address, organizationId)
    const error = await wallet.sendCalls({ calls: [mint(to[0], 1n)] }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(SponsorshipUnavailableError)
    expect(error).toMatchObject({ reason: 'chain', details: 'The bundler for chain 31337 does not serve EntryPoint v0.8.' })
    expect(await stateOf(address, organizationId)).toEqual(before)

    expect((await mined(provider, (await wallet.sendCalls({ calls: [mint(to[0], 2n)] })).id)).status).toBe(200)
    expect((await mined(provider, (await wallet.sendCalls({ calls: [mint(to[1], 3n)] })).id)).status).toBe(200)

    expect([await tokensOf(to[0]), await tokensOf(to[1])]).toEqual([2n, 3n])
    expect(asked.filter((method) => method === 'eth_supportedEntryPoints')).toEqual(['eth_supportedEntryPoints', 'eth_supportedEntryPoints'])
    expect(asked.filter((method) => method === 'eth_sendUserOperation')).toEqual(['eth_sendUserOperation', 'eth_sendUserOperation'])
  })
})

describe('the fees the operation offers', () => {
  test('behavior: the latest block and the priority fee are read at once; maxFeePerGas is the base fee × 1.2 plus the priority fee', {
    timeout: 20_000,
  }, async () => {
    const asked: string[] = []
    let priorityAsked!: () => void
    const priority = new Promise<void>((resolve) => (priorityAsked = resolve))
    const chainUrl = await proxy(
      () => own.url,
      async (body, answer) => {
        asked.push(body.method)
        if (body.method === 'eth_maxPriorityFeePerGas') priorityAsked()
        // The block is answered only once the priority fee is asked for: a wallet that waits for
        // the block first never gets it (viem's request times out).
        if (body.method === 'eth_getBlockByNumber') await priority
        return answer()
      },
    )
    const proxied = defineChain({ ...chainA, rpcUrls: { default: { http: [chainUrl] } } })
    let offered: { maxFeePerGas: string; maxPriorityFeePerGas: string } | undefined
    const bundlerUrl = await proxy(
      () => bundler.url,
      async (body, answer) => {
        if (body.method === 'eth_sendUserOperation') offered = body.params[0] as typeof offered
        return answer()
      },
    )
    const { wallet, provider } = await signedIn(
      { paymasterUrl: `${stack.backendUrl}/paymaster`, bundlerUrls: { 31337: bundlerUrl } },
      { fund: false, chain: proxied },
    )
    const [to] = recipients()
    const block = await rpc.getBlock()
    const tip = await rpc.estimateMaxPriorityFeePerGas()

    const { id } = await wallet.sendCalls({ calls: [mint(to, 8n)] })

    expect((await mined(provider, id)).status).toBe(200)
    expect(asked.filter((method) => method === 'eth_getBlockByNumber' || method === 'eth_maxPriorityFeePerGas')).toHaveLength(2)
    // anvil mines on demand: the block it answered is still the latest.
    expect(offered).toMatchObject({
      maxFeePerGas: numberToHex((block.baseFeePerGas! * 12n) / 10n + tip),
      maxPriorityFeePerGas: numberToHex(tip),
    })
  })
})

describe('a paymaster or bundler that cannot answer', () => {
  test('error: a paymaster nobody answers is SponsorshipUnavailableError "unavailable"; nothing is signed or sent', async () => {
    const { wallet, address, organizationId } = await signedIn({})
    const before = await stateOf(address, organizationId)

    const error = await wallet.sendCalls({ calls: transfers(recipients()) }).catch((caught: unknown) => caught)

    expect(error).toBeInstanceOf(SponsorshipUnavailableError)
    expect(error).toMatchObject({
      code: 'sponsorship_unavailable',
      reason: 'unavailable',
      shortMessage: 'The network fee cannot be sponsored.',
      details: 'The paymaster could not be reached for pm_getPaymasterStubData: fetch failed',
    })
    expect(await stateOf(address, organizationId)).toEqual(before)
  })

  test('error: a paymaster that hangs fails as "unavailable" after 4 s, never a hang; nothing is signed or sent', { timeout: 15_000 }, async () => {
    const { wallet, address, organizationId } = await signedIn({ paymasterUrl: hangingUrl })
    const before = await stateOf(address, organizationId)

    const error = await wallet.sendTransaction({ to: recipients()[0], value: 1n }).catch((caught: unknown) => caught)

    expect(error).toBeInstanceOf(SponsorshipUnavailableError)
    expect(error).toMatchObject({ reason: 'unavailable', details: 'The paymaster did not answer pm_getPaymasterStubData within 4 s.' })
    expect(await stateOf(address, organizationId)).toEqual(before)
  })

  test('error: a bundler that is down is "unavailable"; nothing is signed or sent', { timeout: 15_000 }, async () => {
    // The paymaster hangs, so the only answer within 4 s is the bundler's refused connection.
    const { wallet, address, organizationId } = await signedIn({ paymasterUrl: hangingUrl, bundlerUrls: { 31337: downUrl } })
    const before = await stateOf(address, organizationId)

    const error = await wallet.sendCalls({ calls: transfers(recipients()) }).catch((caught: unknown) => caught)

    expect(error).toBeInstanceOf(SponsorshipUnavailableError)
    expect(error).toMatchObject({ reason: 'unavailable', details: 'The bundler could not be reached for eth_supportedEntryPoints: fetch failed' })
    expect(await stateOf(address, organizationId)).toEqual(before)
  })

  test('error: a bundler that takes the operation but never answers is "user_operation_unknown" with its hash, not "nothing sent"; the operation lands', {
    timeout: 20_000,
  }, async () => {
    // Forwards every request to Alto and answers, except eth_sendUserOperation: forwarded, never answered.
    const mute = createServer(async (request, response) => {
      let body = ''
      for await (const chunk of request) body += chunk
      const forwarded = fetch(bundler.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      if ((JSON.parse(body) as { method: string }).method === 'eth_sendUserOperation') return
      response.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': '*' }).end(await (await forwarded).text())
    })
    const port = await getFreePort()
    await new Promise<void>((resolve) => mute.listen(port, '127.0.0.1', resolve))
    try {
      const { wallet, provider } = await signedIn(
        { paymasterUrl: `${stack.backendUrl}/paymaster`, bundlerUrls: { 31337: `http://127.0.0.1:${port}` } },
        { fund: false },
      )
      const [to] = recipients()

      const error = await wallet.sendCalls({ calls: [mint(to, 5n)] }).catch((caught: unknown) => caught)

      expect(error).not.toBeInstanceOf(SponsorshipUnavailableError)
      expect(error).toMatchObject({
        name: 'EmbeddedError',
        code: 'user_operation_unknown',
        shortMessage: 'The bundler did not answer; the operation may still be included.',
      })
      const hash = /UserOperation (0x[0-9a-f]{64}) /.exec((error as Error).message)![1] as Hex
      // It was taken: the status of its id (chain 31337, flag 02, the hash) reaches confirmed.
      const status = await mined(provider, `0x${'00'.repeat(29)}7a6902${hash.slice(2)}`)
      expect(status.status).toBe(200)
      expect(await tokensOf(to)).toBe(5n)
    } finally {
      mute.closeAllConnections()
      await new Promise((resolve) => mute.close(resolve))
    }
  })

  test('error: a chain without a bundler is "chain"; nothing is signed or sent', async () => {
    const { wallet, address, organizationId } = await signedIn({ bundlerUrls: {} })
    const before = await stateOf(address, organizationId)

    const error = await wallet.sendCalls({ calls: transfers(recipients()) }).catch((caught: unknown) => caught)

    expect(error).toBeInstanceOf(SponsorshipUnavailableError)
    expect(error).toMatchObject({ reason: 'chain', details: 'No bundler is configured for chain 31337.' })
    expect(await stateOf(address, organizationId)).toEqual(before)
  })
})

describe("fallback: 'user-pays'", () => {
  test('behavior: a refused sponsorship sends the ordinary 7702 batch the account pays for', async () => {
    const { wallet, address, provider } = await signedIn({ fallback: 'user-pays' })
    const to = recipients()

    const { id } = await wallet.sendCalls({ calls: transfers(to) })

    // The ordinary batch id (flag 01), not a UserOperation's (02).
    expect(id.slice(64, 66)).toBe('01')
    const status = await mined(provider, id)
    expect(status).toMatchObject({ status: 200, atomic: true })
    const transaction = await rpc.getTransaction({ hash: status.receipts[0]!.transactionHash })
    expect(transaction).toMatchObject({ type: 'eip7702', from: address.toLowerCase(), to: address.toLowerCase() })
    expect(await Promise.all(to.map((recipient) => rpc.getBalance({ address: recipient })))).toEqual([parseEther('0.001'), parseEther('0.001')])
    expect(await rpc.getCode({ address })).toBe(`0xef0100${BATCH_EXECUTOR_ADDRESS.slice(2).toLowerCase()}`)
  })

  test('behavior: sendTransaction falls back to the ordinary transaction', async () => {
    const { wallet, address } = await signedIn({ fallback: 'user-pays' })
    const [to] = recipients()

    const hash = await wallet.sendTransaction({ to, value: 7n })

    const receipt = await rpc.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    expect(receipt).toMatchObject({ status: 'success', from: address.toLowerCase(), to: to.toLowerCase() })
    expect(await rpc.getBalance({ address: to })).toBe(7n)
  })

  test('behavior: an optional paymasterService capability falls back; a required one does not', async () => {
    const { address, provider, organizationId } = await signedIn(undefined)
    const batch = (to: readonly Hex[], optional: boolean) => ({
      version: '2.0.0',
      from: address,
      chainId: '0x7a69',
      calls: to.map((recipient) => ({ to: recipient, value: '0x38d7ea4c68000' })),
      capabilities: { paymasterService: { url: downUrl, ...(optional ? { optional: true } : {}) } },
    })
    const before = await stateOf(address, organizationId)

    // No sponsorship option and chain A names no bundler: the capability cannot be honoured.
    await expect(provider.request({ method: 'wallet_sendCalls', params: [batch(recipients(), false)] })).rejects.toMatchObject({
      name: 'SponsorshipUnavailableError',
      reason: 'chain',
    })
    expect(await stateOf(address, organizationId)).toEqual(before)

    const to = recipients()
    const { id } = (await provider.request({ method: 'wallet_sendCalls', params: [batch(to, true)] })) as { id: string }
    expect(await mined(provider, id)).toMatchObject({ status: 200, atomic: true })
    expect(await rpc.getBalance({ address: to[0] })).toBe(parseEther('0.001'))
  })

  test('error: a paymasterService capability without a url is invalid params; nothing is sent', async () => {
    const { address, provider } = await signedIn({})
    await expect(
      provider.request({
        method: 'wallet_sendCalls',
        params: [{ version: '2.0.0', from: address, chainId: '0x7a69', calls: [], capabilities: { paymasterService: { context: {} } } }],
      }),
    ).rejects.toMatchObject({ code: -32602, message: 'paymasterService needs { url: string, context?: object }' })
  })
})

describe('status', () => {
  test('error: a UserOperation id the bundler does not know is 5730; one for a chain without a bundler too', async () => {
    const { provider } = await signedIn({})
    const unknown = `0x${'00'.repeat(29)}7a6902${'ab'.repeat(32)}`
    await expect(provider.request({ method: 'wallet_getCallsStatus', params: [unknown] })).rejects.toMatchObject({ code: 5730, message: 'Unknown bundle id' })
    const onChainB = `0x${'00'.repeat(29)}7a6a02${'ab'.repeat(32)}`
    await expect(provider.request({ method: 'wallet_getCallsStatus', params: [onChainB] })).rejects.toMatchObject({ code: 5730 })
  })
})

describe('capabilities', () => {
  test('default: paymasterService is supported on the chains with a bundler', async () => {
    const { address, provider } = await signedIn({})
    expect(await provider.request({ method: 'wallet_getCapabilities', params: [address] })).toEqual({
      '0x7a69': { atomic: { status: 'ready' }, paymasterService: { supported: true } },
      '0x7a6a': { atomic: { status: 'ready' } },
    })
  })

  test("behavior: a chain's own rpcUrls.bundler counts; without sponsorship or one, no paymasterService", async () => {
    const withBundler = defineChain({ ...chainA, rpcUrls: { ...chainA.rpcUrls, bundler: { http: [bundler.url] } } })
    const { wallet } = await signedIn(undefined)
    expect(await wallet.getCapabilities()).toEqual({ '0x7a69': { atomic: { status: 'ready' } }, '0x7a6a': { atomic: { status: 'ready' } } })
    const other = createEmbeddedWallet({
      appName: 'Embedded test',
      backendUrl: stack.backendUrl,
      kmsUrl: stack.kms.url,
      organizationId: stack.organizationId,
      chains: [withBundler],
      storage: memoryStorage(),
      testOnlySessionKeys: memoryKeys(),
      now: stack.now,
      fetch: stack.browserFetch().fetchFn,
    })
    await other.verifyEmail(await other.startEmail(`sponsored${++people}.${stack.clock}@example.test`))
    expect(await other.getCapabilities()).toEqual({ '0x7a69': { atomic: { status: 'ready' }, paymasterService: { supported: true } } })
  })
})

describe('through core, as an injected wallet', () => {
  test("behavior: core's sendCalls passes the app's paymasterService to a wallet that reports it; its refusal arrives typed", async () => {
    // The embedded wallet without a sponsorship option of its own, on a chain that names a bundler:
    // only the capability core passes on can make it try the paymaster.
    const withBundler = defineChain({ ...chainA, rpcUrls: { ...chainA.rpcUrls, bundler: { http: [bundler.url] } } })
    const wallet = createEmbeddedWallet({
      appName: 'Embedded test',
      backendUrl: stack.backendUrl,
      kmsUrl: stack.kms.url,
      organizationId: stack.organizationId,
      chains: [withBundler],
      storage: memoryStorage(),
      testOnlySessionKeys: memoryKeys(),
      now: stack.now,
      fetch: stack.browserFetch().fetchFn,
    })
    await wallet.verifyEmail(await wallet.startEmail(`sponsored${++people}.${stack.clock}@example.test`))
    const address = wallet.current!.credential.address
    const provider = createEmbeddedProvider(wallet, [withBundler]) as unknown as EIP1193Provider
    const client = createClient({ chains: [withBundler], connectors: [injected({ id: 'latchkey', name: 'Latchkey', provider })] })
    await connect(client, { connector: 'latchkey' })
    const nonce = await rpc.getTransactionCount({ address })

    const error = await sendCalls(client, { calls: [{ to: recipients()[0], value: 1n }], sponsorship: { paymasterUrl: downUrl } }).catch(
      (caught: unknown) => caught,
    )

    expect(error).toBeInstanceOf(CoreSponsorshipUnavailableError)
    expect(error).toMatchObject({
      code: 'sponsorship_unavailable',
      reason: 'unavailable',
      details: 'The paymaster could not be reached for pm_getPaymasterStubData: fetch failed',
    })
    expect(await rpc.getTransactionCount({ address })).toBe(nonce)
  })
})
