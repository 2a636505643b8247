/**
 * ERC-7715 `wallet_grantPermissions` requests as this wallet reads them, and the kms grant they
 * become. One reader for both sides that must agree on it: the consent frame shows the user what
 * it reads here and binds the create_grant body it stamps to it, and the embedded wallet builds
 * that body from it, so what the user approved is what the kms enforces. Dependency-free: the
 * function selector of a signature (a keccak) is computed by the caller's viem.
 *
 * A request is `{ chainId, address?, expiry, signer?, permissions }` (the ERC's first shape) or
 * `{ chainId, expiry? | rules: [{ type: 'expiry' }], signer? | to, permission }` (its later shape,
 * as MetaMask's Advanced Permissions send it). The permissions the kms can enforce are a native
 * and an ERC-20 allowance per period, and calls to named functions of named contracts. Anything
 * else, and any grant without an end, is refused.
 *
 * @example
 * import { readGrantRequest, toKmsGrant } from '@latchkey/constants/erc7715'
 * const grant = readGrantRequest(params[0], { account, now: Date.now() })
 * const body = toKmsGrant(grant, account, (signature) => toFunctionSelector(`function ${signature}`))
 */

/** Why a grant request is refused: what the frame and the wallet's typed errors branch on. */
export type GrantRequestProblemCode = 'GRANT_WITHOUT_EXPIRY' | 'UNKNOWN_PERMISSION' | 'MALFORMED_GRANT'

/** A grant request this wallet will not grant; the message is safe to show. */
export class GrantRequestProblem extends Error {
  override name = 'GrantRequestProblem'
  readonly code: GrantRequestProblemCode
  constructor(code: GrantRequestProblemCode, message: string) {
    super(message)
    this.code = code
  }
}

/** The permission types a request may name, as ERC-7715 names them (both of its shapes). */
export const GRANT_PERMISSION_TYPES = [
  'native-token-recurring-allowance',
  'erc20-recurring-allowance',
  'native-token-periodic',
  'erc20-token-periodic',
  'contract-call',
] as const

/** A per-period allowance, in the smallest unit; `token` for an ERC-20 one. */
export type GrantAllowance = {
  readonly type: (typeof GRANT_PERMISSION_TYPES)[number]
  readonly kind: 'native' | 'erc20'
  readonly allowance: bigint
  /** Seconds. */
  readonly period: bigint
  /** Unix seconds; absent when the request names none. */
  readonly start?: bigint | undefined
  readonly token?: `0x${string}` | undefined
}

/** Calls the grant allows: each entry a lowercase 4-byte selector or a function signature as given. */
export type GrantContractCalls = { readonly type: 'contract-call'; readonly kind: 'calls'; readonly address: `0x${string}`; readonly calls: readonly string[] }

export type GrantRequestPermission = GrantAllowance | GrantContractCalls

/** A grant request, read and checked. */
export type GrantRequest = {
  readonly chainId: bigint
  /** Unix seconds. */
  readonly expiry: bigint
  /** The account the request names as its signer (shown, never bound), or undefined when it names none. */
  readonly signer: `0x${string}` | undefined
  readonly permissions: readonly GrantRequestPermission[]
}

type Fields = Record<string, unknown>
const isObject = (value: unknown): value is Fields => typeof value === 'object' && value !== null && !Array.isArray(value)
const malformed = (message: string) => new GrantRequestProblem('MALFORMED_GRANT', message)
const unknown = (message: string) => new GrantRequestProblem('UNKNOWN_PERMISSION', message)

/** A 20-byte hex address as given (the caller checksums it for display), or undefined. */
const toAddress = (value: unknown): `0x${string}` | undefined =>
  typeof value === 'string' && /^0x[0-9a-fA-F]{40}$/.test(value) ? (value as `0x${string}`) : undefined

/** A JSON-RPC quantity, a decimal string or a safe number, as a bigint; undefined when it is none. */
export function toGrantQuantity(value: unknown): bigint | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : undefined
  if (typeof value === 'string' && /^0x[0-9a-fA-F]{1,64}$/.test(value)) return BigInt(value)
  if (typeof value === 'string' && /^\d{1,78}$/.test(value)) return BigInt(value)
  return undefined
}

/** "2030-01-01 00:00:00 UTC" from unix seconds. */
export const formatGrantDate = (seconds: bigint): string => {
  const milliseconds = Number(seconds) * 1000
  if (!Number.isFinite(milliseconds) || Math.abs(milliseconds) > 8.64e15) return `${seconds} (unix time, beyond any date)`
  return `${new Date(milliseconds).toISOString().slice(0, 19).replace('T', ' ')} UTC`
}

