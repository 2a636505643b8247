import { BATCH_CALLS_PARAMETERS, BATCH_EXECUTOR_ABI, BATCH_MODE } from '@latchkey/constants/batch-executor'
import {
  type Address,
  decodeAbiParameters,
  decodeFunctionData,
  formatUnits,
  getAddress,
  type Hex,
  isAddressEqual,
  parseAbi,
  parseTransaction,
  sliceHex,
} from 'viem'
import { z } from 'zod'
import { GrpcCode, invalid, KmsError } from '../errors.js'
import { parse, uint64 } from '../params.js'

// An ERC-7715 grant as the kms keeps it, and what a transaction signed under it spends. Pure: the
// ledger (how much was spent in the window) is grants/enforce.ts's.

/** The permission types a grant may carry; anything else is refused when the grant is created. */
export const PERMISSION_TYPES = ['native-token-recurring-allowance', 'erc20-recurring-allowance', 'contract-call'] as const
export type PermissionType = (typeof PERMISSION_TYPES)[number]

/**
 * Reasons in a grant refusal's `google.rpc.ErrorInfo` detail (domain `latchkey.grants`): what an
 * app branches on, where the message is for people.
 */
export type GrantRefusalReason =
  | 'GRANT_EXPIRY_REQUIRED'
  | 'GRANT_EXPIRY_PAST'
  | 'GRANT_EXPIRY_TOO_LONG'
  | 'GRANT_UNKNOWN_PERMISSION_TYPE'
  | 'GRANT_DUPLICATE_ALLOWANCE'
  | 'GRANT_ACTIVITY_NOT_ALLOWED'
  | 'GRANT_CALL_NOT_ALLOWED'
  | 'GRANT_FEES_NOT_ALLOWED'
  | 'GRANT_LIMIT_EXCEEDED'
  | 'GRANT_NOT_STARTED'
  | 'GRANT_EXPIRED'

/**
 * A refusal that names its reason in a `google.rpc.ErrorInfo` detail.
 *
 * @example
 * throw grantRefusal(GrpcCode.permissionDenied, 'GRANT_LIMIT_EXCEEDED', 'Grant limit: 5 TKN per 1 day; 4.5 TKN already spent')
 */
export function grantRefusal(code: number, reason: GrantRefusalReason, message: string, metadata: Record<string, string> = {}): KmsError {
  return new KmsError(code, message, [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'latchkey.grants', metadata }])
}

const amount = z.string().regex(/^\d{1,78}$/, 'must be a whole number of the smallest unit, as a decimal string')
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 20-byte hex address')
const selector = z.string().regex(/^0x[0-9a-fA-F]{8}$/, 'must be a 4-byte function selector in hex')
const allowance = {
  /** Smallest units per period. */
  allowance: amount,
  /** Unix seconds before which nothing may be spent. */
  start: uint64.default('0'),
  /** The rolling window, in seconds. */
  period: uint64.refine((value) => Number(value) > 0, 'must be at least 1 second'),
  /** How amounts read in refusals ("5 TKN"); the frame reads them from the chain. */
  symbol: z.string().min(1).max(32).optional(),
}
const PERMISSION_DATA = {
  'native-token-recurring-allowance': z.object(allowance).strict(),
  'erc20-recurring-allowance': z.object({ ...allowance, address, decimals: z.number().int().min(0).max(36).optional() }).strict(),
  'contract-call': z.object({ address, calls: z.array(selector).min(1).max(64) }).strict(),
} as const

export type NativeAllowance = z.infer<(typeof PERMISSION_DATA)['native-token-recurring-allowance']>
export type TokenAllowance = z.infer<(typeof PERMISSION_DATA)['erc20-recurring-allowance']>
export type ContractCalls = z.infer<(typeof PERMISSION_DATA)['contract-call']>
export type Permission =
  | { type: 'native-token-recurring-allowance'; data: NativeAllowance }
  | { type: 'erc20-recurring-allowance'; data: TokenAllowance }
  | { type: 'contract-call'; data: ContractCalls }

/** A grant's rule: the chain and account it signs for, and its permissions. */
export type GrantRule = { chainId: number; account: Address; permissions: Permission[] }

