import { useMemo } from 'react'
import { useLatchkeyContext } from '../hooks/useClient.js'
import { en, type MessageKey, type Messages } from './en.js'
import { format } from './format.js'
import { isRtl, type Locale } from './locales.js'

export type Translate = {
  /** The text of `key` in the active locale (the app's override first), its `{params}` filled in. */
  (key: MessageKey, params?: Readonly<Record<string, string | number>>): string
  locale: Locale
  dir: 'ltr' | 'rtl'
  /** The display text of an error: its catalogue text by `code` in this locale, else its SPEC §8 `shortMessage`. */
  error(error: unknown): string
}

/**
 * @internal The modals' texts. English is imported here, with the modals: it is never in the eager
 * bundle, and a locale whose catalogue failed to download falls back to it.
 */
export function useMessages(): Translate {
  const { locale, catalogue, overrides } = useLatchkeyContext()
  return useMemo(() => {
    const messages: Messages = { ...en, ...catalogue, ...overrides }
    const t = ((key, params) => format(messages[key], params)) as Translate
    t.locale = locale
    t.dir = isRtl(locale) ? 'rtl' : 'ltr'
    t.error = (error) => {
      // Latchkey's errors by shape (`code` and `shortMessage`), as core's own mapping reads them.
      const { code, shortMessage } = (error ?? {}) as { code?: unknown; shortMessage?: unknown }
      if (typeof code !== 'string' || typeof shortMessage !== 'string') return error instanceof Error ? error.message : messages.somethingWrong
      const key = `e_${code}` as MessageKey
      // English shows the error's own text: the catalogue's English copies are for the other locales' keys.
      return key in messages && (locale !== 'en' || overrides?.[key] !== undefined) ? messages[key] : shortMessage
    }
    return t
  }, [locale, catalogue, overrides])
}
