import type { Locator, Page } from 'playwright-core'
import type { ConsoleEntry } from './browser.js'

/** Waits until the locator's text is exactly `text` (no sleeps: Playwright polls the DOM). */
export async function waitForText(locator: Locator, text: string | RegExp, timeout = 20_000) {
  const pattern = typeof text === 'string' ? new RegExp(`^\\s*${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`) : text
  // The text of the element that matched, not of the locator's first: another may come first.
  const matched = locator.filter({ hasText: pattern }).first()
  await matched.waitFor({ timeout })
  return (await matched.textContent())?.trim() ?? ''
}

/**
 * The warning Latchkey logs when `action` ends in a user's denial, a timeout or a cancellation
 * (ARCHITECTURE: those log as warnings, not errors).
 *
 * @example
 * browser.expectConsole('the rejected signature', latchkeyWarning('signMessage'))
 */
export const latchkeyWarning =
  (action: string) =>
  (entry: ConsoleEntry): boolean =>
    entry.kind === 'warning' && entry.text.startsWith(`[latchkey] ${action}: `)

/** The demo, seen as a user sees it: by role and accessible name. */
export function demo(page: Page) {
  const devWallet = page.getByRole('dialog', { name: 'Latchkey Dev Wallet' })
  return {
    connectButton: page.getByRole('button', { name: 'Connect Wallet' }),
    connectModal: page.getByRole('dialog', { name: 'Connect a wallet' }),
    wallet: (name: string) => page.getByRole('dialog', { name: 'Connect a wallet' }).getByRole('button', { name, exact: true }),
    address: page.getByRole('status', { name: 'Address' }),
    chainId: page.getByRole('status', { name: 'Chain ID' }),
    signature: page.getByRole('status', { name: 'Signature' }),
    txHash: page.getByRole('status', { name: 'Transaction hash' }),
    message: page.getByRole('textbox', { name: 'Message' }),
    network: page.getByRole('combobox', { name: 'Network' }),
    alert: page.getByRole('alert'),
    button: (name: string) => page.getByRole('button', { name, exact: true }),
    /** Answers the dev wallet's next prompt, after checking what it asks. */
    async answer(expectedTitle: string, approve: boolean) {
      await devWallet.getByText(expectedTitle, { exact: true }).waitFor()
      await devWallet.getByRole('button', { name: approve ? 'Approve' : 'Reject' }).click()
      await devWallet.getByText(expectedTitle, { exact: true }).waitFor({ state: 'detached' })
    },
  }
}

/** The reference wallet (apps/wallet), the "phone" of the WalletConnect tests. */
export function referenceWallet(page: Page) {
  const proposal = page.getByRole('article', { name: /^Session proposal from / })
  return {
    address: page.getByRole('status', { name: 'Address' }),
    uri: page.getByRole('textbox', { name: 'Pairing URI' }),
    pairButton: page.getByRole('button', { name: 'Pair', exact: true }),
    network: page.getByRole('combobox', { name: 'Network' }),
    proposal,
    request: (method: string) => page.getByRole('article', { name: `Request ${method}`, exact: true }),
    session: (dapp: string) => page.getByRole('listitem', { name: `Session with ${dapp}` }),
    alert: page.getByRole('alert'),
    /** Pastes a URI and taps "Pair", as a user would. */
    async pair(uri: string) {
      await this.uri.fill(uri)
      await this.pairButton.click()
    },
    /** Answers the request for `method` once it shows, after it is on screen. */
    async answer(method: string, approve: boolean) {
      const card = this.request(method)
      await card.getByRole('button', { name: approve ? 'Approve' : 'Reject' }).click()
      await card.waitFor({ state: 'detached' })
    },
  }
}

/**
 * Chromium's warning on every passkey registration whose options list ES256 alone. SPEC §9 fixes
 * the passkey public key algorithm at -7 (ES256), so a passkey sign-up provokes it by design.
 *
 * @example
 * browser.expectConsole('the ES256-only passkey options (SPEC §9)', es256OnlyPasskeyWarning)
 */
export const es256OnlyPasskeyWarning = (entry: ConsoleEntry): boolean =>
  entry.kind === 'warning' && entry.text.startsWith('publicKey.pubKeyCredParams is missing')

/**
 * Answers the consent frame's pending review as a user does from the keyboard: focus on its
 * button, then Enter (a trusted key press; the frame ignores script-made events). Checks the
 * dialog's title first when given, and waits until the dialog has closed.
 *
 * @example
 * await answerConsent(page, 'Approve', 'Sign a message')
 */
export async function answerConsent(page: Page, name: 'Approve' | 'Reject', expectedTitle?: string) {
  const frame = page.frameLocator('iframe[id^="latchkey-consent-frame-"]')
  const dialog = expectedTitle ? frame.getByRole('dialog', { name: expectedTitle }) : frame.getByRole('dialog')
  await dialog.waitFor()
  // Approve stays disabled until the browser reports it fully visible. It sits below the review's
  // scrolling body, in view however long the review; scrolled to should a page make the frame
  // shorter than the dialog's bar.
  await frame.locator('#approve').scrollIntoViewIfNeeded()
  await frame.locator('#approve:not([disabled])').waitFor()
  await frame.getByRole('button', { name, exact: true }).focus()
  await page.keyboard.press('Enter')
  await dialog.waitFor({ state: 'hidden' })
}

/**
 * Types the emailed sign-in code into the consent frame's code dialog (COLLECT_OTP) as a user
 * does: the newest code the kms's dev inbox holds for `email` (or `code`), typed with the keyboard
 * into the frame's field, then Enter. Waits until the dialog has closed.
 *
 * @example
 * await typeCodeInFrame(page, { kms: stack.kms, email: 'ada@example.test' })
 */
export async function typeCodeInFrame(page: Page, parameters: { kms: string; email: string; code?: string }) {
  const frame = page.frameLocator('iframe[id^="latchkey-consent-frame-"]')
  const dialog = frame.getByRole('dialog', { name: 'Enter your sign-in code' })
  await dialog.waitFor()
  // The dialog opens once the backend answered; by then the mail is in the inbox.
  let code = parameters.code
  if (code === undefined) {
    const inbox = (await (await fetch(`${parameters.kms}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
    const mail = inbox.messages.find((candidate) => candidate.to === parameters.email)
    if (!mail) throw new Error(`no mail for ${parameters.email}`)
    code = /code is (\d{6})/.exec(mail.text)![1]!
  }
  await frame.getByRole('textbox', { name: 'Sign-in code' }).focus()
  await page.keyboard.type(code)
  await page.keyboard.press('Enter')
  await dialog.waitFor({ state: 'hidden' })
}
