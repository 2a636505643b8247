import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium, type Locator, type Page } from 'playwright-core'
import { PNG } from 'pngjs'
import { afterEach, describe, expect, inject, test } from 'vitest'
import { en } from '../packages/react/src/i18n/en.js'
import ar from '../packages/react/src/i18n/locales/ar.js'
import { chromiumLaunchOptions } from '../test/chromium.js'
import { demo } from './page.js'
import { compareImage, MAX_DIFFERING_SHARE } from './screenshot.js'

// Screenshot tests: each modal state of the demo (connect, email, code, passkey, QR, account) in
// {light, dark} × {desktop 1280×800, phone 390×844} × {en, ar}, compared with the PNGs in
// e2e/screenshots/. One page per theme × viewport × locale steps through the states. What moves is
// frozen or masked: animations off, the QR code and its countdown, the resend countdown, the balance.
//
//   LATCHKEY_UPDATE_SCREENSHOTS=1 npx vitest run --config e2e/vitest.config.ts e2e/screenshots.e2e.ts
//
// rewrites the images (an intended change commits them with it).

const stack = inject('stack')
const directory = join(import.meta.dirname, 'screenshots')
const artifacts = join(import.meta.dirname, '.artifacts', 'screenshots')
const update = process.env['LATCHKEY_UPDATE_SCREENSHOTS'] === '1'

const viewports = {
  desktop: { viewport: { width: 1280, height: 800 } },
  phone: { viewport: { width: 390, height: 844 }, deviceScaleFactor: 1, isMobile: true, hasTouch: true },
} as const
const catalogues = { en, ar } as const

let context: BrowserContext | undefined
afterEach(async () => {
  await context?.close()
  context = undefined
})

/** Waits until the open modal's images have loaded (the wallet icons come in their own chunk). */
async function imagesLoaded(page: Page) {
  await page.waitForFunction(() =>
    [...document.querySelectorAll<HTMLImageElement>('.lk-backdrop img')].every((image) => image.complete && image.naturalWidth > 0),
  )
}

/** Takes the viewport; `mask` paints over what moves, `hide` (CSS selectors) leaves it out: under the consent frame a mask would show through. */
async function shoot(page: Page, name: string, { mask = [], hide = [] }: { mask?: Locator[]; hide?: string[] } = {}): Promise<string> {
  await imagesLoaded(page)
  const style = hide.length ? `${hide.join(', ')} { visibility: hidden !important; }` : ''
  const image = await page.screenshot({ animations: 'disabled', caret: 'hide', mask, maskColor: '#808080', style })
  return compareImage(name, image, { directory, artifacts, update })
}

type Theme = 'light' | 'dark'
type Viewport = keyof typeof viewports
type Locale = keyof typeof catalogues

const combinations = (['light', 'dark'] as const).flatMap((theme) =>
  (['desktop', 'phone'] as const).flatMap((viewport) => (['en', 'ar'] as const).map((locale) => [theme, viewport, locale] as [Theme, Viewport, Locale])),
)

