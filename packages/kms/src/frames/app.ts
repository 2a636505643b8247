import { readdirSync, readFileSync } from 'node:fs'
import { Hono } from 'hono'
import { FRAME_PAGES, type FrameChain, type FramePaymaster, framePage } from './pages.js'

// The frames' own origin: five pages and their scripts and stylesheet, nothing else. Every
// response carries a CSP that allows only this origin's scripts and styles, no images, and
// embedding only by the configured parent origins; no connections, except the consent page's to
// the RPC of the chains the kms configured for it.

export type FramesAppOptions = {
  /** The kms's bundle signer (uncompressed hex), baked into the export and import pages. */
  signerPublicKey: string
  /**
   * The signer's next key while it rotates (or, after the swap, its previous one), uncompressed
   * hex: baked in beside it, so a frame opened before the swap accepts the bundles signed after it.
   */
  nextSignerPublicKey?: string | undefined
  /** Origins (`scheme://host[:port]`) allowed to embed the frames and open their channel. */
  parentOrigins: readonly string[]
  /** The chains the consent frame decodes and simulates on: chain id and JSON-RPC url. Default none: it then reviews no transaction. */
  chains?: readonly FrameChain[] | undefined
  /** The batch executor: the only EIP-7702 delegate and batch target the consent frame signs for. Default none: it signs neither. */
  executor?: string | undefined
  /** The app's paymasters per chain (at most one of each kind on a chain), which the consent frame names as the app's. Default none. */
  paymasters?: readonly FramePaymaster[] | undefined
  /** The app's name, shown by the consent frame for a sponsored fee ("sponsored by APP"). Default none: "sponsored by the app". */
  appName?: string | undefined
  /**
   * The kms's key for second-factor codes (uncompressed hex, `mfaCodePublicKey` of mfa/codeKey.ts):
   * the consent frame seals a typed code to it. Default none: the frame then takes no code.
   */
  mfaCodePublicKey?: string | undefined
}

/** Where the compiled frame scripts and the stylesheet are served from. */
const assetsDirectory = new URL('../../frames/', import.meta.url)

const contentTypes: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' }

/** Checks `origin` is exactly an http(s) origin, as a browser writes `event.origin`. */
export function assertOrigin(origin: string): string {
  let parsed: URL | undefined
  try {
    parsed = new URL(origin)
  } catch {
    parsed = undefined
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.origin !== origin)
    throw new Error(`frames.parentOrigins: ${JSON.stringify(origin)} is not an origin like https://app.example or http://localhost:5173`)
  return origin
}

/** Checks a chain's id and that its RPC url is http(s); answers it as given. */
export function assertChain(chain: FrameChain): FrameChain {
  let url: URL | undefined
  try {
    url = new URL(chain.rpcUrl)
  } catch {
    url = undefined
  }
  if (!Number.isSafeInteger(chain.id) || chain.id <= 0 || !url || (url.protocol !== 'http:' && url.protocol !== 'https:') || /\s/.test(chain.rpcUrl))
    throw new Error(`frames.chains: ${JSON.stringify(chain)} is not a chain id with an http(s) RPC url`)
  return chain
}

/** Checks a paymaster's chain id, kind and address, and that no chain names two of one kind; answers them as given. */
export function assertPaymasters(paymasters: readonly FramePaymaster[]): readonly FramePaymaster[] {
  const seen = new Set<string>()
  for (const paymaster of paymasters) {
    if (
      !Number.isSafeInteger(paymaster.chainId) ||
      paymaster.chainId <= 0 ||
      (paymaster.kind !== 'sponsor' && paymaster.kind !== 'token') ||
      !/^0x[0-9a-fA-F]{40}$/.test(paymaster.address)
    )
      throw new Error(`frames.paymasters: ${JSON.stringify(paymaster)} is not a chain id, a kind (sponsor or token) and an address`)
    const key = `${paymaster.chainId}=${paymaster.kind}`
    if (seen.has(key)) throw new Error(`frames.paymasters: chain ${paymaster.chainId} names two ${paymaster.kind} paymasters`)
    seen.add(key)
  }
  return paymasters
}

/** Checks the app's name: printable text of at most 64 characters. */
export function assertAppName(name: string | undefined): string | undefined {
  if (name !== undefined && (name.trim() === '' || name.length > 64 || /[\p{Cc}\p{Cf}]/u.test(name)))
    throw new Error(`frames.appName: ${JSON.stringify(name)} is not a name of 1 to 64 printable characters`)
  return name?.trim()
}

