import type { Locale } from '../../i18n/locales.js'
import type { LinkingMessages } from './en.js'

// The section's texts, one chunk per locale, downloaded when the section first shows in that
// locale: the first-click catalogues stay as small as they were (bench:size's 3 KiB budget).
export const catalogues: Record<Exclude<Locale, 'en'>, () => Promise<{ default: LinkingMessages }>> = {
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

/**
 * @internal The section's catalogue in `locale`, English included, all downloaded: for a view
 * outside the section that shows a few of its texts (the connect modal's guest warning), so that
 * the English texts do not ride in that view's chunk. A failed download falls back to English.
 */
export function loadLinkingCatalogue(locale: Locale): Promise<LinkingMessages> {
  const english = () => import('./en.js').then((module) => module.en)
  return locale === 'en' ? english() : catalogues[locale]().then((module) => module.default, english)
}