const permissionShape = z.object({ type: z.string().min(1), data: z.unknown() }).strict()
const grantShape = z
  .object({
    chainId: uint64.refine((value) => Number(value) > 0, 'must be a chain id'),
    account: address,
    expiry: uint64.optional(),
    permissions: z.array(permissionShape).min(1, 'name at least one permission').max(32),
  })
  .strict()

/**
 * The `grant` parameter of create_grant, checked: its expiry (unix seconds) present, in the future
 * and within `maxSeconds` of `now`; each permission of a known type with well-formed data.
 * InvalidArgument with an ErrorInfo reason otherwise.
 *
 * @example
 * const { rule, expiresAt } = parseGrant(params.grant, { now: Date.now(), maxSeconds: 86_400 })
 */
export function parseGrant(value: unknown, limits: { now: number; maxSeconds: number }): { rule: GrantRule; expiresAt: number } {
  const grant = parse(z.object({ grant: grantShape }), { grant: value }).grant
  const permissions = grant.permissions.map((permission, index): Permission => {
    if (!(PERMISSION_TYPES as readonly string[]).includes(permission.type))
      throw grantRefusal(
        GrpcCode.invalidArgument,
        'GRANT_UNKNOWN_PERMISSION_TYPE',
        `invalid parameters: grant.permissions.${index}.type: unknown permission type "${permission.type}"; this kms grants ${PERMISSION_TYPES.join(', ')}`,
      )
    const type = permission.type as PermissionType
    return { type, data: parseField(PERMISSION_DATA[type], permission.data, `grant.permissions.${index}.data`) } as Permission
  })
  refuseDuplicateAllowances(permissions)
  if (grant.expiry === undefined)
    throw grantRefusal(GrpcCode.invalidArgument, 'GRANT_EXPIRY_REQUIRED', 'invalid parameters: grant.expiry: is required: a grant never lasts for ever')
  const expiresAt = Number(grant.expiry) * 1000
  if (expiresAt <= limits.now) throw grantRefusal(GrpcCode.invalidArgument, 'GRANT_EXPIRY_PAST', 'invalid parameters: grant.expiry: is in the past')
  if (expiresAt > limits.now + limits.maxSeconds * 1000)
    throw grantRefusal(
      GrpcCode.invalidArgument,
      'GRANT_EXPIRY_TOO_LONG',
      `invalid parameters: grant.expiry: must be at most ${limits.maxSeconds} seconds from now, the longest lifetime this kms gives a credential`,
    )
  return { rule: { chainId: Number(grant.chainId), account: grant.account as Address, permissions }, expiresAt }
}

/**
 * One allowance per asset (security review, finding 6): the consent frame shows each allowance as
 * a limit of its own, and two for one asset ("1 ETH per hour", "10 ETH per day") leave it unclear
 * which one the user agreed to. InvalidArgument naming both; the consent frame refuses the same.
 */
function refuseDuplicateAllowances(permissions: readonly Permission[]) {
  const first = new Map<Asset, number>()
  for (const [index, permission] of permissions.entries()) {
    if (permission.type === 'contract-call') continue
    const asset: Asset = permission.type === 'native-token-recurring-allowance' ? 'native' : (permission.data.address.toLowerCase() as Asset)
    const earlier = first.get(asset)
    if (earlier !== undefined)
      throw grantRefusal(
        GrpcCode.invalidArgument,
        'GRANT_DUPLICATE_ALLOWANCE',
        `invalid parameters: grant.permissions.${index}: a second allowance for ${asset === 'native' ? 'the native token' : `token ${getAddress(asset)}`} (the first is grant.permissions.${earlier}); a grant has one allowance per asset`,
      )
    first.set(asset, index)
  }
}

/** Parses one nested value, its problems named under `field` (as params.ts's `parse` names them). */
function parseField<schema extends z.ZodType>(schema: schema, value: unknown, field: string): z.infer<schema> {
  const result = schema.safeParse(value)
  if (result.success) return result.data
  const path = (issue: { path: readonly PropertyKey[] }) => [field, ...issue.path.map(String)].join('.')
  const issue = result.error.issues[0]!
  throw invalid(`invalid parameters: ${path(issue)}: ${issue.message}`, [
    {
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: result.error.issues.map((each) => ({ field: path(each), description: each.message })),
    },
  ])
}

