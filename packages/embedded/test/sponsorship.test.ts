import { createServer, type Server } from 'node:http'
import {
  SponsorshipUnavailableError as CoreSponsorshipUnavailableError,
  connect,
  createClient,
  type EIP1193Provider,
  injected,
  sendCalls,
} from '@latchkey/core'
import { alto, deployEntryPoint, ENTRY_POINT_ADDRESS, getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { createPublicClient, defineChain, type Hex, http, parseEther } from 'viem'
import { entryPoint08Abi } from 'viem/account-abstraction'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { BATCH_EXECUTOR_ADDRESS, createEmbeddedProvider, createEmbeddedWallet, type Sponsorship, SponsorshipUnavailableError } from '../src/index.js'
import { memoryKeys, memoryStorage, useEmbeddedStack } from './harness.js'

// Sponsored calls of the embedded wallet (ERC-4337 UserOperations with an ERC-7677 paymaster's
// data) against a real kms and backend, the unit run's chain A with EntryPoint v0.8 deployed here,
// and a real Alto bundler for it. The paymaster service is another lane's: these tests cover what
// does not need one (a paymaster that is down or hangs, a bundler that is down, the fallback, the
// capabilities); the sponsored end-to-end test runs once it exists.

const stack = useEmbeddedStack()
const chainA = stack.chain
const chainB = defineChain({
  id: 31338,
  name: 'Anvil B',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [inject('chainBRpc')] } },
})
const rpc = createPublicClient({ chain: chainA, transport: http() })
let people = 0
let bundler: ReturnType<typeof alto>
/** A port nobody listens on: a paymaster or bundler that is down. */
let downUrl: string
/** A server that takes each request and never answers: a paymaster that hangs. */
let hanging: Server
let hangingUrl: string

beforeAll(async () => {
  await deployEntryPoint(inject('chainARpc'))
  bundler = alto({ port: await getFreePort(), rpcUrl: inject('chainARpc'), entryPoint: ENTRY_POINT_ADDRESS, name: 'bundler A' })
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

/** A signed-in wallet with sponsorship on chain A (`bundlerUrls`: Alto unless replaced) and 1 ETH there. */
async function signedIn(sponsorship: Partial<Sponsorship> | undefined) {
  const wallet = createEmbeddedWallet({
    appName: 'Embedded test',
    backendUrl: stack.backendUrl,
    kmsUrl: stack.kms.url,
    organizationId: stack.organizationId,
    chains: [chainA, chainB],
    storage: memoryStorage(),
    testOnlySessionKeys: memoryKeys(),
    now: stack.now,
    fetch: stack.browserFetch().fetchFn,
    ...(sponsorship ? { sponsorship: { paymasterUrl: downUrl, bundlerUrls: { 31337: bundler.url }, ...sponsorship } } : {}),
  })
  const sent = await wallet.startEmail(`sponsored${++people}.${stack.clock}@example.test`)
  await wallet.verifyEmail(sent)
  const address = wallet.current!.credential.address
  await rpc.request({ method: 'anvil_setBalance' as never, params: [address, '0xDE0B6B3A7640000'] as never })
  return { wallet, address, provider: createEmbeddedProvider(wallet, [chainA, chainB]), organizationId: wallet.current!.organizationId }
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
