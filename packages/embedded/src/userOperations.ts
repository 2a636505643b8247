// Sponsored calls as ERC-4337 UserOperations (EntryPoint v0.8) through a bundler, with an ERC-7677
// paymaster's data, loaded with the first sponsored call: sign-in and unsponsored calls never
// download it. The account is the EIP-7702 delegated EOA itself; its executor is an ERC-4337 account
// whose callData is the ERC-7821 `execute` of the calls (smartAccount.ts's executeData).
import {
  type Address,
  type Chain,
  type Client,
  createClient,
  type Hex,
  hexToBigInt,
  hexToNumber,
  http,
  numberToHex,
  type SignedAuthorization,
  sliceHex,
} from 'viem'
import {
  entryPoint08Abi,
  entryPoint08Address,
  formatUserOperationRequest,
  getUserOperationHash,
  getUserOperationTypedData,
  type UserOperation,
} from 'viem/account-abstraction'
import { estimateFeesPerGas, estimateMaxPriorityFeePerGas, getBlock, getTransactionCount, readContract } from 'viem/actions'
import { WATCH_SCHEDULE_MS } from './callsWatch.js'
import { EmbeddedError, SPONSORSHIP_REASONS, type SponsorshipRefusal, SponsorshipUnavailableError } from './errors.js'
import { atomicStatus, type BatchCall, executeData, type SmartAccountContext } from './smartAccount.js'
import type { TransactionRequest } from './wallet.js'

/**
 * Sponsored gas for the embedded wallet (ERC-7677). `paymasterUrl`: the paymaster service (e.g. the
 * app backend's `/paymaster`). `bundlerUrls`: an ERC-4337 bundler per chain id; a chain without one
 * here uses its `rpcUrls.bundler` (viem's chain field for it). `context`: sent to the paymaster with
 * each request (`{ token }` asks for gas paid in that token). `fallback: 'user-pays'` sends a
 * refused call as an ordinary transaction the account pays for; without it a refusal is
 * {@link SponsorshipUnavailableError} and nothing is sent.
 */
export type Sponsorship = {
  paymasterUrl: string
  bundlerUrls?: Record<number, string> | undefined
  context?: Record<string, unknown> | undefined
  fallback?: 'user-pays' | undefined
}

/** How long the paymaster or the bundler has to answer one request before the call fails as `unavailable`. */
export const SPONSORSHIP_TIMEOUT_MS = 4_000
/** How long a sponsored `sendTransaction` waits for its UserOperation to be included, to answer its transaction hash. */
const INCLUSION_TIMEOUT_MS = 60_000

/** A 65-byte signature that recovers to no one, for the paymaster's stub and the bundler's estimate (viem's stub, too). */
const STUB_SIGNATURE: Hex = `0x${'ff'.repeat(32)}${'7a'.repeat(32)}1c`

/** What the wallet lends this module: the smart-account context, its typed-data consent path, and fetch. */
export type UserOperationContext = SmartAccountContext & {
  /** Signs EIP-712 typed data through the wallet's consent path (the frame shows the PackedUserOperation). */
  signTypedData(typedData: ReturnType<typeof getUserOperationTypedData>): Promise<Hex>
  fetch: typeof fetch
}

type Who = 'paymaster' | 'bundler'
type RpcError = { code: number; message: string; data?: unknown }

/** A JSON-RPC request that answers within {@link SPONSORSHIP_TIMEOUT_MS} or fails as `unavailable`. */
async function rpc<result>(context: Pick<UserOperationContext, 'fetch'>, who: Who, url: string, method: string, params: unknown[]): Promise<result> {
  let answer: { result?: result; error?: RpcError }
  try {
    const response = await context.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      // No cookies: the paymaster knows the account by the operation's sender, and a bundler often
      // answers CORS with `*`, which a credentialed request may not use.
      credentials: 'omit',
      signal: AbortSignal.timeout(SPONSORSHIP_TIMEOUT_MS),
    })
    answer = (await response.json()) as typeof answer
  } catch (error) {
    const timedOut = error instanceof Error && error.name === 'TimeoutError'
    throw new SponsorshipUnavailableError({
      reason: 'unavailable',
      details: timedOut
        ? `The ${who} did not answer ${method} within ${SPONSORSHIP_TIMEOUT_MS / 1000} s.`
        : `The ${who} could not be reached for ${method}: ${error instanceof Error ? error.message : String(error)}`,
      cause: error,
    })
  }
  if (answer.error) throw refusal(who, method, answer.error)
  return answer.result as result
}

