import { en } from '../i18n/en.js'
import { formatNetwork } from './format.js'
import type { ReviewWarning } from './types.js'

// The warnings' texts, in one place so every decoder says the same thing the same way.

export const chainMismatch = (requested: number, current: number): ReviewWarning => ({
  level: 'danger',
  text: `This request is for ${formatNetwork(requested)}, but the wallet is on ${formatNetwork(current)}.`,
})

export const unlimitedApproval = (spender: string, symbol: string): ReviewWarning => ({
  level: 'danger',
  text: `Unlimited approval: ${spender} may take all your ${symbol}, now and later, until you revoke it.`,
})

export const approvalForAll = (operator: string, collection: string): ReviewWarning => ({
  level: 'danger',
  text: `${operator} may move every token you hold of ${collection}, now and later, until you revoke it.`,
})

export const unknownCall = (contract: string): ReviewWarning => ({
  level: 'warning',
  text: `Unknown contract call: the data sent to ${contract} could not be decoded. Approve only if you trust this app and this contract.`,
})

export const unreadableToken = (token: string): ReviewWarning => ({
  level: 'warning',
  text: `The token at ${token} did not answer symbol() and decimals(): its amount is shown raw, in the token's smallest unit.`,
})

export const notText: ReviewWarning = {
  level: 'warning',
  text: en.warnNotText,
}

export const hiddenCharacters: ReviewWarning = {
  level: 'warning',
  text: en.warnHidden,
}

export const siweDomainMismatch = (domain: string, host: string): ReviewWarning => ({
  level: 'danger',
  text: `This sign-in is for ${domain}, but the request comes from ${host}: signing it may let this site sign in to ${domain} as you.`,
})

export const siweAddressMismatch = (address: string, account: string): ReviewWarning => ({
  level: 'danger',
  text: `This sign-in names the account ${address}, not yours (${account}).`,
})

export const REFUSED_DELEGATION = "Delegation to a contract other than the wallet's executor is refused"
