import { type GrantRequestPermission, GrantRequestProblem, readGrantRequest } from '@latchkey/constants/erc7715'
import { type Hex, toFunctionSelector } from 'viem'
import { en } from '../i18n/en.js'
import { ReviewError } from './errors.js'
import { formatDate, formatNative, formatNetwork, NATIVE_SYMBOL, toAddress } from './format.js'
import { formatTokenAmount, isUnlimited, readToken } from './tokens.js'
import type { Review, ReviewContext, ReviewNode, ReviewRow, ReviewWarning } from './types.js'
import { chainMismatch, unlimitedApproval } from './warnings.js'

// ERC-7715 `wallet_grantPermissions`: the app asks that the wallet sign without asking again,
// within limits. The request is read by the reader the embedded wallet shares
// (@latchkey/constants/erc7715: both of the ERC's shapes, refusing any grant without an end and
// anything the kms cannot enforce); this shows what it read, with token symbols and decimals
// from the chain. The kms charges each transaction's network fee (its ceiling, gas times the
// highest price) to the native allowance and refuses any fee under a grant without one, so the
// native limit reads "network fees included", and a grant without one says it cannot pay them.

export { GRANT_PERMISSION_TYPES as PERMISSION_TYPES } from '@latchkey/constants/erc7715'

const PERIODS: Readonly<Record<string, string>> = { 3600: 'hour', 86400: 'day', 604800: 'week', 2592000: '30 days' }
const formatPeriod = (seconds: bigint) => `per ${PERIODS[String(seconds)] ?? `${seconds} seconds`}`

/** The selector and signature of an allowed call: "transfer(address,uint256) (0xa9059cbb)", or a bare selector. */
function describeFunction(entry: string): string {
  if (entry.startsWith('0x')) return entry
  try {
    return `${entry} (${toFunctionSelector(`function ${entry}`)})`
  } catch {
    throw new ReviewError('MALFORMED_GRANT', `The contract-call permission names ${JSON.stringify(entry)}, not a function signature or a 4-byte selector`)
  }
}

/**
 * Refuses a second allowance for an asset already limited (two native allowances, or two for one
 * token, in either of the ERC's shapes): the kms takes one per asset, and the user would be shown
 * two limits of which one would be enforced.
 */
function refuseDuplicateAllowances(permissions: readonly GrantRequestPermission[]) {
  const seen = new Set<string>()
  for (const permission of permissions) {
    if (permission.kind === 'calls') continue
    const asset = permission.kind === 'native' ? 'native' : permission.token!.toLowerCase()
    if (seen.has(asset))
      throw new ReviewError(
        'MALFORMED_GRANT',
        `The grant asks for two allowances for ${asset === 'native' ? NATIVE_SYMBOL : toAddress(asset)}: a grant limits each token once`,
      )
    seen.add(asset)
  }
}

/** A read grant request, or the reader's refusal as a ReviewError (the same code and message); one allowance per asset. */
export function readGrant(request: unknown, context: Pick<ReviewContext, 'account'>, now: number) {
  let read: ReturnType<typeof readGrantRequest>
  try {
    read = readGrantRequest(request, { account: context.account, now })
  } catch (error) {
    if (error instanceof GrantRequestProblem) throw new ReviewError(error.code, error.message)
    throw error
  }
  refuseDuplicateAllowances(read.permissions)
  return read
}

type Described = { rows: ReviewRow[]; node: ReviewNode; warnings: ReviewWarning[] }

async function describePermission(context: ReviewContext, permission: GrantRequestPermission): Promise<Described> {
  if (permission.kind === 'calls') {
    const contract = toAddress(permission.address)!
    const functions = permission.calls.map(describeFunction)
    return {
      rows: functions.map((description) => ({ label: en.rowAllowedCall, value: `${contract}: ${description}` })),
      node: {
        label: permission.type,
        children: [{ label: 'address', value: contract }, ...functions.map((value, at) => ({ label: `calls[${at}]`, value }))],
      },
      warnings: [],
    }
  }
  const { allowance, period, start } = permission
  let amount = formatNative(allowance)
  let symbol = NATIVE_SYMBOL
  let token: Hex | undefined
  const warnings: ReviewWarning[] = []
  if (permission.token) {
    token = toAddress(permission.token)!
    const formatted = formatTokenAmount(allowance, token, await readToken(context, token))
    amount = formatted.text
    symbol = formatted.symbol
    warnings.push(...formatted.warnings)
  }
  if (isUnlimited(allowance)) warnings.push(unlimitedApproval("The permission's signer", symbol))
  const limit = `${amount} ${formatPeriod(period)}${start === undefined ? '' : `, from ${formatDate(start)}`}${token ? '' : ', network fees included'}`
  const children: ReviewNode[] = [
    ...(token ? [{ label: 'token', value: token }] : []),
    { label: 'allowance', value: amount },
    { label: 'period', value: `${period} seconds` },
    ...(start === undefined ? [] : [{ label: 'start', value: formatDate(start) }]),
  ]
  return { rows: [{ label: `${symbol} limit`, value: limit }], node: { label: permission.type, children }, warnings }
}

/**
 * The review of `wallet_grantPermissions` (params: the ERC-7715 permission requests).
 *
 * @example
 * const review = await reviewGrant([{ chainId: '0x7a69', expiry, signer, permissions }], context)
 * review.rows // [{ label: 'Network', … }, { label: 'Expires', value: '2030-01-01 00:00:00 UTC' }, …]
 */
export async function reviewGrant(params: readonly unknown[], context: ReviewContext, now = Date.now()): Promise<Review> {
  if (params.length === 0) throw new ReviewError('MALFORMED_GRANT', 'The grant asks for nothing')
  const rows: ReviewRow[] = []
  const tree: ReviewNode[] = []
  const warnings: ReviewWarning[] = []
  for (const request of params) {
    const { chainId, expiry, signer: named, permissions } = readGrant(request, context, now)
    // The wallet signs inside the grant with a key its frame keeps: whoever the app named, no one else gets it.
    const signer = named ? `account ${toAddress(named)}` : 'this wallet'
    if (chainId !== BigInt(context.chainId)) warnings.push(chainMismatch(Number(chainId), context.chainId))
    rows.push(
      { label: en.rowNetwork, value: formatNetwork(Number(chainId)) },
      { label: en.rowExpires, value: formatDate(expiry) },
      { label: en.rowSigner, value: signer },
    )
    const described: Described[] = []
    for (const permission of permissions) described.push(await describePermission(context, permission))
    for (const permission of described) {
      rows.push(...permission.rows)
      warnings.push(...permission.warnings)
    }
    if (!permissions.some((permission) => permission.kind === 'native'))
      rows.push({ label: en.rowNetworkFee, value: `none: without an ${NATIVE_SYMBOL} limit, this grant cannot pay network fees` })
    tree.push({
      label: `Grant to ${signer}`,
      children: [{ label: 'expiry', value: formatDate(expiry) }, ...described.map((permission) => permission.node)],
    })
  }
  return { kind: 'grant', title: en.titleGrant, origin: context.origin, rows, tree, warnings }
}
