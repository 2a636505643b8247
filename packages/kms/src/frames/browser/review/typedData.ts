import { getAddress, hashTypedData, isAddress, type TypedData, validateTypedData } from 'viem'
import { en } from '../i18n/en.js'
import { ReviewError } from './errors.js'
import { formatNetwork, sameAddress, toAddress, toQuantity } from './format.js'
import { describePermit } from './permit.js'
import type { Review, ReviewContext, ReviewNode, ReviewRow, ReviewWarning } from './types.js'
import { isUserOperation, reviewUserOperation } from './userOperation.js'
import { chainMismatch } from './warnings.js'

// eth_signTypedData_v4 (EIP-712): the domain and the message as a labelled tree, typed by the
// request's own `types`, after viem has checked every value against its type. Permits get a
// sentence of what they allow. Typed data that does not check out is refused, never shown raw.

const fail = (reason: string, cause?: unknown) => new ReviewError('MALFORMED_TYPED_DATA', reason, cause ? { cause } : undefined)
type Fields = Record<string, unknown>
type TypeFields = readonly { readonly name: string; readonly type: string }[]

const isObject = (value: unknown): value is Fields => typeof value === 'object' && value !== null && !Array.isArray(value)

const DOMAIN_FIELDS = ['name', 'version', 'chainId', 'verifyingContract', 'salt'] as const

function showValue(type: string, value: unknown): string {
  if (type === 'address' && typeof value === 'string' && isAddress(value, { strict: false })) return getAddress(value)
  return typeof value === 'object' ? JSON.stringify(value) : String(value)
}

/** The tree of `value` of EIP-712 type `type`. */
function nodeOf(types: Readonly<Record<string, TypeFields>>, label: string, type: string, value: unknown): ReviewNode {
  const array = /^(.*)\[\d*\]$/.exec(type)
  if (array) return { label, children: (Array.isArray(value) ? value : []).map((item, index) => nodeOf(types, `${label}[${index}]`, array[1]!, item)) }
  const struct = types[type]
  if (struct) {
    const fields = isObject(value) ? value : {}
    return { label, children: struct.map((field) => nodeOf(types, field.name, field.type, fields[field.name])) }
  }
  return { label, value: showValue(type, value) }
}

/**
 * The review of `eth_signTypedData_v4` (params: [address, typedData as JSON text or object]).
 *
 * @example
 * const review = await reviewTypedData([account, JSON.stringify(typedData)], context)
 * review.tree // [{ label: 'Domain', children: […] }, { label: 'Mail', children: […] }]
 */
export async function reviewTypedData(params: readonly unknown[], context: ReviewContext): Promise<Review> {
  const [address, raw] = params
  const signer = toAddress(address)
  if (!signer || !sameAddress(signer, context.account))
    throw fail(`The typed data is to be signed by ${String(address)}, not by this wallet's account ${context.account}`)
  let data: unknown = raw
  if (typeof raw === 'string') {
    try {
      data = JSON.parse(raw)
    } catch (cause) {
      throw fail('The typed data is not valid JSON', cause)
    }
  }
  if (!isObject(data)) throw fail('The typed data is not an object')
  const { types, primaryType, domain = {}, message } = data
  if (!isObject(types)) throw fail('The typed data has no "types"')
  if (typeof primaryType !== 'string' || !Array.isArray(types[primaryType]))
    throw fail(`The typed data's primary type ${JSON.stringify(primaryType)} is not among its types`)
  if (!isObject(domain)) throw fail('The typed data\'s "domain" is not an object')
  if (!isObject(message)) throw fail('The typed data\'s "message" is not an object')
  for (const [name, fields] of Object.entries(types))
    if (!Array.isArray(fields) || !fields.every((field) => isObject(field) && typeof field.name === 'string' && typeof field.type === 'string'))
      throw fail(`The typed data's type "${name}" is not a list of { name, type }`)
  const typed = { types: types as TypedData, primaryType, domain, message } as Parameters<typeof hashTypedData>[0]
  try {
    validateTypedData(typed)
    // Hashing walks every field as signing would: a value missing from the message fails here.
    hashTypedData(typed)
  } catch (cause) {
    throw fail(`The typed data does not match its types: ${(cause as { shortMessage?: string }).shortMessage ?? (cause as Error).message}`, cause)
  }

  // A UserOperation is reviewed as what it does (its calls and who pays its gas), or refused.
  if (isUserOperation(primaryType, domain))
    return reviewUserOperation(context, { types, primaryType, domain, message }, typeof raw === 'string' ? raw : JSON.stringify(raw))

  const typeMap = types as unknown as Readonly<Record<string, TypeFields>>
  const chainId = domain.chainId === undefined ? undefined : toQuantity(domain.chainId)
  const contract = toAddress(domain.verifyingContract)
  const rows: ReviewRow[] = [{ label: en.rowType, value: primaryType }]
  if (typeof domain.name === 'string') rows.push({ label: en.rowDomain, value: domain.name })
  if (chainId !== undefined) rows.push({ label: en.rowChain, value: formatNetwork(Number(chainId)) })
  if (contract) rows.push({ label: en.rowContract, value: contract })
  const warnings: ReviewWarning[] = []
  if (chainId !== undefined && chainId !== BigInt(context.chainId)) warnings.push(chainMismatch(Number(chainId), context.chainId))
  const permit = await describePermit(context, primaryType, domain, message)
  if (permit) {
    rows.push(...permit.rows)
    warnings.push(...permit.warnings)
  }
  const domainNode: ReviewNode = {
    label: en.rowDomain,
    children: DOMAIN_FIELDS.filter((field) => domain[field] !== undefined).map((field) => ({
      label: field,
      value: showValue(field === 'verifyingContract' ? 'address' : 'string', domain[field]),
    })),
  }
  return {
    kind: 'typedData',
    title: permit ? en.titlePermit : en.titleTypedData,
    origin: context.origin,
    rows,
    tree: [domainNode, nodeOf(typeMap, primaryType, primaryType, message)],
    raw: typeof raw === 'string' ? raw : JSON.stringify(raw),
    warnings,
  }
}
