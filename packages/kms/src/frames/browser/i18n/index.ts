import { en, type FrameMessageKey, type FrameMessages, type FrameTexts, type FrameValueTexts } from './en.js'

// The consent frame's language: the app names it (`/consent?locale=ar`, as the embedded package
// opens the frame), else the browser's languages, else English. English is bundled with the page;
// the texts review/*.ts decodes into are bundled with the page in English (en.ts). Each locale's
// catalogue is two chunks, downloaded only when it is the active locale: its texts
// (locales/<locale>.ts; English's dialog texts are dialog.ts) and its texts with values
// (locales/<locale>.values.ts; English's are valueTexts.ts), each within issue 30's 3 KiB (gzip).
// The formatter (values.ts, with Intl) and its English patterns (valueTexts.ts) download with any
// catalogue. The frame shows its texts through `t` (its own) and `display`/`displayRow`/
// `displayValue` (what review/*.ts decoded, in English).

export type { FrameMessageKey, FrameMessages } from './en.js'

/** The locales the frame ships a catalogue for: the React package's. */
export const FRAME_LOCALES = ['en', 'es', 'pt', 'fr', 'de', 'it', 'ru', 'tr', 'ar', 'he', 'hi', 'zh', 'ja', 'ko', 'id', 'vi'] as const
export type FrameLocale = (typeof FRAME_LOCALES)[number]

/** Right-to-left scripts: the frame sets `dir="rtl"` and its layout mirrors. */
export const isRtl = (locale: FrameLocale): boolean => locale === 'ar' || locale === 'he'

/** Both halves of a locale's catalogue: its texts, and its texts with values (which download beside values.ts). */
const both = (texts: Promise<{ default: FrameTexts }>, values: Promise<{ default: FrameValueTexts }>): Promise<FrameMessages> =>
  Promise.all([texts, values]).then(([own, withValues]) => ({ ...own.default, ...withValues.default }))

const catalogues: Record<FrameLocale, () => Promise<FrameMessages>> = {
  en: () => Promise.all([import('./dialog.js'), import('./valueTexts.js')]).then(([dialog, values]) => ({ ...en, ...dialog.default, ...values.default })),
  es: () => both(import('./locales/es.js'), import('./locales/es.values.js')),
  pt: () => both(import('./locales/pt.js'), import('./locales/pt.values.js')),
  fr: () => both(import('./locales/fr.js'), import('./locales/fr.values.js')),
  de: () => both(import('./locales/de.js'), import('./locales/de.values.js')),
  it: () => both(import('./locales/it.js'), import('./locales/it.values.js')),
  ru: () => both(import('./locales/ru.js'), import('./locales/ru.values.js')),
  tr: () => both(import('./locales/tr.js'), import('./locales/tr.values.js')),
  ar: () => both(import('./locales/ar.js'), import('./locales/ar.values.js')),
  he: () => both(import('./locales/he.js'), import('./locales/he.values.js')),
  hi: () => both(import('./locales/hi.js'), import('./locales/hi.values.js')),
  zh: () => both(import('./locales/zh.js'), import('./locales/zh.values.js')),
  ja: () => both(import('./locales/ja.js'), import('./locales/ja.values.js')),
  ko: () => both(import('./locales/ko.js'), import('./locales/ko.values.js')),
  id: () => both(import('./locales/id.js'), import('./locales/id.values.js')),
  vi: () => both(import('./locales/vi.js'), import('./locales/vi.values.js')),
}

/** `pt-BR` → `pt`, `zh-Hant-TW` → `zh`; undefined for a language without a catalogue. */
function match(tag: string): FrameLocale | undefined {
  const language = tag.toLowerCase().split(/[-_]/)[0]
  return FRAME_LOCALES.find((locale) => locale === language)
}

/**
 * The locale to show: the app's, else the first of the browser's languages with a catalogue, else
 * English. An app locale without a catalogue is English, and `warn` is told once.
 *
 * @example
 * resolveFrameLocale('ar-EG', ['en-US']) // 'ar'
 */
