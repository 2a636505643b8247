import { readFileSync } from 'node:fs'
import { describe, expect, test } from 'vitest'
import { EXCLUDED_EIP6963_CONNECTOR_KEYS } from '../constants.js'
import { dedicatedWalletRdns } from './dedicated.js'
import { findWalletById, findWalletByRdns, getInAppBrowserLink, getWalletBook, getWalletConnectDeepLink, type WalletBookEntry } from './index.js'

const book = getWalletBook()
const WC_URI = 'wc:abc@2?relay-protocol=irn&symKey=00'
const ENCODED_WC_URI = 'wc%3Aabc%402%3Frelay-protocol%3Dirn%26symKey%3D00'
const DAPP_URL = 'https://app.example/path?x=1'
const ENCODED_DAPP_URL = 'https%3A%2F%2Fapp.example%2Fpath%3Fx%3D1'
const ENTRY_KEYS = [
  'id',
  'name',
  'shortName',
  'homepage',
  'walletConnect',
  'filterFromWalletConnect',
  'injectedConfig',
  'eip6963Config',
  'mobile',
  'inAppBrowserUrl',
  'icon',
  'brandColor',
]
const SVG_DATA_URI_PREFIX = 'data:image/svg+xml,'

function wallet(id: string): WalletBookEntry {
  const entry = findWalletById(book, id)
  if (!entry) throw new Error(`wallet ${id} is missing from the book`)
  return entry
}

function isHttpsUrl(value: string): boolean {
  try {
    return new URL(value).protocol === 'https:'
  } catch {
    return false
  }
}

