import { locales } from '@latchkey/react'
import { useId } from 'react'

/** `?lang=ar` in the address: the language the demo opens in (else the browser's). */
export function languageFromUrl(): string | undefined {
  return new URLSearchParams(location.search).get('lang') ?? undefined
}

/** Each language named in itself: "Español", "العربية". */
const nameOf = (locale: string) => new Intl.DisplayNames([locale], { type: 'language' }).of(locale) ?? locale

/** The header's "Language" select; the choice goes into the address (`?lang=`) so a reload keeps it. */
export function LanguageSelect({ value, onChange }: { value: string | undefined; onChange(locale: string): void }) {
  const id = useId()
  return (
    <span className="language">
      <label htmlFor={id}>Language</label>
      <select
        id={id}
        value={value ?? ''}
        onChange={(event) => {
          const url = new URL(location.href)
          url.searchParams.set('lang', event.target.value)
          history.replaceState(null, '', url)
          onChange(event.target.value)
        }}
      >
        <option value="">Browser default</option>
        {locales.map((locale) => (
          <option key={locale} value={locale} lang={locale}>
            {nameOf(locale)}
          </option>
        ))}
      </select>
    </span>
  )
}