/**
 * A paymaster's ERC-7677 error: its `data.reason` when it is one we know (our paymaster's
 * `entryPoint` reads `chain`), else `unavailable`. A
 * bundler's error is the bundler refusing the operation itself (its simulation reverted, a bad
 * signature): `user_operation_refused`, not a sponsorship refusal, so no fallback runs on it.
 */
function refusal(who: Who, method: string, error: RpcError): EmbeddedError {
  const details = `${method}: ${error.message} (${error.code})`
  if (who === 'bundler') return new EmbeddedError('user_operation_refused', 'The bundler refused the operation.', { details })
  const given = (error.data as { reason?: unknown } | undefined)?.reason
  // Our paymaster's `entryPoint`: the chain's EntryPoint is not the one it serves.
  const reason = given === 'entryPoint' ? 'chain' : given
  const known = SPONSORSHIP_REASONS.includes(reason as SponsorshipRefusal) ? (reason as SponsorshipRefusal) : 'unavailable'
  return new SponsorshipUnavailableError({ reason: known, details })
}

/** ERC-7677's answers: the stub (with the sponsor's name, when the paymaster gives it) and the final data. */
type StubData = {
  paymaster: Address
  paymasterData: Hex
  paymasterVerificationGasLimit?: Hex
  paymasterPostOpGasLimit?: Hex
  sponsor?: { name: string; icon?: string }
  isFinal?: boolean
}
type GasEstimate = { preVerificationGas: Hex; verificationGasLimit: Hex; callGasLimit: Hex; paymasterVerificationGasLimit?: Hex; paymasterPostOpGasLimit?: Hex }

/**
 * The last non-final stub of each paymaster (by chain, URL and context) on this page, at most
 * {@link LAST_STUBS}: the next operation's gas is estimated with it while the paymaster is asked
 * for that operation's own stub. Nothing in it is trusted: the estimate counts only when the fresh
 * stub is the same, and the paymaster still signs the operation as estimated.
 */
const lastStubs = new Map<string, StubData>()
const LAST_STUBS = 16
/** The paymasters (same keys) whose fresh stub once differed from their last: each gets one wasted estimate at most. */
const unsteady = new Set<string>()

function rememberStub(key: string, stub: StubData) {
  lastStubs.delete(key)
  // A final stub is the operation's own data, not a stub for another.
  if (stub.isFinal) return
  lastStubs.set(key, stub)
  if (lastStubs.size > LAST_STUBS) lastStubs.delete(lastStubs.keys().next().value!)
}

const quantityOf = (value: Hex | undefined) => (value === undefined ? undefined : hexToBigInt(value))

/** Whether two stubs give an estimate the same paymaster fields. */
function sameStub(a: StubData, b: StubData): boolean {
  return (
    String(a.paymaster).toLowerCase() === String(b.paymaster).toLowerCase() &&
    String(a.paymasterData).toLowerCase() === String(b.paymasterData).toLowerCase() &&
    quantityOf(a.paymasterVerificationGasLimit) === quantityOf(b.paymasterVerificationGasLimit) &&
    quantityOf(a.paymasterPostOpGasLimit) === quantityOf(b.paymasterPostOpGasLimit)
  )
}

/** The operation with a stub's paymaster fields (its limits only when the stub gives them). */
function withStub(userOperation: UserOperation<'0.8'>, stub: StubData): UserOperation<'0.8'> {
  return {
    ...userOperation,
    paymaster: stub.paymaster,
    paymasterData: stub.paymasterData,
    ...(stub.paymasterVerificationGasLimit ? { paymasterVerificationGasLimit: hexToBigInt(stub.paymasterVerificationGasLimit) } : {}),
    ...(stub.paymasterPostOpGasLimit ? { paymasterPostOpGasLimit: hexToBigInt(stub.paymasterPostOpGasLimit) } : {}),
  }
}

/** A UserOperation the paymaster has signed for, not yet signed by the user; `delegate`: the authorization to sign (nonce), when the account is not delegated yet. */
export type PreparedOperation = {
  bundlerUrl: string
  /** Frees the operation's nonce key once it is included or never sent. */
  release(): void
  userOperation: UserOperation<'0.8'>
  delegate: { address: Address; chainId: number; nonce: number } | undefined
  sponsor: { name: string } | undefined
}

