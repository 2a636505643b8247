import { en, type FrameMessageKey, type FrameMessages } from './en.js'

// The consent frame's language: the app names it (`/consent?locale=ar`, as the embedded package
// opens the frame), else the browser's languages, else English. English is bundled with the page;
// the texts review/*.ts decodes into are bundled with the page in English (en.ts); each locale's
// catalogue, English's dialog texts (dialog.ts) included, is a chunk of its own, downloaded only
// when it is the active one, with values.ts (the decoded texts with values, and their Intl
// formatting), a chunk of its own too. The frame shows its texts through `t` (its own) and
// `display`/`displayRow` (what review/*.ts decoded, in English).

export type { FrameMessageKey, FrameMessages } from './en.js'

/** The locales the frame ships a catalogue for: the React package's. */
export const FRAME_LOCALES = ['en', 'es', 'pt', 'fr', 'de', 'it', 'ru', 'tr', 'ar', 'he', 'hi', 'zh', 'ja', 'ko', 'id', 'vi'] as const
export type FrameLocale = (typeof FRAME_LOCALES)[number]

/** Right-to-left scripts: the frame sets `dir="rtl"` and its layout mirrors. */
export const isRtl = (locale: FrameLocale): boolean => locale === 'ar' || locale === 'he'

const catalogues: Record<FrameLocale, () => Promise<{ default: FrameMessages }>> = {
  en: () =>
    Promise.all([import('./dialog.js'), import('./values.js')]).then(([dialog, values]) => ({ default: { ...en, ...dialog.default, ...values.values } })),
  es: () => import('./locales/es.js'),
  pt: () => import('./locales/pt.js'),
  fr: () => import('./locales/fr.js'),
  de: () => import('./locales/de.js'),
  it: () => import('./locales/it.js'),
  ru: () => import('./locales/ru.js'),
  tr: () => import('./locales/tr.js'),
  ar: () => import('./locales/ar.js'),
  he: () => import('./locales/he.js'),
  hi: () => import('./locales/hi.js'),
  zh: () => import('./locales/zh.js'),
  ja: () => import('./locales/ja.js'),
  ko: () => import('./locales/ko.js'),
  id: () => import('./locales/id.js'),
  vi: () => import('./locales/vi.js'),
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

/** Downloads `locale`'s catalogue and the formatter of decoded texts (values.ts), and makes them the active ones. */
export async function useFrameLocale(locale: FrameLocale, now?: () => number): Promise<void> {
  const [catalogue, module] = await Promise.all([catalogues[locale](), import('./values.js')])
  active = { locale, messages: catalogue.default }
  active.values = module.valueFormatter(locale, t, en, now)
}

const formatNumber = (text: string) => (/^\d{1,15}$/.test(text) ? new Intl.NumberFormat(active.locale).format(Number(text)) : text)

/**
 * The active locale's text for `key` (the key itself before its catalogue is in), `{name}`s filled from `values` (whole numbers through `Intl`).
 *
 * @example
 * t('requestedBy', { origin: 'https://app.example' }) // 'Requested by https://app.example'
 */
export function t(key: FrameMessageKey, values: Readonly<Record<string, string | number>> = {}): string {
  return (active.messages[key] ?? key).replace(/\{(\w+)\}/g, (whole, name: string) =>
    Object.hasOwn(values, name) ? formatNumber(String(values[name])) : whole,
  )
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
