import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import axe from 'axe-core'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { afterEach, describe, expect, inject, test } from 'vitest'
import { chromiumLaunchOptions } from '../test/chromium.js'
import { demo } from './page.js'

// axe-core on every modal state of the demo (connect, email, code, passkey, QR, account), in light
// and dark, on a desktop and in Chromium's phone emulation (an iPhone-sized and a Pixel-sized
// viewport, touch on): 0 violations. Focus returns to the trigger when a modal closes. Motion is
// reduced (the modals honour prefers-reduced-motion): axe measures contrast on the settled colours.

const stack = inject('stack')

/** The viewports: a desktop, and phones with touch (the modals are bottom sheets there). */
const devices = {
  desktop: { viewport: { width: 1280, height: 800 } },
  iPhone: { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true },
  Pixel: { viewport: { width: 412, height: 915 }, deviceScaleFactor: 2.625, isMobile: true, hasTouch: true },
} as const

let context: BrowserContext | undefined
afterEach(async () => {
  await context?.close()
  context = undefined
})

async function open(device: keyof typeof devices): Promise<{ page: Page; errors: string[] }> {
  context = await chromium.launchPersistentContext(await mkdtemp(join(tmpdir(), 'latchkey-a11y-')), {
    ...chromiumLaunchOptions,
    ...devices[device],
    reducedMotion: 'reduce',
  })
  const page = context.pages()[0] ?? (await context.newPage())
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  await page.goto(stack.demo)
  await page.addScriptTag({ content: axe.source })
  return { page, errors }
}

