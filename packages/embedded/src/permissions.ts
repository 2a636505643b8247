// ERC-7715 permissions to and from the kms's grants (a Latchkey extension: packages/kms README,
// "Grants"). `wallet_grantPermissions` becomes create_grant's parameters, checked as the consent
// frame's review checks it (packages/kms/src/frames/browser/review/grant.ts: the same shapes and
// fields), so what the user approved is what the kms enforces; list_grants becomes the answer of
// `wallet_getPermissions`.
import { p256 } from '@noble/curves/p256'
import { type Address, getAddress, type Hex, isAddress, numberToHex, toFunctionSelector } from 'viem'
import { EmbeddedError } from './errors.js'

/** A permission as create_grant takes it and list_grants answers it. */
export type KmsPermission =
  | { type: 'native-token-recurring-allowance'; data: { allowance: string; start: string; period: string; symbol?: string } }
  | { type: 'erc20-recurring-allowance'; data: { address: Address; allowance: string; start: string; period: string; symbol?: string; decimals?: number } }
  | { type: 'contract-call'; data: { address: Address; calls: Hex[] } }

/** create_grant's parameters (`ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT`). */
export type GrantParameters = {
  userId: string
  apiKey: { apiKeyName: string; publicKey: string }
  grant: { chainId: string; account: Address; expiry: string; permissions: KmsPermission[] }
}

/** A grant as list_grants answers it. */
export type KmsGrant = {
  grantId: string
  publicKey: string
  chainId: string
  account: string
  /** Unix seconds. */
  expiry: string
  permissions: readonly KmsPermission[]
}

/** One answer of `wallet_getPermissions` (the ERC's first shape), `context` naming the grant. */
export type PermissionResponse = {
  chainId: Hex
  address: Address
  expiry: number
  signer: { type: 'key'; data: { type: 'secp256r1'; publicKey: Hex } }
  permissions: ({ type: string; data: Record<string, unknown> } & { policies: [] })[]
  context: string
}

/**
 * A `wallet_grantPermissions` request the wallet will not grant: it reaches the app as JSON-RPC
 * invalid params (-32602), and nothing is signed or stored. `code`: `grant_without_expiry`,
 * `unknown_permission`, `malformed_grant`.
 *
 * @example
 * try { toGrantParameters(request, options) } catch (e) { if (e instanceof GrantRequestError) reply(e.rpcCode, e.shortMessage) }
 */
export class GrantRequestError extends EmbeddedError {
  override name = 'GrantRequestError'
  readonly rpcCode = -32602
}
/** The request has no expiry: a permission that never ends is refused. */
export class GrantWithoutExpiryError extends GrantRequestError {
  override name = 'GrantWithoutExpiryError'
  constructor() {
    super('grant_without_expiry', 'The grant has no expiry: a permission that never ends is refused')
  }
}
/** A permission type, rule or policy the kms cannot enforce. */
export class UnknownPermissionError extends GrantRequestError {
  override name = 'UnknownPermissionError'
  constructor(message: string) {
    super('unknown_permission', message)
  }
}
/** A request that is not a grant the wallet can read: a malformed amount, address, period or signer. */
export class MalformedGrantError extends GrantRequestError {
  override name = 'MalformedGrantError'
  constructor(message: string) {
    super('malformed_grant', message)
  }
}

type Fields = Record<string, unknown>
const isObject = (value: unknown): value is Fields => typeof value === 'object' && value !== null && !Array.isArray(value)
const toAddress = (value: unknown): Address | undefined => (typeof value === 'string' && isAddress(value, { strict: false }) ? getAddress(value) : undefined)

/** A JSON-RPC quantity, a decimal string or a safe number, as a bigint (what the frame's review reads). */
function toQuantity(value: unknown): bigint | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : undefined
  if (typeof value === 'string' && /^0x[0-9a-fA-F]{1,64}$/.test(value)) return BigInt(value)
  if (typeof value === 'string' && /^\d{1,78}$/.test(value)) return BigInt(value)
  return undefined
}

const PERMISSION_TYPES = ['native-token-recurring-allowance', 'erc20-recurring-allowance', 'native-token-periodic', 'erc20-token-periodic', 'contract-call']

/** Where each allowance type keeps its fields: the ERC's first names, and MetaMask's later ones (as the review reads them). */
const ALLOWANCE_FIELDS: Readonly<Record<string, { amount: string; period: string; start: string; token?: string }>> = {
  'native-token-recurring-allowance': { amount: 'allowance', period: 'period', start: 'start' },
  'erc20-recurring-allowance': { amount: 'allowance', period: 'period', start: 'start', token: 'token' },
  'native-token-periodic': { amount: 'periodAmount', period: 'periodDuration', start: 'startTime' },
  'erc20-token-periodic': { amount: 'periodAmount', period: 'periodDuration', start: 'startTime', token: 'tokenAddress' },
}

