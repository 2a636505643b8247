/**
 * Bundle size of a minimal Latchkey app against a React-only baseline, built with one Vite config.
 *
 *   npm run bench:size                      builds and packs the packages, installs the tarballs
 *                                           outside the repository, builds the apps against them
 *                                           (what users download) and against the workspace
 *                                           source, prints the table and source vs packed
 *   npm run bench:size -- --check           also fails when a packed figure exceeds its budget
 *   npm run bench:size -- --packs <dir>     uses the tarballs scripts/pack.mjs already put in <dir>
 *   npm run bench:size -- --source          the workspace source only (no build, no pack: quick)
 *   npm run bench:size -- --browser         also serves the minimal app (gzip) to Chromium, clicks
 *                                           Connect and prints what it downloaded beside the estimate
 *
 * eager = the entry chunk plus its transitive static imports (from Vite's manifest); all = every
 * emitted .js file. Each file is compressed on its own (gzip level 9, brotli quality 11) and summed.
 * A lazy figure (first click on Connect, first use of WalletConnect…) = the dynamically imported
 * chunk plus the chunks it imports statically, and their CSS, minus what the page already has.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import react from '@vitejs/plugin-react'
import { build, defaultClientConditions, type Manifest } from 'vite'
import { locales } from '../packages/react/src/i18n/locales.js'
import { CONSENT_FRAME_GZIP_BUDGET_BYTES, consentFrameSize, FRAME_CATALOGUE_GZIP_BUDGET_BYTES, frameCatalogueSizes } from './consentFrameSize.js'

/** The issue's target: at most this much more eager JS (gzip) than the React-only baseline. */
export const EAGER_GZIP_BUDGET_BYTES = 30 * 1024
/** Issue 30's target for the minimal app (provider + ConnectButton): its eager JS over React's, and it never grows past it (gzip). */
export const EAGER_MINIMAL_GZIP_BUDGET_BYTES = 10 * 1024
/** Issue 5's target: what requiring Sign-In with Ethereum adds to the minimal app's eager JS (gzip). */
export const SIGN_IN_GZIP_BUDGET_BYTES = 3 * 1024
/** Issue 3's target: the WalletConnect code an app downloads on first use, at most this (gzip). */
export const WALLETCONNECT_GZIP_BUDGET_BYTES = 30 * 1024
/** Issue 12's target: what @latchkey/wagmi and LatchkeyWagmiProvider add to a wagmi app with injected() only (gzip). */
export const WAGMI_GZIP_BUDGET_BYTES = 15 * 1024
/** Issue 11's target: what the first click on Connect downloads in the minimal app, JS and CSS (gzip). */
export const FIRST_CLICK_GZIP_BUDGET_BYTES = 20 * 1024
/** Issue 30's target: each locale's catalogue, the one file a non-English page adds (gzip). */
export const CATALOGUE_GZIP_BUDGET_BYTES = 3 * 1024
/** Issue 30's target: the first click on Connect with the active catalogue, in any locale but English (gzip). */
export const FIRST_CLICK_LOCALIZED_GZIP_BUDGET_BYTES = 23 * 1024
/** Issue 13's target: what first use of the embedded wallet downloads after the connect modal, JS and CSS (gzip). */
export const EMBEDDED_FIRST_USE_GZIP_BUDGET_BYTES = 40 * 1024

type Sizes = { files: number; raw: number; gzip: number; brotli: number }
type Result = { eager: Sizes; all: Sizes; css: number; manifest: Manifest; outDir: string; eagerFiles: ReadonlySet<string> }
/** What a dynamic import downloads: its JS and its CSS, and the files, so a later figure can leave them out. */
type Download = { js: Sizes; css: Sizes; files: ReadonlySet<string> }

const here = import.meta.dirname

/** Where the apps are built from and how our packages resolve there. */
type Mode = { label: 'source' | 'packed'; appsDir: string; outDir: string; conditions: string[] }