/**
 * Everything before the user signs: the account's state, the paymaster's stub, the bundler's gas
 * estimate, the paymaster's data. With a stub of the same paymaster from an earlier operation of
 * this page, the estimate runs beside the stub request instead of after it (one round trip less).
 * Nothing is signed or sent; a refusal or a service that does not answer is
 * {@link SponsorshipUnavailableError}.
 */
export async function prepare(
  context: UserOperationContext,
  calls: readonly BatchCall[],
  sponsorship: { paymasterUrl: string; context?: Record<string, unknown> | undefined; bundlerUrl: string | undefined },
): Promise<PreparedOperation> {
  const { account, chain, executor } = context
  const bundler = sponsorship.bundlerUrl
  if (!bundler) throw new SponsorshipUnavailableError({ reason: 'chain', details: `No bundler is configured for chain ${chain.id}.` })
  if (!executor) throw new SponsorshipUnavailableError({ reason: 'account', details: 'Smart accounts are turned off for this wallet (no batch executor).' })
  const client = createClient({ chain, transport: http(chain.rpcUrls.default.http[0]) })
  const lane = nonceLane(chain.id, account)
  try {
    return await prepareOn(context, calls, sponsorship, { client, bundler, executor, lane })
  } catch (error) {
    lane.release()
    throw error
  }
}

/**
 * The bundlers that answered this page that they serve EntryPoint v0.8, at most {@link SERVING}:
 * they are not asked again (a bundler's EntryPoints do not change while a page lives; one that
 * stopped serving it refuses the estimate). A bundler that did not say so is asked each time.
 */
const serving = new Set<string>()
const SERVING = 16

/** Whether the bundler serves EntryPoint v0.8: asked once per page when it does. */
async function servesEntryPoint(context: Pick<UserOperationContext, 'fetch'>, bundler: string): Promise<boolean> {
  if (serving.has(bundler)) return true
  const entryPoints = await rpc<Address[]>(context, 'bundler', bundler, 'eth_supportedEntryPoints', [])
  if (!entryPoints.some((address) => address.toLowerCase() === entryPoint08Address.toLowerCase())) return false
  serving.add(bundler)
  if (serving.size > SERVING) serving.delete(serving.values().next().value!)
  return true
}

/** A settled read's value, or its failure thrown. */
function settled<value>(result: PromiseSettledResult<value>): value {
  if (result.status === 'rejected') throw result.reason
  return result.value
}

/**
 * The operations of one account between their preparation and their inclusion, by chain and
 * account: the first takes the EntryPoint's nonce key 0 (the cheapest to reuse), one prepared while
 * another is under way a random 192-bit key of its own, so neither replaces the other in the
 * bundler's mempool (ERC-4337's parallel nonces).
 */
const lanes = new Map<string, number>()

function nonceLane(chainId: number, account: Address) {
  const name = `${chainId}:${account.toLowerCase()}`
  const busy = lanes.get(name) ?? 0
  lanes.set(name, busy + 1)
  let released = false
  return {
    key: busy === 0 ? 0n : hexToBigInt(`0x${[...crypto.getRandomValues(new Uint8Array(24))].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`),
    release() {
      if (released) return
      released = true
      const left = (lanes.get(name) ?? 1) - 1
      if (left > 0) lanes.set(name, left)
      else lanes.delete(name)
    },
  }
}

/**
 * viem's `estimateFeesPerGas` (the latest block's base fee × 1.2 plus the priority fee), with the
 * block and the priority fee read at once rather than one after the other. A chain with fee rules
 * of its own (`chain.fees`), or a block without a base fee, goes through viem's own.
 */
async function feesPerGas(client: Client, chain: Chain): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
  if (chain.fees) return estimateFeesPerGas(client)
  const [block, maxPriorityFeePerGas] = await Promise.all([getBlock(client), estimateMaxPriorityFeePerGas(client, { chain })])
  if (typeof block.baseFeePerGas !== 'bigint') return estimateFeesPerGas(client)
  return { maxFeePerGas: (block.baseFeePerGas * 12n) / 10n + maxPriorityFeePerGas, maxPriorityFeePerGas }
}