function quantity(data: Fields, name: string, type: string): bigint {
  const value = toQuantity(data[name])
  if (value === undefined) throw new MalformedGrantError(`The ${type} permission's "${name}" is not a quantity: ${String(data[name])}`)
  return value
}

function selectorOf(entry: unknown): Hex {
  if (typeof entry === 'string' && /^0x[0-9a-fA-F]{8}$/.test(entry)) return entry.toLowerCase() as Hex
  if (typeof entry === 'string' && /^[A-Za-z_$][\w$]*\([\w,[\]() ]*\)$/.test(entry)) {
    try {
      return toFunctionSelector(`function ${entry}`)
    } catch {
      // Falls through to the error below.
    }
  }
  throw new MalformedGrantError(`The contract-call permission names ${JSON.stringify(entry)}, not a function signature or a 4-byte selector`)
}

type TokenInfo = { symbol: string; decimals: number }

function toKmsPermission(permission: unknown, index: number, tokens: Readonly<Record<string, TokenInfo>>, nativeSymbol: string | undefined): KmsPermission {
  if (!isObject(permission) || typeof permission.type !== 'string' || !isObject(permission.data))
    throw new MalformedGrantError(`Permission ${index + 1} is not { type, data }`)
  const { type, data } = permission
  if (Array.isArray(permission.policies) && permission.policies.length > 0)
    throw new UnknownPermissionError(`Permission ${index + 1} carries policies: the wallet enforces only the limits of its permissions`)
  if (type === 'contract-call') {
    const address = toAddress(data.address)
    if (!address) throw new MalformedGrantError(`The contract-call permission's "address" is not an address: ${String(data.address)}`)
    if (!Array.isArray(data.calls) || data.calls.length === 0)
      throw new MalformedGrantError('The contract-call permission names no functions: it would allow every call')
    return { type, data: { address, calls: data.calls.map(selectorOf) } }
  }
  const fields = ALLOWANCE_FIELDS[type]
  if (!fields) throw new UnknownPermissionError(`Unknown permission type "${type}": the wallet can grant only ${PERMISSION_TYPES.join(', ')}`)
  const allowance = String(quantity(data, fields.amount, type))
  const period = quantity(data, fields.period, type)
  if (period === 0n) throw new MalformedGrantError(`The ${type} permission's "${fields.period}" is zero`)
  const start = String(data[fields.start] === undefined ? 0n : quantity(data, fields.start, type))
  if (!fields.token)
    return { type: 'native-token-recurring-allowance', data: { allowance, start, period: String(period), ...(nativeSymbol ? { symbol: nativeSymbol } : {}) } }
  const address = toAddress(data[fields.token])
  if (!address) throw new MalformedGrantError(`The ${type} permission's "${fields.token}" is not an address: ${String(data[fields.token])}`)
  const token = tokens[address.toLowerCase()]
  return {
    type: 'erc20-recurring-allowance',
    data: { address, allowance, start, period: String(period), ...(token ? { symbol: token.symbol, decimals: token.decimals } : {}) },
  }
}

/** The later shape's expiry, a rule `{ type: 'expiry', data: { timestamp } }`; any other rule is one the wallet cannot enforce. */
function expiryRule(rules: unknown): unknown {
  if (rules === undefined) return undefined
  if (!Array.isArray(rules)) throw new MalformedGrantError('The grant\'s "rules" are not a list')
  let timestamp: unknown
  for (const rule of rules) {
    if (!isObject(rule) || typeof rule.type !== 'string' || !isObject(rule.data)) throw new MalformedGrantError('A rule of the grant is not { type, data }')
    if (rule.type !== 'expiry') throw new UnknownPermissionError(`Unknown rule type "${rule.type}": the wallet enforces only expiry`)
    timestamp = rule.data.timestamp
  }
  return timestamp
}

/** The compressed P-256 key (hex, no 0x) the grant binds: the app's `secp256r1` key, or the wallet's own for an account signer. */
function grantKeyOf(request: Fields, walletKey: string | undefined): string {
  const signer = request.signer
  if (isObject(signer) && signer.type === 'key' && isObject(signer.data)) {
    const { type, publicKey } = signer.data as { type?: unknown; publicKey?: unknown }
    if (type !== 'secp256r1' && type !== 'p256')
      throw new MalformedGrantError(`The grant's signer is a ${String(type)} key: the kms binds P-256 (secp256r1) keys only`)
    try {
      const hex = String(publicKey).replace(/^0x/, '')
      return p256.ProjectivePoint.fromHex(hex).toHex(true)
    } catch {
      throw new MalformedGrantError(`The grant's signer key is not a P-256 public key: ${String(publicKey)}`)
    }
  }
  const accountSigner = (isObject(signer) && signer.type === 'account') || (signer === undefined && request.to !== undefined)
  if (!accountSigner) throw new MalformedGrantError("The grant's signer is not { type: 'key' | 'account', data }")
  if (!walletKey) throw new MalformedGrantError('The grant names an account signer, and the wallet has no key of its own to bind')
  return walletKey
}