async function buildApp(mode: Mode, name: string): Promise<Result> {
  const root = join(mode.appsDir, name)
  const outDir = join(mode.outDir, name)
  await build({
    root,
    configFile: false,
    logLevel: 'error',
    plugins: [react()],
    resolve: { conditions: mode.conditions },
    build: { outDir, emptyOutDir: true, manifest: true, write: true },
  })
  const manifest = JSON.parse(readFileSync(join(outDir, '.vite', 'manifest.json'), 'utf8')) as Manifest
  const entry = Object.values(manifest).find((chunk) => chunk.isEntry)
  if (!entry) throw new Error(`no entry chunk in ${name}`)
  const eagerFiles = new Set<string>()
  const visit = (key: string) => {
    const chunk = manifest[key]
    if (!chunk || eagerFiles.has(chunk.file)) return
    eagerFiles.add(chunk.file)
    for (const css of chunk.css ?? []) eagerFiles.add(css)
    for (const imported of chunk.imports ?? []) visit(imported)
  }
  visit(Object.keys(manifest).find((key) => manifest[key] === entry) as string)
  const allFiles = new Set(
    Object.values(manifest)
      .map((chunk) => chunk.file)
      .filter((file) => file.endsWith('.js')),
  )
  const css = Object.values(manifest).flatMap((chunk) => chunk.css ?? [])
  return {
    eager: measure(
      outDir,
      [...eagerFiles].filter((file) => file.endsWith('.js')),
    ),
    all: measure(outDir, [...allFiles]),
    css: [...new Set(css)].reduce((sum, file) => sum + readFileSync(join(outDir, file)).length, 0),
    manifest,
    outDir,
    eagerFiles,
  }
}

/**
 * What importing the module whose manifest key matches `source` downloads beyond the page and the
 * files in `loaded`: its chunk, the chunks it imports statically and their CSS, as Vite's preload
 * helper fetches them.
 */
function lazyDownload(result: Result, source: RegExp, loaded: ReadonlySet<string> = new Set()): Download {
  const key = Object.keys(result.manifest).find((item) => source.test(item) && result.manifest[item]?.isDynamicEntry)
  if (!key) throw new Error(`no dynamically imported chunk for ${source}: is it still imported with import()?`)
  const files = new Set<string>()
  const skip = (file: string) => files.has(file) || result.eagerFiles.has(file) || loaded.has(file)
  const visit = (name: string) => {
    const chunk = result.manifest[name]
    if (!chunk || skip(chunk.file)) return
    files.add(chunk.file)
    for (const css of chunk.css ?? []) if (!skip(css)) files.add(css)
    for (const imported of chunk.imports ?? []) visit(imported)
  }
  visit(key)
  const list = [...files]
  return {
    js: measure(
      result.outDir,
      list.filter((file) => file.endsWith('.js')),
    ),
    css: measure(
      result.outDir,
      list.filter((file) => file.endsWith('.css')),
    ),
    files,
  }
}

function measure(dir: string, files: readonly string[]): Sizes {
  let raw = 0
  let gzip = 0
  let brotli = 0
  for (const file of files) {
    const bytes = readFileSync(join(dir, file))
    raw += bytes.length
    gzip += gzipSync(bytes, { level: 9 }).length
    brotli += brotliCompressSync(bytes, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_LGWIN]: 24 },
    }).length
  }
  return { files: files.length, raw, gzip, brotli }
}

const kib = (bytes: number) => (bytes / 1024).toFixed(1)
const signedKib = (bytes: number) => {
  const text = kib(Math.abs(bytes))
  return text === '0.0' ? text : `${bytes > 0 ? '+' : '−'}${text}`
}
const describeDownload = (download: Download) =>
  `${download.js.files + download.css.files} file(s), ${kib(download.js.gzip + download.css.gzip)} KiB gzip (JS ${kib(download.js.gzip)} + CSS ${kib(download.css.gzip)}; ${kib(download.js.brotli + download.css.brotli)} KiB br, ${kib(download.js.raw + download.css.raw)} KiB raw)`

