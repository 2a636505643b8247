import type { Messages } from './en.js'
import { type Locale, resolveLocale } from './locales.js'

// One chunk per locale: only the active one downloads. English comes with the modals instead (most
// users need it, and it saves a request on the first click). This module rides with the connect
// modal's chunk: the eager bundle holds no locale code but the English check in the provider.
const catalogues: Record<Exclude<Locale, 'en'>, () => Promise<{ default: Messages }>> = {
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

/** @internal Downloads a locale's catalogue (English has none to download). */
export const loadCatalogue = (locale: Exclude<Locale, 'en'>) => catalogues[locale]().then((module) => module.default)

/** @internal The locale to show for the app's option (or the browser's languages) and its catalogue. */
export async function loadLocale(requested: string | undefined): Promise<{ locale: Locale; messages: Messages | undefined }> {
  const locale = resolveLocale(requested)
  return { locale, messages: locale === 'en' ? undefined : await loadCatalogue(locale) }
}