describe('wallets.json', () => {
  test('default: version is a real date and the book lists every wallet once', () => {
    expect(book.version).toMatch(/^\d{4}\.\d{2}\.\d{2}$/)
    expect(Number.isNaN(Date.parse(book.version.replaceAll('.', '-')))).toBe(false)
    expect(book.wallets.length).toBeGreaterThanOrEqual(44)
    expect(book.wallets.map((w) => w.id)).toMatchInlineSnapshot(`
      [
        "metamask",
        "coinbase",
        "phantomevm",
        "exodusevm",
        "abstract",
        "edenonline",
        "intersend",
        "rabby",
        "rainbow",
        "trust",
        "okx",
        "zerion",
        "brave",
        "frame",
        "taho",
        "ledger",
        "safe",
        "uniswap",
        "argent",
        "imtoken",
        "tokenpocket",
        "bitget",
        "zengo",
        "oneinch",
        "cryptocom",
        "safepal",
        "binance",
        "bybit",
        "gate",
        "coin98",
        "onekey",
        "core",
        "talisman",
        "subwallet",
        "magic-eden",
        "ronin",
        "zeal",
        "backpack",
        "enkrypt",
        "mew",
        "kraken",
        "ambire",
        "nova",
        "frontier",
        "robinhood",
        "omni",
        "blockchain",
        "nest",
      ]
    `)
  })

  test('behavior: ids are unique lowercase keys', () => {
    const ids = book.wallets.map((w) => w.id)
    expect(new Set(ids).size).toBe(ids.length)
    for (const id of ids) expect(id).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/)
  })

  test('behavior: every announced rdns is unique and reverse-DNS shaped', () => {
    const rdnsList = book.wallets.flatMap((w) => (w.eip6963Config ? [w.eip6963Config.rdns] : []))
    expect(new Set(rdnsList).size).toBe(rdnsList.length)
    for (const rdns of rdnsList) expect(rdns).toMatch(/^[a-z0-9-]+(\.[A-Za-z0-9-]+)+$/)
  })

  test('behavior: every SPEC §9 excluded key is a wallet id', () => {
    const ids = new Set(book.wallets.map((w) => w.id))
    for (const key of EXCLUDED_EIP6963_CONNECTOR_KEYS) expect(ids.has(key), key).toBe(true)
  })

  describe.each(book.wallets.map((w) => [w.id, w] as const))('entry %s', (_id, entry) => {
    test('default: has exactly the entry keys, in order', () => {
      expect(Object.keys(entry)).toEqual(ENTRY_KEYS)
      expect(Object.keys(entry.mobile)).toEqual(['native', 'universal'])
      if (entry.injectedConfig) expect(Object.keys(entry.injectedConfig)).toEqual(['chain', 'flag', 'windowLocation'])
      if (entry.eip6963Config) expect(Object.keys(entry.eip6963Config)).toEqual(['rdns'])
    })

    test('default: names and flags have the right types', () => {
      expect(typeof entry.name).toBe('string')
      expect(entry.name.trim()).toBe(entry.name)
      expect(entry.name.length).toBeGreaterThan(0)
      expect(typeof entry.shortName).toBe('string')
      expect(entry.shortName.length).toBeGreaterThan(0)
      expect(entry.shortName.length).toBeLessThanOrEqual(12)
      expect(typeof entry.walletConnect).toBe('boolean')
      expect(typeof entry.filterFromWalletConnect).toBe('boolean')
      expect(entry.brandColor).toMatch(/^#[0-9A-Fa-f]{6}$/)
    })

    test('default: homepage is an https URL', () => {
      expect(isHttpsUrl(entry.homepage), entry.homepage).toBe(true)
    })

    test('default: injected config names a flag and a window path', () => {
      if (entry.injectedConfig === null) return
      expect(entry.injectedConfig.chain).toBe('evm')
      if (entry.injectedConfig.flag !== null) expect(entry.injectedConfig.flag).toMatch(/^is[A-Z][A-Za-z0-9]*$/)
      expect(entry.injectedConfig.windowLocation).toMatch(/^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/)
    })

    test('default: mobile link bases are a custom scheme ending in / and an https URL without trailing /', () => {
      const { native, universal } = entry.mobile
      if (native !== null) {
        expect(native).toMatch(/^[a-z][a-z0-9+.-]*:\/\/(\S*\/)?$/)
        expect(native).not.toMatch(/^https?:/)
      }
      if (universal !== null) {
        expect(isHttpsUrl(universal), universal).toBe(true)
        expect(universal.endsWith('/')).toBe(false)
      }
    })

    test('behavior: only WalletConnect wallets carry pairing links or hide from the WalletConnect list', () => {
      if (!entry.walletConnect) {
        expect(entry.mobile).toEqual({ native: null, universal: null })
        expect(entry.filterFromWalletConnect).toBe(false)
      }
      // Hiding from the WalletConnect list only makes sense for a wallet reachable in the browser.
      if (entry.filterFromWalletConnect) expect(entry.injectedConfig ?? entry.eip6963Config).not.toBeNull()
    })

    test('default: in-app browser template is https and contains {url}', () => {
      if (entry.inAppBrowserUrl === null) return
      expect(entry.inAppBrowserUrl).toContain('{url}')
      expect(isHttpsUrl(entry.inAppBrowserUrl.replaceAll('{url}', ENCODED_DAPP_URL)), entry.inAppBrowserUrl).toBe(true)
    })

    test('default: icon is a URL-encoded SVG data URI of at most 600 bytes, drawn in brandColor', () => {
      expect(entry.icon.startsWith(SVG_DATA_URI_PREFIX)).toBe(true)
      expect(new TextEncoder().encode(entry.icon).length).toBeLessThanOrEqual(600)
      // URL-encoded, not base64 and not raw markup.
      expect(entry.icon).not.toMatch(/[<>"#\s]/)
      const svg = decodeURIComponent(entry.icon.slice(SVG_DATA_URI_PREFIX.length))
      expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>[\s\S]*<\/svg>$/)
      expect(svg).toContain(`fill="${entry.brandColor}"`)
      expect(svg).toMatch(/<text[^>]*fill="#fff"[^>]*>[^<]{1,2}<\/text>/)
      // Offline: nothing the icon could fetch.
      expect(svg).not.toMatch(/href|url\(|<image|<script|@import/i)
      expect(svg.replace('http://www.w3.org/2000/svg', '')).not.toMatch(/https?:\/\//)
    })
  })
})

describe('dedicatedWalletRdns', () => {
  test('default: maps each announced rdns of a dedicated wallet to its excluded key', () => {
    expect(dedicatedWalletRdns).toMatchInlineSnapshot(`
      {
        "app.phantom": "phantomevm",
        "com.coinbase.wallet": "coinbase",
        "com.exodus.web3-wallet": "exodusevm",
        "com.intersend.wallet": "intersend",
        "io.metamask": "metamask",
        "xyz.abs.privy": "abstract",
      }
    `)
  })

  test('behavior: every entry of the map is the book wallet with that rdns, under an excluded key', () => {
    for (const [rdns, key] of Object.entries(dedicatedWalletRdns)) {
      expect((EXCLUDED_EIP6963_CONNECTOR_KEYS as readonly string[]).includes(key), key).toBe(true)
      expect(findWalletByRdns(book, rdns)?.id).toBe(key)
    }
  })

  test('behavior: every excluded wallet that announces an rdns is in the map', () => {
    for (const key of EXCLUDED_EIP6963_CONNECTOR_KEYS) {
      const rdns = wallet(key).eip6963Config?.rdns
      if (rdns === undefined) continue
      expect(dedicatedWalletRdns[rdns as keyof typeof dedicatedWalletRdns], key).toBe(key)
    }
  })

  test('behavior: the eager map does not import the wallet book', () => {
    const source = readFileSync(new URL('./dedicated.ts', import.meta.url), 'utf8')
    expect(source).not.toMatch(/\bimport\b/)
  })
})

describe('findWalletById / findWalletByRdns', () => {
  test('default: finds a wallet by id and by rdns', () => {
    expect(findWalletById(book, 'rabby')?.name).toBe('Rabby Wallet')
    expect(findWalletByRdns(book, 'io.rabby')?.id).toBe('rabby')
    expect(findWalletByRdns(book, 'app.phantom')?.id).toBe('phantomevm')
  })

  test('error: unknown id or rdns finds nothing', () => {
    expect(findWalletById(book, 'nope')).toBeUndefined()
    expect(findWalletByRdns(book, 'com.example.nope')).toBeUndefined()
    // An id is not an rdns.
    expect(findWalletByRdns(book, 'metamask')).toBeUndefined()
  })
})

describe('getWalletConnectDeepLink', () => {
  test('default: universal link first, with the wc: URI percent-encoded', () => {
    expect(getWalletConnectDeepLink(wallet('metamask'), WC_URI)).toBe('https://metamask.app.link/wc?uri=wc%3Aabc%402%3Frelay-protocol%3Dirn%26symKey%3D00')
    expect(getWalletConnectDeepLink(wallet('trust'), WC_URI)).toBe(`https://link.trustwallet.com/wc?uri=${ENCODED_WC_URI}`)
    expect(getWalletConnectDeepLink(wallet('rainbow'), WC_URI)).toBe(`https://rnbwapp.com/wc?uri=${ENCODED_WC_URI}`)
  })

  test('behavior: preferUniversal false picks the native scheme', () => {
    expect(getWalletConnectDeepLink(wallet('metamask'), WC_URI, { preferUniversal: false })).toBe(`metamask://wc?uri=${ENCODED_WC_URI}`)
  })

  test('behavior: falls back to the link the wallet has', () => {
    // OKX has no universal link; a native path base keeps its path.
    expect(getWalletConnectDeepLink(wallet('okx'), WC_URI)).toBe(`okex://main/wc?uri=${ENCODED_WC_URI}`)
    expect(getWalletConnectDeepLink(wallet('bybit'), WC_URI)).toBe(`bybitapp://open/route?targetUrl=by://web3/walletconnect/wc?uri=${ENCODED_WC_URI}`)
    expect(getWalletConnectDeepLink(wallet('ledger'), WC_URI, { preferUniversal: true })).toBe(`ledgerlive://wc?uri=${ENCODED_WC_URI}`)
  })

  test('error: no link for a wallet that does not pair through WalletConnect', () => {
    expect(getWalletConnectDeepLink(wallet('rabby'), WC_URI)).toBeUndefined()
    expect(getWalletConnectDeepLink(wallet('edenonline'), WC_URI)).toBeUndefined()
  })

  test('error: no link for a WalletConnect wallet without mobile links', () => {
    expect(getWalletConnectDeepLink(wallet('abstract'), WC_URI)).toBeUndefined()
  })

  test('error: no link for a URI that is not a wc: URI', () => {
    expect(getWalletConnectDeepLink(wallet('metamask'), 'https://evil.example/wc')).toBeUndefined()
    expect(getWalletConnectDeepLink(wallet('metamask'), '')).toBeUndefined()
  })
})

describe('getInAppBrowserLink', () => {
  test('default: fills the template with the encoded dapp URL', () => {
    expect(getInAppBrowserLink(wallet('metamask'), DAPP_URL)).toBe('https://metamask.app.link/dapp/https%3A%2F%2Fapp.example%2Fpath%3Fx%3D1')
    expect(getInAppBrowserLink(wallet('coinbase'), DAPP_URL)).toBe(`https://go.cb-w.com/dapp?cb_url=${ENCODED_DAPP_URL}`)
    expect(getInAppBrowserLink(wallet('trust'), DAPP_URL)).toBe(`https://link.trustwallet.com/open_url?coin_id=60&url=${ENCODED_DAPP_URL}`)
  })

  test('behavior: replaces every {url} in the template', () => {
    expect(getInAppBrowserLink(wallet('phantomevm'), DAPP_URL)).toBe(`https://phantom.app/ul/browse/${ENCODED_DAPP_URL}?ref=${ENCODED_DAPP_URL}`)
  })

  test('behavior: a dapp URL with $ patterns is inserted literally', () => {
    expect(getInAppBrowserLink(wallet('metamask'), "https://app.example/$&$'")).toBe("https://metamask.app.link/dapp/https%3A%2F%2Fapp.example%2F%24%26%24'")
  })

  test('error: no link for a wallet without an in-app browser link', () => {
    expect(getInAppBrowserLink(wallet('rabby'), DAPP_URL)).toBeUndefined()
  })

  test('error: no link for a dapp URL that is not http(s)', () => {
    expect(getInAppBrowserLink(wallet('metamask'), 'javascript:alert(1)')).toBeUndefined()
    expect(getInAppBrowserLink(wallet('metamask'), 'app.example')).toBeUndefined()
  })
})

describe('getWalletBook', () => {
  test('default: returns the bundled book, the same object each time', () => {
    expect(getWalletBook()).toBe(book)
    expect(book.version).toBe('2026.11.22')
  })
})
