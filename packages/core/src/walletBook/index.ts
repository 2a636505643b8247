import book from './wallets.json' with { type: 'json' }

/** Where a wallet's legacy injected provider lives and the flag it sets on it. */
export type WalletBookInjectedConfig = {
  readonly chain: 'evm'
  /** The boolean flag the provider sets (`isMetaMask`, `isRabby`, ...), or `null` when it sets none of its own. */
  readonly flag: string | null
  /** Dotted path under `window` (`ethereum`, `phantom.ethereum`, `okxwallet`, ...). */
  readonly windowLocation: string
}

/** One wallet of the bundled wallet book. */
export type WalletBookEntry = {
  /** Stable lowercase key; for SPEC §9 excluded wallets, the excluded key itself. */
  readonly id: string
  readonly name: string
  /** At most 12 characters. */
  readonly shortName: string
  readonly homepage: string
  /** Pairs through WalletConnect v2. */
  readonly walletConnect: boolean
  /** Hidden from the WalletConnect list when the wallet is installed in the browser. */
  readonly filterFromWalletConnect: boolean
  readonly injectedConfig: WalletBookInjectedConfig | null
  /** The rdns the wallet announces over EIP-6963, unique across the book. */
  readonly eip6963Config: { readonly rdns: string } | null
  /** Bases of the WalletConnect pairing links: `native` is `scheme://…/`, `universal` an https URL. */
  readonly mobile: { readonly native: string | null; readonly universal: string | null }
  /** Template of the link that opens a dapp in the wallet's own browser; `{url}` marks the dapp URL. */
  readonly inAppBrowserUrl: string | null
  /** Inline SVG data URI; never a remote URL. */
  readonly icon: string
  /** `#RRGGBB` background of the icon. */
  readonly brandColor: string
}

/** The bundled wallet book: a dated version and its wallets. */
export type WalletBook = {
  /** `YYYY.MM.DD` of the last review of the facts. */
  readonly version: string
  readonly wallets: readonly WalletBookEntry[]
}

export type GetWalletConnectDeepLinkOptions = {
  /** Use the universal (https) link when the wallet has one; default `true`. */
  readonly preferUniversal?: boolean | undefined
}

// The JSON's inferred type has `chain: string`; the test suite checks every entry against `WalletBookEntry`.
const walletBook = book as WalletBook

/**
 * The wallet book bundled with this version of Latchkey.
 *
 * @example
 * const { version, wallets } = getWalletBook()
 * console.log(version, wallets.length)
 */
export function getWalletBook(): WalletBook {
  return walletBook
}

/**
 * The wallet that announces `rdns` over EIP-6963, if the book knows it.
 *
 * @example
 * findWalletByRdns(getWalletBook(), 'io.rabby')?.name // 'Rabby Wallet'
 */
export function findWalletByRdns(book: WalletBook, rdns: string): WalletBookEntry | undefined {
  return book.wallets.find((wallet) => wallet.eip6963Config?.rdns === rdns)
}

/**
 * The wallet with key `id`, if the book knows it.
 *
 * @example
 * findWalletById(getWalletBook(), 'metamask')?.eip6963Config?.rdns // 'io.metamask'
 */
export function findWalletById(book: WalletBook, id: string): WalletBookEntry | undefined {
  return book.wallets.find((wallet) => wallet.id === id)
}

/**
 * The link that opens `entry`'s mobile app on a WalletConnect pairing URI: `<base>/wc?uri=<encoded uri>`.
 * Prefers the universal link unless `preferUniversal` is `false`, then falls back to the other one.
 * `undefined` when the wallet does not pair through WalletConnect, has no link, or `wcUri` is not a `wc:` URI.
 *
 * @example
 * getWalletConnectDeepLink(metaMask, 'wc:abc@2?relay-protocol=irn&symKey=00')
 * // 'https://metamask.app.link/wc?uri=wc%3Aabc%402%3Frelay-protocol%3Dirn%26symKey%3D00'
 */
export function getWalletConnectDeepLink(entry: WalletBookEntry, wcUri: string, options: GetWalletConnectDeepLinkOptions = {}): string | undefined {
  if (!entry.walletConnect || !wcUri.startsWith('wc:')) return undefined
  const { native, universal } = entry.mobile
  const base = options.preferUniversal === false ? (native ?? universal) : (universal ?? native)
  if (!base) return undefined
  return `${base.endsWith('/') ? base : `${base}/`}wc?uri=${encodeURIComponent(wcUri)}`
}

/**
 * The link that opens `dappUrl` inside `entry`'s in-app browser, with every `{url}` of the template
 * replaced by the percent-encoded dapp URL. `undefined` when the wallet documents no such link or
 * `dappUrl` is not an http(s) URL.
 *
 * @example
 * getInAppBrowserLink(metaMask, 'https://app.example')
 * // 'https://metamask.app.link/dapp/https%3A%2F%2Fapp.example'
 */
export function getInAppBrowserLink(entry: WalletBookEntry, dappUrl: string): string | undefined {
  if (!entry.inAppBrowserUrl || !/^https?:\/\//i.test(dappUrl)) return undefined
  const encoded = encodeURIComponent(dappUrl)
  return entry.inAppBrowserUrl.replaceAll('{url}', () => encoded)
}
