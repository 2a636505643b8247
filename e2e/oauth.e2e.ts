import type { Page } from 'playwright-core'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { launch } from './browser.js'
import { answerConsent, demo, waitForText } from './page.js'

// "Continue with Google / Apple" end to end and offline: the demo opens the local OpenID provider
// (the devnet's oidc-provider playing both) in a popup, or goes there where popups are blocked; its
// sign-in page takes an email. Google sends the browser back with the code; Apple posts it
// (response_mode=form_post) to the backend, which sends the browser on to the demo's callback page.
// The backend and the kms each verify the ID token against the provider's JWKS, and the kms
// registers the browser's key.

const stack = inject('stack')
const ADDRESS = /^0x[0-9a-fA-F]{40}$/

let browser: Awaited<ReturnType<typeof launch>>
beforeEach(async () => {
  browser = await launch()
})
afterEach(async () => {
  await browser.close()
})

/** Connect → "Continue with Google / Apple" → the provider's popup: Email, "Sign in". Answers the address shown. */
async function signInWith(page: Page, email: string, provider: 'Google' | 'Apple' = 'Google'): Promise<string> {
  const ui = demo(page)
  await page.goto(stack.demo)
  await ui.connectButton.click()
  const [popup] = await Promise.all([page.context().waitForEvent('page'), ui.wallet(`Continue with ${provider}`).click()])
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
    const address = await signInWith(browser.page, email)
    const ui = demo(browser.page)
    await ui.button('Sign message').click()
    await answerConsent(browser.page, 'Approve', 'Sign a message')
    await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)

    const other = await launch()
    try {
      expect(await signInWith(other.page, email)).toBe(address)
    } finally {
      await other.close()
    }
  })

  test('default: Continue with Apple signs in through the popup, Apple posting its answer to the backend (form_post)', async () => {
    const address = await signInWith(browser.page, `apple.${Date.now()}@example.test`, 'Apple')
    expect(address).toMatch(ADDRESS)
    const ui = demo(browser.page)
    await ui.button('Sign message').click()
    await answerConsent(browser.page, 'Approve', 'Sign a message')
    await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)
  })

  test('behavior: where popups are blocked, Continue with Apple leaves for the provider and comes back signed in, to the same wallet as by popup', async () => {
    const email = `apple.redirect.${Date.now()}@example.test`
    const byPopup = await signInWith(browser.page, email, 'Apple')

    const other = await launch()
    try {
      const { page } = other
      // A popup blocker: window.open answers null, as it does where popups are blocked.
      await page.addInitScript(() => {
        window.open = () => null
      })
      const ui = demo(page)
      await page.goto(stack.demo)
      await ui.connectButton.click()
      await ui.wallet('Continue with Apple').click()
      // The page itself went to the provider.
      await page.getByRole('textbox', { name: 'Email' }).fill(email)
      await page.getByRole('button', { name: 'Sign in' }).click()
      // Back on the demo, signed in, on the page the sign-in started from.
      expect(await waitForText(ui.address, ADDRESS)).toBe(byPopup)
      expect(new URL(page.url()).pathname).toBe(new URL(stack.demo).pathname)
    } finally {
      await other.close()
    }
  })
})