/** Where each allowance type keeps its fields: the ERC's first names, and the later ones. */
const ALLOWANCE_FIELDS: Readonly<Record<string, { amount: string; period: string; start: string; token?: string }>> = {
  'native-token-recurring-allowance': { amount: 'allowance', period: 'period', start: 'start' },
  'erc20-recurring-allowance': { amount: 'allowance', period: 'period', start: 'start', token: 'token' },
  'native-token-periodic': { amount: 'periodAmount', period: 'periodDuration', start: 'startTime' },
  'erc20-token-periodic': { amount: 'periodAmount', period: 'periodDuration', start: 'startTime', token: 'tokenAddress' },
}

function quantity(data: Fields, name: string, type: string): bigint {
  const value = toGrantQuantity(data[name])
  if (value === undefined) throw malformed(`The ${type} permission's "${name}" is not a quantity: ${String(data[name])}`)
  return value
}

/** A 4-byte selector (lowercased) or a function signature, checked for shape. */
function functionEntry(entry: unknown): string {
  if (typeof entry === 'string' && /^0x[0-9a-fA-F]{8}$/.test(entry)) return entry.toLowerCase()
  if (typeof entry === 'string' && /^[A-Za-z_$][\w$]*\([\w,[\]() ]*\)$/.test(entry)) return entry
  throw malformed(`The contract-call permission names ${JSON.stringify(entry)}, not a function signature or a 4-byte selector`)
}

function readPermission(permission: unknown, index: number): GrantRequestPermission {
  if (!isObject(permission) || typeof permission.type !== 'string' || !isObject(permission.data))
    throw malformed(`Permission ${index + 1} is not { type, data }`)
  const { type, data } = permission
  if (Array.isArray(permission.policies) && permission.policies.length > 0)
    throw unknown(`Permission ${index + 1} carries policies: the wallet enforces only the limits of its permissions`)
  if (type === 'contract-call') {
    const address = toAddress(data.address)
    if (!address) throw malformed(`The contract-call permission's "address" is not an address: ${String(data.address)}`)
    if (!Array.isArray(data.calls) || data.calls.length === 0) throw malformed('The contract-call permission names no functions: it would allow every call')
    return { type, kind: 'calls', address, calls: data.calls.map(functionEntry) }
  }
  const fields = ALLOWANCE_FIELDS[type]
  if (!fields) throw unknown(`Unknown permission type "${type}": the wallet can grant only ${GRANT_PERMISSION_TYPES.join(', ')}`)
  const allowance = quantity(data, fields.amount, type)
  const period = quantity(data, fields.period, type)
  if (period === 0n) throw malformed(`The ${type} permission's "${fields.period}" is zero`)
  const start = data[fields.start] === undefined ? undefined : quantity(data, fields.start, type)
  const kind = fields.token ? 'erc20' : 'native'
  if (!fields.token) return { type: type as GrantAllowance['type'], kind, allowance, period, start }
  const token = toAddress(data[fields.token])
  if (!token) throw malformed(`The ${type} permission's "${fields.token}" is not an address: ${String(data[fields.token])}`)
  return { type: type as GrantAllowance['type'], kind, allowance, period, start, token }
}

/** The later shape's expiry, a rule `{ type: 'expiry', data: { timestamp } }`; any other rule is one the wallet cannot enforce. */
function expiryRule(rules: unknown): unknown {
  if (rules === undefined) return undefined
  if (!Array.isArray(rules)) throw malformed('The grant\'s "rules" are not a list')
  let timestamp: unknown
  for (const rule of rules) {
    if (!isObject(rule) || typeof rule.type !== 'string' || !isObject(rule.data)) throw malformed('A rule of the grant is not { type, data }')
    if (rule.type !== 'expiry') throw unknown(`Unknown rule type "${rule.type}": the wallet enforces only expiry`)
    timestamp = rule.data.timestamp
  }
  return timestamp
}

/**
 * The signer the request names. The wallet signs inside a grant itself, with a key its consent
 * frame makes for the grant and never lets out; a request naming a key of the app's own (a key
 * the page would hold and could stamp with) is refused.
 */
function readSigner(signer: unknown, to: unknown): `0x${string}` | undefined {
  if (signer === undefined) {
    if (to === undefined) return undefined
    const address = toAddress(to)
    if (!address) throw malformed(`The grant's "to" is not an address: ${String(to)}`)
    return address
  }
  if (!isObject(signer) || typeof signer.type !== 'string' || !isObject(signer.data)) throw malformed('The grant\'s "signer" is not { type, data }')
  if (signer.type === 'account') {
    const address = toAddress(signer.data.address ?? signer.data.id)
    if (!address) throw malformed(`The grant's account signer is not an address: ${String(signer.data.address ?? signer.data.id)}`)
    return address
  }
  throw malformed(
    `The grant's signer type "${signer.type}" is not one the wallet can bind: it signs inside a grant with its own key, so name an account signer or none`,
  )
}

