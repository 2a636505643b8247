// EIP-7702 smart accounts and EIP-5792 call batches, loaded with the first capability query,
// upgrade or batch: ABI encoding and the authorization hash stay out of sign-in's download.
import { BATCH_CALLS_PARAMETERS, BATCH_EXECUTOR_ABI, BATCH_MODE } from '@latchkey/constants/batch-executor'
import {
  type Address,
  type Chain,
  createClient,
  encodeAbiParameters,
  encodeFunctionData,
  type Hex,
  hexToNumber,
  http,
  isAddressEqual,
  numberToHex,
  type SignedAuthorization,
  size,
  sliceHex,
} from 'viem'
import { getCode, getTransactionCount, waitForTransactionReceipt } from 'viem/actions'
import { InvalidAuthorizationError } from './errors.js'
import { ProviderRpcError } from './provider.js'
import type { EmbeddedWallet } from './wallet.js'

/** EIP-5792's `atomic` capability: what the wallet can do with a batch on a chain. */
export type AtomicStatus = 'supported' | 'ready' | 'unsupported'

/** One call of a batch (EIP-5792 `calls[]`). */
export type BatchCall = { to?: Address | undefined; value?: bigint | undefined; data?: Hex | undefined }

/** A transaction the wallet signs and broadcasts: its own `sendTransaction`, with an authorization list. */
export type SendRequest = { to: Address; data: Hex; value?: bigint; nonce?: number; authorizationList?: readonly SignedAuthorization[] }

/** What the wallet lends this module: the account, its chain, the executor, and its two signing paths. */
export type SmartAccountContext = {
  account: Address
  chain: Chain
  /** The batch executor the wallet delegates to; `undefined`: smart accounts are turned off. */
  executor: Address | undefined
  /** Signs an EIP-7702 authorization through sign_raw_payload (the kms hashes it and sees the contract): r ‖ s ‖ v. */
  signAuthorization(authorization: { address: Address; chainId: number; nonce: number }): Promise<Hex>
  send(request: SendRequest): Promise<Hex>
}

/**
 * The ERC-4337 bundler of `chain` for sponsored calls: `bundlerUrls` (the sponsorship option) first,
 * else the chain's own `rpcUrls.bundler`; `undefined` when neither names one.
 */
export function bundlerUrl(chain: Chain, bundlerUrls: Record<number, string> | undefined): string | undefined {
  return bundlerUrls?.[chain.id] ?? (chain.rpcUrls as { bundler?: { http: readonly string[] } }).bundler?.http[0]
}

/** EIP-7702 delegation designator: the code of a delegated account is `0xef0100 ‖ address`. */
const DESIGNATOR = '0xef0100'

function publicClient(chain: Chain) {
  return createClient({ chain, transport: http(chain.rpcUrls.default.http[0]) })
}

/**
 * The contract an account delegates to (EIP-7702), read from its code: `0xef0100 ‖ address`;
 * `undefined` for an account without code.
 *
 * @example
 * delegateOf('0xef0100' + executor.slice(2)) // executor
 */
export function delegateOf(code: Hex | undefined): Address | 'other' | undefined {
  if (!code || code === '0x') return undefined
  if (size(code) === 23 && code.toLowerCase().startsWith(DESIGNATOR)) return sliceHex(code, 3)
  return 'other'
}

/**
 * EIP-5792 `atomic` on the context's chain: 'supported' when the account delegates to the
 * executor; 'ready' when it has no code and the executor is deployed (the first batch upgrades
 * it); 'unsupported' otherwise (no executor there, or delegated to someone else's contract, which
 * the wallet does not replace on its own).
 */
export async function atomicStatus(context: Pick<SmartAccountContext, 'account' | 'chain' | 'executor'>): Promise<AtomicStatus> {
  const { account, chain, executor } = context
  if (!executor) return 'unsupported'
  const client = publicClient(chain)
  const [accountCode, executorCode] = await Promise.all([getCode(client, { address: account }), getCode(client, { address: executor })])
  const delegate = delegateOf(accountCode)
  if (delegate && delegate !== 'other' && isAddressEqual(delegate, executor)) return 'supported'
  if (delegate || !executorCode || executorCode === '0x') return 'unsupported'
  return 'ready'
}