/** axe's violations in the open modal, light and dark; `[]` when clean. */
async function violations(page: Page, state: string): Promise<string[]> {
  const found: string[] = []
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme })
    const result = await page.evaluate(async () => {
      const backdrop = document.querySelector('.lk-backdrop')
      if (!backdrop) throw new Error('no modal is open')
      const { violations } = await (window as unknown as { axe: typeof axe }).axe.run(backdrop, { resultTypes: ['violations'] })
      return violations.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`)
    })
    found.push(...result.map((line) => `${state} (${colorScheme}): ${line}`))
  }
  return found
}

describe.each(Object.keys(devices) as (keyof typeof devices)[])('accessibility on %s', (device) => {
  test('behavior: the connect, email, code and passkey states have no axe violations, light and dark', async () => {
    const { page, errors } = await open(device)
    const ui = demo(page)
    const modal = page.getByRole('dialog', { name: /Connect a wallet|Sign in/ })
    const button = (name: string) => modal.getByRole('button', { name, exact: true })
    const found: string[] = []
    await ui.connectButton.click()
    await button('Continue with email').waitFor()
    found.push(...(await violations(page, 'connect')))
    // "New to wallets?", reached from the keyboard, and back.
    await button('New to wallets?').focus()
    await page.keyboard.press('Enter')
    await page.getByRole('dialog', { name: 'New to wallets?' }).getByRole('heading', { name: 'What is a wallet?' }).waitFor()
    found.push(...(await violations(page, 'help')))
    await page.getByRole('dialog', { name: 'New to wallets?' }).getByRole('button', { name: 'Back', exact: true }).click()
    await button('Continue with email').click()
    await modal.getByRole('textbox', { name: 'Email' }).waitFor()
    found.push(...(await violations(page, 'email')))
    await modal.getByRole('textbox', { name: 'Email' }).fill(`a11y-${device.toLowerCase()}@example.test`)
    await button('Continue').click()
    // The code is typed in the consent frame's dialog, over the modal's code step.
    const codeDialog = page.frameLocator('iframe[id^="latchkey-consent-frame-"]').getByRole('dialog', { name: 'Enter your sign-in code' })
    await codeDialog.waitFor()
    found.push(...(await violations(page, 'code')))
    // Escape cancels in the frame (4001); the modal's code step stays, with "Resend" and "Back".
    await page.keyboard.press('Escape')
    await codeDialog.waitFor({ state: 'hidden' })
    await button('Enter the code').waitFor()
    found.push(...(await violations(page, 'code step')))
    await button('Back').click()
    await button('Create a passkey').click()
    await modal.getByRole('textbox', { name: 'Email' }).waitFor()
    found.push(...(await violations(page, 'passkey')))
    expect(found).toEqual([])
    // Escape closes; focus goes back to the button that opened the modal.
    await page.keyboard.press('Escape')
    await modal.waitFor({ state: 'detached' })
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Connect Wallet')
    expect(errors).toEqual([])
  })

  test('behavior: the WalletConnect (QR or wallet links) and account states have no axe violations, light and dark', async () => {
    const { page, errors } = await open(device)
    const ui = demo(page)
    const found: string[] = []
    await ui.connectButton.click()
    await ui.wallet('WalletConnect').click()
    if (device === 'desktop') await page.getByRole('img', { name: 'QR code for WalletConnect' }).waitFor()
    else {
      // On a phone the wallets come first; the QR code is one tap away.
      await page.getByRole('list', { name: 'Choose your wallet' }).waitFor()
      found.push(...(await violations(page, 'wallet links')))
      await page.getByRole('button', { name: 'Show a QR code instead' }).click()
      await page.getByRole('img', { name: 'QR code for WalletConnect' }).waitFor()
    }
    found.push(...(await violations(page, 'QR')))
    await page.getByRole('button', { name: 'Cancel', exact: true }).click()
    await ui.wallet('Latchkey Dev Wallet').click()
    await ui.answer('Connection request', true)
    await ui.connectModal.waitFor({ state: 'detached' })
    await page.getByRole('button', { name: /^Account 0x/ }).click()
    await page.getByRole('dialog', { name: 'Account' }).getByLabel('Balance').waitFor()
    found.push(...(await violations(page, 'account')))
    expect(found).toEqual([])
    expect(errors).toEqual([])
  })
})

test.each(['desktop', 'iPhone'] as const)('behavior: on %s the dev wallet account box covers none of the page', async (device) => {
  const { page, errors } = await open(device)
  const box = page.locator('.dev-wallet-switch')
  await box.waitFor()
  await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight))
  // Every text of the page is itself at its centre: nothing is drawn over it.
  const covered = await page.evaluate(() => {
    const switcher = document.querySelector('.dev-wallet-switch') as HTMLElement
    return [...document.querySelectorAll('#root p, #root h1, #root h2, #root footer, #root button, #root label')]
      .filter((element) => {
        const rect = element.getBoundingClientRect()
        if (rect.width === 0 || rect.bottom < 0 || rect.top > innerHeight) return false
        const top = document.elementFromPoint(rect.left + rect.width / 2, rect.top + rect.height / 2)
        return top !== null && switcher.contains(top)
      })
      .map((element) => element.textContent?.slice(0, 40))
  })
  expect(covered).toEqual([])
  expect(errors).toEqual([])
})

test('behavior: ?lang=ar opens the demo in Arabic, its modal right to left, with no axe violations', async () => {
  const { page, errors } = await open('iPhone')
  await page.goto(`${stack.demo}/?lang=ar`)
  await page.addScriptTag({ content: axe.source })
  await page.getByRole('button', { name: 'ربط المحفظة' }).first().click()
  const modal = page.getByRole('dialog', { name: 'ربط محفظة' })
  await modal.waitFor()
  expect(await page.locator('.lk-backdrop').getAttribute('dir')).toBe('rtl')
  // The bottom sheet: docked to the bottom, full width.
  const box = (await modal.boundingBox())!
  expect(Math.round(box.x)).toBe(0)
  expect(Math.round(box.width)).toBe(390)
  expect(Math.round(box.y + box.height)).toBe(844)
  expect(await violations(page, 'connect in Arabic')).toEqual([])
  expect(errors).toEqual([])
})

test("behavior: the demo's ?lang=ar reaches the embedded wallet's consent frame: its code dialog is in Arabic, right to left, in an en-US browser", async () => {
  context = await chromium.launchPersistentContext(await mkdtemp(join(tmpdir(), 'latchkey-a11y-')), { ...chromiumLaunchOptions, locale: 'en-US' })
  const page = context.pages()[0] ?? (await context.newPage())
  await page.goto(`${stack.demo}/?lang=ar`)
  expect(await page.evaluate(() => navigator.language)).toBe('en-US')
  await page.getByRole('button', { name: 'ربط المحفظة' }).first().click()
  const modal = page.getByRole('dialog', { name: 'ربط محفظة' })
  await modal.getByRole('button', { name: 'المتابعة بالبريد الإلكتروني', exact: true }).click()
  await page.getByRole('textbox', { name: 'البريد الإلكتروني' }).fill(`lang${Date.now()}@example.test`)
  await page.getByRole('button', { name: 'متابعة', exact: true }).click()
  // One option (the provider's locale): the connector hands it to the frame as it opens.
  const frame = page.frameLocator('iframe[id^="latchkey-consent-frame-"]')
  const dialog = frame.getByRole('dialog', { name: 'أدخل رمز تسجيل الدخول' })
  await dialog.waitFor()
  expect(await frame.locator('html').evaluate((root) => [root.getAttribute('lang'), root.getAttribute('dir')])).toEqual(['ar', 'rtl'])
  expect(await dialog.getByRole('button').allTextContents()).toEqual(['إلغاء', 'تحقّق'])
})

test('behavior: the transaction toast has no axe violations, light and dark, on a desktop and a phone', async () => {
  for (const device of ['desktop', 'iPhone'] as const) {
    const { page, errors } = await open(device)
    const ui = demo(page)
    await ui.connectButton.first().click()
    await ui.wallet('Latchkey Dev Wallet').click()
    await ui.answer('Connection request', true)
    await ui.connectModal.waitFor({ state: 'detached' })
    await ui.button('Send transaction').click()
    await ui.answer('Transaction request', true)
    const toasts = page.getByRole('region', { name: 'Transactions' })
    await toasts.getByText('Transaction confirmed', { exact: true }).waitFor()
    const found: string[] = []
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme })
      const result = await toasts.evaluate(async (region) => {
        const { violations } = await (window as unknown as { axe: typeof axe }).axe.run(region, { resultTypes: ['violations'] })
        return violations.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`)
      })
      found.push(...result.map((line) => `toast (${device}, ${colorScheme}): ${line}`))
    }
    expect(found).toEqual([])
    expect(errors).toEqual([])
    await context?.close()
    context = undefined
  }
})
