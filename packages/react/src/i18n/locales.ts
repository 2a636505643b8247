/** The locales Latchkey ships a catalogue for. */
export const locales = ['en', 'es', 'pt', 'fr', 'de', 'it', 'ru', 'tr', 'ar', 'he', 'hi', 'zh', 'ja', 'ko', 'id', 'vi'] as const
export type Locale = (typeof locales)[number]

/** Right-to-left scripts: the modals render `dir="rtl"` and mirror. */
export const isRtl = (locale: Locale) => locale === 'ar' || locale === 'he'

/** `pt-BR` → `pt`, `zh-Hant-TW` → `zh`; undefined when Latchkey has no catalogue for the language. */
function match(tag: string): Locale | undefined {
  const language = tag.toLowerCase().split(/[-_]/)[0]
  return locales.find((locale) => locale === language)
}

const warned = new Set<string>()

/**
 * The locale to show: the app's `locale` option, else the first of the browser's languages we have
 * a catalogue for, else English. An app locale we do not ship falls back to English with one warning.
 */
export function resolveLocale(requested: string | undefined, languages: readonly string[] = browserLanguages()): Locale {
  if (requested !== undefined) {
    const found = match(requested)
    if (found) return found
    if (!warned.has(requested)) {
      warned.add(requested)
      console.warn(`Latchkey: no catalogue for locale "${requested}"; showing English. Supported: ${locales.join(', ')}.`)
    }
    return 'en'
  }
  for (const language of languages) {
    const found = match(language)
    if (found) return found
  }
  return 'en'
}

function browserLanguages(): readonly string[] {
  if (typeof navigator === 'undefined') return []
  return navigator.languages?.length ? navigator.languages : navigator.language ? [navigator.language] : []
}
