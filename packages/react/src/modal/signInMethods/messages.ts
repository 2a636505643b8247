import { useEffect, useMemo, useState } from 'react'
import { format } from '../../i18n/format.js'
import type { Locale } from '../../i18n/locales.js'
import { en, type LinkingKey, type LinkingMessages } from './en.js'

// The section's texts, one chunk per locale, downloaded when the section first shows in that
// locale: the first-click catalogues stay as small as they were (bench:size's 3 KiB budget).
const catalogues: Record<Exclude<Locale, 'en'>, () => Promise<{ default: LinkingMessages }>> = {
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

/** The section's text of `key`, its `{params}` filled in. */
export type LinkingTranslate = (key: LinkingKey, params?: Readonly<Record<string, string | number>>) => string

/**
 * @internal The section's texts in `locale`: undefined while its chunk downloads (English at once;
 * English too when the download fails).
 */
export function useLinkingMessages(locale: Locale): LinkingTranslate | undefined {
  const [loaded, setLoaded] = useState<{ locale: Locale; messages: LinkingMessages }>()
  useEffect(() => {
    if (locale === 'en') return
    let live = true
    catalogues[locale]().then(
      (module) => live && setLoaded({ locale, messages: module.default }),
      () => live && setLoaded({ locale, messages: en }),
    )
    return () => {
      live = false
    }
  }, [locale])
  const messages = locale === 'en' ? en : loaded?.locale === locale ? loaded.messages : undefined
  return useMemo(() => messages && ((key, params) => format(messages[key], params)), [messages])
}