async function prepareOn(
  context: UserOperationContext,
  calls: readonly BatchCall[],
  sponsorship: { paymasterUrl: string; context?: Record<string, unknown> | undefined },
  { client, bundler, executor, lane }: { client: Client; bundler: string; executor: Address; lane: ReturnType<typeof nonceLane> },
): Promise<PreparedOperation> {
  const { account, chain } = context
  // Everything the stub needs, read at once; a failure is judged in this order.
  const [status, nonce, fees, transactionCount, served] = await Promise.allSettled([
    atomicStatus(context),
    readContract(client, { address: entryPoint08Address, abi: entryPoint08Abi, functionName: 'getNonce', args: [account, lane.key] }),
    feesPerGas(client, chain),
    getTransactionCount(client, { address: account, blockTag: 'pending' }),
    servesEntryPoint(context, bundler),
  ])
  if (settled(status) === 'unsupported')
    throw new SponsorshipUnavailableError({ reason: 'account', details: `The account cannot run through the batch executor ${executor} on chain ${chain.id}.` })
  if (nonce.status === 'rejected')
    throw new SponsorshipUnavailableError({ reason: 'chain', details: `No EntryPoint v0.8 answers on chain ${chain.id}.`, cause: nonce.reason })
  if (!settled(served)) throw new SponsorshipUnavailableError({ reason: 'chain', details: `The bundler for chain ${chain.id} does not serve EntryPoint v0.8.` })
  // The bundler sends the delegation, so the authorization's nonce is the account's own next nonce.
  const delegate = settled(status) === 'ready' ? { address: executor, chainId: chain.id, nonce: settled(transactionCount) } : undefined
  const userOperation: UserOperation<'0.8'> = {
    sender: account,
    nonce: nonce.value,
    callData: executeData(calls),
    callGasLimit: 0n,
    verificationGasLimit: 0n,
    preVerificationGas: 0n,
    maxFeePerGas: settled(fees).maxFeePerGas,
    maxPriorityFeePerGas: settled(fees).maxPriorityFeePerGas,
    signature: STUB_SIGNATURE,
    ...(delegate
      ? { factory: '0x7702', factoryData: '0x', authorization: { ...delegate, r: `0x${'ff'.repeat(32)}`, s: `0x${'7a'.repeat(32)}`, yParity: 1 } }
      : {}),
  }
  const chainId = numberToHex(chain.id)
  const paymasterContext = sponsorship.context ?? {}
  const stubRequest = rpc<StubData>(context, 'paymaster', sponsorship.paymasterUrl, 'pm_getPaymasterStubData', [
    formatUserOperationRequest(userOperation),
    entryPoint08Address,
    chainId,
    paymasterContext,
  ])
  const estimate = (given: StubData) =>
    rpc<GasEstimate>(context, 'bundler', bundler, 'eth_estimateUserOperationGas', [
      formatUserOperationRequest(withStub(userOperation, given)),
      entryPoint08Address,
    ])
  // The paymaster's last stub for this URL, chain and context, when there is one: the estimate
  // starts with it while the fresh stub is asked for, and counts only if the fresh one is the same.
  const cacheKey = `${chain.id} ${sponsorship.paymasterUrl} ${JSON.stringify(paymasterContext)}`
  const cached = lastStubs.get(cacheKey)
  let stub: StubData
  let gas: GasEstimate | undefined
  if (cached) {
    const [fresh, early] = await Promise.allSettled([stubRequest, estimate(cached)])
    // The paymaster's refusal comes first, as when it is asked alone.
    stub = settled(fresh)
    if (sameStub(stub, cached)) gas = settled(early)
    // A paymaster whose stubs differ from one operation to the next is not estimated ahead again.
    else unsteady.add(cacheKey)
  } else stub = await stubRequest
  if (!unsteady.has(cacheKey)) rememberStub(cacheKey, stub)
  else lastStubs.delete(cacheKey)
  gas ??= await estimate(stub)
  Object.assign(userOperation, withStub(userOperation, stub))
  userOperation.callGasLimit = hexToBigInt(gas.callGasLimit)
  userOperation.verificationGasLimit = hexToBigInt(gas.verificationGasLimit)
  userOperation.preVerificationGas = hexToBigInt(gas.preVerificationGas)
  // The paymaster's own limits win over the estimate's (ERC-7677: it knows its postOp best).
  userOperation.paymasterVerificationGasLimit ??= gas.paymasterVerificationGasLimit ? hexToBigInt(gas.paymasterVerificationGasLimit) : 0n
  userOperation.paymasterPostOpGasLimit ??= gas.paymasterPostOpGasLimit ? hexToBigInt(gas.paymasterPostOpGasLimit) : 0n
  if (!stub.isFinal) {
    const final = await rpc<{ paymaster: Address; paymasterData: Hex }>(context, 'paymaster', sponsorship.paymasterUrl, 'pm_getPaymasterData', [
      formatUserOperationRequest(userOperation),
      entryPoint08Address,
      chainId,
      paymasterContext,
    ])
    userOperation.paymaster = final.paymaster
    userOperation.paymasterData = final.paymasterData
  }
  return { bundlerUrl: bundler, release: lane.release, userOperation, delegate, sponsor: stub.sponsor ? { name: stub.sponsor.name } : undefined }
}

