import type { Logger } from '@latchkey/service'
import type { AuditTrail, Database } from '@latchkey/service/database'
import { sql, type Transaction } from 'kysely'
import {
  type Address,
  createPublicClient,
  decodeFunctionData,
  getAddress,
  type Hex,
  http,
  isAddress,
  numberToHex,
  type PublicClient,
  parseAbi,
  parseAbiItem,
  zeroAddress,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { z } from 'zod'
import type { NewWebhookEvent } from '../webhooks/events.js'
import { decodeAccountCalls } from './calls.js'
import { encodeSponsorData, encodeTokenData, type SignedUserOperation, sponsorTypedData, tokenTypedData } from './data.js'
import { type PaymasterChainPolicy, type PaymasterPolicy, targetAllowed } from './policy.js'
import { endReservation, type PaymasterSchema, reserve, utcDay } from './schema.js'

// The ERC-7677 paymaster service: `pm_getPaymasterStubData` and `pm_getPaymasterData` over
// JSON-RPC 2.0, for EntryPoint v0.7+ UserOperations. Every decision checks the operator's policy;
// a signature is given only after its maximum cost is reserved against the day's budgets.

/** Why a sponsorship is refused: each is answered as a JSON-RPC error with its own code and `data: { reason }`. */
export type PaymasterRefusal = 'chain' | 'entryPoint' | 'target' | 'gas' | 'budget' | 'account' | 'stale' | 'malformed' | 'token'

/** The JSON-RPC error code of each refusal (stable: clients may switch on them). `malformed` is JSON-RPC's invalid params. */
export const PAYMASTER_ERROR_CODES: Readonly<Record<PaymasterRefusal | 'unavailable' | 'rate', number>> = {
  malformed: -32602,
  chain: -32001,
  entryPoint: -32002,
  target: -32003,
  gas: -32004,
  budget: -32005,
  account: -32006,
  stale: -32007,
  token: -32008,
  /** Too many requests from one address (`limitsPerIp.paymaster`), answered with HTTP 429 before anything is read. */
  rate: -32009,
  unavailable: -32603,
}

/** The gas the paymasters' own validation and postOp are given when the operation does not name it. */
export const PAYMASTER_GAS = {
  sponsor: { verification: 80_000n, postOp: 0n },
  token: { verification: 150_000n, postOp: 60_000n },
} as const

/** How far back a chain's first settlement pass reads, and the most blocks one `eth_getLogs` asks for. */
const FIRST_LOOKBACK = 50_000n
const LOG_RANGE = 5_000n

/** OpenZeppelin `PaymasterERC20._postOpCost()`, and what `PaymasterERC20Guarantor` adds for a guaranteed operation. */
export const TOKEN_POST_OP_COST = 30_000n
export const GUARANTEED_POST_OP_COST = 15_000n

class Refusal extends Error {
  constructor(
    readonly reason: PaymasterRefusal | 'unavailable',
    message: string,
  ) {
    super(message)
  }
}

const quantity = z
  .string()
  .regex(/^0x[0-9a-fA-F]{1,64}$/, 'a hex quantity')
  .transform((value) => BigInt(value))
const bytes = z
  .string()
  .regex(/^0x([0-9a-fA-F]{2})*$/, 'hex bytes')
  .transform((value) => value.toLowerCase() as Hex)
const address = z
  .string()
  .refine((value) => isAddress(value, { strict: false }), 'an address')
  .transform((value) => getAddress(value))

/** A v0.7+ UserOperation as ERC-7677 sends it: the stub's may leave its gas limits out. */
const userOperationSchema = z.object({
  sender: address,
  nonce: quantity,
  factory: z.union([address, z.literal('0x7702'), z.null()]).optional(),
  factoryData: bytes.nullish(),
  callData: bytes,
  callGasLimit: quantity.optional(),
  verificationGasLimit: quantity.optional(),
  preVerificationGas: quantity.optional(),
  maxFeePerGas: quantity,
  maxPriorityFeePerGas: quantity,
  paymasterVerificationGasLimit: quantity.nullish(),
  paymasterPostOpGasLimit: quantity.nullish(),
})
type RequestedOperation = z.output<typeof userOperationSchema>
const paramsSchema = z.tuple([
  userOperationSchema,
  address,
  z.string().regex(/^0x[0-9a-fA-F]{1,16}$/, 'a hex chain id'),
  z.object({ token: address.optional() }).passthrough().nullish(),
])

const ENTRY_POINT_ABI = parseAbi(['function getNonce(address sender, uint192 key) view returns (uint256)'])
const ERC20_ABI = parseAbi([
  'function allowance(address owner, address spender) view returns (uint256)',
  'function balanceOf(address owner) view returns (uint256)',
  'function approve(address spender, uint256 amount) returns (bool)',
])
/** The EntryPoint's event for each operation it ran (v0.7 and v0.8 alike). */
export const USER_OPERATION_EVENT = parseAbiItem(
  'event UserOperationEvent(bytes32 indexed userOpHash, address indexed sender, address indexed paymaster, uint256 nonce, bool success, uint256 actualGasCost, uint256 actualGasUsed)',
)

export type PaymasterOptions = {
  policy: PaymasterPolicy
  /** The key whose signatures the paymaster contracts accept (a secret). */
  signerPrivateKey: Hex
  database: Database<PaymasterSchema>
  audit: AuditTrail
  /** `sponsor.name` of the stub answer when the policy names none. */
  appName: string
  /** Whether an address is the wallet of one of this backend's users (`accounts: 'users'`). */
  isUserWallet: (address: Address) => Promise<boolean>
  /** Unix ms. */
  now?: (() => number) | undefined
  logger?: Logger | undefined
  /** How often each chain's settlement runs, in ms. Default 5,000. */
  settleIntervalMs?: number | undefined
  /**
   * The webhook outbox on the same database: a settlement queues `sponsorship.spent` in its own
   * transaction, once per UserOperation hash; `queued` nudges the sender after the commit.
   */
  webhooks?: { enqueue(trx: Transaction<never>, events: readonly NewWebhookEvent[], at: number): Promise<number>; queued(): void } | undefined
}

type JsonRpcResponse = { jsonrpc: '2.0'; id: string | number | null; result?: unknown; error?: { code: number; message: string; data?: unknown } }

/** The largest token amount `PaymasterERC20` may pull for `nativeCost` wei at `tokenPerNative` (its `_erc20Cost`, rounded up). */
export function erc20Cost(nativeCost: bigint, tokenPerNative: bigint): bigint {
  const product = nativeCost * tokenPerNative
  return product / 10n ** 18n + (product % 10n ** 18n > 0n ? 1n : 0n)
}

/** OpenZeppelin `PaymasterERC20._postOpGasPenalty`: the EntryPoint's 10% on unused postOp gas past 40,000. */
export const postOpGasPenalty = (postOpGasLimit: bigint) => (postOpGasLimit > 40_000n ? postOpGasLimit / 10n : 0n)

/**
 * The paymaster service: `handle` answers one JSON-RPC body, `settle` runs one settlement pass
 * over every chain, `start`/`stop` run the settlement loop.
 *
 * @example
 * const paymaster = createPaymaster({ policy, signerPrivateKey, database: store.database, audit, appName: 'Demo', isUserWallet })
 * app.post('/paymaster', async (c) => c.json(await paymaster.handle(await c.req.json())))
 */
export function createPaymaster(options: PaymasterOptions) {
  const { policy, database, audit } = options
  const now = options.now ?? Date.now
  const signer = privateKeyToAccount(options.signerPrivateKey)
  const clients = new Map<number, PublicClient>(
    policy.chains.map((chain) => [chain.chainId, createPublicClient({ transport: http(chain.rpcUrl, { timeout: 5_000, retryCount: 0 }) }) as PublicClient]),
  )
  const sponsorName = policy.sponsorName ?? options.appName

  function chainOf(chainIdHex: string): PaymasterChainPolicy {
    const chainId = Number(BigInt(chainIdHex))
    const chain = policy.chains.find((candidate) => candidate.chainId === chainId)
    if (!chain) throw new Refusal('chain', `Chain ${chainId} is not sponsored`)
    return chain
  }

  /** The checks both methods make: entry point, the account, the calls, the token, the gas cap. */
  async function check(operation: RequestedOperation, entryPoint: Address, chain: PaymasterChainPolicy, token: Address | undefined, final: boolean) {
    if (entryPoint !== chain.entryPoint) throw new Refusal('entryPoint', `EntryPoint ${entryPoint} is not the one sponsored on chain ${chain.chainId}`)
    const calls = decodeAccountCalls(operation.callData)
    if (!calls?.length) throw new Refusal('target', "The operation's calls are not in a form the paymaster reads")
    const tokenRule = token === undefined ? undefined : chain.tokens?.find((candidate) => candidate.address === token)
    if (token !== undefined && (!tokenRule || !chain.tokenPaymaster)) throw new Refusal('token', `Gas is not paid in ${token} on chain ${chain.chainId}`)
    for (const [index, call] of calls.entries()) {
      // The token's approval of the token paymaster, first in the batch, is part of paying in it.
      if (index === 0 && tokenRule && isApproval(call, tokenRule.address, chain.tokenPaymaster!) !== undefined) continue
      if (!targetAllowed(chain, call.target, call.data)) throw new Refusal('target', `The call to ${getAddress(call.target)} is not sponsored`)
    }
    if (policy.accounts === 'users' && !(await options.isUserWallet(operation.sender)))
      throw new Refusal('account', `${operation.sender} is not a wallet of this app's users`)
    const gas = token === undefined ? PAYMASTER_GAS.sponsor : PAYMASTER_GAS.token
    const limits = {
      paymasterVerificationGasLimit: operation.paymasterVerificationGasLimit ?? gas.verification,
      paymasterPostOpGasLimit: operation.paymasterPostOpGasLimit ?? gas.postOp,
    }
    if (final && (operation.callGasLimit === undefined || operation.verificationGasLimit === undefined || operation.preVerificationGas === undefined))
      throw new Refusal('malformed', 'The operation must carry its gas limits')
    const totalGas =
      (operation.callGasLimit ?? 0n) +
      (operation.verificationGasLimit ?? 0n) +
      (operation.preVerificationGas ?? 0n) +
      limits.paymasterVerificationGasLimit +
      limits.paymasterPostOpGasLimit
    if (totalGas > chain.maxGasPerOperation) throw new Refusal('gas', `The operation's gas, ${totalGas}, is over the cap of ${chain.maxGasPerOperation}`)
    return { calls, tokenRule, limits, maxCost: totalGas * operation.maxFeePerGas }
  }

  async function stub(operation: RequestedOperation, entryPoint: Address, chain: PaymasterChainPolicy, token: Address | undefined) {
    const { limits } = await check(operation, entryPoint, chain, token, false)
    const window = { validAfter: 0, validUntil: 0 }
    const signature: Hex = `0x${'ff'.repeat(32)}${'7a'.repeat(32)}1c`
    const paymaster = token === undefined ? chain.sponsorPaymaster : chain.tokenPaymaster!
    const paymasterData =
      token === undefined
        ? encodeSponsorData({ ...window, signature })
        : encodeTokenData({ ...window, token, tokenPerNative: 0n, guarantor: zeroAddress, signature })
    return {
      paymaster,
      paymasterData,
      paymasterVerificationGasLimit: numberToHex(limits.paymasterVerificationGasLimit),
      paymasterPostOpGasLimit: numberToHex(limits.paymasterPostOpGasLimit),
      sponsor: { name: sponsorName },
      isFinal: false,
    }
  }

  async function data(operation: RequestedOperation, entryPoint: Address, chain: PaymasterChainPolicy, token: Address | undefined) {
    const { calls, tokenRule, limits, maxCost } = await check(operation, entryPoint, chain, token, true)
    const client = clients.get(chain.chainId)!
    const key = operation.nonce >> 64n
    const onChain = await client
      .readContract({ address: chain.entryPoint, abi: ENTRY_POINT_ABI, functionName: 'getNonce', args: [operation.sender, key] })
      .catch((error: Error) => {
        throw new Refusal('unavailable', `Chain ${chain.chainId} did not answer: ${error.message.split('\n')[0]}`)
      })
    if (operation.nonce < onChain) throw new Refusal('stale', `Nonce ${operation.nonce} has been used; the account is at ${onChain}`)
    const signed: SignedUserOperation = {
      sender: operation.sender,
      nonce: operation.nonce,
      factory: operation.factory ?? undefined,
      factoryData: operation.factoryData ?? undefined,
      callData: operation.callData,
      callGasLimit: operation.callGasLimit!,
      verificationGasLimit: operation.verificationGasLimit!,
      preVerificationGas: operation.preVerificationGas!,
      maxFeePerGas: operation.maxFeePerGas,
      maxPriorityFeePerGas: operation.maxPriorityFeePerGas,
      ...limits,
    }
    let quote: { token: Address; tokenPerNative: bigint; guarantor: Address } | undefined
    if (tokenRule) quote = await quoteFor(client, chain, tokenRule, operation, calls, maxCost, limits.paymasterPostOpGasLimit)
    const at = now()
    const validUntil = Math.floor(at / 1000) + policy.validitySeconds
    const paymaster = quote ? chain.tokenPaymaster! : chain.sponsorPaymaster
    const reserved = await reserve(database, {
      chainId: chain.chainId,
      sender: operation.sender,
      nonce: operation.nonce,
      day: utcDay(at),
      amount: maxCost,
      validUntil,
      paymaster,
      perUser: chain.perUserPerDayWei,
      global: chain.globalPerDayWei,
      at,
    })
    if (!reserved) throw new Refusal('budget', `The sponsorship budget for today has no room for ${maxCost} wei`)
    const window = { validAfter: 0, validUntil }
    const base = { chainId: chain.chainId, paymaster, userOperation: signed, ...window }
    const paymasterData = quote
      ? encodeTokenData({ ...window, ...quote, signature: await signer.signTypedData(tokenTypedData({ ...base, ...quote })) })
      : encodeSponsorData({ ...window, signature: await signer.signTypedData(sponsorTypedData(base)) })
    return {
      result: {
        paymaster,
        paymasterData,
        paymasterVerificationGasLimit: numberToHex(limits.paymasterVerificationGasLimit),
        paymasterPostOpGasLimit: numberToHex(limits.paymasterPostOpGasLimit),
      },
      maxCost,
      validUntil,
    }
  }

  /** The token paymaster's quote: the account prefunds itself, or (approving in its first call) the guarantor does. */
  async function quoteFor(
    client: PublicClient,
    chain: PaymasterChainPolicy,
    rule: NonNullable<PaymasterChainPolicy['tokens']>[number],
    operation: RequestedOperation,
    calls: { target: Address; data: Hex }[],
    maxCost: bigint,
    postOpGasLimit: bigint,
  ) {
    const tokenPaymaster = chain.tokenPaymaster!
    const fee = operation.maxFeePerGas
    const maxTokenCost = erc20Cost((TOKEN_POST_OP_COST + postOpGasPenalty(postOpGasLimit)) * fee + maxCost, rule.tokenPerNative)
    const read = (functionName: 'allowance' | 'balanceOf') =>
      client.readContract({
        address: rule.address,
        abi: ERC20_ABI,
        functionName,
        args: functionName === 'allowance' ? [operation.sender, tokenPaymaster] : [operation.sender],
      } as never) as Promise<bigint>
    const [allowance, balance] = await Promise.all([read('allowance'), read('balanceOf')]).catch((error: Error) => {
      throw new Refusal('unavailable', `Chain ${chain.chainId} did not answer: ${error.message.split('\n')[0]}`)
    })
    const quote = { token: rule.address, tokenPerNative: rule.tokenPerNative }
    if (allowance >= maxTokenCost && balance >= maxTokenCost) return { ...quote, guarantor: zeroAddress }
    const guaranteedCost = maxTokenCost + erc20Cost(GUARANTEED_POST_OP_COST * fee, rule.tokenPerNative)
    const approved = calls[0] ? isApproval(calls[0], rule.address, tokenPaymaster) : undefined
    if (rule.guarantor && approved !== undefined && approved >= guaranteedCost && balance >= guaranteedCost) return { ...quote, guarantor: rule.guarantor }
    throw new Refusal(
      'token',
      `${operation.sender} can pay up to ${guaranteedCost} of ${rule.address} neither by allowance nor through an approval first in its batch`,
    )
  }

  async function record(method: string, outcome: 'completed' | 'refused' | 'failed', target: Record<string, string>, reason?: string) {
    await audit.record({ action: `paymaster ${method}`, outcome, reason, target })
  }

  /** Answers one JSON-RPC request object. */
  async function handleOne(request: unknown): Promise<JsonRpcResponse> {
    const envelope = z
      .object({ jsonrpc: z.literal('2.0'), id: z.union([z.string(), z.number(), z.null()]).optional(), method: z.string(), params: z.unknown() })
      .safeParse(request)
    if (!envelope.success) return { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid request' } }
    const { id = null, method } = envelope.data
    if (method !== 'pm_getPaymasterStubData' && method !== 'pm_getPaymasterData')
      return { jsonrpc: '2.0', id, error: { code: -32601, message: `Method ${method} is not served here` } }
    const parsed = paramsSchema.safeParse(envelope.data.params)
    const refuse = async (refusal: Refusal, target: Record<string, string>) => {
      await record(method, refusal.reason === 'unavailable' ? 'failed' : 'refused', target, `${refusal.reason}: ${refusal.message}`)
      return {
        jsonrpc: '2.0' as const,
        id,
        error: { code: PAYMASTER_ERROR_CODES[refusal.reason], message: refusal.message, data: { reason: refusal.reason } },
      }
    }
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!
      return refuse(new Refusal('malformed', `Invalid params: ${issue.path.join('.') || 'params'}: ${issue.message}`), {})
    }
    const [operation, entryPoint, chainIdHex, context] = parsed.data
    const target = { chain: String(Number(BigInt(chainIdHex))), sender: operation.sender, nonce: operation.nonce.toString() }
    try {
      const chain = chainOf(chainIdHex)
      const token = context?.token
      if (method === 'pm_getPaymasterStubData') return { jsonrpc: '2.0', id, result: await stub(operation, entryPoint, chain, token) }
      const granted = await data(operation, entryPoint, chain, token)
      await record(method, 'completed', { ...target, maxCost: granted.maxCost.toString(), validUntil: String(granted.validUntil) })
      return { jsonrpc: '2.0', id, result: granted.result }
    } catch (error) {
      if (error instanceof Refusal) return refuse(error, target)
      throw error
    }
  }

  // Settlement: the EntryPoint's events turn reservations into what the operations cost; windows
  // that passed with no event give their reservation back.
  const ours = (chain: PaymasterChainPolicy) => [chain.sponsorPaymaster, ...(chain.tokenPaymaster ? [chain.tokenPaymaster] : [])]

  /** One pass over one chain; answers how many reservations it settled and released. */
  async function settleChain(chain: PaymasterChainPolicy) {
    const client = clients.get(chain.chainId)!
    const latest = await client.getBlockNumber({ cacheTime: 0 })
    const cursor = await database.db.selectFrom('paymaster_cursors').select('block').where('chain_id', '=', chain.chainId).executeTakeFirst()
    // A first pass starts a day or so back, not at genesis; each pass reads at most LOG_RANGE blocks.
    const fromBlock = cursor ? BigInt(cursor.block) + 1n : latest > FIRST_LOOKBACK ? latest - FIRST_LOOKBACK : 0n
    const toBlock = fromBlock + LOG_RANGE - 1n < latest ? fromBlock + LOG_RANGE - 1n : latest
    let settled = 0
    let released = 0
    if (fromBlock <= toBlock) {
      const logs = await client.getLogs({ address: chain.entryPoint, event: USER_OPERATION_EVENT, args: { paymaster: ours(chain) }, fromBlock, toBlock })
      for (const log of logs) {
        const { sender, nonce, actualGasCost, userOpHash, paymaster } = log.args
        if (sender === undefined || nonce === undefined || actualGasCost === undefined) continue
        const event: NewWebhookEvent = {
          type: 'sponsorship.spent',
          data: {
            chainId: chain.chainId,
            userOpHash,
            sender,
            nonce: nonce.toString(),
            paymaster,
            paymasterKind: paymaster?.toLowerCase() === chain.sponsorPaymaster.toLowerCase() ? 'sponsor' : 'token',
            actualGasCost: actualGasCost.toString(),
            success: log.args.success,
            transactionHash: log.transactionHash,
          },
          once: `sponsorship.spent:${chain.chainId}:${userOpHash}`,
        }
        const spent = options.webhooks
        const ended = await endReservation(
          database,
          { chainId: chain.chainId, sender, nonce },
          now(),
          actualGasCost,
          spent && ((trx) => spent.enqueue(trx as unknown as Transaction<never>, [event], now())),
        )
        if (ended) {
          settled++
          spent?.queued()
        }
      }
      // Only forward: another instance may have read further meanwhile.
      await database.db
        .insertInto('paymaster_cursors')
        .values({ chain_id: chain.chainId, block: toBlock.toString() })
        .onConflict((conflict) =>
          conflict.column('chain_id').doUpdateSet({ block: toBlock.toString() }).where(sql`cast(paymaster_cursors.block as bigint)`, '<', Number(toBlock)),
        )
        .execute()
    }
    const read = await client.getBlock({ blockNumber: fromBlock <= toBlock ? toBlock : latest })
    // Every event up to `read` is read: a window that ended before its timestamp can no longer land.
    const expired = await database.db
      .selectFrom('paymaster_reservations')
      .select(['sender', 'nonce'])
      .where('status', '=', 'reserved')
      .where('chain_id', '=', chain.chainId)
      .where('valid_until', '<', Number(read.timestamp))
      .execute()
    for (const row of expired) if (await endReservation(database, { chainId: chain.chainId, sender: row.sender, nonce: BigInt(row.nonce) }, now())) released++
    return { settled, released }
  }

  let timers: ReturnType<typeof setTimeout>[] = []
  let running: Promise<unknown> = Promise.resolve()
  let stopped = true
  return {
    signer: signer.address,
    /** Answers a JSON-RPC body: one request, or a batch. */
    async handle(body: unknown): Promise<JsonRpcResponse | JsonRpcResponse[]> {
      if (Array.isArray(body)) return Promise.all(body.map(handleOne))
      return handleOne(body)
    },
    /** One settlement pass over every chain (or one), for tests and the loop. */
    async settle(chainId?: number) {
      const results: Record<number, { settled: number; released: number }> = {}
      for (const chain of policy.chains) if (chainId === undefined || chain.chainId === chainId) results[chain.chainId] = await settleChain(chain)
      return results
    },
    /** Starts each chain's settlement loop. */
    start() {
      if (!stopped) return
      stopped = false
      const interval = options.settleIntervalMs ?? 5_000
      for (const chain of policy.chains) {
        const tick = () => {
          running = settleChain(chain)
            .catch((error: Error) => options.logger?.warn({ err: error, chainId: chain.chainId }, 'paymaster settlement failed; trying again'))
            .finally(() => {
              if (!stopped) timers.push(setTimeout(tick, interval))
            })
        }
        timers.push(setTimeout(tick, interval))
      }
    },
    /** Stops the loops; resolves once a pass under way has finished. */
    async stop() {
      stopped = true
      for (const timer of timers) clearTimeout(timer)
      timers = []
      await running
    },
  }
}

/** The amount of `call` when it is `token.approve(spender, amount)`. */
function isApproval(call: { target: Address; data: Hex }, token: Address, spender: Address): bigint | undefined {
  if (getAddress(call.target) !== token) return undefined
  try {
    const decoded = decodeFunctionData({ abi: ERC20_ABI, data: call.data })
    if (decoded.functionName !== 'approve') return undefined
    const [to, amount] = decoded.args as [Address, bigint]
    return getAddress(to) === spender ? amount : undefined
  } catch {
    return undefined
  }
}

export type Paymaster = ReturnType<typeof createPaymaster>