export function resolveFrameLocale(requested: string | null | undefined, languages: readonly string[], warn: (message: string) => void): FrameLocale {
  if (requested) {
    const found = match(requested)
    if (found) return found
    warn(`no catalogue for locale "${requested.slice(0, 40)}"; showing English. Supported: ${FRAME_LOCALES.join(', ')}`)
    return 'en'
  }
  for (const language of languages) {
    const found = match(language)
    if (found) return found
  }
  return 'en'
}

type Formatter = ReturnType<typeof import('./values.js')['valueFormatter']>

let active: { locale: FrameLocale; messages: Partial<FrameMessages>; values?: Formatter } = { locale: 'en', messages: en }

/** The active locale, as `lang` names it. */
export const frameLocale = (): FrameLocale => active.locale

/** Downloads `locale`'s catalogue and the formatter of decoded texts (values.ts, with the English patterns of valueTexts.ts), and makes them the active ones. */
export async function useFrameLocale(locale: FrameLocale, now?: () => number): Promise<void> {
  const [catalogue, module, english] = await Promise.all([catalogues[locale](), import('./values.js'), import('./valueTexts.js')])
  active = { locale, messages: catalogue }
  active.values = module.valueFormatter(locale, t, { ...en, ...english.default }, revealBidi, now)
}

/** Explicit direction marks and isolates shown as <U+…> (as a message's are), so a value cannot reorder the text around it. */
const revealBidi = (text: string): string =>
  text.replace(/[\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu, (mark) => `<U+${mark.codePointAt(0)!.toString(16).toUpperCase()}>`)

/**
 * A value put into a sentence: a whole number through `Intl`; any other value with its explicit
 * direction controls revealed (`revealBidi`), and in a right-to-left locale isolated (U+2068 …
 * U+2069), so "1 ETH" or an address keeps its own order inside an Arabic or Hebrew sentence.
 */
function fill(value: string, shown: boolean): string {
  if (/^\d{1,15}$/.test(value)) return new Intl.NumberFormat(active.locale).format(Number(value))
  const text = shown ? value : revealBidi(value)
  return isRtl(active.locale) ? `\u2068${text}\u2069` : text
}

/**
 * The active locale's text for `key` (the key itself before its catalogue is in), `{name}`s filled from `values` (see `fill`;
 * `shown`: the values are what `display` returned, their direction controls revealed already).
 *
 * @example
 * t('requestedBy', { origin: 'https://app.example' }) // 'Requested by https://app.example'
 */
export function t(key: FrameMessageKey, values: Readonly<Record<string, string | number>> = {}, shown = false): string {
  return (active.messages[key] ?? key).replace(/\{(\w+)\}/g, (whole, name: string) => (Object.hasOwn(values, name) ? fill(String(values[name]), shown) : whole))
}

/**
 * A text review/*.ts wrote (a title, a row's label, a warning, a simulation's sentence) in the
 * active locale, its values (amounts, dates, counts) through Intl; a text the catalogue does not
 * know (an address, a decoded value) as it is. As it is, too, until a catalogue is in.
 *
 * @example
 * display('Send 1200 calls at once') // '1.200 Aufrufe auf einmal senden' in de
 */
export const display = (text: string): string => active.values?.display(text) ?? text

/** A row's value: translated and formatted when the review wrote it (a fee, an amount, a date), as it is when it is the request's own text (a message). */
export const displayRow = (label: string, value: string): string => active.values?.row(label, value) ?? value

/** A tree's value: as `display` shows it when the review decoded it (a call's amount), as it is when it is the request's own (typed data's). */
export const displayValue = (value: string, decoded: boolean): string => active.values?.value(value, decoded) ?? value

/**
 * Sets the document's `lang` and `dir` and the page's own texts (elements with `data-i18n`; an
 * attribute with `data-i18n-attribute`) in the active locale.
 */
export function translatePage(document: Document): void {
  document.documentElement.lang = active.locale
  document.documentElement.dir = isRtl(active.locale) ? 'rtl' : 'ltr'
  for (const element of document.querySelectorAll<HTMLElement>('[data-i18n]')) {
    const key = element.dataset['i18n'] as FrameMessageKey
    if (!Object.hasOwn(active.messages, key)) continue
    const attribute = element.dataset['i18nAttribute']
    if (attribute) element.setAttribute(attribute, t(key))
    else element.textContent = t(key)
  }
}