// A module of ours, from the workspace source (`packages/react/src/modal/ConnectModal.tsx`) or
// from an installed package's dist (`node_modules/@latchkey/react/dist/modal/ConnectModal.js`).
const ours = (pkg: string, path: string) => new RegExp(`${pkg}/(src/${path}\\.tsx?|dist/${path}\\.js)$`)
const connectModal = ours('react', 'modal/ConnectModal')
const accountModal = ours('react', 'modal/AccountModal')
const checksum = ours('core', 'utils/getAddress')
const walletConnectProtocol = ours('walletconnect', 'index')
const embeddedWallet = ours('embedded', 'index')
const embeddedView = ours('react', 'modal/EmbeddedView')
const embeddedModule = /(packages|@latchkey)\/embedded\//
const walletIconsModule = ours('react', 'modal/walletIcons')
const walletConnectModule = /(packages|@latchkey)\/walletconnect\//

/** Every figure of one build of the bench apps. */
async function measureApps(mode: Mode) {
  const baseline = await buildApp(mode, 'baseline')
  const latchkey = await buildApp(mode, 'latchkey')
  const withWalletConnect = await buildApp(mode, 'latchkey-wc')
  const withEmbedded = await buildApp(mode, 'latchkey-embedded')
  const withSignIn = await buildApp(mode, 'latchkey-siwe')
  const wagmi = await buildApp(mode, 'wagmi')
  const wagmiLatchkey = await buildApp(mode, 'wagmi-latchkey')
  const wagmiFirstClick = lazyDownload(wagmiLatchkey, connectModal)
  /** Modules of `pattern` among `files` of `result` (its manifest keys name the sources). */
  const modulesIn = (result: Result, files: ReadonlySet<string>, pattern: RegExp) =>
    Object.entries(result.manifest).filter(([key, chunk]) => files.has(chunk.file) && pattern.test(key)).length
  // The minimal app's journey, in the order a user meets it.
  const firstClick = lazyDownload(latchkey, connectModal)
  const pickWallet = lazyDownload(latchkey, checksum, firstClick.files)
  // Another locale than English: its catalogue downloads too (with the connect modal's chunk, on
  // mount, for the button's label); English comes inside the modal's chunk.
  const catalogues = locales
    .filter((locale) => locale !== 'en')
    .map((locale) => [locale, lazyDownload(latchkey, ours('react', `i18n/locales/${locale}`), firstClick.files).js] as const)
  // With embedded(): the connect modal, then picking email or passkey loads the embedded view and
  // the wallet (the kms client, session keys, passkeys, frames); a transaction loads more later.
  const embeddedModal = lazyDownload(withEmbedded, connectModal)
  const embeddedViewDownload = lazyDownload(withEmbedded, embeddedView, embeddedModal.files)
  const embeddedWalletDownload = lazyDownload(withEmbedded, embeddedWallet, new Set([...embeddedModal.files, ...embeddedViewDownload.files]))
  return {
    mode,
    rows: [
      ['a baseline (React only)', baseline],
      ['latchkey (provider + ConnectButton)', latchkey],
      ['latchkey + walletConnect()', withWalletConnect],
      ['latchkey + embedded()', withEmbedded],
      ['latchkey + signIn, requireSignIn', withSignIn],
      ['wagmi app (injected() only)', wagmi],
      ['wagmi app + @latchkey/wagmi', wagmiLatchkey],
    ] as [string, Result][],
    wagmi,
    wagmiLatchkey,
    wagmiFirstClick,
    // The first click on Connect in the wagmi app loads the modal; WalletConnect and the embedded wallet wait for their own first use.
    wagmiHeavyOnFirstClick:
      modulesIn(wagmiLatchkey, new Set([...wagmiLatchkey.eagerFiles, ...wagmiFirstClick.files]), walletConnectModule) +
      modulesIn(wagmiLatchkey, new Set([...wagmiLatchkey.eagerFiles, ...wagmiFirstClick.files]), embeddedModule),
    baseline,
    latchkey,
    withWalletConnect,
    withEmbedded,
    withSignIn,
    firstClick,
    // Issue 30: the wallet book's icons are their own chunk, imported once the list shows.
    walletIcons: lazyDownload(latchkey, walletIconsModule, firstClick.files),
    walletIconsEarly: modulesIn(latchkey, new Set([...latchkey.eagerFiles, ...firstClick.files]), walletIconsModule),
    catalogues,
    largestCatalogue: Math.max(...catalogues.map(([, sizes]) => sizes.gzip)),
    pickWallet,
    accountAfterConnect: lazyDownload(latchkey, accountModal, new Set([...firstClick.files, ...pickWallet.files])),
    accountOnItsOwn: lazyDownload(latchkey, accountModal, pickWallet.files),
    walletConnectChunk: lazyDownload(withWalletConnect, walletConnectProtocol).js,
    embeddedChunk: lazyDownload(withEmbedded, embeddedWallet).js,
    embeddedFirstUse: [embeddedViewDownload, embeddedWalletDownload] as const,
    embeddedEager: [...withEmbedded.eagerFiles].some((file) =>
      Object.entries(withEmbedded.manifest).some(([key, chunk]) => chunk.file === file && embeddedModule.test(key)),
    ),
  }
}

