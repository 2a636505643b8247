// What shows the texts with values the review writes (valueTexts.ts: warnings, amounts, fees,
// dates, the simulation's sentences) in the active locale: a text review/*.ts wrote is matched
// against those English patterns (and en.ts's), its values put into the catalogue's text, numbers,
// amounts and dates through Intl. A chunk of its own, downloaded with the first catalogue: the
// frame's first chunk carries none of it.

/**
 * How a `{name}` is read and shown: whole numbers; texts shown in turn (amounts, dates, networks);
 * addresses (only a whole address matches, so "Move 5 of #1, 3 of #2 of 0x… from 0x… to 0x…" splits
 * where it should); a list of texts shown in turn ("5 of #1, 3 of #2"); else as it is.
 */
const NUMBERS = new Set(['count', 'index', 'gas'])
const NESTED = new Set(['amount', 'limit', 'date', 'network', 'current', 'price', 'item', 'symbol', 'target', 'signer', 'duration', 'reason', 'warning'])
const ADDRESSES = new Set(['contract', 'from', 'to'])
const LISTS = new Set(['items'])

/** The rows (en.ts's and these keys) whose values the review wrote itself: only these are shown translated (a message or a statement never is). */
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
  'rowPasskey',
  'rowAdds',
  'rowOpens',
  'rowImport',
  'rowExports',
  'rowSignInEmail',
  'rowSigns',
]

const AMOUNT = /^(\d{1,80})(?:\.(\d{1,80}))?(?: ([\p{L}\p{N}._$+-]{1,32}))?$/u
const DATE = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) UTC$/
const DURATION = /^(\d{1,15}) (second|minute|hour|day)s?$/

/**
 * The active locale's way of showing decoded texts: `display` (a title, label, warning or value),
 * `row` (a row's value) and `value` (a tree's value), from the English texts (en.ts's and valueTexts.ts's,
 * handed in: this chunk imports nothing), the active catalogue's `t` and the frame's `revealBidi`. In Arabic and Hebrew a value the
 * review wrote on its own (an amount, a date, an address) or the request's own text is isolated
 * (U+2068 … U+2069): "1 ETH" stays "1 ETH" in a right-to-left line; `t` isolates the values it puts
 * into a sentence.
 */
export function valueFormatter<Key extends string>(
  locale: string,
  t: (key: Key, values?: Readonly<Record<string, string | number>>, shown?: boolean) => string,
  texts: Readonly<Record<string, string>>,
  revealBidi: (text: string) => string,
  now: () => number = Date.now,
) {
  const decodedRows = new Set(DECODED_ROWS.map((key) => texts[key]))
  const patterns = Object.keys(texts).map((key) => {
    const names = [...texts[key]!.matchAll(/\{(\w+)\}/g)].map((found) => found[1]!)
    const parts = texts[key]!.split(/\{(\w+)\}/)
    const source = parts
      .map((part, index) =>
        index % 2 ? (NUMBERS.has(part) ? '(\\d{1,15})' : ADDRESSES.has(part) ? '(0x[0-9a-fA-F]{40})' : '(.+?)') : part.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&'),
      )
      .join('')
    const literal = parts.filter((_, index) => index % 2 === 0).join('').length
    return { key: key as Key, pattern: new RegExp(`^${source}$`, 'u'), names, literal }
  })
  // The most specific text first: "You receive nothing" is not "You receive {amount}", and "Move NFT #1 of … from … to …"
  // is not "Move {amount} from {from} to {to}" with NFT as its amount.
  patterns.sort((a, b) => b.literal - a.literal || a.names.length - b.names.length)
  const rtl = /^(?:ar|he)$/.test(locale)
  const own = (text: string) => (rtl ? `\u2068${revealBidi(text)}\u2069` : revealBidi(text))
  const numbers = new Intl.NumberFormat(locale)
  const digits = [...'0123456789'].map((digit) => numbers.format(Number(digit)))
  const decimal = numbers.formatToParts(1.5).find((part) => part.type === 'decimal')?.value ?? '.'
  const dates = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'long', timeZone: 'UTC' })
  const relative = new Intl.RelativeTimeFormat(locale, { numeric: 'auto' })
  const list = new Intl.ListFormat(locale, { type: 'unit', style: 'short' })
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

  /** "2030-01-01 00:00:00 UTC" → the locale's date and time in UTC, and how far from now ("in 3 years"). */
  const date = (found: RegExpExecArray) => {
    const [year, month, day, hour, minute, second] = found.slice(1).map(Number) as [number, number, number, number, number, number]
    const at = Date.UTC(year, month - 1, day, hour, minute, second)
    const distance = at - now()
    // 59 minutes 59 seconds away is "in 1 hour", as a person says it.
    const [unit, size] = UNITS.find(([, size]) => Math.abs(distance) >= size * 0.95) ?? ['second', 1000]
    return `${dates.format(at)} (${relative.format(Math.round(distance / size), unit)})`
  }

  /** "1–3, 5, and 7" (review/warnings.ts callList) → the locale's list of its numbers and ranges; else as it is. */
  const calls = new Intl.ListFormat(locale, { type: 'conjunction' })
  const callList = (text: string) => {
    const items = text.split(/, and |, | and /).map((item) => /^(\d{1,15})(?:–(\d{1,15}))?$/.exec(item))
    if (items.some((item) => !item)) return text
    return calls.format(
      items.map((item) =>
        item!
          .slice(1, 3)
          .flatMap((number) => (number ? [numbers.format(Number(number))] : []))
          .join('–'),
      ),
    )
  }

  /** "3 days" → "3 Tage" in de: a duration in the locale's own words for the unit. */
  const duration = (found: RegExpExecArray) => new Intl.NumberFormat(locale, { style: 'unit', unit: found[2]!, unitDisplay: 'long' }).format(Number(found[1]))

  const translate = (text: string, depth: number): string | undefined => {
    if (depth > 4) return undefined
    for (const { key, pattern, names } of patterns) {
      const found = pattern.exec(text)
      if (!found) continue
      const filled: Record<string, string | number> = {}
      for (const [index, name] of names.entries()) {
        const value = found[index + 1]!
        filled[name] = NESTED.has(name)
          ? show(value, depth + 1)
          : NUMBERS.has(name)
            ? Number(value)
            : LISTS.has(name)
              ? list.format(value.split(', ').map((item) => show(item, depth + 1)))
              : name === 'calls'
                ? callList(value)
                : revealBidi(value)
      }
      // Every value is shown already (its direction controls revealed): `t` only isolates it.
      return t(key, filled, true)
    }
    // "7200 seconds" is a duration before it reads as an amount of a token called "seconds".
    const length = DURATION.exec(text)
    if (length) return duration(length)
    const number = AMOUNT.exec(text)
    if (number) return amount(number)
    const moment = DATE.exec(text)
    return moment ? date(moment) : undefined
  }
  /** A text inside a sentence: translated, or as it is, its direction controls revealed (`t` isolates it). */
  const show = (text: string, depth: number) => translate(text, depth) ?? revealBidi(text)
  /** A text on its own: a sentence translated, a value formatted and isolated, anything else isolated as the request's own. */
  const display = (text: string) => {
    const translated = translate(text, 0)
    return translated === undefined ? own(text) : AMOUNT.test(text) || DATE.test(text) || DURATION.test(text) ? own(translated) : translated
  }

  return {
    display,
    row: (label: string, value: string) => (decodedRows.has(label) || /^Call \d+$|^API key | limit$/.test(label) ? display(value) : own(value)),
    value: (text: string, decoded: boolean) => (decoded ? display(text) : own(text)),
  }
}
