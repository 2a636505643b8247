import { BATCH_CALLS_PARAMETERS, BATCH_MODE } from '@latchkey/constants/batch-executor'
import { decodeAbiParameters, formatUnits, getAddress, type Hex, numberToHex, size, slice } from 'viem'
import { en } from '../i18n/en.js'
import { reviewBatch } from './batch.js'
import { ReviewError } from './errors.js'
import { formatNative, formatNetwork, sameAddress, toAddress, toQuantity } from './format.js'
import { readToken } from './tokens.js'
import type { Review, ReviewContext, ReviewRow, ReviewWarning } from './types.js'
import { unreadableToken } from './warnings.js'

// A UserOperation the wallet asks to sign as EntryPoint v0.8's EIP-712 message (viem's
// getUserOperationTypedData): reviewed as what it does, not as a typed-data tree. Its callData is
// the batch executor's ERC-7821 `execute` of a batch, reviewed exactly as wallet_sendCalls is
// (its title, decoded calls, tokens, warnings, the simulation from the account): it reads as the
// EIP-7702 batch the account would send itself, plus a delegation riding with it and the fee row,
// which says who pays the gas, read from paymasterAndData and the gas fields; the EntryPoint, the
// paymaster's data and the gas limits stay in the raw data. Anything that looks like a UserOperation but is
// not one of this account, for EntryPoint v0.8 on this chain, through the executor, is refused.

/** EntryPoint v0.8, at its canonical (deterministic) address on every chain. */
export const ENTRY_POINT_V08 = '0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108'

/** The EntryPoint v0.8 `PackedUserOperation` type, field for field (viem's getUserOperationTypedData). */
const PACKED_USER_OPERATION = [
  ['sender', 'address'],
  ['nonce', 'uint256'],
  ['initCode', 'bytes'],
  ['callData', 'bytes'],
  ['accountGasLimits', 'bytes32'],
  ['preVerificationGas', 'uint256'],
  ['gasFees', 'bytes32'],
  ['paymasterAndData', 'bytes'],
] as const

/** EntryPoint v0.8's initCode marker of an EIP-7702 account: 0x7702 padded to 20 bytes. */
const EIP7702_MARKER = '0x7702000000000000000000000000000000000000'

/**
 * OpenZeppelin PaymasterERC20's `_postOpCost()`, PaymasterERC20Guarantor's `_guaranteedPostOpCost()`
 * (charged to the account too when a guarantor fronted the operation), and the unused-postOp-gas
 * penalty (`_postOpGasPenalty`).
 */
const POST_OP_COST = 30_000n
const GUARANTEED_POST_OP_COST = 15_000n
const postOpPenalty = (postOpGasLimit: bigint) => (postOpGasLimit > 40_000n ? postOpGasLimit / 10n : 0n)

type Fields = Record<string, unknown>

const malformed = (reason: string) => new ReviewError('MALFORMED_USER_OPERATION', reason)
const refused = (reason: string) => new ReviewError('REFUSED_USER_OPERATION', reason)

/**
 * Whether typed data claims to be a UserOperation: its primary type, or its domain's name, is
 * EntryPoint's. Such data is reviewed (and signed) only as a UserOperation.
 */
export const isUserOperation = (primaryType: string, domain: Fields): boolean => primaryType === 'PackedUserOperation' || domain.name === 'ERC4337'

const bytesOf = (message: Fields, field: string, length?: number): Hex => {
  const value = message[field]
  if (typeof value !== 'string' || !/^0x(?:[0-9a-fA-F]{2})*$/.test(value) || (length !== undefined && size(value as Hex) !== length))
    throw malformed(`The UserOperation's "${field}" is not ${length === undefined ? 'hex bytes' : `${length} bytes`}: ${String(value)}`)
  return value as Hex
}

/** The high and low 128 bits of a bytes32 (accountGasLimits, gasFees). */
const halves = (word: Hex): [bigint, bigint] => [BigInt(slice(word, 0, 16)), BigInt(slice(word, 16, 32))]