function report(figures: Awaited<ReturnType<typeof measureApps>>) {
  const { rows, baseline, latchkey, withWalletConnect, withEmbedded, withSignIn, firstClick, pickWallet, accountAfterConnect, accountOnItsOwn } = figures
  const { walletConnectChunk, embeddedChunk, embeddedEager, wagmi, wagmiLatchkey, wagmiFirstClick, wagmiHeavyOnFirstClick } = figures
  console.log(
    `\nBundle size, KiB, built from ${figures.mode.label === 'packed' ? 'the packed packages (installed tarballs, dist/)' : 'the workspace source'} (each file compressed on its own; eager = entry + static imports)\n`,
  )
  console.log(['variant'.padEnd(38), 'eager files', 'eager raw', 'eager gzip', 'eager br', 'all files', 'all raw', 'all gzip', 'all br', 'css raw'].join('  '))
  for (const [name, r] of rows)
    console.log(
      [
        name.padEnd(38),
        String(r.eager.files).padStart(11),
        kib(r.eager.raw).padStart(9),
        kib(r.eager.gzip).padStart(10),
        kib(r.eager.brotli).padStart(8),
        String(r.all.files).padStart(9),
        kib(r.all.raw).padStart(7),
        kib(r.all.gzip).padStart(8),
        kib(r.all.brotli).padStart(6),
        kib(r.css).padStart(7),
      ].join('  '),
    )
  console.log(
    `\nlatchkey − baseline: eager +${kib(latchkey.eager.gzip - baseline.eager.gzip)} KiB gzip (+${kib(latchkey.eager.brotli - baseline.eager.brotli)} br, +${kib(latchkey.eager.raw - baseline.eager.raw)} raw); all +${kib(latchkey.all.gzip - baseline.all.gzip)} KiB gzip`,
  )
  console.log(
    'Reference, same method (research/bundle-anchors.md, eager br − floor): wagmi +23.7, RainbowKit +176.7, ConnectKit +305.7, AppKit +397.7, Dynamic +901.9 KiB',
  )
  console.log(`first click on Connect (the connect modal): ${describeDownload(firstClick)}`)
  console.log(
    `first click on Connect in another locale adds its catalogue (gzip KiB): ${figures.catalogues.map(([locale, sizes]) => `${locale} ${kib(sizes.gzip)}`).join(', ')}; English is in the modal's chunk`,
  )
  console.log(
    `wallet icons, once the list shows (their own chunk): ${describeDownload(figures.walletIcons)}; modules of it in the page or the first click: ${figures.walletIconsEarly}`,
  )
  console.log(`then connecting a browser wallet (viem's address checksum): ${describeDownload(pickWallet)}`)
  console.log(
    `account modal, first open: ${describeDownload(accountAfterConnect)} after the connect modal; ${kib(accountOnItsOwn.js.gzip + accountOnItsOwn.css.gzip)} KiB gzip for a returning user (restored connection, connect modal never opened)`,
  )
  console.log(
    `walletConnect(): eager +${kib(withWalletConnect.eager.gzip - latchkey.eager.gzip)} KiB gzip over latchkey; loaded on first use: ${walletConnectChunk.files} file(s), ${kib(walletConnectChunk.raw)} KiB raw, ${kib(walletConnectChunk.gzip)} KiB gzip, ${kib(walletConnectChunk.brotli)} KiB br`,
  )
  console.log("Reference: the official sign-client + universal-provider weigh about 250 KB minified in the peers' bundles")
  console.log(
    `signIn: serverAdapter + requireSignIn: eager +${kib(withSignIn.eager.gzip - latchkey.eager.gzip)} KiB gzip over latchkey (both carry ConnectButton's sign-in state and actions); viem's SIWE builder and the signing code load with the first sign-in`,
  )
  console.log(
    `embedded(): eager +${kib(withEmbedded.eager.gzip - latchkey.eager.gzip)} KiB gzip over latchkey${embeddedEager ? ' (EMBEDDED CODE IS EAGER)' : ', none of @latchkey/embedded eager'}; loaded on first use: ${embeddedChunk.files} file(s), ${kib(embeddedChunk.raw)} KiB raw, ${kib(embeddedChunk.gzip)} KiB gzip, ${kib(embeddedChunk.brotli)} KiB br`,
  )
  const [view, wallet] = figures.embeddedFirstUse
  console.log(
    `embedded first use, after the connect modal: the embedded view ${describeDownload(view)}; then the wallet ${describeDownload(wallet)}; together ${kib(view.js.gzip + view.css.gzip + wallet.js.gzip + wallet.css.gzip)} KiB gzip`,
  )
  console.log('Reference: issue 13 measured 115.6 KiB gzip for the embedded-wallet chunk before the X.509 stack left it; budget 40 KiB')
  console.log(
    `@latchkey/wagmi (walletConnect(), embedded(), LatchkeyWagmiProvider, ConnectButton) on a wagmi app with injected() only: eager +${kib(wagmiLatchkey.eager.gzip - wagmi.eager.gzip)} KiB gzip (+${kib(wagmiLatchkey.eager.brotli - wagmi.eager.brotli)} br); the wagmi app itself ${kib(wagmi.eager.gzip)} KiB gzip eager. Reference: RainbowKit adds about 180 KiB (issue 12)`,
  )
  console.log(
    `wagmi app, first click on Connect: ${describeDownload(wagmiFirstClick)}; WalletConnect or embedded-wallet modules loaded by then: ${wagmiHeavyOnFirstClick}`,
  )
}

