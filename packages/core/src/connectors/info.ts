// Who core's own connectors are before their code loads, and the storage keys that say whether
// there is something to restore. Its own entry point (`@latchkey/core/connectors`) imports nothing,
// so @latchkey/wagmi's connectors share it without bringing the rest of core into a wagmi app.

/** Prefix of every key Latchkey writes to storage. */
export const STORAGE_PREFIX = 'latchkey'

/**
 * The storage key of one field of a connector's connection (SPEC §3): `latchkey.<connectorId>.<field>`.
 *
 * @example
 * connectionStorageKey('walletConnect', 'sessionTopic') // 'latchkey.walletConnect.sessionTopic'
 */
export const connectionStorageKey = (connectorId: string, field: string): string => `${STORAGE_PREFIX}.${connectorId}.${field}`

const svg = (body: string) => `data:image/svg+xml,${encodeURIComponent(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">${body}</svg>`)}`

/**
 * The WalletConnect connector's id, name, type and icon.
 *
 * @example
 * import { WALLETCONNECT_INFO } from '@latchkey/core/connectors'
 * WALLETCONNECT_INFO.id // 'walletConnect'
 */
export const WALLETCONNECT_INFO = {
  id: 'walletConnect',
  name: 'WalletConnect',
  type: 'walletConnect',
  // Pure: an app without this connector drops the icon from its bundle (the call alone would keep it).
  icon: /* @__PURE__ */ svg(
    '<rect width="32" height="32" rx="8" fill="#3b99fc"/><path d="M9.6 12.2c3.5-3.4 9.3-3.4 12.8 0l.4.4c.2.2.2.5 0 .6l-1.5 1.4a.2.2 0 0 1-.3 0l-.6-.6a6.3 6.3 0 0 0-8.8 0l-.6.6a.2.2 0 0 1-.3 0l-1.5-1.4a.4.4 0 0 1 0-.6zm15.8 2.9 1.3 1.3c.2.2.2.5 0 .6l-6 5.8a.5.5 0 0 1-.6 0l-4.2-4.1a.1.1 0 0 0-.2 0l-4.2 4.1a.5.5 0 0 1-.6 0l-6-5.8a.4.4 0 0 1 0-.6l1.3-1.3a.5.5 0 0 1 .6 0l4.2 4.1a.1.1 0 0 0 .2 0l4.2-4.1a.5.5 0 0 1 .6 0l4.2 4.1a.1.1 0 0 0 .2 0l4.2-4.1a.5.5 0 0 1 .6 0z" fill="#fff"/>',
  ),
} as const

/**
 * The embedded-wallet connector's id, name, type and icon.
 *
 * @example
 * import { EMBEDDED_INFO } from '@latchkey/core/connectors'
 * EMBEDDED_INFO.name // 'Email or passkey'
 */
export const EMBEDDED_INFO = {
  id: 'embedded',
  name: 'Email or passkey',
  type: 'embedded',
  // Pure: an app without this connector drops the icon from its bundle (the call alone would keep it).
  icon: /* @__PURE__ */ svg(
    '<rect width="32" height="32" rx="8" fill="#6d28d9"/><path d="M8 11h16v10H8z" fill="none" stroke="#fff" stroke-width="2" stroke-linejoin="round"/><path d="m8 11 8 6 8-6" fill="none" stroke="#fff" stroke-width="2" stroke-linejoin="round"/>',
  ),
} as const

/** Where core's connection store keeps the WalletConnect session topic: with none, there is no session to restore. */
// Spelled out rather than derived from WALLETCONNECT_INFO, so an app without WalletConnect drops that
// object and its icon (info.test.ts checks it is the connection store's key).
export const WALLETCONNECT_SESSION_KEY = `${STORAGE_PREFIX}.walletConnect.sessionTopic`

/**
 * Where @latchkey/embedded keeps its record (its session key): with none, there is nothing to
 * restore. Read through this constant so that a page with no sign-in never loads that package.
 */
export const EMBEDDED_WALLET_KEY = `${STORAGE_PREFIX}.embedded.wallet`

/**
 * @internal Reads whether the app backend offers "Continue as guest" (`guests: true` at its
 * /auth/config) for the embedded connectors (core's and @latchkey/wagmi's), without the wallet's
 * code: the answer is kept; a failed read is false and tried again next time.
 */
export function guestsOffered(parameters: { backendUrl?: string | undefined; walletOptions?: { fetch?: typeof fetch | undefined } | undefined }) {
  let answer: Promise<boolean> | undefined
  return (): Promise<boolean> =>
    (answer ??= (parameters.walletOptions?.fetch ?? fetch)(`${(parameters.backendUrl ?? 'http://localhost:8787').replace(/\/+$/, '')}/auth/config`)
      .then((response) => response.json())
      .then((config: { guests?: unknown }) => config.guests === true)
      .catch(() => ((answer = undefined), false)))
}