/** The asset key of a spend: `native`, or the token's address in lowercase. */
export type Asset = 'native' | Lowercase<Address>

const ERC20 = parseAbi([
  'function transfer(address to, uint256 amount)',
  'function approve(address spender, uint256 amount)',
  'function transferFrom(address from, address to, uint256 amount)',
])
const outside = (message: string) => grantRefusal(GrpcCode.permissionDenied, 'GRANT_CALL_NOT_ALLOWED', `Outside the grant: ${message}`)

/**
 * What an unsigned transaction spends under `rule`, per asset, or a PermissionDenied naming what
 * the grant does not allow: another chain, contract creation, an EIP-7702 authorization, a call
 * to a contract or selector it does not list, or native value it has no allowance for. A call to
 * the account itself must be the batch executor's `execute`, and each call inside it is judged so.
 * The transaction's fee ceiling (`feeCeilingOf`) is native spend like its value: charged to the
 * native allowance, and refused (`GRANT_FEES_NOT_ALLOWED`) by a grant without one, so a grant's key
 * cannot spend the balance on gas.
 *
 * @example
 * spendsOf(rule, '02f8…') // Map { '0x5fbd…' => 1500000000000000000n, 'native' => 600000000000000n }
 */
export function spendsOf(rule: GrantRule, unsignedTransaction: string): Map<Asset, bigint> {
  let transaction: ReturnType<typeof parseTransaction>
  try {
    transaction = parseTransaction((unsignedTransaction.startsWith('0x') ? unsignedTransaction : `0x${unsignedTransaction}`) as Hex)
  } catch {
    throw outside('the transaction does not parse as a serialized Ethereum transaction')
  }
  if (transaction.chainId !== rule.chainId)
    throw outside(`the grant is for chain ${rule.chainId}; this transaction is for chain ${transaction.chainId ?? 'none'}`)
  if ('authorizationList' in transaction && transaction.authorizationList?.length) throw outside('a transaction with an EIP-7702 authorization')
  if (transaction.type === 'eip4844') throw outside('a blob transaction')
  if (!transaction.to) throw outside('contract creation')
  const spends = new Map<Asset, bigint>()
  const calls =
    isAddressEqual(transaction.to, rule.account) && transaction.data && transaction.data !== '0x'
      ? [{ to: transaction.to, value: transaction.value ?? 0n, data: '0x' as Hex }, ...batchCalls(transaction.data)]
      : [{ to: transaction.to, value: transaction.value ?? 0n, data: transaction.data ?? ('0x' as Hex) }]
  for (const call of calls) spendOfCall(rule, call, spends)
  const fees = feeCeilingOf(transaction)
  if (fees > 0n && !rule.permissions.some((permission) => permission.type === 'native-token-recurring-allowance'))
    throw grantRefusal(
      GrpcCode.permissionDenied,
      'GRANT_FEES_NOT_ALLOWED',
      `Outside the grant: network fees of up to ${formatUnits(fees, 18)} ETH need a native-token allowance; the grant has none`,
      { asset: 'native', asked: String(fees) },
    )
  add(spends, 'native', fees)
  return spends
}

/**
 * The most a transaction can pay the network: its gas limit at its highest price, `maxFeePerGas`
 * (EIP-1559, EIP-7702) or `gasPrice` (legacy, EIP-2930). The ledger charges this ceiling, not the
 * fee the chain takes later (at most this; the kms never sees the receipt). No gas limit or no
 * price is 0: the kms signs the fields as parsed, so such a transaction offers the network nothing
 * (and with no gas limit it never runs).
 *
 * @example
 * feeCeilingOf({ gas: 21_000n, maxFeePerGas: 2_000_000_000n }) // 42000000000000n
 */
export function feeCeilingOf(transaction: { gas?: bigint | undefined; maxFeePerGas?: bigint | undefined; gasPrice?: bigint | undefined }): bigint {
  return (transaction.gas ?? 0n) * (transaction.maxFeePerGas ?? transaction.gasPrice ?? 0n)
}

