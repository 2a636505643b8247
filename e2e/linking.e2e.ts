import axe from 'axe-core'
import type { Page } from 'playwright-core'
import { afterEach, beforeEach, expect, inject, test } from 'vitest'
import { addPasskeyAuthenticator } from './authenticator.js'
import { failedRequest, launch } from './browser.js'
import { answerConsent, demo, es256OnlyPasskeyWarning, typeCodeInFrame, waitForText } from './page.js'

// Account linking in the demo's account modal ("Sign-in methods"), against the whole local stack:
// a user signed in by email links a passkey (Chromium's virtual authenticator; approved in the
// consent frame, whose key registers it), removes the email,
// cannot remove the last login, and is refused an email that belongs to another user.

const stack = inject('stack')
const ADDRESS = /^0x[0-9a-fA-F]{40}$/

let browser: Awaited<ReturnType<typeof launch>>
beforeEach(async () => {
  browser = await launch()
})
afterEach(async () => {
  await browser.close()
})

let people = 0
const newEmail = () => `link${++people}.${Date.now()}@example.test`

/** Email sign-in through the demo's modal, the code typed in the consent frame; answers the address. */
async function signInByEmail(page: Page, email: string): Promise<string> {
  const ui = demo(page)
  const modal = page.getByRole('dialog', { name: /Connect a wallet|Sign in/ })
  await ui.connectButton.click()
  await modal.getByRole('button', { name: 'Continue with email', exact: true }).click()
  await modal.getByRole('textbox', { name: 'Email' }).fill(email)
  await modal.getByRole('button', { name: 'Continue', exact: true }).click()
  await typeCodeInFrame(page, { kms: stack.kms, email })
  const address = await waitForText(ui.address, ADDRESS)
  await modal.waitFor({ state: 'detached' })
  return address
}