/** The calldata of `execute(BATCH_MODE, abi.encode(calls))` on the account itself. */
export function executeData(calls: readonly BatchCall[]): Hex {
  const encoded = encodeAbiParameters(BATCH_CALLS_PARAMETERS, [
    calls.map((call) => ({ to: call.to ?? '0x0000000000000000000000000000000000000000', value: call.value ?? 0n, data: call.data ?? '0x' })),
  ])
  return encodeFunctionData({ abi: BATCH_EXECUTOR_ABI, functionName: 'execute', args: [BATCH_MODE, encoded] })
}

/**
 * Signs an EIP-7702 authorization that delegates the account to the executor: the hash
 * `keccak256(0x05 ‖ rlp([chainId, address, nonce]))` goes to the kms as a raw payload. The
 * account sends the upgrade itself, so its nonce at that moment is the transaction's nonce + 1.
 * An authorization for another contract, another chain (0 is every chain) or another nonce is
 * refused before anything is signed or sent.
 */
export async function signAuthorization(
  context: SmartAccountContext,
  requested: { address?: Address | undefined; chainId?: number | undefined; nonce?: number | undefined } = {},
): Promise<{ authorization: SignedAuthorization; transactionNonce: number }> {
  const { account, chain, executor } = context
  if (!executor) throw new InvalidAuthorizationError({ details: 'Smart accounts are turned off for this wallet (no batch executor).' })
  const address = requested.address ?? executor
  if (!isAddressEqual(address, executor))
    throw new InvalidAuthorizationError({ details: `The wallet delegates only to its batch executor ${executor}, not to ${address}.` })
  const chainId = requested.chainId ?? chain.id
  if (chainId !== chain.id) throw new InvalidAuthorizationError({ details: `The authorization is for chain ${chainId}; the wallet is on chain ${chain.id}.` })
  const transactionNonce = await getTransactionCount(publicClient(chain), { address: account, blockTag: 'pending' })
  const nonce = requested.nonce ?? transactionNonce + 1
  if (nonce !== transactionNonce + 1)
    throw new InvalidAuthorizationError({ details: `The authorization has nonce ${nonce}; the account's next authorization nonce is ${transactionNonce + 1}.` })
  const signature = await context.signAuthorization({ address, chainId, nonce })
  const authorization: SignedAuthorization = {
    address,
    chainId,
    nonce,
    r: sliceHex(signature, 0, 32),
    s: sliceHex(signature, 32, 64),
    yParity: hexToNumber(sliceHex(signature, 64)) === 28 ? 1 : 0,
  }
  return { authorization, transactionNonce }
}

/**
 * Delegates the account to the executor: one type-4 transaction from the account to itself with
 * the signed authorization and no calls. Waits for it; answers its hash and whether the account
 * now delegates to the executor (read back from the chain).
 */
export async function upgrade(context: SmartAccountContext, requested?: Parameters<typeof signAuthorization>[1]): Promise<{ hash: Hex; upgraded: boolean }> {
  const { authorization, transactionNonce } = await signAuthorization(context, requested)
  const hash = await context.send({ to: context.account, data: '0x', nonce: transactionNonce, authorizationList: [authorization] })
  const receipt = await waitForTransactionReceipt(publicClient(context.chain), { hash })
  return { hash, upgraded: receipt.status === 'success' && (await atomicStatus(context)) === 'supported' }
}

/** How a batch was sent: the transaction hashes, in order (one when atomic). */
export type SentBatch = { atomic: boolean; hashes: readonly Hex[] }

/**
 * EIP-5792 `wallet_sendCalls`: on an upgraded account one transaction to itself runs the batch
 * through the executor, all or none. A 'ready' account is upgraded by the same transaction (it
 * carries the authorization), so the first batch is atomic too. Where the executor is missing the
 * calls go one transaction each, unless atomicity was required (then 5760, nothing sent).
 */
