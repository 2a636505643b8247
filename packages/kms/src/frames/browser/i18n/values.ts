// The texts with values the review writes (warnings, amounts, fees, dates, the simulation's
// sentences), in English, and what shows them in the active locale: a text review/*.ts wrote is
// matched against these English patterns (and en.ts's), its values put into the catalogue's text,
// numbers, amounts and dates through Intl. A chunk of its own, downloaded with the first catalogue:
// the frame's first chunk carries none of it.

export const values = {
  // Warnings (review/warnings.ts, userOperation.ts).
  warnChainMismatch: 'This request is for {network}, but the wallet is on {current}.',
  warnUnlimited: 'Unlimited approval: {spender} may take all your {symbol}, now and later, until you revoke it.',
  warnApprovalForAll: '{operator} may move every token you hold of {collection}, now and later, until you revoke it.',
  warnUnknownCall: 'Unknown contract call: the data sent to {contract} could not be decoded. Approve only if you trust this app and this contract.',
  warnUnreadableToken: "The token at {token} did not answer symbol() and decimals(): its amount is shown raw, in the token's smallest unit.",
  warnSiweDomain: 'This sign-in is for {domain}, but the request comes from {host}: signing it may let this site sign in to {domain} as you.',
  warnSiweAddress: 'This sign-in names the account {address}, not yours ({account}).',
  warnPaymaster: 'The paymaster {paymaster} is not one this app configured: it decides whether, and for what, this operation runs.',
  refusedDelegation: "Delegation to a contract other than the wallet's executor is refused",
  // The simulation (review/simulate.ts; consentDialog.ts).
  simSend: 'You send {amount}',
  simReceive: 'You receive {amount}',
  simSendNothing: 'You send nothing',
  simReceiveNothing: 'You receive nothing',
  simReverted: 'The simulation reverted: {reason}',
  simUnavailable: 'No simulation: {reason}',
  simCallReverts: 'Call {index} reverts: {reason}',
  simNoConnection: 'There is no connection to {network}: the asset changes cannot be simulated.',
  // Values (fee.ts, userOperation.ts, calls.ts, permit.ts, grant.ts, siwe.ts, authorization.ts).
  valueUpTo: 'up to {amount}',
  valueAbout: 'about {amount}',
  valueSponsored: 'sponsored by {app}',
  valuePaidBy: 'paid by {paymaster}',
  valueFeeUnknown: 'unknown (no connection to the chain)',
  valueUnlimited: 'unlimited {symbol}',
  valueEveryChain: 'every chain',
  valueNever: 'never',
  valueThisWallet: 'this wallet',
  valueSignerAccount: 'account {address}',
  valueNewContract: 'a new contract',
  actionSend: 'Send {amount} to {to}',
  actionAllow: 'Allow {spender} to spend {amount}',
  actionMove: 'Move {amount} from {from} to {to}',
  permitAllows: 'Allows {spender} to spend {amount} until {date}',
  limitFrom: '{limit}, from {date}',
  limitPerHour: '{amount} per hour',
  limitPerDay: '{amount} per day',
  limitPerWeek: '{amount} per week',
  limitPer30Days: '{amount} per 30 days',
  rowLimit: '{symbol} limit',
  // A warning several calls of a batch raise, once (review/warnings.ts callWarnings): "Calls 1 and 2: …".
  warnCalls: 'Calls {calls}: {warning}',
} as const

/** How a `{name}` is read and shown: whole numbers, texts shown in turn (amounts, dates, networks), else as it is. */
const NUMBERS = new Set(['count', 'index'])
const NESTED = new Set(['amount', 'limit', 'date', 'network', 'current', 'warning'])

/** The rows (en.ts's keys) whose values the review wrote itself: only these are shown translated (a message or a statement never is). */
const DECODED_ROWS = [
  'rowNetwork',
  'rowChain',
  'rowTo',
  'rowValue',
  'rowTotalValue',
  'rowNetworkFee',
  'rowFeeAtMost',
  'rowExpires',
  'rowIssuedAt',
  'rowValidOn',
  'rowPermission',
  'rowSigner',
  'rowAction',
  'rowTransfer',
]

const AMOUNT = /^(\d{1,80})(?:\.(\d{1,80}))?(?: ([\p{L}\p{N}._$+-]{1,32}))?$/u
const DATE = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) UTC$/