/**
 * The frames' Content-Security-Policy: scripts and styles of this origin only, no images,
 * embedding only by `parentOrigins` (`'none'` when there are none), and connections only to
 * `connectOrigins` (the consent page's RPC origins; `'none'` for the other pages).
 */
export function framesContentSecurityPolicy(parentOrigins: readonly string[], connectOrigins: readonly string[] = []): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'none'",
    `connect-src ${connectOrigins.length ? connectOrigins.join(' ') : "'none'"}`,
    `frame-ancestors ${parentOrigins.length ? parentOrigins.join(' ') : "'none'"}`,
    "base-uri 'none'",
    "form-action 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join('; ')
}

/**
 * The frames as a Hono app: `GET /auth`, `/recovery`, `/export`, `/import`, `/consent` and `/assets/*`.
 *
 * @example
 * const frames = createFramesApp({ signerPublicKey: kms.signerPublicKey, parentOrigins: ['http://localhost:5173'] })
 * const response = await frames.request('/export')
 */
export function createFramesApp(options: FramesAppOptions) {
  const parentOrigins = options.parentOrigins.map(assertOrigin)
  if (!/^04[0-9a-f]{128}$/i.test(options.signerPublicKey)) throw new Error('signerPublicKey must be an uncompressed P-256 public key in hex')
  if (options.nextSignerPublicKey !== undefined && !/^04[0-9a-f]{128}$/i.test(options.nextSignerPublicKey))
    throw new Error('nextSignerPublicKey must be an uncompressed P-256 public key in hex')
  const nextSignerPublicKey = options.nextSignerPublicKey?.toLowerCase()
  const chains = (options.chains ?? []).map(assertChain)
  if (options.executor !== undefined && !/^0x[0-9a-fA-F]{40}$/.test(options.executor))
    throw new Error(`frames.executor: ${JSON.stringify(options.executor)} is not an address`)
  const paymasters = assertPaymasters(options.paymasters ?? [])
  const appName = assertAppName(options.appName)
  const rpcOrigins = [...new Set(chains.map((chain) => new URL(chain.rpcUrl).origin))]
  const securityHeaders = {
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  }
  const policies = {
    frames: framesContentSecurityPolicy(parentOrigins),
    consent: framesContentSecurityPolicy(parentOrigins, rpcOrigins),
  }
  const assets = new Map(
    readdirSync(assetsDirectory)
      .filter((name) => /\.(?:js|css)$/.test(name))
      .map((name) => [name, { body: readFileSync(new URL(name, assetsDirectory), 'utf8'), type: contentTypes[name.slice(name.lastIndexOf('.'))]! }]),
  )
  const pages = new Map(
    FRAME_PAGES.map((page) => [
      page,
      (secret: 'mnemonic' | 'private-key') =>
        framePage({
          page,
          parentOrigins,
          signerPublicKey: options.signerPublicKey.toLowerCase(),
          nextSignerPublicKey,
          secret,
          chains,
          executor: options.executor,
          paymasters,
          appName,
          mfaCodePublicKey: options.mfaCodePublicKey,
        }),
    ]),
  )

  const app = new Hono()
  app.use('*', async (c, next) => {
    await next()
    c.res.headers.set('content-security-policy', c.req.path === '/consent' ? policies.consent : policies.frames)
    for (const [name, value] of Object.entries(securityHeaders)) c.res.headers.set(name, value)
  })
  for (const page of FRAME_PAGES)
    app.on(['GET', 'HEAD'], `/${page}`, (c) => {
      const secret = page === 'import' && c.req.query('secret') === 'private-key' ? 'private-key' : 'mnemonic'
      return c.body(pages.get(page)!(secret), 200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
    })
  app.on(['GET', 'HEAD'], '/assets/:name', (c) => {
    const asset = assets.get(c.req.param('name'))
    if (!asset) return c.text('Not found', 404)
    return c.body(asset.body, 200, { 'content-type': asset.type, 'cache-control': 'no-cache' })
  })
  app.notFound((c) => c.text('Not found', 404))
  app.onError((error, c) => {
    console.error(error)
    return c.text('Internal error', 500)
  })
  return app
}