/** The token paymaster's quote in its paymasterData (validAfter 6 ‖ validUntil 6 ‖ token 20 ‖ tokenPerNative 32 ‖ guarantor 20 ‖ …), as the server's paymaster/data.ts lays it out. */
export function decodeTokenQuote(paymasterData: Hex): { token: `0x${string}`; tokenPerNative: bigint; guaranteed: boolean } | undefined {
  if (size(paymasterData) < 84) return undefined
  return {
    token: getAddress(slice(paymasterData, 12, 32)),
    tokenPerNative: BigInt(slice(paymasterData, 32, 64)),
    guaranteed: BigInt(slice(paymasterData, 64, 84)) !== 0n,
  }
}

/**
 * The most tokens OpenZeppelin's PaymasterERC20 may charge the account: `(maxCost + (postOpCost +
 * penalty) × maxFeePerGas) × tokenPerNative / 1e18`, rounded up, plus the guarantor's postOp gas
 * when one fronted the operation (PaymasterERC20Guarantor pulls that from the account as well).
 */
export function maxTokenCost(maxCost: bigint, maxFeePerGas: bigint, postOpGasLimit: bigint, tokenPerNative: bigint, guaranteed = false): bigint {
  const native = maxCost + (POST_OP_COST + postOpPenalty(postOpGasLimit) + (guaranteed ? GUARANTEED_POST_OP_COST : 0n)) * maxFeePerGas
  const product = native * tokenPerNative
  return product / 10n ** 18n + (product % 10n ** 18n > 0n ? 1n : 0n)
}

/** ERC-7821 `execute(bytes32 mode, bytes executionData)`: its selector and arguments. */
const EXECUTE_SELECTOR = '0xe9ae5c53'
const EXECUTE_ARGUMENTS = [{ type: 'bytes32' }, { type: 'bytes' }] as const

/** The calls of the executor's `execute(BATCH_MODE, abi.encode(calls))`, or a refusal. */
function batchCalls(callData: Hex) {
  try {
    if (size(callData) < 4 || slice(callData, 0, 4) !== EXECUTE_SELECTOR) throw new Error('selector')
    const [mode, executionData] = decodeAbiParameters(EXECUTE_ARGUMENTS, slice(callData, 4))
    if (mode.toLowerCase() !== BATCH_MODE) throw new Error('mode')
    return decodeAbiParameters(BATCH_CALLS_PARAMETERS, executionData)[0]
  } catch {
    throw refused("The UserOperation's callData is not the batch executor's execute of a batch of calls")
  }
}

/**
 * The review of typed data that is EntryPoint v0.8's `PackedUserOperation` message (already
 * checked against its types by the caller).
 *
 * @example
 * await reviewUserOperation(context, getUserOperationTypedData({ chainId, entryPointAddress, userOperation }), raw)
 */
