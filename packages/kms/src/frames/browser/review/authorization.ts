import { en } from '../i18n/en.js'
import { ReviewError } from './errors.js'
import { formatNetwork, sameAddress, toAddress, toQuantity } from './format.js'
import type { Review, ReviewContext, ReviewRow, ReviewWarning } from './types.js'
import { REFUSED_DELEGATION } from './warnings.js'

// EIP-7702 authorizations: an account that delegates hands its whole balance to the delegate's
// code, so the only delegate the frame lets the user approve is the wallet's own executor.

/** The refusal for a delegation to `address`, or undefined when it is the executor. */
export const delegationRefusal = (context: ReviewContext, address: string): string | undefined =>
  context.executor && sameAddress(address, context.executor) ? undefined : REFUSED_DELEGATION

export type Authorization = { readonly address: `0x${string}`; readonly chainId: bigint; readonly nonce: bigint | undefined }

/**
 * An authorization's fields (`address`, or viem's `contractAddress`; `chainId`; `nonce`), checked.
 *
 * @example
 * toAuthorization({ address: '0x…', chainId: '0x7a69', nonce: '0x0' })
 */
export function toAuthorization(raw: unknown): Authorization {
  const fail = (reason: string) => new ReviewError('MALFORMED_AUTHORIZATION', reason)
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw fail('The authorization is not an object')
  const fields = raw as Record<string, unknown>
  const address = toAddress(fields.address ?? fields.contractAddress)
  if (!address) throw fail(`The authorization's "address" is not an address: ${String(fields.address ?? fields.contractAddress)}`)
  const chainId = toQuantity(fields.chainId)
  if (chainId === undefined) throw fail(`The authorization's "chainId" is not a quantity: ${String(fields.chainId)}`)
  const nonce = fields.nonce === undefined ? undefined : toQuantity(fields.nonce)
  if (fields.nonce !== undefined && nonce === undefined) throw fail(`The authorization's "nonce" is not a quantity: ${String(fields.nonce)}`)
  return { address, chainId, nonce }
}

/** The rows and warnings of one authorization, inside a transaction or alone. */
export function describeAuthorization(context: ReviewContext, authorization: Authorization): { rows: ReviewRow[]; warnings: ReviewWarning[] } {
  const refused = delegationRefusal(context, authorization.address) !== undefined
  const rows: ReviewRow[] = [
    { label: en.rowDelegateTo, value: authorization.address, ...(refused ? { tone: 'danger' as const } : {}) },
    { label: en.rowValidOn, value: authorization.chainId === 0n ? 'every chain' : formatNetwork(Number(authorization.chainId)) },
  ]
  if (authorization.nonce !== undefined) rows.push({ label: en.rowNonce, value: String(authorization.nonce) })
  const warnings: ReviewWarning[] = []
  if (authorization.chainId === 0n) warnings.push({ level: 'danger', text: en.warnEveryChain })
  else if (authorization.chainId !== BigInt(context.chainId))
    warnings.push({
      level: 'danger',
      text: `This request is for ${formatNetwork(Number(authorization.chainId))}, but the wallet is on ${formatNetwork(context.chainId)}.`,
    })
  return { rows, warnings }
}

/**
 * `eip7702_authorization`: the account asks to delegate its code (params: [authorization]).
 *
 * @example
 * await reviewAuthorization([{ address: executor, chainId: 31337, nonce: 0 }], context)
 */
export function reviewAuthorization(params: readonly unknown[], context: ReviewContext): Review {
  const authorization = toAuthorization(params[0])
  const { rows, warnings } = describeAuthorization(context, authorization)
  const refusal = delegationRefusal(context, authorization.address)
  return {
    kind: 'authorization',
    title: en.titleAuthorization,
    origin: context.origin,
    rows: [{ label: en.rowNetwork, value: formatNetwork(context.chainId) }, ...rows],
    warnings,
    ...(refusal ? { refusal } : {}),
  }
}
