import { en } from '../i18n/en.js'
import { delegationRefusal, describeAuthorization, toAuthorization } from './authorization.js'
import { decodeCall, toCall } from './calls.js'
import { ReviewError } from './errors.js'
import { feeRow } from './fee.js'
import { formatNative, formatNetwork, sameAddress, toAddress, toQuantity } from './format.js'
import { simulate } from './simulate.js'
import type { Review, ReviewContext, ReviewRow, ReviewWarning } from './types.js'
import { chainMismatch } from './warnings.js'

// eth_sendTransaction: the network, recipient, value and fee, the calldata decoded, an EIP-7702
// authorization list checked against the executor, and the simulation of the call.

const fail = (reason: string) => new ReviewError('MALFORMED_TRANSACTION', reason)

function optionalQuantity(fields: Record<string, unknown>, name: string): bigint | undefined {
  const raw = fields[name]
  if (raw === undefined || raw === null) return undefined
  const value = toQuantity(raw)
  if (value === undefined) throw fail(`The transaction's "${name}" is not a quantity: ${String(raw)}`)
  return value
}

/**
 * The review of `eth_sendTransaction` (params: [transaction]).
 *
 * @example
 * const review = await reviewTransaction([{ to: token, data: transferData }], context)
 * review.rows // [{ label: 'Network', value: 'Anvil A (31337)' }, { label: 'To', … }, …]
 */
export async function reviewTransaction(params: readonly unknown[], context: ReviewContext): Promise<Review> {
  const raw = params[0]
  const call = toCall(raw, fail)
  const fields = raw as Record<string, unknown>
  if (fields.from !== undefined && fields.from !== null) {
    const from = toAddress(fields.from)
    if (!from) throw fail(`The transaction's "from" is not an address: ${String(fields.from)}`)
    if (!sameAddress(from, context.account)) throw fail(`The transaction is from ${from}, not from this wallet's account ${context.account}`)
  }
  const chainId = optionalQuantity(fields, 'chainId')
  const fees = {
    gas: optionalQuantity(fields, 'gas'),
    maxFeePerGas: optionalQuantity(fields, 'maxFeePerGas'),
    gasPrice: optionalQuantity(fields, 'gasPrice'),
  }
  optionalQuantity(fields, 'maxPriorityFeePerGas')
  optionalQuantity(fields, 'nonce')
  const list = fields.authorizationList
  if (list !== undefined && list !== null && !Array.isArray(list)) throw fail('The transaction\'s "authorizationList" is not a list')
  const authorizations = (list ?? []).map(toAuthorization)

  const warnings: ReviewWarning[] = []
  if (chainId !== undefined && chainId !== BigInt(context.chainId)) warnings.push(chainMismatch(Number(chainId), context.chainId))
  const [decoded, fee] = await Promise.all([decodeCall(context, call), feeRow(context, call, fees)])
  warnings.push(...decoded.warnings)
  const rows: ReviewRow[] = [
    { label: en.rowNetwork, value: formatNetwork(chainId === undefined ? context.chainId : Number(chainId)) },
    { label: en.rowTo, value: call.to ?? 'a new contract' },
    { label: en.rowValue, value: formatNative(call.value) },
    fee,
    { label: en.rowAction, value: decoded.action },
  ]
  let refusal: string | undefined
  for (const authorization of authorizations) {
    const described = describeAuthorization(context, authorization)
    rows.push(...described.rows)
    warnings.push(...described.warnings)
    refusal ??= delegationRefusal(context, authorization.address)
  }
  return {
    kind: 'transaction',
    title: en.titleTransaction,
    origin: context.origin,
    rows,
    tree: [decoded.node],
    raw: call.data,
    warnings,
    simulation: simulate(context, [call]),
    ...(refusal ? { refusal } : {}),
  }
}
