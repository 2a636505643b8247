import type { Page } from 'playwright-core'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { launch } from './browser.js'
import { demo, waitForText } from './page.js'

// "Continue with Google" end to end and offline: the demo opens the local OpenID provider (the
// devnet's oidc-provider playing Google) in a popup; its sign-in page takes an email; the backend
// verifies the ID token against the provider's JWKS and the kms registers the browser's key.

const stack = inject('stack')
const ADDRESS = /^0x[0-9a-fA-F]{40}$/

let browser: Awaited<ReturnType<typeof launch>>
beforeEach(async () => {
  browser = await launch()
})
afterEach(async () => {
  await browser.close()
})

/** Connect → "Continue with Google" → the provider's popup: Email, "Sign in". Answers the address shown. */
async function signInWithGoogle(page: Page, email: string): Promise<string> {
  const ui = demo(page)
  await page.goto(stack.demo)
  await ui.connectButton.click()
  const [popup] = await Promise.all([page.context().waitForEvent('page'), ui.wallet('Continue with Google').click()])
  await popup.getByRole('textbox', { name: 'Email' }).fill(email)
  await popup.getByRole('button', { name: 'Sign in' }).click()
  const address = await waitForText(ui.address, ADDRESS)
  // The popup closes once it handed the answer over (it may have already).
  if (!popup.isClosed()) await popup.waitForEvent('close')
  return address
}

describe('social sign-in', () => {
  test('default: Continue with Google signs in through the popup; the same email later is the same wallet', async () => {
    const email = `google.${Date.now()}@example.test`
    const address = await signInWithGoogle(browser.page, email)
    const ui = demo(browser.page)
    await ui.button('Sign message').click()
    await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)

    const other = await launch()
    try {
      expect(await signInWithGoogle(other.page, email)).toBe(address)
    } finally {
      await other.close()
    }
  })
})
