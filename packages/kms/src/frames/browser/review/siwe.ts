import { parseSiweMessage } from 'viem/siwe'
import { en } from '../i18n/en.js'
import { formatNetwork, originHost, sameAddress } from './format.js'
import type { ReviewContext, ReviewRow, ReviewWarning } from './types.js'
import { chainMismatch, siweAddressMismatch, siweDomainMismatch } from './warnings.js'

// Sign-In with Ethereum (EIP-4361): a message that signs the user in to `domain`. Signed for
// another site than the one asking, it is a phishing site logging in as the user elsewhere.

const formatSiweDate = (date: Date | undefined): string | undefined =>
  date && !Number.isNaN(date.getTime()) ? `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC` : undefined

/**
 * The SIWE rows and warnings of `text`, or undefined when it is not a SIWE message.
 *
 * @example
 * reviewSiwe(message, context)?.rows[0] // { label: 'Domain', value: 'app.example.com' }
 */
export function reviewSiwe(text: string, context: ReviewContext): { rows: ReviewRow[]; warnings: ReviewWarning[] } | undefined {
  const siwe = parseSiweMessage(text)
  if (!siwe.domain || !siwe.address || !siwe.uri || !siwe.version || siwe.chainId === undefined || !siwe.nonce) return undefined
  const host = originHost(context)
  const domainMatches = siwe.domain.toLowerCase() === host.toLowerCase()
  const warnings: ReviewWarning[] = []
  if (!domainMatches) warnings.push(siweDomainMismatch(siwe.domain, host))
  if (!sameAddress(siwe.address, context.account)) warnings.push(siweAddressMismatch(siwe.address, context.account))
  if (siwe.chainId !== context.chainId) warnings.push(chainMismatch(siwe.chainId, context.chainId))
  const rows: ReviewRow[] = [
    { label: en.rowDomain, value: siwe.domain, ...(domainMatches ? {} : { tone: 'danger' as const }) },
    { label: en.rowAddress, value: siwe.address },
  ]
  if (siwe.statement) rows.push({ label: en.rowStatement, value: siwe.statement })
  rows.push(
    { label: 'URI', value: siwe.uri },
    { label: en.rowChain, value: formatNetwork(siwe.chainId) },
    { label: en.rowNonce, value: siwe.nonce },
    { label: en.rowIssuedAt, value: formatSiweDate(siwe.issuedAt) ?? 'invalid date' },
    { label: en.rowExpires, value: siwe.expirationTime ? (formatSiweDate(siwe.expirationTime) ?? 'invalid date') : 'never' },
  )
  return { rows, warnings }
}