/**
 * The user signs (the EIP-7702 authorization first when the account is not delegated yet, then the
 * EntryPoint's EIP-712 PackedUserOperation through the consent path), and the bundler takes the
 * operation. Answers its hash.
 */
export async function signAndSend(context: UserOperationContext, prepared: PreparedOperation): Promise<Hex> {
  try {
    const hash = await signAndSendOnce(context, prepared)
    sent.set(hash, prepared.release)
    return hash
  } catch (error) {
    // An operation the bundler may hold keeps its nonce key: another must not replace it.
    if (!(error instanceof EmbeddedError && error.code === 'user_operation_unknown')) prepared.release()
    throw error
  }
}

async function signAndSendOnce(context: UserOperationContext, prepared: PreparedOperation): Promise<Hex> {
  const userOperation = { ...prepared.userOperation }
  if (prepared.delegate) {
    const signature = await context.signAuthorization(prepared.delegate)
    const authorization: SignedAuthorization = {
      ...prepared.delegate,
      r: sliceHex(signature, 0, 32),
      s: sliceHex(signature, 32, 64),
      yParity: hexToNumber(sliceHex(signature, 64)) === 28 ? 1 : 0,
    }
    userOperation.authorization = authorization
  }
  userOperation.signature = await context.signTypedData(
    getUserOperationTypedData({ chainId: context.chain.id, entryPointAddress: entryPoint08Address, userOperation }),
  )
  try {
    return await rpc<Hex>(context, 'bundler', prepared.bundlerUrl, 'eth_sendUserOperation', [formatUserOperationRequest(userOperation), entryPoint08Address])
  } catch (error) {
    // No answer in time is not "nothing sent": the bundler may have taken it. Not a sponsorship
    // refusal either, so no fallback sends the calls a second time.
    if (!(error instanceof SponsorshipUnavailableError && (error.cause as Error | undefined)?.name === 'TimeoutError')) throw error
    const hash = getUserOperationHash({ chainId: context.chain.id, entryPointAddress: entryPoint08Address, entryPointVersion: '0.8', userOperation })
    throw new EmbeddedError('user_operation_unknown', 'The bundler did not answer; the operation may still be included.', {
      details: `UserOperation ${hash} was signed and given to the bundler, which did not answer eth_sendUserOperation within ${SPONSORSHIP_TIMEOUT_MS / 1000} s. Ask eth_getUserOperationReceipt for it before sending the calls again.`,
      cause: error,
    })
  }
}

/** The UserOperations sent from this page: pending until included, though the bundler's eth_getUserOperationByHash only finds included ones (Alto). */
const sent = new Map<Hex, () => void>()

/** An operation sent from this page is included: it leaves the pending ones and frees its nonce key. */
function included(hash: Hex) {
  sent.get(hash)?.()
  sent.delete(hash)
}

type RpcUserOperationReceipt = {
  success: boolean
  logs: { address: Address; data: Hex; topics: Hex[] }[]
  receipt: { blockHash: Hex; blockNumber: Hex; gasUsed: Hex; transactionHash: Hex }
}

/** The bundler's receipt of a UserOperation; `null` while it is not included. */
function receiptOf(context: Pick<UserOperationContext, 'fetch'>, bundler: string, hash: Hex) {
  return rpc<RpcUserOperationReceipt | null>(context, 'bundler', bundler, 'eth_getUserOperationReceipt', [hash])
}