/**
 * The calls of the batch executor's `execute(BATCH_MODE, abi.encode(calls))`; anything else on the account is refused.
 *
 * @example
 * batchCalls(transaction.data) // [{ to: '0x70997970…', value: 1000000000000000000n, data: '0x' }]
 */
export function batchCalls(data: Hex): readonly { to: Address; value: bigint; data: Hex }[] {
  try {
    const { args } = decodeFunctionData({ abi: BATCH_EXECUTOR_ABI, data })
    if (args[0].toLowerCase() !== BATCH_MODE) throw new Error('mode')
    return decodeAbiParameters(BATCH_CALLS_PARAMETERS, args[1])[0]
  } catch {
    throw outside('a call to the account itself that is not the batch executor’s execute of a batch')
  }
}

function add(spends: Map<Asset, bigint>, asset: Asset, value: bigint) {
  if (value > 0n) spends.set(asset, (spends.get(asset) ?? 0n) + value)
}

function spendOfCall(rule: GrantRule, call: { to: Address; value: bigint; data: Hex }, spends: Map<Asset, bigint>) {
  if (call.value > 0n) {
    if (!rule.permissions.some((permission) => permission.type === 'native-token-recurring-allowance')) throw outside('the grant allows no native-token spend')
    add(spends, 'native', call.value)
  }
  if (call.data === '0x') return
  if (call.data.length < 10) throw outside(`calldata to ${getAddress(call.to)} too short to name a function`)
  const functionSelector = sliceHex(call.data, 0, 4).toLowerCase()
  const token = rule.permissions.find(
    (permission): permission is Extract<Permission, { type: 'erc20-recurring-allowance' }> =>
      permission.type === 'erc20-recurring-allowance' && isAddressEqual(permission.data.address as Address, call.to),
  )
  if (token) {
    let decoded: ReturnType<typeof decodeFunctionData<typeof ERC20>> | undefined
    try {
      decoded = decodeFunctionData({ abi: ERC20, data: call.data })
    } catch {
      decoded = undefined
    }
    if (decoded) {
      add(spends, call.to.toLowerCase() as Asset, decoded.args[decoded.args.length - 1] as bigint)
      return
    }
  }
  const allowed = rule.permissions.some(
    (permission) =>
      permission.type === 'contract-call' &&
      isAddressEqual(permission.data.address as Address, call.to) &&
      permission.data.calls.some((listed) => listed.toLowerCase() === functionSelector),
  )
  if (!allowed) throw outside(`function ${functionSelector} of ${getAddress(call.to)} is not among the calls the grant allows`)
}

/**
 * The allowances that limit `asset` under `rule` (none: never for an asset spendsOf returned).
 * parseGrant takes one per asset; a rule stored before it did is held to all of them.
 */
export function allowancesOf(rule: GrantRule, asset: Asset): (NativeAllowance | TokenAllowance)[] {
  return rule.permissions.flatMap((permission) => {
    if (asset === 'native' && permission.type === 'native-token-recurring-allowance') return [permission.data]
    if (permission.type === 'erc20-recurring-allowance' && permission.data.address.toLowerCase() === asset) return [permission.data]
    return []
  })
}

/** An amount as a refusal reads it: "4.5 TKN", "0.01 ETH", or smallest units of a token whose decimals are unknown. */
export function formatAmount(value: bigint, asset: Asset, limit: NativeAllowance | TokenAllowance): string {
  if (asset === 'native') return `${formatUnits(value, 18)} ${limit.symbol ?? 'ETH'}`
  const decimals = 'decimals' in limit ? limit.decimals : undefined
  if (decimals === undefined) return `${value} units of ${limit.symbol ?? asset}`
  return `${formatUnits(value, decimals)} ${limit.symbol ?? asset}`
}

/** A period in words: "1 day", "2 hours", "90 seconds". */
export function formatPeriod(seconds: number): string {
  const unit = (count: number, name: string) => `${count} ${name}${count === 1 ? '' : 's'}`
  if (seconds % 86_400 === 0) return unit(seconds / 86_400, 'day')
  if (seconds % 3600 === 0) return unit(seconds / 3600, 'hour')
  if (seconds % 60 === 0) return unit(seconds / 60, 'minute')
  return unit(seconds, 'second')
}
