import type { Page } from 'playwright-core'
import { verifyMessage } from 'viem'
import { english, generateMnemonic, mnemonicToAccount } from 'viem/accounts'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { addPasskeyAuthenticator } from './authenticator.js'
import { failedRequest, launch } from './browser.js'
import { answerConsent, demo, es256OnlyPasskeyWarning, latchkeyWarning, typeCodeInFrame, waitForText } from './page.js'

// The embedded wallet in the demo, against the whole local stack: our backend, our kms and its
// dev inbox, anvil. Passkeys use Chromium's virtual authenticator.

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
const newEmail = () => `e2e${++people}.${Date.now()}@example.test`

/** The newest message the dev inbox holds for `email` (it lists newest first). */
async function lastMail(email: string): Promise<{ subject: string; text: string }> {
  const inbox = (await (await fetch(`${stack.kms}/dev/mailbox.json`)).json()) as { messages: { to: string; subject: string; text: string }[] }
  const message = inbox.messages.find((candidate) => candidate.to === email)
  if (!message) throw new Error(`no mail for ${email}`)
  return message
}

/** The embedded sign-in views, by role and name as a user finds them. */
function signIn(page: Page) {
  const modal = page.getByRole('dialog', { name: /Connect a wallet|Sign in/ })
  return {
    modal,
    email: modal.getByRole('textbox', { name: 'Email' }),
    code: modal.getByRole('textbox', { name: 'Code' }),
    /** The box in the recovery frame (the kms origin) the recovery code is pasted into. */
    recoveryCode: modal.frameLocator('iframe[title="Account recovery"]').getByRole('textbox', { name: 'Recovery code' }),
    button: (name: string) => modal.getByRole('button', { name, exact: true }),
    alert: modal.getByRole('alert'),
  }
}

/** Email sign-up through the demo, the code read from the kms's dev inbox; answers the address. */
async function signUpByEmail(page: Page, email: string): Promise<`0x${string}`> {
  const ui = demo(page)
  const view = signIn(page)
  await page.goto(stack.demo)
  await ui.connectButton.click()
  await view.button('Continue with email').click()
  await view.email.fill(email)
  await view.button('Continue').click()
  // The code is typed in the consent frame's dialog, never in the app page.
  await typeCodeInFrame(page, { kms: stack.kms, email })
  const address = (await waitForText(ui.address, ADDRESS)) as `0x${string}`
  await view.modal.waitFor({ state: 'detached' })
  return address
}

/** Runs `work` in a second browser: nothing stored, no cookie, as after losing a session. */
async function inAnotherBrowser(work: (page: Page, other: Awaited<ReturnType<typeof launch>>) => Promise<void>) {
  const other = await launch()
  try {
    await work(other.page, other)
  } finally {
    await other.close()
  }
}

/** "Recover account" for `email` up to the code box (the recovery email is sent by then). */
async function startRecovery(page: Page, email: string, choice: 'Recover with email' | 'I lost my passkey' = 'Recover with email') {
  const view = signIn(page)
  await page.goto(stack.demo)
  await demo(page).connectButton.click()
  await view.button('Recover account').click()
  await view.button(choice).click()
  await view.email.fill(email)
  await view.button('Continue').click()
  await view.recoveryCode.waitFor()
  // The page has no box of its own for the code: it is pasted into the frame.
  expect(await view.code.count()).toBe(0)
  return view
}