/** Waits for the UserOperation's inclusion; answers the transaction that carried it. */
export async function transactionOf(context: Pick<UserOperationContext, 'fetch'>, bundler: string, hash: Hex): Promise<Hex> {
  const deadline = Date.now() + INCLUSION_TIMEOUT_MS
  for (let step = 0; ; step++) {
    const receipt = await receiptOf(context, bundler, hash)
    if (receipt) {
      included(hash)
      return receipt.receipt.transactionHash
    }
    if (Date.now() > deadline)
      throw new EmbeddedError('user_operation_pending', 'The operation was sent but is not included yet.', { details: `UserOperation ${hash}` })
    await new Promise((resolve) => setTimeout(resolve, WATCH_SCHEDULE_MS[Math.min(step, WATCH_SCHEDULE_MS.length - 1)]))
  }
}

/** A batch id for a UserOperation: the chain id (31 bytes), the flag 02, the UserOperation's hash (smartAccount.ts's decodeBatchId reads it). */
export function userOperationId(chainId: number, hash: Hex): Hex {
  return `${numberToHex(chainId, { size: 31 })}02${hash.slice(2)}` as Hex
}

/**
 * EIP-5792 `wallet_getCallsStatus` of a sponsored batch, from the bundler: 100 while the
 * UserOperation waits, then 200 (its calls ran) or 500 (they reverted) with the receipt of the
 * transaction that carried it and the operation's own logs. `undefined`: the bundler knows no such
 * operation.
 */
export async function userOperationStatus(context: Pick<UserOperationContext, 'fetch'>, bundler: string, chain: Chain, id: string, hash: Hex) {
  const base = { version: '2.0.0', id, chainId: numberToHex(chain.id), atomic: true }
  const receipt = await receiptOf(context, bundler, hash)
  if (!receipt) {
    if (sent.has(hash)) return { ...base, status: 100 }
    // After a reload: the bundler knows it (ERC-4337's lookup, or Alto's mempool status), or it is not ours.
    const [known, status] = await Promise.all([
      rpc<unknown>(context, 'bundler', bundler, 'eth_getUserOperationByHash', [hash]),
      rpc<{ status?: string } | null>(context, 'bundler', bundler, 'pimlico_getUserOperationStatus', [hash]).catch(() => null),
    ])
    return known || (status?.status && status.status !== 'not_found' && status.status !== 'rejected') ? { ...base, status: 100 } : undefined
  }
  included(hash)
  return {
    ...base,
    status: receipt.success ? 200 : 500,
    receipts: [
      {
        logs: receipt.logs.map(({ address, data, topics }) => ({ address, data, topics })),
        status: receipt.success ? '0x1' : '0x0',
        blockHash: receipt.receipt.blockHash,
        blockNumber: receipt.receipt.blockNumber,
        gasUsed: receipt.receipt.gasUsed,
        transactionHash: receipt.receipt.transactionHash,
      },
    ],
  }
}

/**
 * A sponsored send: {@link prepare}, then {@link signAndSend}. A refusal before the user signs
 * anything falls back to the ordinary transaction only with `fallback: 'user-pays'` (answers
 * `undefined`: the caller sends it); otherwise it is thrown and nothing is sent.
 */
export async function sendSponsored(
  context: UserOperationContext,
  calls: () => readonly BatchCall[],
  sponsorship: { paymasterUrl: string; context?: Record<string, unknown> | undefined; bundlerUrl: string | undefined; fallback?: 'user-pays' | undefined },
): Promise<{ hash: Hex; bundlerUrl: string } | undefined> {
  let prepared: PreparedOperation
  try {
    prepared = await prepare(context, calls(), sponsorship)
  } catch (error) {
    if (error instanceof SponsorshipUnavailableError && sponsorship.fallback === 'user-pays') return undefined
    throw error
  }
  return { hash: await signAndSend(context, prepared), bundlerUrl: prepared.bundlerUrl }
}

/** A transaction as the one call of a sponsored batch; a contract creation or an authorization list cannot be one. */
export function callOf(request: TransactionRequest): BatchCall {
  if (!request.to) throw new SponsorshipUnavailableError({ reason: 'target', details: 'A contract creation cannot be sponsored: the account runs calls only.' })
  if (request.authorizationList?.length)
    throw new SponsorshipUnavailableError({ reason: 'account', details: 'A transaction with its own EIP-7702 authorizations cannot be sponsored.' })
  return { to: request.to, value: request.value, data: request.data }
}
