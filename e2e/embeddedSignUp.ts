import type { Page } from 'playwright-core'
import { demo, typeCodeInFrame, waitForText } from './page.js'

/**
 * Email sign-up in the demo's connect modal, the code read from the kms's dev inbox and typed in the consent frame; answers the
 * embedded wallet's address once the demo shows it.
 *
 * @example
 * const address = await embeddedSignUp(page, { demo: stack.demo, kms: stack.kms, email: 'ada@example.test' })
 */
export async function embeddedSignUp(page: Page, parameters: { demo: string; kms: string; email: string }): Promise<`0x${string}`> {
  const ui = demo(page)
  const modal = page.getByRole('dialog', { name: /Connect a wallet|Sign in/ })
  const button = (name: string) => modal.getByRole('button', { name, exact: true })
  await page.goto(parameters.demo)
  await ui.connectButton.click()
  await button('Continue with email').click()
  await modal.getByRole('textbox', { name: 'Email' }).fill(parameters.email)
  await button('Continue').click()
  // The code is typed in the consent frame's dialog, never in the app page.
  await typeCodeInFrame(page, { kms: parameters.kms, email: parameters.email })
  const address = (await waitForText(ui.address, /^0x[0-9a-fA-F]{40}$/)) as `0x${string}`
  await modal.waitFor({ state: 'detached' })
  return address
}