describe('embedded wallet', () => {
  test('default: email sign-up; a message is signed only once approved in the consent frame; Reject is 4001; reload restores', async () => {
    const { page } = browser
    const ui = demo(page)
    const email = newEmail()
    const address = await signUpByEmail(page, email)
    expect(await waitForText(ui.chainId, '31337')).toBe('31337')

    // personal_sign: the frame shows it, the user approves there with a key press, the kms signs.
    const message = await ui.message.inputValue()
    await ui.button('Sign message').click()
    await answerConsent(page, 'Approve', 'Sign a message')
    const signature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(await verifyMessage({ address, message, signature })).toBe(true)

    // Reject in the frame: EIP-1193 4001 to the app, nothing signed.
    browser.expectConsole('the rejected signature', latchkeyWarning('signMessage'))
    await ui.button('Sign message').click()
    await answerConsent(page, 'Reject', 'Sign a message')
    expect(await waitForText(ui.alert, /User rejected the request\./)).toContain('User rejected the request.')

    // Reload: still signed in, with no new sign-in (the page does ask the backend for its config
    // and for the sign-in session it keeps), and the frame's key still signs what is approved.
    const backendCalls: string[] = []
    page.on('request', (request) => {
      if (request.url().startsWith(stack.server.replace('127.0.0.1', 'localhost'))) backendCalls.push(new URL(request.url()).pathname)
    })
    await page.reload()
    expect(await waitForText(ui.address, address)).toBe(address)
    await ui.button('Sign message').click()
    await answerConsent(page, 'Approve', 'Sign a message')
    const again = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(await verifyMessage({ address, message, signature: again })).toBe(true)
    expect(backendCalls.filter((path) => path.startsWith('/auth/email/') || path === '/auth/login')).toEqual([])

    // The app's origin holds nothing that can stamp: no IndexedDB at all, no private key stored.
    const stored = await page.evaluate(async () => ({
      databases: (await indexedDB.databases()).map((database) => database.name),
      local: JSON.stringify(localStorage),
    }))
    expect(stored.databases).toEqual([])
    expect(stored.local).not.toMatch(/"privateKey"|apiPrivateKey/)
  })

  test('error: the page cannot register a key of its choosing: POST /auth/session-key is gone (404)', async () => {
    const { page } = browser
    await signUpByEmail(page, newEmail())
    browser.expectConsole('the removed route', failedRequest(`${stack.server.replace('127.0.0.1', 'localhost')}/auth/session-key`))
    // Security review H1's one line, from the app page, with the user's cookie.
    const status = await page.evaluate(
      async (backendUrl) =>
        (
          await fetch(`${backendUrl}/auth/session-key`, {
            method: 'POST',
            credentials: 'include',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ publicKey: `02${'11'.repeat(32)}`, expirationSeconds: 86400 }),
          })
        ).status,
      stack.server.replace('127.0.0.1', 'localhost'),
    )
    expect(status).toBe(404)
  })

  test('error: a wrong code is announced, and the right one still works', async () => {
    const { page } = browser
    const ui = demo(page)
    const view = signIn(page)
    const email = newEmail()
    await page.goto(stack.demo)
    await ui.connectButton.click()
    await view.button('Continue with email').click()
    await view.email.fill(email)
    await view.button('Continue').click()
    const frameDialog = page.frameLocator('iframe[id^="latchkey-consent-frame-"]').getByRole('dialog', { name: 'Enter your sign-in code' })
    await frameDialog.waitFor()
    const code = /code is (\d{6})/.exec((await lastMail(email)).text)![1]!
    // The backend refuses the wrong code (400, which the browser prints); the user sees why.
    browser.expectConsole('the backend refusing the wrong code', failedRequest(`${stack.server.replace('127.0.0.1', 'localhost')}/auth/email/verify`))
    await typeCodeInFrame(page, { kms: stack.kms, email, code: code === '000000' ? '111111' : '000000' })
    expect(await waitForText(view.alert, /The code is invalid or expired\./)).toContain('attempts left')
    // The page has no code box: "Enter the code" opens the frame's dialog again.
    expect(await view.code.count()).toBe(0)
    await view.button('Enter the code').click()
    await typeCodeInFrame(page, { kms: stack.kms, email, code })
    await waitForText(ui.address, ADDRESS)
  })

  test('behavior: passkey sign-up, then the passkey alone signs in again', async () => {
    const { page } = browser
    browser.expectConsole('the ES256-only passkey options (SPEC §9)', es256OnlyPasskeyWarning)
    const ui = demo(page)
    const view = signIn(page)
    const authenticator = await addPasskeyAuthenticator(page)
    await page.goto(stack.demo)
    await ui.connectButton.click()
    await view.button('Create a passkey').click()
    const email = newEmail()
    await view.email.fill(email)
    await view.button('Continue').click()
    // The passkey is made, then the email proven (security review H2): its code is typed in the consent frame.
    await typeCodeInFrame(page, { kms: stack.kms, email })
    const address = (await waitForText(ui.address, ADDRESS)) as `0x${string}`
    expect(await authenticator.credentials()).toHaveLength(1)

    await ui.button('Sign message').click()
    await answerConsent(page, 'Approve', 'Sign a message')
    const signature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(await verifyMessage({ address, message: await ui.message.inputValue(), signature })).toBe(true)

    // Signed out, then back with the passkey alone.
    await ui.button('Disconnect').click()
    await ui.connectButton.click()
    await view.button('Continue with passkey').click()
    expect(await waitForText(ui.address, address)).toBe(address)

    // The proven email is the account's: an email sign-in lands in the same wallet.
    await ui.button('Disconnect').click()
    expect(await signUpByEmail(page, email)).toBe(address)
  })

  test('behavior: an email user adds a passkey in the account modal, then signs in with it alone', async () => {
    const { page } = browser
    browser.expectConsole('the ES256-only passkey options (SPEC §9)', es256OnlyPasskeyWarning)
    const ui = demo(page)
    const view = signIn(page)
    await addPasskeyAuthenticator(page)
    const email = newEmail()
    const address = await signUpByEmail(page, email)
    await page.getByRole('button', { name: /^Account/ }).click()
    const account = page.getByRole('dialog', { name: 'Account' })
    // Who is signed in: the email the backend's session carries, and how.
    expect(await waitForText(account.getByRole('group', { name: 'Signed-in user' }), `${email}Signed in with email`)).toBe(`${email}Signed in with email`)
    await account.getByRole('button', { name: 'Add a passkey', exact: true }).click()
    await answerConsent(page, 'Approve', 'Add a way to sign in')
    await waitForText(account.getByRole('status', { name: 'Wallet tools status' }), 'Passkey added. You can now sign in with it alone.')
    await account.getByRole('button', { name: 'Disconnect', exact: true }).click()
    await ui.connectButton.click()
    await view.button('Continue with passkey').click()
    expect(await waitForText(ui.address, address)).toBe(address)
  })

  test('behavior: Export wallet shows the phrase inside the export frame only; the page cannot read it', async () => {
    const { page } = browser
    const address = await signUpByEmail(page, newEmail())
    await page.getByRole('button', { name: /^Account/ }).click()
    const account = page.getByRole('dialog', { name: 'Account' })
    await account.getByRole('button', { name: 'Export wallet', exact: true }).click()
    await answerConsent(page, 'Approve', 'Export your wallet')
    const frame = page.frameLocator('iframe[title="Your secret recovery phrase"]')
    const words = frame.getByRole('list', { name: 'Secret recovery phrase' }).getByRole('listitem')
    await words.first().waitFor()
    const phrase = (await words.allTextContents()).map((word) => word.trim()).join(' ')
    expect(phrase.split(' ').length).toBeGreaterThanOrEqual(12)
    // The phrase is this wallet's: its first Ethereum account is the signed-in address.
    expect(mnemonicToAccount(phrase).address).toBe(address)
    // The page holds a cross-origin frame: no document to read, and the phrase is nowhere in it.
    const seen = await page.evaluate(() => {
      const iframe = document.querySelector<HTMLIFrameElement>('iframe[title="Your secret recovery phrase"]')!
      return {
        document: iframe.contentDocument === null,
        sandbox: iframe.getAttribute('sandbox'),
        html: document.documentElement.outerHTML,
        storage: JSON.stringify(localStorage),
      }
    })
    expect(seen.document).toBe(true)
    expect(seen.sandbox).toBe('allow-scripts allow-same-origin')
    expect(seen.html).not.toContain(phrase)
    expect(seen.storage).not.toContain(`${phrase.split(' ')[0]!} ${phrase.split(' ')[1]!}`)
  })

  test('behavior: Import wallet takes a phrase typed into the import frame and answers its address', async () => {
    const { page } = browser
    await signUpByEmail(page, newEmail())
    await page.getByRole('button', { name: /^Account/ }).click()
    const account = page.getByRole('dialog', { name: 'Account' })
    await account.getByRole('button', { name: 'Import wallet', exact: true }).click()
    await answerConsent(page, 'Approve', 'Prepare a wallet import')
    const mnemonic = generateMnemonic(english)
    const frame = page.frameLocator('iframe[title="Import a wallet"]')
    await frame.getByRole('textbox', { name: 'Secret recovery phrase' }).fill(mnemonic)
    await account.getByRole('textbox', { name: 'Wallet name' }).fill('Old wallet')
    await account.getByRole('button', { name: 'Import', exact: true }).click()
    await answerConsent(page, 'Approve', 'Import a wallet')
    const expected = mnemonicToAccount(mnemonic).address
    expect(await waitForText(account.getByRole('status', { name: 'Wallet tools status' }), `Imported ${expected}`)).toBe(`Imported ${expected}`)
  })

  test('behavior: after losing the session, Recover account by email brings the same wallet back', async () => {
    const email = newEmail()
    const address = await signUpByEmail(browser.page, email)
    await inAnotherBrowser(async (page) => {
      const ui = demo(page)
      const view = await startRecovery(page, email)
      // Email recovery's code is an API-key credential (email_auth), SPEC §5.
      const mail = await lastMail(email)
      expect(mail.subject).toBe('Sign in to Latchkey Demo')
      const credential = /\n\n(\S+)\n\n/.exec(mail.text)![1]!
      await view.recoveryCode.fill(credential)
      await view.button('Verify').click()
      expect(await waitForText(ui.address, address)).toBe(address)
      await ui.button('Sign message').click()
      await answerConsent(page, 'Approve', 'Sign a message')
      const signature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
      expect(await verifyMessage({ address, message: await ui.message.inputValue(), signature })).toBe(true)
    })
  })

  test('behavior: I lost my passkey: email, code, then the browser creates a new passkey that signs in alone', async () => {
    browser.expectConsole('the ES256-only passkey options (SPEC §9)', es256OnlyPasskeyWarning)
    const email = newEmail()
    const { page } = browser
    // Only a verified email recovers (a passkey sign-up's email binds nothing, review H2): the
    // account is made by email, and its passkey added in the account modal.
    await addPasskeyAuthenticator(page)
    const address = await signUpByEmail(page, email)
    await page.getByRole('button', { name: /^Account/ }).click()
    const account = page.getByRole('dialog', { name: 'Account' })
    await account.getByRole('button', { name: 'Add a passkey', exact: true }).click()
    await answerConsent(page, 'Approve', 'Add a way to sign in')
    await waitForText(account.getByRole('status', { name: 'Wallet tools status' }), 'Passkey added. You can now sign in with it alone.')

    await inAnotherBrowser(async (other, otherBrowser) => {
      otherBrowser.expectConsole('the ES256-only passkey options of the new passkey (SPEC §9)', es256OnlyPasskeyWarning)
      const authenticator = await addPasskeyAuthenticator(other)
      const otherView = await startRecovery(other, email, 'I lost my passkey')
      // Passkey recovery's code is a recover-user key (init_user_email_recovery), SPEC §5.
      const mail = await lastMail(email)
      expect(mail.subject).toBe('Recover your Latchkey Demo account')
      await otherView.recoveryCode.fill(/\n\n(\S+)\n\n/.exec(mail.text)![1]!)
      await otherView.button('Verify').click()
      const otherUi = demo(other)
      expect(await waitForText(otherUi.address, address)).toBe(address)
      expect(await authenticator.credentials()).toHaveLength(1)
      // The new passkey alone signs in again.
      await otherUi.button('Disconnect').click()
      await otherUi.connectButton.click()
      await signIn(other).button('Continue with passkey').click()
      expect(await waitForText(otherUi.address, address)).toBe(address)
    })
  })

  test('error: a recovery code that is not one is refused with "The code is invalid or expired."', async () => {
    const email = newEmail()
    await signUpByEmail(browser.page, email)
    await inAnotherBrowser(async (page) => {
      const view = await startRecovery(page, email)
      await view.recoveryCode.fill('not-a-recovery-credential')
      await view.button('Verify').click()
      await waitForText(view.alert, /^The code is invalid or expired\./)
      expect(await demo(page).address.count()).toBe(0)
    })
  })
})
