import { type Hex, toFunctionSelector } from 'viem'
import { ReviewError } from './errors.js'
import { formatDate, formatNative, formatNetwork, NATIVE_SYMBOL, sameAddress, toAddress, toQuantity } from './format.js'
import { formatTokenAmount, isUnlimited, readToken } from './tokens.js'
import type { Review, ReviewContext, ReviewNode, ReviewRow, ReviewWarning } from './types.js'
import { chainMismatch, unlimitedApproval } from './warnings.js'

// ERC-7715 `wallet_grantPermissions`: the app asks for a signer that may act without asking again,
// within limits. The request is a list of `{ chainId, address?, expiry, signer, permissions }` (the
// ERC's first shape), or of `{ chainId, expiry? | rules: [{ type: 'expiry' }], signer | to,
// permission }` (its later shape, as MetaMask's Advanced Permissions send it). The permissions the
// wallet can enforce are a native and an ERC-20 allowance per period, and calls to named functions
// of named contracts. Anything else, and any grant without an end, is refused.

const malformed = (reason: string) => new ReviewError('MALFORMED_GRANT', reason)
type Fields = Record<string, unknown>
const isObject = (value: unknown): value is Fields => typeof value === 'object' && value !== null && !Array.isArray(value)

/** The permission types the kms can enforce, as ERC-7715 names them. */
export const PERMISSION_TYPES = [
  'native-token-recurring-allowance',
  'erc20-recurring-allowance',
  'native-token-periodic',
  'erc20-token-periodic',
  'contract-call',
] as const

/** Where each per-period allowance type keeps its fields: the ERC's first names, and the later ones. */
const ALLOWANCE_FIELDS: Readonly<Record<string, { amount: string; period: string; start: string; token?: string }>> = {
  'native-token-recurring-allowance': { amount: 'allowance', period: 'period', start: 'start' },
  'erc20-recurring-allowance': { amount: 'allowance', period: 'period', start: 'start', token: 'token' },
  'native-token-periodic': { amount: 'periodAmount', period: 'periodDuration', start: 'startTime' },
  'erc20-token-periodic': { amount: 'periodAmount', period: 'periodDuration', start: 'startTime', token: 'tokenAddress' },
}

const PERIODS: Readonly<Record<string, string>> = { 3600: 'hour', 86400: 'day', 604800: 'week', 2592000: '30 days' }
const formatPeriod = (seconds: bigint) => `per ${PERIODS[String(seconds)] ?? `${seconds} seconds`}`

function quantityField(data: Fields, name: string, type: string): bigint {
  const value = toQuantity(data[name])
  if (value === undefined) throw malformed(`The ${type} permission's "${name}" is not a quantity: ${String(data[name])}`)
  return value
}

function describeSigner(signer: unknown, to: unknown): string {
  if (signer === undefined && to !== undefined) {
    const address = toAddress(to)
    if (!address) throw malformed(`The grant's "to" is not an address: ${String(to)}`)
    return `account ${address}`
  }
  if (!isObject(signer) || typeof signer.type !== 'string' || !isObject(signer.data)) throw malformed('The grant\'s "signer" is not { type, data }')
  const data = signer.data
  if (signer.type === 'account') {
    const address = toAddress(data.address ?? data.id)
    if (!address) throw malformed(`The grant's account signer is not an address: ${String(data.address ?? data.id)}`)
    return `account ${address}`
  }
  if (signer.type === 'key' && typeof data.type === 'string' && typeof (data.publicKey ?? data.id) === 'string')
    return `${data.type} key ${String(data.publicKey ?? data.id)}`
  throw malformed(`The grant's signer type "${signer.type}" is not one the wallet can bind: account or key`)
}

/** The selector and signature of an allowed call: "transfer(address,uint256) (0xa9059cbb)", or a bare selector. */
function describeFunction(entry: unknown): string {
  if (typeof entry === 'string' && /^0x[0-9a-fA-F]{8}$/.test(entry)) return entry.toLowerCase()
  if (typeof entry === 'string' && /^[A-Za-z_$][\w$]*\([\w,[\]() ]*\)$/.test(entry)) {
    try {
      return `${entry} (${toFunctionSelector(`function ${entry}`)})`
    } catch {
      // Falls through to the error below.
    }
  }
  throw malformed(`The contract-call permission names ${JSON.stringify(entry)}, not a function signature or a 4-byte selector`)
}

/** The later shape's expiry, a rule `{ type: 'expiry', data: { timestamp } }`; any other rule is one the wallet cannot enforce. */
function expiryRule(rules: unknown): unknown {
  if (rules === undefined) return undefined
  if (!Array.isArray(rules)) throw malformed('The grant\'s "rules" are not a list')
  let timestamp: unknown
  for (const rule of rules) {
    if (!isObject(rule) || typeof rule.type !== 'string' || !isObject(rule.data)) throw malformed('A rule of the grant is not { type, data }')
    if (rule.type !== 'expiry') throw new ReviewError('UNKNOWN_PERMISSION', `Unknown rule type "${rule.type}": the wallet enforces only expiry`)
    timestamp = rule.data.timestamp
  }
  return timestamp
}

type Described = { rows: ReviewRow[]; node: ReviewNode; warnings: ReviewWarning[] }