/**
 * Reads one element of `wallet_grantPermissions`'s params for the wallet `account`, at `now`
 * (unix ms). Throws a GrantRequestProblem naming what it cannot grant; touches nothing.
 *
 * @example
 * readGrantRequest({ chainId: '0x7a69', expiry: 1893456000, permissions: [{ type: 'native-token-recurring-allowance', data: { allowance: '0x1', period: 86400 } }] }, { account, now: Date.now() })
 */
export function readGrantRequest(request: unknown, options: { account: string; now: number }): GrantRequest {
  if (!isObject(request)) throw malformed('The grant is not an object')
  const chainId = toGrantQuantity(request.chainId)
  if (chainId === undefined || chainId === 0n) throw malformed(`The grant's "chainId" is not a chain id: ${String(request.chainId)}`)
  if (request.address !== undefined && toAddress(request.address)?.toLowerCase() !== options.account.toLowerCase())
    throw malformed(`The grant is for the account ${String(request.address)}, not this wallet's account ${options.account}`)
  const rawExpiry = request.expiry ?? expiryRule(request.rules)
  if (rawExpiry === undefined || rawExpiry === null || rawExpiry === 0)
    throw new GrantRequestProblem('GRANT_WITHOUT_EXPIRY', 'The grant has no expiry: a permission that never ends is refused')
  const expiry = toGrantQuantity(rawExpiry)
  if (expiry === undefined) throw malformed(`The grant's "expiry" is not a unix time in seconds: ${String(rawExpiry)}`)
  if (expiry * 1000n <= BigInt(options.now)) throw malformed(`The grant expired already, at ${formatGrantDate(expiry)}`)
  if (Array.isArray(request.policies) && request.policies.length > 0)
    throw unknown('The grant carries policies: the wallet enforces only the limits of its permissions')
  const permissions = Array.isArray(request.permissions) ? request.permissions : request.permission === undefined ? [] : [request.permission]
  if (permissions.length === 0) throw malformed('The grant has no permissions')
  const read = permissions.map(readPermission)
  return { chainId, expiry, signer: readSigner(request.signer, request.to), permissions: read }
}

/** A permission as the kms's create_grant takes it and list_grants answers it. */
export type KmsGrantPermission =
  | { type: 'native-token-recurring-allowance'; data: { allowance: string; start: string; period: string } }
  | {
      type: 'erc20-recurring-allowance'
      /** `symbol` and `decimals` only label the kms's refusals ("5 TKN"); the consent frame adds them from the chain. */
      data: { address: `0x${string}`; allowance: string; start: string; period: string; symbol?: string; decimals?: number }
    }
  | { type: 'contract-call'; data: { address: `0x${string}`; calls: `0x${string}`[] } }

/** create_grant's `grant` parameter. */
export type KmsGrant = { chainId: string; account: `0x${string}`; expiry: string; permissions: KmsGrantPermission[] }

/**
 * The kms grant (create_grant's `grant`) of a read request for `account`: amounts as decimal
 * strings, signatures as selectors (`selectorOf` computes one), contract and token addresses lowercase.
 *
 * @example
 * toKmsGrant(readGrantRequest(params[0], { account, now }), account, (signature) => toFunctionSelector(`function ${signature}`))
 */
export function toKmsGrant(grant: GrantRequest, account: string, selectorOf: (signature: string) => string): KmsGrant {
  const lower = (address: string) => address.toLowerCase() as `0x${string}`
  return {
    chainId: String(grant.chainId),
    account: account as `0x${string}`,
    expiry: String(grant.expiry),
    permissions: grant.permissions.map((permission): KmsGrantPermission => {
      if (permission.kind === 'calls')
        return {
          type: 'contract-call',
          data: {
            address: lower(permission.address),
            calls: permission.calls.map((entry) => lower(entry.startsWith('0x') ? entry : selectorOf(entry))),
          },
        }
      const limit = { allowance: String(permission.allowance), start: String(permission.start ?? 0n), period: String(permission.period) }
      if (permission.kind === 'native') return { type: 'native-token-recurring-allowance', data: limit }
      return { type: 'erc20-recurring-allowance', data: { address: lower(permission.token!), ...limit } }
    }),
  }
}
