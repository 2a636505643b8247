import type { Page } from 'playwright-core'
import { demo, waitForText } from './page.js'

/**
 * Email sign-up in the demo's connect modal, the code read from the kms's dev inbox; answers the
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
  // The code box appears once the backend answered; by then the mail is in the inbox.
  const codeBox = modal.getByRole('textbox', { name: 'Code' })
  await codeBox.waitFor()
  const inbox = (await (await fetch(`${parameters.kms}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
  const mail = inbox.messages.find((candidate) => candidate.to === parameters.email)
  if (!mail) throw new Error(`no mail for ${parameters.email}`)
  await codeBox.fill(/code is (\d{6})/.exec(mail.text)![1]!)
  await button('Verify').click()
  const address = (await waitForText(ui.address, /^0x[0-9a-fA-F]{40}$/)) as `0x${string}`
  await modal.waitFor({ state: 'detached' })
  return address
}