export async function sendBatch(context: SmartAccountContext, calls: readonly BatchCall[], atomicRequired: boolean): Promise<SentBatch> {
  const status = await atomicStatus(context)
  if (status === 'supported') return { atomic: true, hashes: [await context.send({ to: context.account, data: executeData(calls) })] }
  if (status === 'ready') {
    const { authorization, transactionNonce } = await signAuthorization(context)
    const hash = await context.send({ to: context.account, data: executeData(calls), nonce: transactionNonce, authorizationList: [authorization] })
    return { atomic: true, hashes: [hash] }
  }
  if (atomicRequired) throw Object.assign(new Error('The wallet cannot run these calls atomically on this chain.'), { code: 5760 })
  const hashes: Hex[] = []
  for (const call of calls)
    hashes.push(await context.send({ to: call.to ?? context.account, data: call.data ?? '0x', ...(call.value ? { value: call.value } : {}) }))
  return { atomic: false, hashes }
}

/**
 * A batch id that carries what `wallet_getCallsStatus` needs: the chain id (32 bytes), then the
 * transaction hashes. Survives a reload without any storage; EIP-5792 leaves the format to the wallet.
 */
export function encodeBatchId(chainId: number, batch: SentBatch): Hex {
  return `${numberToHex(chainId, { size: 31 })}${batch.atomic ? '01' : '00'}${batch.hashes.map((hash) => hash.slice(2)).join('')}` as Hex
}

/**
 * The chain, the atomic flag and the hashes of an id from {@link encodeBatchId}, or of a sponsored
 * batch (flag 02, userOperations.ts: one UserOperation hash, `userOperation: true`); `undefined` for anything else.
 */
export function decodeBatchId(id: string): { chainId: number; atomic: boolean; hashes: Hex[]; userOperation: boolean } | undefined {
  if (!/^0x(?:[0-9a-f]{64})+$/.test(id) || id.length < 2 + 64 * 2) return undefined
  const flag = id.slice(64, 66)
  if (flag !== '00' && flag !== '01' && flag !== '02') return undefined
  const chainId = Number.parseInt(id.slice(2, 64), 16)
  if (!Number.isSafeInteger(chainId)) return undefined
  const hashes = (id.slice(66).match(/.{64}/g) ?? []).map((hash) => `0x${hash}` as Hex)
  if (flag === '02' && hashes.length !== 1) return undefined
  return { chainId, atomic: flag !== '00', hashes, userOperation: flag === '02' }
}

type RpcReceipt = { status: Hex; blockHash: Hex; blockNumber: Hex; gasUsed: Hex; transactionHash: Hex; logs: { address: Address; data: Hex; topics: Hex[] }[] }

/**
 * EIP-5792 `wallet_getCallsStatus` of a batch this wallet sent: 100 while a transaction is
 * pending, 200 when all succeeded, 500 when the batch reverted (all failed), 600 when some of a
 * non-atomic batch failed; the receipts as EIP-5792 shapes them. `undefined` when the chain knows
 * none of the transactions (not a batch of this wallet's).
 */
export async function callsStatus(chain: Chain, id: string, batch: { atomic: boolean; hashes: readonly Hex[] }) {
  const client = publicClient(chain)
  const receipts = await Promise.all(
    batch.hashes.map((hash) => client.request({ method: 'eth_getTransactionReceipt', params: [hash] }) as Promise<RpcReceipt | null>),
  )
  if (receipts.some((receipt) => !receipt)) {
    const known = await Promise.all(batch.hashes.map((hash) => client.request({ method: 'eth_getTransactionByHash', params: [hash] })))
    if (known.every((transaction) => !transaction)) return undefined
    return { version: '2.0.0', id, chainId: numberToHex(chain.id), atomic: batch.atomic, status: 100 }
  }
  const done = receipts as RpcReceipt[]
  const failed = done.filter((receipt) => receipt.status !== '0x1').length
  return {
    version: '2.0.0',
    id,
    chainId: numberToHex(chain.id),
    atomic: batch.atomic,
    status: failed === 0 ? 200 : failed === done.length ? 500 : 600,
    receipts: done.map((receipt) => ({
      logs: receipt.logs.map(({ address, data, topics }) => ({ address, data, topics })),
      status: receipt.status,
      blockHash: receipt.blockHash,
      blockNumber: receipt.blockNumber,
      gasUsed: receipt.gasUsed,
      transactionHash: receipt.transactionHash,
    })),
  }
}