/** axe's violations in the account modal's "Sign-in methods" section, light and dark. */
async function violations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: axe.source })
  const found: string[] = []
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme, reducedMotion: 'reduce' })
    const result = await page.evaluate(async () => {
      const section = document.querySelector('.lk-backdrop section[aria-labelledby]')
      if (!section) throw new Error('no Sign-in methods section')
      const { violations } = await (window as unknown as { axe: typeof axe }).axe.run(section, { resultTypes: ['violations'] })
      return violations.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`)
    })
    found.push(...result.map((line) => `${colorScheme}: ${line}`))
  }
  return found
}

test('default: sign in by email, link a passkey, remove the email; the last login cannot be removed; another user’s email is refused and changes nothing', async () => {
  const { page } = browser
  browser.expectConsole('the ES256-only passkey options (SPEC §9)', es256OnlyPasskeyWarning)
  browser.expectConsole('the email of another user, refused (409)', failedRequest(`${stack.server.replace('127.0.0.1', 'localhost')}/auth/user/link/email`))
  const ui = demo(page)
  const authenticator = await addPasskeyAuthenticator(page)
  await page.goto(stack.demo)

  // Another user owns this email.
  const taken = newEmail()
  await signInByEmail(page, taken)
  await page.getByRole('button', { name: /^Account/ }).click()
  await page.getByRole('dialog', { name: 'Account' }).getByRole('button', { name: 'Disconnect', exact: true }).click()

  const email = newEmail()
  const address = await signInByEmail(page, email)
  await page.getByRole('button', { name: /^Account/ }).click()
  const account = page.getByRole('dialog', { name: 'Account' })
  const methods = account.getByRole('region', { name: 'Sign-in methods' })
  const logins = methods.getByRole('list', { name: 'Sign-in methods' }).getByRole('listitem')
  const status = methods.getByRole('status', { name: 'Sign-in methods status' })
  const remove = (label: string) => methods.getByRole('button', { name: `Remove ${label}`, exact: true })
  const add = methods.getByRole('group', { name: 'Add a sign-in method' })

  // One login: the email, which cannot be removed while it is the only one.
  await waitForText(logins.first(), new RegExp(`^Email: ${email.replace(/\./g, '\\.')}Linked `))
  expect(await logins.count()).toBe(1)
  expect(await remove(email).isDisabled()).toBe(true)
  expect(await methods.getByText('This is your only way to sign in. Add another before removing it.').isVisible()).toBe(true)
  expect(await methods.getByRole('status', { name: 'Second factor' }).textContent()).toBe('No second factor is set up.')

  // A passkey, created by the virtual authenticator, approved in the consent frame and registered
  // for this user by their own key there.
  await add.getByRole('button', { name: 'Passkey', exact: true }).click()
  await answerConsent(page, 'Approve', 'Add a way to sign in')
  await waitForText(status, 'Passkey linked. You can now sign in with it.')
  await waitForText(logins.nth(1), /^Passkey: PasskeyLinked /)
  expect(await logins.count()).toBe(2)
  expect(await authenticator.credentials()).toHaveLength(1)
  expect(await remove(email).isDisabled()).toBe(false)
  expect(await violations(page)).toEqual([])

  // The email removed: the passkey is the last login, and stays.
  await remove(email).click()
  await waitForText(status, `${email} removed.`)
  await waitForText(logins.first(), /^Passkey: PasskeyLinked /)
  expect(await logins.count()).toBe(1)
  expect(await remove('Passkey').isDisabled()).toBe(true)
  expect(await methods.getByText('This is your only way to sign in. Add another before removing it.').isVisible()).toBe(true)

  // Another user's email: the code proves it, and the backend refuses it; nothing changes.
  await add.getByRole('button', { name: 'Email', exact: true }).click()
  await methods.getByRole('textbox', { name: 'Email address to add' }).fill(taken)
  await methods.getByRole('button', { name: 'Send code', exact: true }).click()
  await typeCodeInFrame(page, { kms: stack.kms, email: taken })
  await answerConsent(page, 'Approve', 'Add a way to sign in')
  const alert = methods.getByRole('alert')
  await waitForText(alert.locator('.lk-alert-text'), 'This login belongs to another account.')
  expect(await alert.getByRole('button', { name: 'Try again', exact: true }).isVisible()).toBe(true)
  expect(await logins.count()).toBe(1)
  await waitForText(logins.first(), /^Passkey: PasskeyLinked /)
  expect(await violations(page)).toEqual([])

  // Still the same wallet, and its list read afresh says the same.
  expect(await ui.address.textContent()).toBe(address)
  await account.getByRole('button', { name: 'Close', exact: true }).click()
  await page.getByRole('button', { name: /^Account/ }).click()
  await waitForText(logins.first(), /^Passkey: PasskeyLinked /)
  expect(await logins.count()).toBe(1)
})

test('behavior: an email user links a GitHub identity through the local provider’s popup; it lists as a social account', async () => {
  const { page } = browser
  await page.goto(stack.demo)
  await signInByEmail(page, newEmail())
  await page.getByRole('button', { name: /^Account/ }).click()
  const methods = page.getByRole('dialog', { name: 'Account' }).getByRole('region', { name: 'Sign-in methods' })
  const logins = methods.getByRole('list', { name: 'Sign-in methods' }).getByRole('listitem')
  await logins.first().waitFor()
  const github = `github.${Date.now()}@example.test`
  const add = methods.getByRole('group', { name: 'Add a sign-in method' })
  const [popup] = await Promise.all([page.context().waitForEvent('page'), add.getByRole('button', { name: /^github$/i }).click()])
  await popup.getByRole('textbox', { name: 'Email' }).fill(github)
  await popup.getByRole('button', { name: 'Sign in' }).click()
  const label = await waitForText(logins.nth(1), new RegExp(`^Social account: \\w+ · ${github.replace(/\./g, '\\.')}Linked `))
  expect(label).toMatch(/^Social account: GitHub · /i)
  await waitForText(methods.getByRole('status', { name: 'Sign-in methods status' }), /^\w+ · .+ linked\. You can now sign in with it\.$/)
  expect(await logins.count()).toBe(2)
})
