'use client'
import { type Client, reconnect } from '@latchkey/core'
import { type ComponentType, type ReactNode, useCallback, useEffect, useMemo, useState } from 'react'
import { LatchkeyContext, type ModalName } from './context.js'
import type { Messages } from './i18n/en.js'
import type { Locale } from './i18n/locales.js'
import { loadConnectModal, ModalHost } from './ModalHost.js'
import type { Theme, ThemeMode } from './theme.js'

export type LatchkeyProviderProps = {
  client: Client
  /**
   * Colour scheme of the modals (`light`, `dark`, default `auto`: follows the system), or a theme
   * (`themes.ocean`, `createTheme({ accent, radius, font, mode })`) for the button and the modals.
   */
  theme?: ThemeMode | Theme | undefined
  /**
   * Language of the button and the modals (`es`, `pt-BR`, …). Default: the first of the browser's
   * languages Latchkey has a catalogue for, else English. An unknown locale shows English and warns once.
   */
  locale?: string | undefined
  /** Your own texts for some keys of the catalogue, in the active locale. */
  messages?: Partial<Messages> | undefined
  /**
   * Toasts for the transactions and batches sent with `useSendTransaction` and `useSendCalls`:
   * pending, then confirmed or failed. Default true; false shows none (the account modal still
   * shows the last one).
   */
  toasts?: boolean | undefined
  children?: ReactNode
}

/**
 * Makes a Latchkey client available to the hooks and the UI, discovers wallets and restores the
 * last connection on mount.
 *
 * @example
 * <LatchkeyProvider client={client} locale="es"><ConnectButton /></LatchkeyProvider>
 */
export function LatchkeyProvider({ client, theme = 'auto', locale: requested, messages, toasts = true, children }: LatchkeyProviderProps) {
  const [modal, setModal] = useState<ModalName>()
  // The toasts' view comes with the hooks that send, set on the first send: the page does not carry it.
  const [Toasts, setToasts] = useState<ComponentType<{ theme: ThemeMode }>>()
  const { locale, catalogue, ready } = useLocale(requested)
  useEffect(() => {
    const unmount = client.mount()
    void reconnect(client)
    return unmount
  }, [client])
  // The app's language for the connectors' own UI too (the embedded wallet's consent frame): one option, not two.
  useEffect(() => client.setLocale(ready ? locale : requested), [client, locale, ready, requested])
  const openModal = useCallback((name: ModalName) => setModal(name), [])
  const closeModal = useCallback((name?: ModalName) => setModal((open) => (name === undefined || open === name ? undefined : open)), [])
  const mountToasts = useCallback((view: ComponentType<{ theme: ThemeMode }>) => setToasts(() => view), [])
  const themeVariables = typeof theme === 'string' ? undefined : theme.variables
  const mode = typeof theme === 'string' ? theme : theme.mode
  const value = useMemo(
    () => ({ client, modal, openModal, closeModal, locale, catalogue, catalogueReady: ready, overrides: messages, themeVariables, mountToasts }),
    [client, modal, openModal, closeModal, locale, catalogue, ready, messages, themeVariables, mountToasts],
  )
  return (
    <LatchkeyContext.Provider value={value}>
      {children}
      <ModalHost theme={mode} />
      {toasts && Toasts && <Toasts theme={mode} />}
    </LatchkeyContext.Provider>
  )
}

/**
 * The locale and its catalogue. English needs no download (the modals bring it): the app asked for
 * it, or, without the option, the browser's first language is English. Any other wish loads the
 * locale code with the connect modal's chunk, which resolves it (an unknown one warns there).
 */
function useLocale(requested: string | undefined): { locale: Locale; catalogue: Messages | undefined; ready: boolean } {
  const [loaded, setLoaded] = useState<{ requested: string | undefined; locale: Locale; messages: Messages | undefined }>()
  const english = /^en\b/i.test(requested ?? (typeof navigator === 'undefined' ? 'en' : navigator.language || 'en'))
  useEffect(() => {
    if (english) return
    let live = true
    loadConnectModal()
      .then((module) => module.loadLocale(requested))
      .then(
        (result) => live && setLoaded({ requested, ...result }),
        // A failed download (offline) leaves English; the next mount tries again.
        () => live && setLoaded({ requested, locale: 'en', messages: undefined }),
      )
    return () => {
      live = false
    }
  }, [requested, english])
  const current = !english && loaded?.requested === requested ? loaded : undefined
  return { locale: current?.locale ?? 'en', catalogue: current?.messages, ready: english || current !== undefined }
}
