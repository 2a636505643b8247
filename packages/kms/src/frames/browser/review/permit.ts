import { en } from '../i18n/en.js'
import { formatDate, toAddress, toQuantity } from './format.js'
import { formatTokenAmount, isUnlimited, readToken } from './tokens.js'
import type { ReviewContext, ReviewRow, ReviewWarning } from './types.js'
import { unlimitedApproval } from './warnings.js'

// Signatures that hand out token allowances without a transaction: EIP-2612 `Permit` (the token
// is the domain's verifying contract) and Uniswap's Permit2 (`PermitSingle`, `PermitBatch`,
// `PermitTransferFrom`, `PermitBatchTransferFrom`; the token is in the message). Each reads as
// "Allows SPENDER to spend AMOUNT SYMBOL until DATE", with the symbol read from the chain.

type Grant = { readonly spender: unknown; readonly token: unknown; readonly amount: unknown; readonly until: unknown }
type Fields = Record<string, unknown>

const asFields = (value: unknown): Fields => (typeof value === 'object' && value !== null ? (value as Fields) : {})
const asList = (value: unknown): readonly Fields[] => (Array.isArray(value) ? value.map(asFields) : [])

function grantsOf(primaryType: string, domain: Fields, message: Fields): readonly Grant[] | undefined {
  if (primaryType === 'Permit' && domain.name !== 'Permit2')
    return [{ spender: message.spender, token: domain.verifyingContract, amount: message.value, until: message.deadline }]
  if (domain.name !== 'Permit2') return undefined
  switch (primaryType) {
    case 'PermitSingle': {
      const details = asFields(message.details)
      return [{ spender: message.spender, token: details.token, amount: details.amount, until: details.expiration }]
    }
    case 'PermitBatch':
      return asList(message.details).map((details) => ({ spender: message.spender, token: details.token, amount: details.amount, until: details.expiration }))
    case 'PermitTransferFrom': {
      const permitted = asFields(message.permitted)
      return [{ spender: message.spender, token: permitted.token, amount: permitted.amount, until: message.deadline }]
    }
    case 'PermitBatchTransferFrom':
      return asList(message.permitted).map((permitted) => ({
        spender: message.spender,
        token: permitted.token,
        amount: permitted.amount,
        until: message.deadline,
      }))
    default:
      return undefined
  }
}

/**
 * The "Permission" rows of a Permit or Permit2 signature, or undefined for other typed data.
 *
 * @example
 * await describePermit(context, 'Permit', domain, message) // { rows: [{ label: 'Permission', value: 'Allows 0x… to spend 1.5 TKN until 2030-01-01 00:00:00 UTC' }], warnings: [] }
 */
export async function describePermit(
  context: ReviewContext,
  primaryType: string,
  domain: Fields,
  message: Fields,
): Promise<{ rows: ReviewRow[]; warnings: ReviewWarning[] } | undefined> {
  const grants = grantsOf(primaryType, domain, message)
  if (!grants) return undefined
  const rows: ReviewRow[] = []
  const warnings: ReviewWarning[] = []
  for (const grant of grants) {
    const spender = toAddress(grant.spender)
    const token = toAddress(grant.token)
    const amount = toQuantity(grant.amount)
    const until = toQuantity(grant.until)
    // validateTypedData has checked the types; a Permit that lacks these fields is not one we can read.
    if (!spender || !token || amount === undefined || until === undefined) return undefined
    const formatted = formatTokenAmount(amount, token, await readToken(context, token))
    warnings.push(...formatted.warnings)
    if (isUnlimited(amount)) warnings.push(unlimitedApproval(spender, formatted.symbol))
    rows.push({
      label: en.rowPermission,
      value: `Allows ${spender} to spend ${formatted.text} until ${formatDate(until)}`,
      ...(isUnlimited(amount) ? { tone: 'danger' as const } : {}),
    })
  }
  return { rows, warnings }
}