/**
 * Checks one `wallet_grantPermissions` request (an element of its params, in either of the ERC's
 * shapes the consent frame reviews) and turns it into create_grant's parameters. `account` is the
 * wallet's; `userId` its user; `walletKey` the compressed P-256 key to bind when the request's
 * signer is an account rather than a key; `tokens` the symbols and decimals the frame read from the
 * chain (lowercase addresses), so refusals read "5 TKN". Throws a GrantRequestError; touches nothing.
 *
 * @example
 * const parameters = toGrantParameters(params[0], { account, userId, now: Date.now() })
 * await kms.request('/public/v1/submit/create_grant', { type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT', timestampMs, organizationId, parameters })
 */
export function toGrantParameters(
  request: unknown,
  options: {
    account: Address
    userId: string
    now: number
    walletKey?: string | undefined
    tokens?: Readonly<Record<string, TokenInfo>> | undefined
    nativeSymbol?: string | undefined
    apiKeyName?: string | undefined
  },
): GrantParameters {
  if (!isObject(request)) throw new MalformedGrantError('The grant is not an object')
  const chainId = toQuantity(request.chainId)
  if (chainId === undefined || chainId === 0n) throw new MalformedGrantError(`The grant's "chainId" is not a chain id: ${String(request.chainId)}`)
  if (request.address !== undefined && toAddress(request.address)?.toLowerCase() !== options.account.toLowerCase())
    throw new MalformedGrantError(`The grant is for the account ${String(request.address)}, not this wallet's account ${options.account}`)
  const rawExpiry = request.expiry ?? expiryRule(request.rules)
  if (rawExpiry === undefined || rawExpiry === null || rawExpiry === 0) throw new GrantWithoutExpiryError()
  const expiry = toQuantity(rawExpiry)
  if (expiry === undefined) throw new MalformedGrantError(`The grant's "expiry" is not a unix time in seconds: ${String(rawExpiry)}`)
  if (expiry * 1000n <= BigInt(options.now)) throw new MalformedGrantError(`The grant expired already, at ${new Date(Number(expiry) * 1000).toISOString()}`)
  if (Array.isArray(request.policies) && request.policies.length > 0)
    throw new UnknownPermissionError('The grant carries policies: the wallet enforces only the limits of its permissions')
  const permissions = Array.isArray(request.permissions) ? request.permissions : request.permission === undefined ? [] : [request.permission]
  if (permissions.length === 0) throw new MalformedGrantError('The grant has no permissions')
  const converted = permissions.map((permission, index) => toKmsPermission(permission, index, options.tokens ?? {}, options.nativeSymbol))
  return {
    userId: options.userId,
    apiKey: { apiKeyName: options.apiKeyName ?? `grant ${new Date(options.now).toISOString()}`, publicKey: grantKeyOf(request, options.walletKey) },
    grant: { chainId: String(chainId), account: options.account, expiry: String(expiry), permissions: converted },
  }
}

/**
 * The answer of `wallet_grantPermissions`: the request as granted, `context` naming the grant (what
 * `wallet_revokePermissions` takes back), and the account it acts for.
 *
 * @example
 * return toGrantAnswer(params[0], { grantId }, account)
 */
export function toGrantAnswer(request: Fields, created: { grantId: string }, account: Address) {
  return { ...request, context: created.grantId, accounts: [account] }
}

/**
 * The answer of `wallet_getPermissions`: each grant in force in the ERC's first shape (amounts as
 * hex quantities, ERC-20 allowances naming their `token`), `context` its grant id.
 *
 * @example
 * const { grants } = await kms.request('/public/v1/query/list_grants', { organizationId })
 * return toPermissionResponses(grants)
 */
export function toPermissionResponses(grants: readonly KmsGrant[]): PermissionResponse[] {
  return grants.map((grant) => ({
    chainId: numberToHex(BigInt(grant.chainId)),
    address: getAddress(grant.account),
    expiry: Number(grant.expiry),
    signer: { type: 'key', data: { type: 'secp256r1', publicKey: `0x${grant.publicKey}` } },
    permissions: grant.permissions.map((permission) => {
      if (permission.type === 'contract-call')
        return { type: permission.type, data: { address: permission.data.address, calls: [...permission.data.calls] }, policies: [] }
      const limit = { allowance: numberToHex(BigInt(permission.data.allowance)), start: Number(permission.data.start), period: Number(permission.data.period) }
      if (permission.type === 'native-token-recurring-allowance') return { type: permission.type, data: limit, policies: [] }
      return { type: permission.type, data: { token: permission.data.address, ...limit }, policies: [] }
    }),
    context: grant.grantId,
  }))
}