/** The figures the budgets and the comparison use, in bytes (gzip). */
function headline(figures: Awaited<ReturnType<typeof measureApps>>): [string, number][] {
  const { baseline, latchkey, withWalletConnect, withEmbedded, withSignIn } = figures
  const both = (download: Download) => download.js.gzip + download.css.gzip
  return [
    ['eager latchkey − baseline', latchkey.eager.gzip - baseline.eager.gzip],
    ['eager latchkey + walletConnect() − baseline', withWalletConnect.eager.gzip - baseline.eager.gzip],
    ['eager latchkey + embedded() − baseline', withEmbedded.eager.gzip - baseline.eager.gzip],
    ['eager latchkey + signIn − latchkey', withSignIn.eager.gzip - latchkey.eager.gzip],
    ['first click on Connect (JS + CSS)', both(figures.firstClick)],
    ['largest locale catalogue', figures.largestCatalogue],
    ['first click on Connect, largest other locale', both(figures.firstClick) + figures.largestCatalogue],
    ['then connecting a browser wallet', both(figures.pickWallet)],
    ['account modal, first open after connect', both(figures.accountAfterConnect)],
    ['lazy WalletConnect chunk', figures.walletConnectChunk.gzip],
    ['lazy embedded-wallet chunk', figures.embeddedChunk.gzip],
    ['embedded first use (view + wallet, JS + CSS)', both(figures.embeddedFirstUse[0]) + both(figures.embeddedFirstUse[1])],
    ['eager wagmi app + @latchkey/wagmi − wagmi app', figures.wagmiLatchkey.eager.gzip - figures.wagmi.eager.gzip],
    ['wagmi app: first click on Connect (JS + CSS)', both(figures.wagmiFirstClick)],
  ]
}

