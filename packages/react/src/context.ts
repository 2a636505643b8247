import type { Client } from '@latchkey/core'
import { type ComponentType, createContext } from 'react'
import type { Messages } from './i18n/en.js'
import type { Locale } from './i18n/locales.js'
import type { ThemeVariables } from './theme.js'

/** `connectAndSignIn`: the connect modal of `<ConnectButton requireSignIn />`, which signs in while it connects where the wallet can. */
export type ModalName = 'connect' | 'connectAndSignIn' | 'account'

export type LatchkeyContextValue = {
  client: Client
  modal: ModalName | undefined
  openModal(name: ModalName): void
  /** Closes the open modal; given `name`, only if that is the one open (an async close must not close a modal opened since). */
  closeModal(name?: ModalName): void
  /** The locale shown, resolved from the `locale` option or the browser's languages. */
  locale: Locale
  /** The active locale's catalogue once downloaded; undefined for English (it comes with the modals) and while loading. */
  catalogue: Messages | undefined
  /** False while a catalogue downloads: the modals wait for it rather than flash English. */
  catalogueReady: boolean
  /** The app's texts, per key, over the catalogue's. */
  overrides: Partial<Messages> | undefined
  /** The theme's CSS variables, on the button and the modals; undefined with a plain mode. */
  themeVariables: ThemeVariables | undefined
  /** Renders the transaction toasts from now on (the first send calls it; the provider's `toasts={false}` ignores it). */
  mountToasts(view: ComponentType<{ theme: 'light' | 'dark' | 'auto' }>): void
}

/** @internal */
export const LatchkeyContext = createContext<LatchkeyContextValue | undefined>(undefined)
