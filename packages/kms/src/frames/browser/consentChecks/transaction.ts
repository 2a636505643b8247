import { formatGwei, getAddress, type Hex, parseTransaction, type TransactionSerializable } from 'viem'
import { en } from '../i18n/en.js'
import type { Call } from '../review/calls.js'
import { toCall } from '../review/calls.js'
import { formatNative, formatNetwork, sameAddress, toAddress, toQuantity } from '../review/format.js'
import type { ReviewRow } from '../review/types.js'
import { type Activity, assertSignWith, assertType, isObject, type PayloadFacts, type PayloadSettings, unbound } from './activity.js'

// eth_sendTransaction: SIGN_TRANSACTION_V2 with the unsigned serialized transaction (no 0x). Its
// recipient, value, calldata and chain must be the request's and it is signed by the account; gas,
// fees and the nonce are the wallet's to fill, and the dialog shows the fee they allow.

/** The unsigned transaction of a SIGN_TRANSACTION_V2 body, parsed and checked against the context's account and chain. */
export function unsignedTransaction(activity: Activity, context: { account: string; chainId: number }, settings: PayloadSettings) {
  assertType(activity, ['ACTIVITY_TYPE_SIGN_TRANSACTION_V2'], 'a transaction signature')
  const { unsignedTransaction: raw, type } = activity.parameters
  if (type !== 'TRANSACTION_TYPE_ETHEREUM') throw unbound(`the payload's transaction type is ${String(type)}, not TRANSACTION_TYPE_ETHEREUM`)
  assertSignWith(activity, context.account)
  if (typeof raw !== 'string' || !/^(?:0x)?(?:[0-9a-fA-F]{2})+$/.test(raw)) throw unbound('the payload holds no serialized transaction')
  let transaction: TransactionSerializable
  try {
    transaction = parseTransaction((raw.startsWith('0x') ? raw : `0x${raw}`) as Hex)
  } catch {
    throw unbound('the payload holds no serialized transaction')
  }
  if (transaction.chainId !== context.chainId)
    throw unbound(`the transaction is for chain ${String(transaction.chainId ?? 'none')}, not for the wallet's chain ${context.chainId}`)
  const authorizations = 'authorizationList' in transaction ? (transaction.authorizationList ?? []) : []
  for (const authorization of authorizations) {
    if (!settings.executor || !sameAddress(authorization.address, settings.executor))
      throw unbound(`the transaction delegates the account to ${getAddress(authorization.address)}, not to the wallet's batch executor`)
    if (authorization.chainId !== context.chainId)
      throw unbound(`the transaction's authorization is for chain ${authorization.chainId}, not ${context.chainId}`)
  }
  return { transaction, authorizations }
}

/** The fee the signed transaction allows at most: gas × the highest price it offers. */
export function feeRow(transaction: TransactionSerializable): ReviewRow | undefined {
  const price = transaction.maxFeePerGas ?? transaction.gasPrice
  if (transaction.gas === undefined || price === undefined) return undefined
  return { label: en.rowFeeAtMost, value: `${formatNative(transaction.gas * price)} (${transaction.gas} gas at ${formatGwei(price)} gwei)` }
}

export function checkTransaction(
  activity: Activity,
  params: readonly unknown[],
  context: { account: string; chainId: number },
  settings: PayloadSettings,
): PayloadFacts {
  const { transaction } = unsignedTransaction(activity, context, settings)
  const raw = params[0]
  let requested: Call
  try {
    requested = toCall(raw, unbound)
  } catch (error) {
    throw unbound(`the requested transaction is malformed: ${(error as Error).message}`)
  }
  const fields = isObject(raw) ? raw : {}
  if (fields.from !== undefined && fields.from !== null && !sameAddress(toAddress(fields.from) ?? '', context.account))
    throw unbound(`the requested transaction is from ${String(fields.from)}, not from the account ${context.account}`)
  const chainId = fields.chainId === undefined || fields.chainId === null ? BigInt(context.chainId) : toQuantity(fields.chainId)
  if (chainId !== BigInt(context.chainId))
    throw unbound(`the requested transaction is for ${formatNetwork(Number(chainId ?? 0))}, but the wallet is on ${formatNetwork(context.chainId)}`)
  assertSameCall(transaction, requested, 'the payload does not send the requested transaction')
  const fee = feeRow(transaction)
  return { rows: fee ? [fee] : [] }
}

/** Throws `message` unless the transaction sends exactly `call`. */
export function assertSameCall(transaction: TransactionSerializable, call: Call, message: string) {
  const to = transaction.to ?? undefined
  const sameTo = to === undefined || call.to === undefined ? to === call.to : sameAddress(to, call.to)
  if (!sameTo || (transaction.value ?? 0n) !== call.value || (transaction.data ?? '0x').toLowerCase() !== call.data.toLowerCase()) throw unbound(message)
}