const option = (name: string) => {
  const at = process.argv.indexOf(name)
  return at > 0 ? process.argv[at + 1] : undefined
}
const sourceMode: Mode = { label: 'source', appsDir: join(here, 'apps'), outDir: join(here, '.out'), conditions: ['source', ...defaultClientConditions] }
let measured: Awaited<ReturnType<typeof measureApps>>
if (process.argv.includes('--source')) {
  measured = await measureApps(sourceMode)
  report(measured)
} else {
  const { installPacked } = await import('./packed.js')
  const installed = await installPacked({ tarballs: option('--packs'), log: (line) => console.log(line) })
  try {
    // The packed build is the one that counts (and the one bench:paint serves): it keeps bench/.out/<app>.
    measured = await measureApps({ label: 'packed', appsDir: installed.appsDir, outDir: join(here, '.out'), conditions: [...defaultClientConditions] })
  } finally {
    installed.remove()
  }
  const fromSource = await measureApps({ ...sourceMode, outDir: join(here, '.out', 'source') })
  report(measured)
  console.log('\nSource vs packed (gzip KiB): the same apps built from the workspace source and from the installed tarballs\n')
  console.log(['figure'.padEnd(44), 'source', 'packed', 'packed − source'].join('  '))
  const source = new Map(headline(fromSource))
  for (const [name, packed] of headline(measured)) {
    const value = source.get(name) ?? 0
    console.log([name.padEnd(44), kib(value).padStart(6), kib(packed).padStart(6), signedKib(packed - value).padStart(15)].join('  '))
  }
}
const { latchkey, firstClick } = measured
const figures = new Map(headline(measured))
// The kms's consent frame is served from its own origin, the same files whichever way the apps are built.
const consentFrame = consentFrameSize()
console.log(
  `\nkms consent frame (/consent): ${consentFrame.files.length} script(s) (${consentFrame.files.join(', ')}), ${kib(consentFrame.gzip)} KiB gzip, ${kib(consentFrame.brotli)} KiB br, ${kib(consentFrame.raw)} KiB raw; budget ${kib(CONSENT_FRAME_GZIP_BUDGET_BYTES)} KiB gzip`,
)
figures.set('kms consent frame scripts', consentFrame.gzip)
const frameCatalogues = frameCatalogueSizes()
console.log(
  `kms consent frame catalogues (gzip KiB, each file on its own): ${frameCatalogues.map(({ file, gzip }) => `${file.slice(7, -3)} ${kib(gzip)}`).join(', ')}; largest ${frameCatalogues[0]!.file} ${kib(frameCatalogues[0]!.gzip)} KiB, budget ${kib(FRAME_CATALOGUE_GZIP_BUDGET_BYTES)} KiB a file`,
)
figures.set('largest consent frame catalogue', frameCatalogues[0]!.gzip)

