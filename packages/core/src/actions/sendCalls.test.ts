import { createPublicClient, http, parseEther, toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from 'viem/accounts'
import { beforeAll, describe, expect, test, vi } from 'vitest'
import { testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { injected } from '../connectors/injected.js'
import { createClient } from '../createClient.js'
import { createDevWallet, type DevWalletPrompt } from '../dev/devWallet.js'
import { AtomicityNotSupportedError, CallsNotSupportedError, InvalidCallsResultError, UnknownCallsIdError } from '../errors/calls.js'
import { SponsorshipUnavailableError } from '../errors/embedded.js'
import { UserRejectedRequestError } from '../errors/rpc.js'
import type { EIP1193Provider } from '../types.js'
import { connect } from './connect.js'
import { getCallsStatus } from './getCallsStatus.js'
import { getCapabilities } from './getCapabilities.js'
import { sendCalls } from './sendCalls.js'
import { waitForCallsStatus } from './waitForCallsStatus.js'

// EIP-5792 through the client's actions, with the dev wallet (an EOA: one transaction per call)
// on anvil. A fresh key, funded here, keeps this file's nonces apart from every other file's.

const key = generatePrivateKey()
const from = privateKeyToAddress(key)
const chains = testChains()
const chainA = createPublicClient({ transport: http(chains[0].rpcUrls.default.http[0]) })

beforeAll(async () => {
  await chainA.request({ method: 'anvil_setBalance' as never, params: [from, toHex(10n ** 20n)] as never })
})

/** A connected client over the dev wallet; `answer` replaces the wallet's answer to a method, as a wallet of another make would give it. */
async function setup(
  options: {
    decide?: (prompt: DevWalletPrompt) => Promise<boolean>
    answer?: Record<string, () => unknown>
    callsStatusPollingIntervalMs?: number | undefined
  } = {},
) {
  const wallet = createDevWallet({ privateKey: key, chains, approve: options.decide })
  const provider = {
    request: async (args: { method: string; params?: unknown }) => {
      const replaced = options.answer?.[args.method]
      return replaced ? replaced() : wallet.request(args as never)
    },
    on: wallet.on,
    removeListener: wallet.removeListener,
  } as unknown as EIP1193Provider
  const logger = createRecordingLogger()
  const dev = injected({ id: 'dev', name: 'Dev Wallet', provider })
  const connector = Object.assign(
    (config: Parameters<typeof dev>[0]) => ({ ...dev(config), callsStatusPollingIntervalMs: options.callsStatusPollingIntervalMs }),
    {
      id: dev.id,
    },
  )
  const client = createClient({ chains, logger, connectors: [connector] })
  await connect(client, { connector: 'dev' })
  return { client, logger }
}

const recipients = () => [privateKeyToAccount(generatePrivateKey()).address, privateKeyToAccount(generatePrivateKey()).address] as const

describe('sendCalls', () => {
  test('default: two transfers in one request; the status says confirmed with both receipts and the balances moved', async () => {
    const { client } = await setup()
    const [alice, bob] = recipients()
    const { id } = await sendCalls(client, {
      calls: [
        { to: alice, value: parseEther('0.001') },
        { to: bob, value: parseEther('0.002') },
      ],
    })
    expect(id).toMatch(/^0x[0-9a-f]{64}$/)
    const done = await waitForCallsStatus(client, { id })
    expect(done).toMatchObject({ id, status: 'success', statusCode: 200, atomic: false, chainId: 31337, version: '2.0.0' })
    expect(done.receipts?.map((receipt) => receipt.status)).toEqual(['success', 'success'])
    expect(await chainA.getBalance({ address: alice })).toBe(parseEther('0.001'))
    expect(await chainA.getBalance({ address: bob })).toBe(parseEther('0.002'))
    const transactions = await Promise.all(done.receipts!.map((receipt) => chainA.getTransaction({ hash: receipt.transactionHash })))
    expect(transactions.map((tx) => [tx.from, tx.to])).toEqual([
      [from.toLowerCase(), alice.toLowerCase()],
      [from.toLowerCase(), bob.toLowerCase()],
    ])
    expect(await getCallsStatus(client, { id })).toEqual(done)
  })

  test('error: the user rejects the batch: typed error, nothing sent', async () => {
    const { client, logger } = await setup({ decide: async (prompt) => prompt.method !== 'wallet_sendCalls' })
    const nonce = await chainA.getTransactionCount({ address: from })
    const [alice] = recipients()
    await expect(sendCalls(client, { calls: [{ to: alice, value: 1n }] })).rejects.toThrow(UserRejectedRequestError)
    expect(await chainA.getTransactionCount({ address: from })).toBe(nonce)
    expect(logger.warnings).toEqual(['[latchkey] sendCalls: User rejected the request.'])
  })

  test('error: atomic execution required of an EOA: refused with 5760, nothing sent', async () => {
    const { client } = await setup()
    const nonce = await chainA.getTransactionCount({ address: from })
    const [alice, bob] = recipients()
    const error = await sendCalls(client, {
      calls: [
        { to: alice, value: 1n },
        { to: bob, value: 1n },
      ],
      forceAtomic: true,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(AtomicityNotSupportedError)
    expect(error).toMatchObject({ code: 'atomicity_not_supported', shortMessage: 'The wallet cannot run these calls atomically.' })
    expect(await chainA.getTransactionCount({ address: from })).toBe(nonce)
  })

  test('error: a wallet without EIP-5792 gives CallsNotSupportedError for each method', async () => {
    const unsupported = () => {
      throw Object.assign(new Error('The method does not exist / is not available.'), { code: 4200 })
    }
    const { client } = await setup({ answer: { wallet_sendCalls: unsupported, wallet_getCallsStatus: unsupported, wallet_getCapabilities: unsupported } })
    const [alice] = recipients()
    const sent = await sendCalls(client, { calls: [{ to: alice, value: 1n }] }).catch((e: unknown) => e)
    expect(sent).toBeInstanceOf(CallsNotSupportedError)
    expect(sent).toMatchObject({
      code: 'calls_not_supported',
      method: 'wallet_sendCalls',
      shortMessage: 'The wallet does not support call batches (EIP-5792).',
      details: 'wallet_sendCalls is not available.',
    })
    await expect(getCallsStatus(client, { id: '0x01' })).rejects.toMatchObject({ code: 'calls_not_supported', method: 'wallet_getCallsStatus' })
    await expect(getCapabilities(client)).rejects.toMatchObject({ code: 'calls_not_supported', method: 'wallet_getCapabilities' })
  })

  test('error: a malformed wallet_sendCalls result is a typed error, not a crash', async () => {
    for (const [answer, problem] of [
      [{ batch: 1 }, 'expected { id: string }'],
      [null, 'expected { id: string }'],
      [42, 'expected { id: string }'],
      [{ id: '' }, 'expected { id: string }'],
      [{ id: '0x01', capabilities: 'all' }, 'capabilities is not an object'],
    ] as const) {
      const { client } = await setup({ answer: { wallet_sendCalls: () => answer } })
      const error = await sendCalls(client, { calls: [{ to: from, value: 1n }] }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(InvalidCallsResultError)
      expect(error).toMatchObject({
        code: 'invalid_calls_result',
        shortMessage: 'The wallet answered with a malformed result.',
        details: `wallet_sendCalls: ${problem}`,
      })
    }
  })

  test('error: a malformed status is a typed error; an unknown id is UnknownCallsIdError', async () => {
    const receipt = { transactionHash: '0x01', blockNumber: '0x1', gasUsed: '0x1', status: '0x1', logs: [], blockHash: '0x02' }
    for (const [answer, problem] of [
      ['CONFIRMED', 'expected an object'],
      [{ status: 'CONFIRMED' }, 'status "CONFIRMED" is not a status code'],
      [{ status: 200, receipts: 'none' }, 'receipts is not a list'],
      [{ status: 200, receipts: [{ ...receipt, blockNumber: 7 }] }, 'a receipt lacks transactionHash, blockNumber or gasUsed'],
      [{ status: 200, chainId: 31337, receipts: [receipt] }, 'chainId is not hex'],
    ] as const) {
      const { client } = await setup({ answer: { wallet_getCallsStatus: () => answer } })
      await expect(getCallsStatus(client, { id: '0x01' })).rejects.toMatchObject({ code: 'invalid_calls_result', details: `wallet_getCallsStatus: ${problem}` })
      await expect(waitForCallsStatus(client, { id: '0x01' })).rejects.toMatchObject({ code: 'invalid_calls_result' })
    }
    const { client } = await setup()
    await expect(getCallsStatus(client, { id: '0xfeed' })).rejects.toThrow(UnknownCallsIdError)
  })
})

describe('sponsorship', () => {
  /** The dev wallet, with the methods it was asked in order and the capabilities of each wallet_sendCalls. */
  async function recorded(options: { decide?: (prompt: DevWalletPrompt) => Promise<boolean> } = {}) {
    const wallet = createDevWallet({ privateKey: key, chains, approve: options.decide })
    const asked: { method: string; capabilities?: unknown }[] = []
    const provider = {
      request: async (args: { method: string; params?: unknown }) => {
        const first = (args.params as Record<string, unknown>[] | undefined)?.[0]
        asked.push(args.method === 'wallet_sendCalls' ? { method: args.method, capabilities: first?.['capabilities'] } : { method: args.method })
        return wallet.request(args as never)
      },
      on: wallet.on,
      removeListener: wallet.removeListener,
    } as unknown as EIP1193Provider
    const client = createClient({ chains, logger: createRecordingLogger(), connectors: [injected({ id: 'dev', name: 'Dev Wallet', provider })] })
    await connect(client, { connector: 'dev' })
    asked.length = 0
    return { client, asked }
  }
  const sponsorship = { paymasterUrl: 'https://paymaster.example/rpc', context: { policy: 'demo' } }

  test('error: sponsorship asked of a wallet without paymasterService is SponsorshipUnavailableError "unavailable"; nothing is sent', async () => {
    const { client, asked } = await recorded()
    const nonce = await chainA.getTransactionCount({ address: from })
    const [alice] = recipients()

    const error = await sendCalls(client, { calls: [{ to: alice, value: 1n }], sponsorship }).catch((e: unknown) => e)

    expect(error).toBeInstanceOf(SponsorshipUnavailableError)
    expect(error).toMatchObject({
      code: 'sponsorship_unavailable',
      reason: 'unavailable',
      shortMessage: 'The network fee cannot be sponsored.',
      details: 'The wallet does not offer sponsored calls (paymasterService) on chain 31337.',
    })
    expect(asked).toEqual([{ method: 'wallet_getCapabilities' }])
    expect(await chainA.getTransactionCount({ address: from })).toBe(nonce)
    expect(await chainA.getBalance({ address: alice })).toBe(0n)
  })

  test("behavior: with fallback 'user-pays' the calls go without the capability, paid by the account", async () => {
    const { client, asked } = await recorded()
    const [alice] = recipients()

    const { id } = await sendCalls(client, { calls: [{ to: alice, value: 5n }], sponsorship: { ...sponsorship, fallback: 'user-pays' } })

    expect(await waitForCallsStatus(client, { id })).toMatchObject({ status: 'success' })
    expect(asked.slice(0, 2)).toEqual([{ method: 'wallet_getCapabilities' }, { method: 'wallet_sendCalls', capabilities: {} }])
    expect(await chainA.getBalance({ address: alice })).toBe(5n)
  })

  test('error: a paymasterService capability given directly is checked the same way', async () => {
    const { client, asked } = await recorded()
    const error = await sendCalls(client, { calls: [{ to: from, value: 1n }], capabilities: { paymasterService: { url: sponsorship.paymasterUrl } } }).catch(
      (e: unknown) => e,
    )
    expect(error).toMatchObject({ name: 'SponsorshipUnavailableError', reason: 'unavailable' })
    expect(asked).toEqual([{ method: 'wallet_getCapabilities' }])
  })
})

describe('waitForCallsStatus', () => {
  test("behavior: the wallet is asked as often as its connector's callsStatusPollingIntervalMs says, else every 250 ms", async () => {
    const asks: Record<string, number> = {}
    for (const [name, interval] of [
      ['default', undefined],
      ['50 ms', 50],
    ] as const) {
      asks[name] = 0
      const { client } = await setup({
        callsStatusPollingIntervalMs: interval,
        answer: {
          wallet_getCallsStatus: () => ((asks[name] = (asks[name] ?? 0) + 1), { version: '2.0.0', id: '0x01', chainId: '0x7a69', atomic: true, status: 100 }),
        },
      })
      vi.useFakeTimers({ toFake: ['setTimeout'] })
      try {
        const waiting = waitForCallsStatus(client, { id: '0x01', timeoutMs: 1_000 }).catch((error: unknown) => error)
        await vi.advanceTimersByTimeAsync(240)
        expect.soft(asks[name], name).toBe(interval === undefined ? 1 : 5)
        await vi.advanceTimersByTimeAsync(1_000)
        expect(await waiting).toMatchObject({ name: 'TimeoutError' })
      } finally {
        vi.useRealTimers()
      }
    }
  })
})

describe('getCapabilities', () => {
  test('default: an EOA says honestly that it cannot run batches atomically, on every chain', async () => {
    const { client } = await setup()
    expect(await getCapabilities(client)).toEqual({ 31337: { atomic: { status: 'unsupported' } }, 31338: { atomic: { status: 'unsupported' } } })
    expect(await getCapabilities(client, { chainId: 31338 })).toEqual({ atomic: { status: 'unsupported' } })
  })

  test('error: a malformed answer is a typed error', async () => {
    const { client } = await setup({ answer: { wallet_getCapabilities: () => ({ '0x7a69': 'atomic' }) } })
    await expect(getCapabilities(client)).rejects.toMatchObject({
      code: 'invalid_calls_result',
      details: 'wallet_getCapabilities: expected capabilities by chain id',
    })
  })
})