async function describePermission(context: ReviewContext, permission: unknown, index: number): Promise<Described> {
  if (!isObject(permission) || typeof permission.type !== 'string' || !isObject(permission.data))
    throw malformed(`Permission ${index + 1} is not { type, data }`)
  const { type, data } = permission
  switch (type) {
    case 'native-token-recurring-allowance':
    case 'erc20-recurring-allowance':
    case 'native-token-periodic':
    case 'erc20-token-periodic': {
      const fields = ALLOWANCE_FIELDS[type]!
      const allowance = quantityField(data, fields.amount, type)
      const period = quantityField(data, fields.period, type)
      const start = data[fields.start] === undefined ? undefined : quantityField(data, fields.start, type)
      if (period === 0n) throw malformed(`The ${type} permission's "${fields.period}" is zero`)
      let amount = formatNative(allowance)
      let symbol = NATIVE_SYMBOL
      let token: Hex | undefined
      const warnings: ReviewWarning[] = []
      if (fields.token) {
        token = toAddress(data[fields.token])
        if (!token) throw malformed(`The ${type} permission's "${fields.token}" is not an address: ${String(data[fields.token])}`)
        const formatted = formatTokenAmount(allowance, token, await readToken(context, token))
        amount = formatted.text
        symbol = formatted.symbol
        warnings.push(...formatted.warnings)
      }
      if (isUnlimited(allowance)) warnings.push(unlimitedApproval("The permission's signer", symbol))
      const limit = `${amount} ${formatPeriod(period)}${start === undefined ? '' : `, from ${formatDate(start)}`}`
      const children: ReviewNode[] = [
        ...(token ? [{ label: 'token', value: token }] : []),
        { label: 'allowance', value: amount },
        { label: 'period', value: `${period} seconds` },
        ...(start === undefined ? [] : [{ label: 'start', value: formatDate(start) }]),
      ]
      return { rows: [{ label: `${symbol} limit`, value: limit }], node: { label: type, children }, warnings }
    }
    case 'contract-call': {
      const contract = toAddress(data.address)
      if (!contract) throw malformed(`The contract-call permission's "address" is not an address: ${String(data.address)}`)
      if (!Array.isArray(data.calls) || data.calls.length === 0) throw malformed('The contract-call permission names no functions: it would allow every call')
      const functions = data.calls.map(describeFunction)
      return {
        rows: functions.map((description) => ({ label: 'Allowed call', value: `${contract}: ${description}` })),
        node: { label: type, children: [{ label: 'address', value: contract }, ...functions.map((value, at) => ({ label: `calls[${at}]`, value }))] },
        warnings: [],
      }
    }
    default:
      throw new ReviewError('UNKNOWN_PERMISSION', `Unknown permission type "${type}": the wallet can grant only ${PERMISSION_TYPES.join(', ')}`)
  }
}

/**
 * The review of `wallet_grantPermissions` (params: the ERC-7715 permission requests).
 *
 * @example
 * const review = await reviewGrant([{ chainId: '0x7a69', expiry, signer, permissions }], context)
 * review.rows // [{ label: 'Network', … }, { label: 'Expires', value: '2030-01-01 00:00:00 UTC' }, …]
 */
export async function reviewGrant(params: readonly unknown[], context: ReviewContext, now = Date.now()): Promise<Review> {
  if (params.length === 0) throw malformed('The grant asks for nothing')
  const rows: ReviewRow[] = []
  const tree: ReviewNode[] = []
  const warnings: ReviewWarning[] = []
  for (const request of params) {
    if (!isObject(request)) throw malformed('The grant is not an object')
    const chainId = toQuantity(request.chainId)
    if (chainId === undefined) throw malformed(`The grant's "chainId" is not a quantity: ${String(request.chainId)}`)
    if (request.address !== undefined && !(toAddress(request.address) && sameAddress(String(request.address), context.account)))
      throw malformed(`The grant is for the account ${String(request.address)}, not this wallet's account ${context.account}`)
    const rawExpiry = request.expiry ?? expiryRule(request.rules)
    if (rawExpiry === undefined || rawExpiry === null || rawExpiry === 0)
      throw new ReviewError('GRANT_WITHOUT_EXPIRY', 'The grant has no expiry: a permission that never ends is refused')
    const expiry = toQuantity(rawExpiry)
    if (expiry === undefined) throw malformed(`The grant's "expiry" is not a unix time in seconds: ${String(rawExpiry)}`)
    if (expiry * 1000n <= BigInt(now)) throw malformed(`The grant expired already, at ${formatDate(expiry)}`)
    if (Array.isArray(request.policies) && request.policies.length > 0)
      throw new ReviewError('UNKNOWN_PERMISSION', 'The grant carries policies: the wallet enforces only the limits of its permissions')
    const permissions = Array.isArray(request.permissions) ? request.permissions : request.permission === undefined ? [] : [request.permission]
    if (permissions.length === 0) throw malformed('The grant has no permissions')
    const signer = describeSigner(request.signer, request.to)
    if (chainId !== BigInt(context.chainId)) warnings.push(chainMismatch(Number(chainId), context.chainId))
    rows.push({ label: 'Network', value: formatNetwork(Number(chainId)) }, { label: 'Expires', value: formatDate(expiry) }, { label: 'Signer', value: signer })
    const described: Described[] = []
    for (const [index, permission] of permissions.entries()) described.push(await describePermission(context, permission, index))
    for (const permission of described) {
      rows.push(...permission.rows)
      warnings.push(...permission.warnings)
    }
    tree.push({
      label: `Grant to ${signer}`,
      children: [{ label: 'expiry', value: formatDate(expiry) }, ...described.map((permission) => permission.node)],
    })
  }
  return { kind: 'grant', title: 'Grant a permission', origin: context.origin, rows, tree, warnings }
}