/**
 * The active locale's way of showing decoded texts: `display` (a title, label, warning or value)
 * and `row` (a row's value), from the English texts (en.ts's, handed in: this chunk imports
 * nothing) and the active catalogue's `t`.
 */
export function valueFormatter<Key extends string>(
  locale: string,
  t: (key: Key, values?: Readonly<Record<string, string | number>>) => string,
  english: Readonly<Record<string, string>>,
  now: () => number = Date.now,
) {
  const texts: Record<string, string> = { ...english, ...values }
  const decodedRows = new Set(DECODED_ROWS.map((key) => english[key]))
  const patterns = Object.keys(texts).map((key) => {
    const names = [...texts[key]!.matchAll(/\{(\w+)\}/g)].map((found) => found[1]!)
    const source = texts[key]!.split(/\{(\w+)\}/)
      .map((part, index) => (index % 2 ? (NUMBERS.has(part) ? '(\\d{1,15})' : '(.+?)') : part.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&')))
      .join('')
    return { key: key as Key, pattern: new RegExp(`^${source}$`, 'u'), names }
  })
  // A text without values first: "You receive nothing" is not "You receive {amount}".
  patterns.sort((a, b) => a.names.length - b.names.length)
  const numbers = new Intl.NumberFormat(locale)
  const digits = [...'0123456789'].map((digit) => numbers.format(Number(digit)))
  const decimal = numbers.formatToParts(1.5).find((part) => part.type === 'decimal')?.value ?? '.'
  const dates = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'long', timeZone: 'UTC' })
  const relative = new Intl.RelativeTimeFormat(locale, { numeric: 'auto' })
  const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
    ['year', 31_536_000_000],
    ['month', 2_592_000_000],
    ['day', 86_400_000],
    ['hour', 3_600_000],
    ['minute', 60_000],
    ['second', 1000],
  ]

  /** "1234.5 TKN" → "1.234,5 TKN" in de: the whole part as a bigint, the decimals digit by digit, nothing rounded. */
  const amount = (found: RegExpExecArray) =>
    `${numbers.format(BigInt(found[1]!))}${found[2] ? decimal + [...found[2]].map((digit) => digits[Number(digit)]).join('') : ''}${found[3] ? ` ${found[3]}` : ''}`

  /** "1–3, 5, and 7" (review/warnings.ts callList) → the locale's list of its numbers and ranges; else as it is. */
  const lists = new Intl.ListFormat(locale, { type: 'conjunction' })
  const callList = (text: string) => {
    const items = text.split(/, and |, | and /).map((item) => /^(\d{1,15})(?:–(\d{1,15}))?$/.exec(item))
    if (items.some((item) => !item)) return text
    return lists.format(
      items.map((item) =>
        item!
          .slice(1, 3)
          .flatMap((number) => (number ? [numbers.format(Number(number))] : []))
          .join('–'),
      ),
    )
  }

  /** "2030-01-01 00:00:00 UTC" → the locale's date and time in UTC, and how far from now ("in 3 years"). */
  const date = (found: RegExpExecArray) => {
    const [year, month, day, hour, minute, second] = found.slice(1).map(Number) as [number, number, number, number, number, number]
    const at = Date.UTC(year, month - 1, day, hour, minute, second)
    const distance = at - now()
    // 59 minutes 59 seconds away is "in 1 hour", as a person says it.
    const [unit, size] = UNITS.find(([, size]) => Math.abs(distance) >= size * 0.95) ?? ['second', 1000]
    return `${dates.format(at)} (${relative.format(Math.round(distance / size), unit)})`
  }

  const display = (text: string, depth = 0): string => {
    if (depth > 4) return text
    for (const { key, pattern, names } of patterns) {
      const found = pattern.exec(text)
      if (!found) continue
      const filled: Record<string, string | number> = {}
      for (const [index, name] of names.entries())
        filled[name] = NESTED.has(name)
          ? display(found[index + 1]!, depth + 1)
          : NUMBERS.has(name)
            ? Number(found[index + 1])
            : name === 'calls'
              ? callList(found[index + 1]!)
              : found[index + 1]!
      return t(key, filled)
    }
    const number = AMOUNT.exec(text)
    if (number) return amount(number)
    const moment = DATE.exec(text)
    return moment ? date(moment) : text
  }

  return {
    display: (text: string) => display(text),
    row: (label: string, value: string) => (decodedRows.has(label) || /^Call \d+$/.test(label) || / limit$/.test(label) ? display(value) : value),
  }
}

export default values