/** EIP-5792 `wallet_sendCalls` parameters (v2; v1 without `atomicRequired`). */
type SendCallsRequest = {
  version?: string
  from?: string
  chainId?: Hex
  atomicRequired?: boolean
  calls: { to?: `0x${string}`; data?: Hex; value?: Hex; capabilities?: Record<string, { optional?: boolean }> }[]
  capabilities?: Record<string, { optional?: boolean }>
}

/** ERC-7677's capability: the paymaster service to sponsor this batch (its URL, and the context it is sent). */
export type PaymasterService = { url: string; context?: Record<string, unknown> | undefined; optional?: boolean | undefined }

/**
 * EIP-5792: a capability the wallet does not have must be marked optional, else 5700. The embedded
 * wallet offers one: ERC-7677's `paymasterService`, for the whole batch (`allowed` names it).
 */
function unsupportedCapability(capabilities: Record<string, { optional?: boolean }> | undefined, allowed: readonly string[] = []) {
  for (const [name, value] of Object.entries(capabilities ?? {}))
    if (!allowed.includes(name) && value?.optional !== true) throw new ProviderRpcError(5700, `Unsupported non-optional capability: ${name}`)
}

/** The batch's `paymasterService` capability, checked: a URL string, a context object if any. */
function paymasterServiceOf(capabilities: Record<string, unknown> | undefined): PaymasterService | undefined {
  const value = capabilities?.['paymasterService'] as Partial<PaymasterService> | undefined
  if (value === undefined) return undefined
  if (!value || typeof value.url !== 'string' || (value.context !== undefined && (typeof value.context !== 'object' || value.context === null)))
    throw new ProviderRpcError(-32602, 'paymasterService needs { url: string, context?: object }')
  return { url: value.url, ...(value.context ? { context: value.context } : {}), ...(value.optional === true ? { optional: true } : {}) }
}

/**
 * The EIP-5792 methods of the embedded provider: `wallet_getCapabilities`, `wallet_sendCalls`
 * (v2 and v1) and `wallet_getCallsStatus`, with the EIP's error codes (5700, 5730).
 */
export async function callsRequest(wallet: EmbeddedWallet, method: string, params: unknown[], account: (requested?: unknown) => Address): Promise<unknown> {
  switch (method) {
    case 'wallet_getCapabilities': {
      const [address, chainIds] = params as [string | undefined, Hex[] | undefined]
      account(address)
      return wallet.getCapabilities(chainIds?.map((id) => Number(id)))
    }
    case 'wallet_sendCalls': {
      const [batch] = params as [SendCallsRequest]
      account(batch.from)
      unsupportedCapability(batch.capabilities, ['paymasterService'])
      for (const call of batch.calls) unsupportedCapability(call.capabilities)
      const paymasterService = paymasterServiceOf(batch.capabilities)
      return wallet.sendCalls({
        chainId: batch.chainId === undefined ? undefined : Number(batch.chainId),
        atomicRequired: batch.atomicRequired === true,
        ...(paymasterService ? { paymasterService } : {}),
        calls: batch.calls.map((call) => ({ to: call.to, data: call.data, value: call.value === undefined ? undefined : BigInt(call.value) })),
      })
    }
    default: {
      const [id] = params as [string]
      const status = await wallet.getCallsStatus(id)
      if (!status) throw new ProviderRpcError(5730, 'Unknown bundle id')
      return status
    }
  }
}