if (process.argv.includes('--browser')) {
  const { measureFirstClick } = await import('./firstClick.js')
  const seen = await measureFirstClick(latchkey.outDir)
  const estimate = firstClick.js.gzip + firstClick.css.gzip
  console.log(
    `first click on Connect in Chromium (gzip-encoded bodies of the JS and CSS requested from the click on): ${seen.files.length} file(s), ${kib(seen.bytes)} KiB; the estimate above: ${kib(estimate)} KiB (${seen.bytes === estimate ? 'equal' : `${seen.bytes > estimate ? '+' : ''}${seen.bytes - estimate} bytes`})`,
  )
  const estimated = [...firstClick.files].sort()
  if (seen.files.join() !== estimated.join()) console.log(`  files differ: browser ${seen.files.join(', ')}; estimate ${estimated.join(', ')}`)
  const wagmiSeen = await measureFirstClick(measured.wagmiLatchkey.outDir)
  const wagmiEstimate = measured.wagmiFirstClick.js.gzip + measured.wagmiFirstClick.css.gzip
  console.log(
    `wagmi app, first click on Connect in Chromium: ${wagmiSeen.files.length} file(s), ${kib(wagmiSeen.bytes)} KiB; the estimate above: ${kib(wagmiEstimate)} KiB (${wagmiSeen.bytes === wagmiEstimate ? 'equal' : `${wagmiSeen.bytes > wagmiEstimate ? '+' : ''}${wagmiSeen.bytes - wagmiEstimate} bytes`}): ${wagmiSeen.files.join(', ')}`,
  )
}

if (process.argv.includes('--check')) {
  const budget = (name: string, limit: number): [string, number, number] => [name, figures.get(name) as number, limit]
  const budgets: [string, number, number][] = [
    budget('eager latchkey − baseline', EAGER_MINIMAL_GZIP_BUDGET_BYTES),
    budget('eager latchkey + walletConnect() − baseline', EAGER_GZIP_BUDGET_BYTES),
    budget('lazy WalletConnect chunk', WALLETCONNECT_GZIP_BUDGET_BYTES),
    budget('eager latchkey + embedded() − baseline', EAGER_GZIP_BUDGET_BYTES),
    budget('eager latchkey + signIn − latchkey', SIGN_IN_GZIP_BUDGET_BYTES),
    budget('first click on Connect (JS + CSS)', FIRST_CLICK_GZIP_BUDGET_BYTES),
    budget('largest locale catalogue', CATALOGUE_GZIP_BUDGET_BYTES),
    budget('first click on Connect, largest other locale', FIRST_CLICK_LOCALIZED_GZIP_BUDGET_BYTES),
    budget('embedded first use (view + wallet, JS + CSS)', EMBEDDED_FIRST_USE_GZIP_BUDGET_BYTES),
    budget('kms consent frame scripts', CONSENT_FRAME_GZIP_BUDGET_BYTES),
    budget('largest consent frame catalogue', FRAME_CATALOGUE_GZIP_BUDGET_BYTES),
    // Issue 4: the embedded-wallet code is absent from the eager bundle.
    ['@latchkey/embedded modules in the eager bundle', measured.embeddedEager ? 1 : 0, 0],
    // Issue 30: the wallet icons load with the list, after the first click's download.
    ['wallet icons in the eager bundle or the first click', measured.walletIconsEarly, 0],
    budget('eager wagmi app + @latchkey/wagmi − wagmi app', WAGMI_GZIP_BUDGET_BYTES),
    // Issue 12: the wagmi app's first click on Connect loads the modal, not WalletConnect or the embedded wallet.
    ['WalletConnect or embedded modules in the wagmi app by its first click', measured.wagmiHeavyOnFirstClick, 0],
  ]
  const failed = budgets.filter(([, value, limit]) => value > limit)
  for (const [name, value, limit] of budgets)
    console.log(`size budget ${value > limit ? 'FAILED' : 'met'}: ${name} ${kib(value)} KiB gzip ${value > limit ? '>' : '≤'} ${kib(limit)} KiB`)
  console.log(`budget (${measured.mode.label}): ${budgets.length - failed.length} passed, ${failed.length} failed`)
  if (failed.length) process.exit(1)
}