export async function reviewUserOperation(
  context: ReviewContext,
  typed: { types: Record<string, unknown>; primaryType: string; domain: Fields; message: Fields },
  raw: string,
): Promise<Review> {
  const { types, primaryType, domain, message } = typed
  const fields = types.PackedUserOperation as readonly { name: string; type: string }[] | undefined
  if (
    primaryType !== 'PackedUserOperation' ||
    !fields ||
    fields.length !== PACKED_USER_OPERATION.length ||
    fields.some((field, index) => field.name !== PACKED_USER_OPERATION[index]![0] || field.type !== PACKED_USER_OPERATION[index]![1]) ||
    Object.keys(types).some((name) => name !== 'PackedUserOperation' && name !== 'EIP712Domain')
  )
    throw refused("The UserOperation is not EntryPoint v0.8's PackedUserOperation message")
  const entryPoint = toAddress(domain.verifyingContract)
  if (domain.name !== 'ERC4337' || domain.version !== '1' || !entryPoint || !sameAddress(entryPoint, ENTRY_POINT_V08))
    throw refused(`The UserOperation is for the EntryPoint at ${entryPoint ?? String(domain.verifyingContract)}, not for EntryPoint v0.8 at ${ENTRY_POINT_V08}`)
  const chainId = toQuantity(domain.chainId)
  if (chainId !== BigInt(context.chainId))
    throw refused(`The UserOperation is for chain ${String(domain.chainId)}, but the wallet is on ${formatNetwork(context.chainId)}`)
  const sender = toAddress(message.sender)
  if (!sender || !sameAddress(sender, context.account))
    throw refused(`The UserOperation is sent from ${sender ?? String(message.sender)}, not from this wallet's account ${context.account}`)

  const initCode = bytesOf(message, 'initCode')
  const callData = bytesOf(message, 'callData')
  const [verificationGasLimit, callGasLimit] = halves(bytesOf(message, 'accountGasLimits', 32))
  const [, maxFeePerGas] = halves(bytesOf(message, 'gasFees', 32))
  const preVerificationGas = toQuantity(message.preVerificationGas)
  if (preVerificationGas === undefined) throw malformed(`The UserOperation's "preVerificationGas" is not a quantity: ${String(message.preVerificationGas)}`)
  const paymasterAndData = bytesOf(message, 'paymasterAndData')
  if (paymasterAndData !== '0x' && size(paymasterAndData) < 52)
    throw malformed("The UserOperation's paymasterAndData is shorter than a paymaster and its two gas limits (52 bytes)")

  // The delegation that rides with the op: EntryPoint v0.8 hashes the account's delegate in
  // place of the 0x7702 marker, so the signed initCode names the delegate (or the bare marker).
  const rows: ReviewRow[] = []
  const warnings: ReviewWarning[] = []
  if (initCode !== '0x') {
    const delegate = size(initCode) === 20 ? getAddress(initCode) : undefined
    if (!delegate) throw refused("The UserOperation's initCode deploys or initializes an account; this wallet only delegates to its batch executor")
    if (!context.executor || !(sameAddress(delegate, EIP7702_MARKER) || sameAddress(delegate, context.executor)))
      throw refused(`The UserOperation delegates the account to ${delegate}, not to the wallet's batch executor`)
    rows.push({ label: en.rowDelegateTo, value: context.executor }, { label: en.rowValidOn, value: formatNetwork(context.chainId) })
  }

  const calls = batchCalls(callData)
  if (calls.length === 0) throw refused('The UserOperation runs no calls')
  const batch = await reviewBatch(
    [
      {
        version: '2.0.0',
        chainId: numberToHex(context.chainId),
        from: context.account,
        calls: calls.map((call) => ({ ...call, value: numberToHex(call.value) })),
      },
    ],
    context,
  )

  // Who pays the gas: the account (no paymaster), the app (its sponsor paymaster), the account in
  // a token (the app's token paymaster), or a paymaster the app never named.
  let paymaster: `0x${string}` | undefined
  let paymasterVerificationGasLimit = 0n
  let paymasterPostOpGasLimit = 0n
  let paymasterData: Hex = '0x'
  if (paymasterAndData !== '0x') {
    paymaster = getAddress(slice(paymasterAndData, 0, 20))
    paymasterVerificationGasLimit = BigInt(slice(paymasterAndData, 20, 36))
    paymasterPostOpGasLimit = BigInt(slice(paymasterAndData, 36, 52))
    paymasterData = size(paymasterAndData) === 52 ? '0x' : slice(paymasterAndData, 52)
  }
  const maxCost = (verificationGasLimit + callGasLimit + paymasterVerificationGasLimit + paymasterPostOpGasLimit + preVerificationGas) * maxFeePerGas
  const label = 'Network fee'
  let fee: ReviewRow
  if (!paymaster) fee = { label, value: `up to ${formatNative(maxCost)}` }
  else if (context.paymasters?.sponsor && sameAddress(paymaster, context.paymasters.sponsor))
    fee = { label, value: `sponsored by ${context.appName ?? 'the app'}` }
  else if (context.paymasters?.token && sameAddress(paymaster, context.paymasters.token)) {
    const quote = decodeTokenQuote(paymasterData)
    if (!quote) throw malformed("The token paymaster's data is too short to hold its quote (token and price)")
    const cost = maxTokenCost(maxCost, maxFeePerGas, paymasterPostOpGasLimit, quote.tokenPerNative, quote.guaranteed)
    const info = await readToken(context, quote.token)
    if (!info) warnings.push(unreadableToken(quote.token))
    fee = { label, value: info ? `up to ${formatUnits(cost, info.decimals)} ${info.symbol}` : `up to ${cost} units of ${quote.token}` }
  } else {
    fee = { label, value: `paid by ${paymaster}`, tone: 'warning' }
    warnings.push({
      level: 'warning',
      text: `The paymaster ${paymaster} is not one this app configured: it decides whether, and for what, this operation runs.`,
    })
  }

  return {
    ...batch,
    kind: 'userOperation',
    rows: [...batch.rows, ...rows, fee],
    warnings: [...warnings, ...batch.warnings],
    raw,
  }
}
