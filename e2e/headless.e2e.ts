import { verifyMessage } from 'viem'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { failedRequest, launch } from './browser.js'
import { answerConsent, typeCodeInFrame, waitForText } from './page.js'

// The demo's /headless page: the embedded wallet driven by an app's own markup through the React
// hooks alone (no ConnectButton, no modal), against the whole local stack.

const stack = inject('stack')

let browser: Awaited<ReturnType<typeof launch>>
beforeEach(async () => {
  browser = await launch()
})
afterEach(async () => {
  await browser.close()
})

/** The newest sign-in code the dev inbox holds for `email`. */
async function codeFor(email: string): Promise<string> {
  const inbox = (await (await fetch(`${stack.kms}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
  return /code is (\d{6})/.exec(inbox.messages.find((message) => message.to === email)!.text)![1]!
}

describe('headless page', () => {
  test('default: email sign-in with the hooks, a wrong code branched on by class, then a message signed once approved in the consent frame', async () => {
    const { page } = browser
    browser.expectConsole('the wrong code, refused by the backend', failedRequest(`${stack.server.replace('127.0.0.1', 'localhost')}/auth/email/verify`))
    const email = `headless.${Date.now()}@example.test`
    await page.goto(`${stack.demo}/headless`)
    await page.getByRole('textbox', { name: 'Email' }).fill(email)
    await page.getByRole('button', { name: 'Email me a code' }).click()
    // The code is typed in the consent frame's dialog, which the hook's verify opens once the code is sent.
    await page.frameLocator('iframe[id^="latchkey-consent-frame-"]').getByRole('dialog', { name: 'Enter your sign-in code' }).waitFor()
    const code = await codeFor(email)
    await typeCodeInFrame(page, { kms: stack.kms, email, code: code === '000000' ? '111111' : '000000' })
    expect(await waitForText(page.getByRole('alert'), 'That code did not work. Check the email and try again.')).toBeTruthy()
    expect(await page.getByRole('textbox', { name: 'Code' }).count()).toBe(0)

    await page.getByRole('button', { name: 'Enter the code' }).click()
    await typeCodeInFrame(page, { kms: stack.kms, email, code })
    const address = (await waitForText(page.getByRole('status', { name: 'Address' }), /^0x[0-9a-fA-F]{40}$/)) as `0x${string}`
    await page.getByRole('button', { name: 'Sign "Hello from a headless page"' }).click()
    await answerConsent(page, 'Approve', 'Sign a message')
    const signature = (await waitForText(page.getByRole('status', { name: 'Signature' }), /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(await verifyMessage({ address, message: 'Hello from a headless page', signature })).toBe(true)
    // No modal of the app was part of it (the consent dialog lives inside its frame).
    expect(await page.getByRole('dialog').count()).toBe(0)
  })
})
