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

/**
 * Call numbers as a sentence lists them ("1 and 2", "1–3 and 5": a run of three or more as a
 * range), through `Intl.ListFormat` in English, as i18n/values.ts reads it back.
 *
 * @example
 * callList([1, 2, 3, 5]) // '1–3 and 5'
 */
export function callList(calls: readonly number[]): string {
  const items: string[] = []
  for (let start = 0, end = 0; start < calls.length; start = ++end) {
    while (calls[end + 1] === calls[end]! + 1) end++
    items.push(...(end - start > 1 ? [`${calls[start]}–${calls[end]}`] : calls.slice(start, end + 1).map(String)))
  }
  return new Intl.ListFormat('en', { type: 'conjunction' }).format(items)
}

/**
 * The warnings of a batch's calls (one list per call, in call order): a warning several calls
 * raise word for word is one, saying which ("Calls 1 and 2: Unknown contract call: …"); one only
 * a single call raises reads as it is.
 *
 * @example
 * callWarnings([[unknownCall(token)], [unknownCall(token)]]) // [{ level: 'warning', text: 'Calls 1 and 2: Unknown contract call: …' }]
 */
export function callWarnings(perCall: readonly (readonly ReviewWarning[])[]): ReviewWarning[] {
  const raised = new Map<string, [ReviewWarning, number[]]>()
  perCall.forEach((warnings, index) => {
    for (const warning of warnings) {
      const calls = (raised.get(warning.text) ?? raised.set(warning.text, [warning, []]).get(warning.text)!)[1]
      if (calls.at(-1) !== index + 1) calls.push(index + 1)
    }
  })
  return [...raised.values()].map(([warning, calls]) => (calls[1] ? { ...warning, text: `Calls ${callList(calls)}: ${warning.text}` } : warning))
}

/**
 * The warnings as the dialog lists them: each text once, dangers before cautions, otherwise in
 * the order they were raised.
 *
 * @example
 * orderWarnings([unknownCall(a), chainMismatch(1, 31337), unknownCall(a)]) // [chainMismatch(1, 31337), unknownCall(a)]
 */
export const orderWarnings = (warnings: readonly ReviewWarning[]): ReviewWarning[] =>
  [...new Map(warnings.map((warning) => [warning.text, warning])).values()].sort((a, b) => Number(a.level !== 'danger') - Number(b.level !== 'danger'))
