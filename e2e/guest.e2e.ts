import axe from 'axe-core'
import type { Page } from 'playwright-core'
import { verifyMessage } from 'viem'
import { afterEach, beforeEach, expect, inject, test } from 'vitest'
import { launch } from './browser.js'
import { answerConsent, demo, typeCodeInFrame, waitForText } from './page.js'

// "Continue as guest" in the demo (issue 28 item 3), against the whole local stack, whose backend
// offers guests: the warning before the wallet exists, a signature approved in the consent frame,
// the same warning in the account modal beside Sign-in methods, an email linked there (code typed
// in the frame, approved there), and that email opening the same wallet after a disconnect.

const stack = inject('stack')
const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const WARNING =
  'This guest wallet lives in this browser only. Clearing this browser’s data, or a day passing, loses it, unless you add an email, a passkey or a social login.'

let browser: Awaited<ReturnType<typeof launch>>
beforeEach(async () => {
  browser = await launch()
})
afterEach(async () => {
  await browser.close()
})

/** axe's violations in the element `selector` matches, light and dark. */
async function violations(page: Page, selector: string): Promise<string[]> {
  await page.addScriptTag({ content: axe.source })
  const found: string[] = []
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme, reducedMotion: 'reduce' })
    const result = await page.evaluate(async (selector) => {
      const element = document.querySelector(selector)
      if (!element) throw new Error(`nothing matches ${selector}`)
      const { violations } = await (window as unknown as { axe: typeof axe }).axe.run(element, { resultTypes: ['violations'] })
      return violations.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`)
    }, selector)
    found.push(...result.map((line) => `${colorScheme}: ${line}`))
  }
  return found
}

test('default: continue as guest after the warning, sign a message, link an email in Sign-in methods (the warning goes), sign in again by that email: the same address', async () => {
  const { page } = browser
  const ui = demo(page)
  await page.goto(stack.demo)

  // The warning comes before the wallet: "Continue as guest" shows it, and only its button creates one.
  await ui.connectButton.click()
  await ui.connectModal.getByRole('button', { name: 'Continue as guest', exact: true }).click()
  const signIn = page.getByRole('dialog', { name: 'Sign in' })
  await signIn.getByText(WARNING, { exact: true }).waitFor()
  expect(await ui.address.count()).toBe(0)
  expect(await violations(page, '.lk-backdrop [role="dialog"]')).toEqual([])
  await signIn.getByRole('button', { name: 'Create a guest wallet', exact: true }).click()
  const address = await waitForText(ui.address, ADDRESS)
  await signIn.waitFor({ state: 'detached' })

  // The guest's key is the consent frame's: a message is signed once approved there.
  const message = await ui.message.inputValue()
  await ui.button('Sign message').click()
  await answerConsent(page, 'Approve', 'Sign a message')
  const signature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
  expect(await verifyMessage({ address: address as `0x${string}`, message, signature })).toBe(true)

  // The account modal: the same warning, in Sign-in methods, which lists no login yet.
  await page.getByRole('button', { name: /^Account/ }).click()
  const account = page.getByRole('dialog', { name: 'Account' })
  const methods = account.getByRole('region', { name: 'Sign-in methods' })
  const warning = methods.getByText(WARNING, { exact: true })
  await warning.waitFor()
  expect(await methods.getByRole('list', { name: 'Sign-in methods' }).count()).toBe(0)
  expect(await violations(page, '.lk-backdrop section[aria-labelledby]')).toEqual([])

  // An email linked: its code typed in the consent frame, the link approved there.
  const email = `guest.${Date.now()}@example.test`
  await methods.getByRole('group', { name: 'Add a sign-in method' }).getByRole('button', { name: 'Email', exact: true }).click()
  await methods.getByRole('textbox', { name: 'Email address to add' }).fill(email)
  await methods.getByRole('button', { name: 'Send code', exact: true }).click()
  await typeCodeInFrame(page, { kms: stack.kms, email })
  await answerConsent(page, 'Approve', 'Add a way to sign in')
  await waitForText(methods.getByRole('status', { name: 'Sign-in methods status' }), `${email} linked. You can now sign in with it.`)
  const logins = methods.getByRole('list', { name: 'Sign-in methods' }).getByRole('listitem')
  await waitForText(logins.first(), new RegExp(`^Email: ${email.replace(/\./g, '\\.')}Linked `))
  expect(await logins.count()).toBe(1)
  await warning.waitFor({ state: 'detached' })

  // Disconnected, then in again by that email: the guest's wallet, for good.
  await account.getByRole('button', { name: 'Disconnect', exact: true }).click()
  await ui.connectButton.click()
  await ui.connectModal.getByRole('button', { name: 'Continue with email', exact: true }).click()
  await signIn.getByRole('textbox', { name: 'Email' }).fill(email)
  await signIn.getByRole('button', { name: 'Continue', exact: true }).click()
  await typeCodeInFrame(page, { kms: stack.kms, email })
  expect(await waitForText(ui.address, ADDRESS)).toBe(address)
})
