// @vitest-environment happy-dom

import { createClient, createMemoryStorage, InvalidCodeError, injected } from '@latchkey/core'
import { createDevWallet } from '@latchkey/core/dev'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { afterEach, describe, expect, test, vi } from 'vitest'
import { anvilKeys, testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { ConnectButton } from '../ConnectButton.js'
import { LatchkeyProvider, type LatchkeyProviderProps } from '../LatchkeyProvider.js'
import { formatAmount } from '../modal/AccountModal.js'
import { loadCatalogue } from './catalogues.js'
import { en, type Messages } from './en.js'
import { locales, resolveLocale } from './locales.js'
import { useMessages } from './useMessages.js'

afterEach(cleanup)

function renderIn(props: Omit<LatchkeyProviderProps, 'client'>, ui = <ConnectButton />) {
  const chains = testChains()
  const wallet = createDevWallet({ privateKey: anvilKeys[0], chains, approve: () => Promise.resolve(true) })
  const client = createClient({
    chains,
    storage: createMemoryStorage(),
    logger: createRecordingLogger(),
    window: new EventTarget(),
    connectors: [injected({ id: 'dev', name: 'Dev Wallet', provider: wallet })],
  })
  return render(
    <LatchkeyProvider client={client} {...props}>
      {ui}
    </LatchkeyProvider>,
  )
}

/** The `{params}` of a text, sorted. */
const params = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort()

describe('catalogues', () => {
  test('default: 16 locales; each catalogue has exactly the English keys and the same {params}', async () => {
    expect(locales).toHaveLength(16)
    for (const locale of locales) {
      if (locale === 'en') continue
      const messages = await loadCatalogue(locale)
      expect(Object.keys(messages).sort(), locale).toEqual(Object.keys(en).sort())
      for (const key of Object.keys(en) as (keyof Messages)[]) {
        expect(params(messages[key]), `${locale}.${key}`).toEqual(params(en[key]))
        expect(messages[key].trim(), `${locale}.${key}`).not.toBe('')
      }
    }
  })

  test('behavior: the browser languages choose the locale, by language, the first we ship', () => {
    expect(resolveLocale(undefined, ['pt-BR', 'en'])).toBe('pt')
    expect(resolveLocale(undefined, ['nl-NL', 'de-AT'])).toBe('de')
    expect(resolveLocale(undefined, ['zh-Hant-TW'])).toBe('zh')
    expect(resolveLocale(undefined, ['nl'])).toBe('en')
    expect(resolveLocale(undefined, [])).toBe('en')
    // The app's option wins over the browser.
    expect(resolveLocale('ja', ['de'])).toBe('ja')
  })

  test('behavior: amounts go through Intl in the locale', () => {
    expect(formatAmount('10000.123456789', 'en')).toBe('10,000.1234')
    expect(formatAmount('10000.123456789', 'de')).toBe('10.000,1234')
    expect(formatAmount('0.10000', 'fr')).toBe('0,1')
  })
})

describe('LatchkeyProvider locale', () => {
  test('behavior: locale="es" shows the button and the connect modal in Spanish', async () => {
    renderIn({ locale: 'es' })
    await userEvent.click(await screen.findByRole('button', { name: 'Conectar billetera' }))
    const dialog = await screen.findByRole('dialog', { name: 'Conectar una billetera' })
    expect(within(dialog).getByRole('button', { name: 'Cerrar' })).toBeTruthy()
    expect(dialog.closest('[lang]')?.getAttribute('lang')).toBe('es')
    expect(dialog.closest('[dir]')?.getAttribute('dir')).toBe('ltr')
  })

  test('behavior: Arabic and Hebrew render right to left', async () => {
    for (const [locale, title] of [
      ['ar', 'ربط محفظة'],
      ['he', 'חיבור ארנק'],
    ] as const) {
      renderIn({ locale })
      await userEvent.click(await screen.findByRole('button', { name: locale === 'ar' ? 'ربط المحفظة' : 'חיבור ארנק' }))
      const dialog = await screen.findByRole('dialog', { name: title })
      expect(dialog.closest('[dir]')?.getAttribute('dir')).toBe('rtl')
      expect(dialog.closest('[lang]')?.getAttribute('lang')).toBe(locale)
      cleanup()
    }
  })

  test("behavior: the provider's locale reaches the connectors' own UI (the embedded consent frame reads it as it opens): one option, not two", async () => {
    const chains = testChains()
    const wallet = createDevWallet({ privateKey: anvilKeys[0], chains, approve: () => Promise.resolve(true) })
    const dev = injected({ id: 'dev', name: 'Dev Wallet', provider: wallet })
    const reads: (() => string | undefined)[] = []
    const probe = Object.assign((config: Parameters<typeof dev>[0]) => (reads.push(config.locale!), dev(config)), { id: 'dev' })
    const client = createClient({ chains, storage: createMemoryStorage(), logger: createRecordingLogger(), window: new EventTarget(), connectors: [probe] })
    const view = render(
      <LatchkeyProvider client={client} locale="ar">
        <ConnectButton />
      </LatchkeyProvider>,
    )
    await screen.findByRole('button', { name: 'ربط المحفظة' })
    // The provider hands the client its locale in an effect, after the render that shows the texts.
    await waitFor(() => expect(reads.map((read) => read())).toEqual(['ar']))
    view.rerender(
      <LatchkeyProvider client={client} locale="he-IL">
        <ConnectButton />
      </LatchkeyProvider>,
    )
    await screen.findByRole('button', { name: 'חיבור ארנק' })
    await waitFor(() => expect(reads.map((read) => read())).toEqual(['he']))
  })

  test('behavior: the app overrides texts per key, over the catalogue', async () => {
    renderIn({ locale: 'es', messages: { connectWallet: 'Entrar', connectTitle: 'Elige' } })
    await userEvent.click(await screen.findByRole('button', { name: 'Entrar' }))
    const dialog = await screen.findByRole('dialog', { name: 'Elige' })
    // Keys not overridden keep the catalogue's text.
    expect(within(dialog).getByRole('button', { name: 'Cerrar' })).toBeTruthy()
  })

  test('error: an unknown locale shows English with one warning', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      renderIn({ locale: 'xx-unknown' })
      await userEvent.click(screen.getByRole('button', { name: 'Connect Wallet' }))
      expect(await screen.findByRole('dialog', { name: 'Connect a wallet' })).toBeTruthy()
      cleanup()
      renderIn({ locale: 'xx-unknown' })
      expect(screen.getByRole('button', { name: 'Connect Wallet' })).toBeTruthy()
      expect(warn.mock.calls).toEqual([
        ['Latchkey: no catalogue for locale "xx-unknown"; showing English. Supported: en, es, pt, fr, de, it, ru, tr, ar, he, hi, zh, ja, ko, id, vi.'],
      ])
    } finally {
      warn.mockRestore()
    }
  })

  test('behavior: an error keeps its SPEC §8 text in error.message and is displayed in the locale', async () => {
    const error = new InvalidCodeError()
    function Shown() {
      const t = useMessages()
      return <p role="alert">{t.error(error)}</p>
    }
    renderIn({ locale: 'fr' }, <Shown />)
    expect(await screen.findByText('Le code est invalide ou a expiré.')).toBeTruthy()
    expect(error.shortMessage).toBe('The code is invalid or expired.')
    expect(error.message.split('\n')[0]).toBe('The code is invalid or expired.')
    cleanup()
    renderIn({ locale: 'en' }, <Shown />)
    expect(screen.getByRole('alert').textContent).toBe('The code is invalid or expired.')
  })
})
