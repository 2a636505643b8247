import { type AbiParameter, decodeAbiParameters, type Hex, size, slice } from 'viem'
import { en } from '../i18n/en.js'
import { formatNative, toAddress, toQuantity } from './format.js'
import { formatTokenAmount, isErc721, isUnlimited, readSymbol, readToken } from './tokens.js'
import type { ReviewContext, ReviewNode, ReviewWarning } from './types.js'
import { approvalForAll, unknownCall, unlimitedApproval } from './warnings.js'

// Calldata of the standard token ABIs, decoded into one sentence ("Send 1.5 TKN to 0x…") and a
// tree of the arguments. ERC-20 and ERC-721 share `transferFrom` and `approve`: the contract
// decides which it is (decimals() answers, or ERC-165 says ERC-721).

/** One call of a transaction or a batch, checked. */
export type Call = { readonly to: `0x${string}` | undefined; readonly value: bigint; readonly data: Hex }

export type DecodedCall = {
  /** "Send 1.5 TKN to 0x…", "Allow 0x… to spend unlimited TKN". */
  readonly action: string
  readonly node: ReviewNode
  readonly warnings: readonly ReviewWarning[]
}

const address = { type: 'address' } as const
const uint256 = { type: 'uint256' } as const
const bytes = { type: 'bytes' } as const

/** The standard functions by selector: signature, argument names and types. */
const FUNCTIONS: Readonly<Record<string, { readonly signature: string; readonly names: readonly string[]; readonly types: readonly AbiParameter[] }>> = {
  '0xa9059cbb': { signature: 'transfer(address,uint256)', names: ['to', 'amount'], types: [address, uint256] },
  '0x095ea7b3': { signature: 'approve(address,uint256)', names: ['spender', 'amount'], types: [address, uint256] },
  '0x23b872dd': { signature: 'transferFrom(address,address,uint256)', names: ['from', 'to', 'amount'], types: [address, address, uint256] },
  '0x42842e0e': { signature: 'safeTransferFrom(address,address,uint256)', names: ['from', 'to', 'tokenId'], types: [address, address, uint256] },
  '0xb88d4fde': {
    signature: 'safeTransferFrom(address,address,uint256,bytes)',
    names: ['from', 'to', 'tokenId', 'data'],
    types: [address, address, uint256, bytes],
  },
  '0xf242432a': {
    signature: 'safeTransferFrom(address,address,uint256,uint256,bytes)',
    names: ['from', 'to', 'id', 'amount', 'data'],
    types: [address, address, uint256, uint256, bytes],
  },
  '0x2eb2c2d6': {
    signature: 'safeBatchTransferFrom(address,address,uint256[],uint256[],bytes)',
    names: ['from', 'to', 'ids', 'amounts', 'data'],
    types: [address, address, { type: 'uint256[]' }, { type: 'uint256[]' }, bytes],
  },
  '0xa22cb465': { signature: 'setApprovalForAll(address,bool)', names: ['operator', 'approved'], types: [address, { type: 'bool' }] },
}

/** The selectors decodeCall understands, for tests and docs. */
export const KNOWN_SIGNATURES = Object.values(FUNCTIONS).map((entry) => entry.signature)

const show = (value: unknown): string => (Array.isArray(value) ? `[${value.map(show).join(', ')}]` : String(value))

/**
 * One call decoded: plain value transfers, contract creation, the ERC-20/721/1155 functions; any
 * other calldata is an "unknown contract call" with a warning.
 *
 * @example
 * await decodeCall(context, { to: token, value: 0n, data: transferData }) // { action: 'Send 1.5 TKN to 0x…', … }
 */
export async function decodeCall(context: ReviewContext, call: Call): Promise<DecodedCall> {
  const { to, value, data } = call
  if (!to)
    return { action: `Deploy a contract (${size(data)} bytes of code)`, node: { label: en.rowContractCreation, value: `${size(data)} bytes` }, warnings: [] }
  if (size(data) === 0) return { action: `Send ${formatNative(value)} to ${to}`, node: { label: en.rowTransfer, value: formatNative(value) }, warnings: [] }
  const known = size(data) >= 4 ? FUNCTIONS[slice(data, 0, 4).toLowerCase()] : undefined
  let args: readonly unknown[] | undefined
  if (known) {
    try {
      args = decodeAbiParameters(known.types, slice(data, 4))
    } catch {
      args = undefined
    }
  }
  if (!known || !args) {
    const selector = size(data) >= 4 ? slice(data, 0, 4) : data
    return {
      action: `Unknown contract call to ${to} (selector ${selector})`,
      node: { label: en.rowUnknownCall, value: data },
      warnings: [unknownCall(to)],
    }
  }
  const node: ReviewNode = { label: known.signature, children: known.names.map((name, index) => ({ label: name, value: show(args[index]) })) }
  const decoded = await describe(context, to, known.signature, args)
  return { ...decoded, node }
}