describe('screenshots', () => {
  test.each(combinations)('behavior: every modal state matches its image (%s, %s, %s)', async (theme, viewport, locale) => {
    const t = catalogues[locale]
    context = await chromium.launchPersistentContext(await mkdtemp(join(tmpdir(), 'latchkey-shots-')), {
      ...chromiumLaunchOptions,
      ...viewports[viewport],
      colorScheme: theme,
      reducedMotion: 'reduce',
      locale: locale === 'ar' ? 'ar' : 'en-US',
    })
    const page = context.pages()[0] ?? (await context.newPage())
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(`${stack.demo}/?lang=${locale}`)
    const ui = demo(page)
    const name = (state: string) => `${state}-${theme}-${viewport}-${locale}`
    const found: string[] = []
    const modal = page.getByRole('dialog', { name: new RegExp(`^(${t.connectTitle}|${t.signInTitle})$`) })
    const button = (label: string) => modal.getByRole('button', { name: label, exact: true })

    // Connect, then email: the first step of the embedded wallet.
    await page.getByRole('button', { name: t.connectWallet, exact: true }).first().click()
    await button(t.continueEmail).waitFor()
    found.push(await shoot(page, name('connect')))
    await button(t.continueEmail).click()
    await modal.getByRole('textbox', { name: t.email }).waitFor()
    found.push(await shoot(page, name('email')))

    // The code, typed in the consent frame's dialog over the modal; the resend countdown is masked.
    await modal.getByRole('textbox', { name: t.email }).fill(`shots-${theme}-${viewport}-${locale}@example.test`)
    await button(t.continue).click()
    const codeDialog = page.frameLocator('iframe[id^="latchkey-consent-frame-"]').getByRole('dialog')
    await codeDialog.waitFor()
    found.push(await shoot(page, name('code'), { hide: ['.lk-dialog .lk-form .lk-secondary'] }))
    await page.keyboard.press('Escape')
    await codeDialog.waitFor({ state: 'hidden' })
    await button(t.back).click()

    // Passkey: "Create a passkey" asks for the email first.
    await button(t.createPasskey).click()
    await modal.getByRole('textbox', { name: t.email }).waitFor()
    found.push(await shoot(page, name('passkey')))
    await page.keyboard.press('Escape')
    await modal.waitFor({ state: 'detached' })

    // WalletConnect's QR code (on a phone one tap past the wallet links): the code and its countdown are masked.
    await page.getByRole('button', { name: t.connectWallet, exact: true }).first().click()
    await button('WalletConnect').click()
    if (viewport === 'phone') await page.getByRole('button', { name: t.showQr }).click()
    const qr = page.getByRole('img', { name: t.qrLabel })
    await qr.waitFor()
    const renews = page.locator('.lk-dialog p.lk-muted.lk-small-text')
    await renews.waitFor()
    found.push(await shoot(page, name('qr'), { mask: [qr, renews] }))
    await page.getByRole('button', { name: t.cancel, exact: true }).click()

    // The account modal, connected with the dev wallet (its address is fixed); the balance moves with other tests: masked.
    await button('Latchkey Dev Wallet').click()
    await ui.answer('Connection request', true)
    await modal.waitFor({ state: 'detached' })
    await page.getByRole('button', { name: new RegExp(`^${t.accountOf.replace('{address}', '0x')}`) }).click()
    const account = page.getByRole('dialog', { name: t.account })
    const balance = account.getByLabel(t.balance)
    await balance.and(page.locator('[aria-busy="false"]')).waitFor()
    found.push(await shoot(page, name('account'), { mask: [balance] }))

    expect(found.filter(Boolean)).toEqual([])
    expect(errors).toEqual([])
  })
})

describe('compareImage', () => {
  /** A white 100×100 PNG with `black` pixels painted black. */
  function image(black = 0): Buffer {
    const png = new PNG({ width: 100, height: 100 })
    png.data.fill(255)
    for (let at = 0; at < black; at++) png.data.fill(0, at * 4, at * 4 + 3)
    return PNG.sync.write(png)
  }
  const temporary = async () => {
    const root = await mkdtemp(join(tmpdir(), 'latchkey-compare-'))
    return { directory: join(root, 'screenshots'), artifacts: join(root, 'artifacts') }
  }

  test('error: a missing reference image fails, saying how to make it', async () => {
    const where = await temporary()
    expect(compareImage('connect-light-desktop-en', image(), { ...where, update: false })).toBe(
      'connect-light-desktop-en: no reference image e2e/screenshots/connect-light-desktop-en.png; make it with LATCHKEY_UPDATE_SCREENSHOTS=1 npx vitest run --config e2e/vitest.config.ts e2e/screenshots.e2e.ts',
    )
  })

  test('behavior: update writes the reference; a few differing pixels pass, more fail and leave the actual image and the diff', async () => {
    const where = await temporary()
    expect(compareImage('state', image(), { ...where, update: true })).toBe('')
    expect(readFileSync(join(where.directory, 'state.png')).equals(image())).toBe(true)
    const allowed = 100 * 100 * MAX_DIFFERING_SHARE
    expect(compareImage('state', image(allowed), { ...where, update: false })).toBe('')
    expect(existsSync(join(where.artifacts, 'state.actual.png'))).toBe(false)
    expect(compareImage('state', image(allowed + 1), { ...where, update: false })).toBe(
      'state: 11 pixels differ (0.11% > 0.1%); actual and diff in e2e/.artifacts/screenshots/',
    )
    expect([existsSync(join(where.artifacts, 'state.actual.png')), existsSync(join(where.artifacts, 'state.diff.png'))]).toEqual([true, true])
  })

  test('error: another size fails', async () => {
    const where = await temporary()
    compareImage('state', image(), { ...where, update: true })
    const wide = new PNG({ width: 101, height: 100 })
    expect(compareImage('state', PNG.sync.write(wide), { ...where, update: false })).toBe(
      'state: 101×100, the reference is 100×100 (actual in e2e/.artifacts/screenshots/)',
    )
  })
})
