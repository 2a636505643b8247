import { en } from '../i18n/en.js'
import { decodeCall, toCall } from './calls.js'
import { ReviewError } from './errors.js'
import { formatNative, formatNetwork, sameAddress, toAddress, toQuantity } from './format.js'
import { simulate } from './simulate.js'
import type { Review, ReviewContext, ReviewRow, ReviewWarning } from './types.js'
import { callWarnings, chainMismatch } from './warnings.js'

// wallet_sendCalls (EIP-5792): every call of the batch decoded on its own row, and the batch
// simulated in order, as the executor runs it (all or nothing). A warning several calls raise
// word for word is shown once, naming the calls; a batch of one call is titled as a transaction.

const fail = (reason: string) => new ReviewError('MALFORMED_CALLS', reason)

/**
 * The review of `wallet_sendCalls` (params: [{ version, chainId, from?, calls }]).
 *
 * @example
 * const review = await reviewBatch([{ version: '2.0.0', chainId: '0x7a69', calls }], context)
 */
export async function reviewBatch(params: readonly unknown[], context: ReviewContext): Promise<Review> {
  const request = params[0]
  if (typeof request !== 'object' || request === null || Array.isArray(request)) throw fail('The batch is not an object')
  const fields = request as Record<string, unknown>
  const chainId = toQuantity(fields.chainId)
  if (chainId === undefined) throw fail(`The batch's "chainId" is not a quantity: ${String(fields.chainId)}`)
  if (fields.from !== undefined && fields.from !== null) {
    const from = toAddress(fields.from)
    if (!from || !sameAddress(from, context.account)) throw fail(`The batch is from ${String(fields.from)}, not from this wallet's account ${context.account}`)
  }
  if (!Array.isArray(fields.calls) || fields.calls.length === 0) throw fail('The batch has no calls')
  const calls = fields.calls.map((call, index) => toCall(call, fail, `Call ${index + 1}`))

  const warnings: ReviewWarning[] = []
  if (chainId !== BigInt(context.chainId)) warnings.push(chainMismatch(Number(chainId), context.chainId))
  const decoded = await Promise.all(calls.map((call) => decodeCall(context, call)))
  warnings.push(...callWarnings(decoded.map((call) => call.warnings)))
  const rows: ReviewRow[] = [
    { label: en.rowNetwork, value: formatNetwork(Number(chainId)) },
    ...decoded.map((call, index) => ({ label: `Call ${index + 1}`, value: call.action })),
    { label: en.rowTotalValue, value: formatNative(calls.reduce((sum, call) => sum + call.value, 0n)) },
  ]
  return {
    kind: 'batch',
    title: calls.length === 1 ? en.titleTransaction : `Send ${calls.length} calls at once`,
    origin: context.origin,
    rows,
    tree: decoded.map((call, index) => ({ label: `Call ${index + 1} to ${calls[index]!.to ?? 'a new contract'}`, children: [call.node] })),
    warnings,
    simulation: simulate(context, calls),
  }
}