async function describe(context: ReviewContext, contract: `0x${string}`, signature: string, args: readonly unknown[]): Promise<Omit<DecodedCall, 'node'>> {
  const collection = async () => {
    const symbol = await readSymbol(context, contract)
    return symbol ? `${symbol} (${contract})` : contract
  }
  switch (signature) {
    case 'transfer(address,uint256)': {
      const [to, amount] = args as [string, bigint]
      const formatted = formatTokenAmount(amount, contract, await readToken(context, contract))
      return { action: `Send ${formatted.text} to ${to}`, warnings: formatted.warnings }
    }
    case 'approve(address,uint256)':
    case 'transferFrom(address,address,uint256)': {
      const info = await readToken(context, contract)
      const nft = !info && (await isErc721(context, contract))
      if (signature === 'approve(address,uint256)') {
        const [spender, amount] = args as [string, bigint]
        if (nft) return { action: `Allow ${spender} to move NFT #${amount} of ${await collection()}`, warnings: [] }
        const formatted = formatTokenAmount(amount, contract, info)
        const warnings = isUnlimited(amount) ? [...formatted.warnings, unlimitedApproval(spender, formatted.symbol)] : formatted.warnings
        return { action: `Allow ${spender} to spend ${formatted.text}`, warnings }
      }
      const [from, to, amount] = args as [string, string, bigint]
      if (nft) return { action: `Move NFT #${amount} of ${await collection()} from ${from} to ${to}`, warnings: [] }
      const formatted = formatTokenAmount(amount, contract, info)
      return { action: `Move ${formatted.text} from ${from} to ${to}`, warnings: formatted.warnings }
    }
    case 'safeTransferFrom(address,address,uint256)':
    case 'safeTransferFrom(address,address,uint256,bytes)': {
      const [from, to, tokenId] = args as [string, string, bigint]
      return { action: `Move NFT #${tokenId} of ${await collection()} from ${from} to ${to}`, warnings: [] }
    }
    case 'safeTransferFrom(address,address,uint256,uint256,bytes)': {
      const [from, to, id, amount] = args as [string, string, bigint, bigint]
      return { action: `Move ${amount} of token #${id} of ${contract} from ${from} to ${to}`, warnings: [] }
    }
    case 'safeBatchTransferFrom(address,address,uint256[],uint256[],bytes)': {
      const [from, to, ids, amounts] = args as [string, string, readonly bigint[], readonly bigint[]]
      const items = ids.map((id, index) => `${amounts[index] ?? '?'} of #${id}`).join(', ')
      return { action: `Move ${items} of ${contract} from ${from} to ${to}`, warnings: [] }
    }
    default: {
      const [operator, approved] = args as [string, boolean]
      if (!approved) return { action: `Revoke ${operator}'s access to all your tokens of ${await collection()}`, warnings: [] }
      const label = await collection()
      return { action: `Allow ${operator} to move all your tokens of ${label}`, warnings: [approvalForAll(operator, label)] }
    }
  }
}

/**
 * A call as the app sent it (`to`, `value`, `data`/`input`), checked; throws `fail(reason)` when a
 * field is malformed, so nothing half-understood reaches the dialog.
 *
 * @example
 * toCall({ to: '0x…', value: '0x0', data: '0xa9059cbb…' }, (reason) => new ReviewError('MALFORMED_CALLS', reason))
 */
export function toCall(raw: unknown, fail: (reason: string) => Error, what = 'The transaction'): Call {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw fail(`${what} is not an object`)
  const fields = raw as Record<string, unknown>
  let to: `0x${string}` | undefined
  if (fields.to !== undefined && fields.to !== null) {
    to = toAddress(fields.to)
    if (!to) throw fail(`${what}'s "to" is not an address: ${String(fields.to)}`)
  }
  let value = 0n
  if (fields.value !== undefined && fields.value !== null) {
    const parsed = toQuantity(fields.value)
    if (parsed === undefined) throw fail(`${what}'s "value" is not a quantity: ${String(fields.value)}`)
    value = parsed
  }
  const rawData = fields.data ?? fields.input ?? '0x'
  if (typeof rawData !== 'string' || !/^0x(?:[0-9a-fA-F]{2})*$/.test(rawData)) throw fail(`${what}'s "data" is not hex bytes: ${String(rawData)}`)
  if (!to && rawData === '0x') throw fail(`${what} has neither a recipient nor code to deploy`)
  return { to, value, data: rawData as Hex }
}
