import type { Page } from 'playwright-core'
import { createPublicClient, http, verifyMessage, verifyTypedData } from 'viem'
import { english, generateMnemonic, mnemonicToAccount } from 'viem/accounts'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { mailTypedData } from '../apps/demo/src/typedData.js'
import { failedRequest, launch } from './browser.js'
import { demo, es256OnlyPasskeyWarning, waitForText } from './page.js'

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
    button: (name: string) => modal.getByRole('button', { name, exact: true }),
    alert: modal.getByRole('alert'),
  }
}

/** A virtual platform authenticator that says yes by itself (CDP WebAuthn). */
async function addPasskeyAuthenticator(page: Page) {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })
  return {
    credentials: async () => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials,
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
  // The code box appears once the backend answered, by then the mail is in the inbox.
  await view.code.waitFor()
  const code = /code is (\d{6})/.exec((await lastMail(email)).text)![1]!
  await view.code.fill(code)
  await view.button('Verify').click()
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
  await view.code.waitFor()
  return view
}

describe('embedded wallet', () => {
  test('default: email sign-up, sign, typed data, a transaction with a receipt, reload restores', async () => {
    const { page } = browser
    const ui = demo(page)
    const email = newEmail()
    const address = await signUpByEmail(page, email)
    expect(await waitForText(ui.chainId, '31337')).toBe('31337')

    // personal_sign through the kms, verified here.
    const message = await ui.message.inputValue()
    await ui.button('Sign message').click()
    const signature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(await verifyMessage({ address, message, signature })).toBe(true)

    // EIP-712 typed data.
    await ui.button('Sign typed data').click()
    await ui.signature
      .filter({ hasNotText: signature })
      .filter({ hasText: /^0x[0-9a-f]{130}$/ })
      .waitFor()
    const typed = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(await verifyTypedData({ ...mailTypedData({ from: address, chainId: 31337, contents: message }), address, signature: typed })).toBe(true)

    // A transaction signed by the kms and mined on anvil.
    await ui.button('Get test ETH').click()
    await page.getByText('Added 10 test ETH', { exact: true }).waitFor()
    await ui.button('Send transaction').click()
    const hash = (await waitForText(ui.txHash, /^0x[0-9a-f]{64}$/)) as `0x${string}`
    const receipt = await createPublicClient({ transport: http(stack.chainA) }).waitForTransactionReceipt({ hash, pollingInterval: 100 })
    expect(receipt.status).toBe('success')
    expect(receipt.from).toBe(address.toLowerCase())

    // Reload: still signed in, with no new sign-in and no new session key (the page does ask the
    // backend for its config and for the sign-in session it keeps).
    const backendCalls: string[] = []
    page.on('request', (request) => {
      if (request.url().startsWith(stack.server.replace('127.0.0.1', 'localhost'))) backendCalls.push(new URL(request.url()).pathname)
    })
    await page.reload()
    expect(await waitForText(ui.address, address)).toBe(address)
    await ui.button('Sign message').click()
    const again = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(await verifyMessage({ address, message, signature: again })).toBe(true)
    // Reading the backend's session is allowed; signing in again or a new session key is not.
    expect(backendCalls.filter((path) => path.startsWith('/auth/email/') || path === '/auth/login' || path === '/auth/session-key')).toEqual([])
    expect(backendCalls.length).toBeGreaterThan(0)

    // The page's storage holds no private key: the session key is a non-extractable CryptoKey.
    const stored = await page.evaluate(async () => {
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const request = indexedDB.open('TurnkeyStamperDB', 1)
        request.onsuccess = () => resolve(request.result)
        request.onerror = () => reject(request.error)
      })
      const key = await new Promise<CryptoKey>((resolve) => {
        const request = db.transaction('KeyStore').objectStore('KeyStore').get('turnkeyKeyPair-priv')
        request.onsuccess = () => resolve(request.result as CryptoKey)
      })
      const exported = await crypto.subtle.exportKey('jwk', key).then(
        () => 'exported',
        (error: Error) => error.name,
      )
      return { extractable: key.extractable, exported, local: JSON.stringify(localStorage) }
    })
    expect(stored).toMatchObject({ extractable: false, exported: 'InvalidAccessError' })
    expect(stored.local).not.toMatch(/"privateKey"|apiPrivateKey/)
  })

  test('behavior: a session key the kms does not know is replaced through the backend and the signature retried once', async () => {
    const { page } = browser
    const ui = demo(page)
    const address = await signUpByEmail(page, newEmail())
    // The stored key becomes one the kms never registered (as after a revocation): same storage
    // shape, a new non-extractable key, so the page restores it and meets the refusal on use.
    await page.evaluate(async () => {
      const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify'])
      const raw = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey))
      const compressed = [2 + (raw[64]! & 1), ...raw.slice(1, 33)].map((byte) => byte.toString(16).padStart(2, '0')).join('')
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const request = indexedDB.open('TurnkeyStamperDB', 1)
        request.onsuccess = () => resolve(request.result)
        request.onerror = () => reject(request.error)
      })
      await new Promise<void>((resolve, reject) => {
        const tx = db.transaction('KeyStore', 'readwrite')
        tx.objectStore('KeyStore').put(compressed, 'turnkeyKeyPair-pub')
        tx.objectStore('KeyStore').put(pair.privateKey, 'turnkeyKeyPair-priv')
        tx.oncomplete = () => resolve()
        tx.onerror = () => reject(tx.error)
      })
      const record = JSON.parse(localStorage.getItem('latchkey.embedded.wallet')!) as { session: { publicKey: string } }
      record.session.publicKey = compressed
      localStorage.setItem('latchkey.embedded.wallet', JSON.stringify(record))
    })
    await page.reload()
    await waitForText(ui.address, address)
    // The kms refuses the unknown key (401, which the browser prints); the wallet recovers from it.
    browser.expectConsole('the kms refusing the unknown session key', failedRequest(`${stack.kms}/public/v1/submit/sign_raw_payload`))
    const calls: string[] = []
    page.on('request', (request) => {
      const path = new URL(request.url()).pathname
      if (request.method() === 'POST' && (path === '/auth/session-key' || path.endsWith('/sign_raw_payload'))) calls.push(path)
    })
    await ui.button('Sign message').click()
    const signature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(await verifyMessage({ address, message: await ui.message.inputValue(), signature })).toBe(true)
    expect(calls).toEqual(['/public/v1/submit/sign_raw_payload', '/auth/session-key', '/public/v1/submit/sign_raw_payload'])
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
    await view.code.waitFor()
    const code = /code is (\d{6})/.exec((await lastMail(email)).text)![1]!
    // The backend refuses the wrong code (400, which the browser prints); the user sees why.
    browser.expectConsole('the backend refusing the wrong code', failedRequest(`${stack.server.replace('127.0.0.1', 'localhost')}/auth/email/verify`))
    await view.code.fill(code === '000000' ? '111111' : '000000')
    await view.button('Verify').click()
    expect(await waitForText(view.alert, /The code is invalid or expired\./)).toContain('attempts left')
    await view.code.fill(code)
    await view.button('Verify').click()
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
    await view.email.fill(newEmail())
    await view.button('Continue').click()
    const address = (await waitForText(ui.address, ADDRESS)) as `0x${string}`
    expect(await authenticator.credentials()).toHaveLength(1)

    await ui.button('Sign message').click()
    const signature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(await verifyMessage({ address, message: await ui.message.inputValue(), signature })).toBe(true)

    // Signed out, then back with the passkey alone.
    await ui.button('Disconnect').click()
    await ui.connectButton.click()
    await view.button('Continue with passkey').click()
    expect(await waitForText(ui.address, address)).toBe(address)
  })

  test('behavior: an email user adds a passkey in the account modal, then signs in with it alone', async () => {
    const { page } = browser
    browser.expectConsole('the ES256-only passkey options (SPEC §9)', es256OnlyPasskeyWarning)
    const ui = demo(page)
    const view = signIn(page)
    await addPasskeyAuthenticator(page)
    const address = await signUpByEmail(page, newEmail())
    await page.getByRole('button', { name: /^Account/ }).click()
    const account = page.getByRole('dialog', { name: 'Account' })
    await account.getByRole('button', { name: 'Add a passkey', exact: true }).click()
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
    const mnemonic = generateMnemonic(english)
    const frame = page.frameLocator('iframe[title="Import a wallet"]')
    await frame.getByRole('textbox', { name: 'Secret recovery phrase' }).fill(mnemonic)
    await account.getByRole('textbox', { name: 'Wallet name' }).fill('Old wallet')
    await account.getByRole('button', { name: 'Import', exact: true }).click()
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
      await view.code.fill(credential)
      await view.button('Verify').click()
      expect(await waitForText(ui.address, address)).toBe(address)
      await ui.button('Sign message').click()
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
    await waitForText(account.getByRole('status', { name: 'Wallet tools status' }), 'Passkey added. You can now sign in with it alone.')

    await inAnotherBrowser(async (other, otherBrowser) => {
      otherBrowser.expectConsole('the ES256-only passkey options of the new passkey (SPEC §9)', es256OnlyPasskeyWarning)
      const authenticator = await addPasskeyAuthenticator(other)
      const otherView = await startRecovery(other, email, 'I lost my passkey')
      // Passkey recovery's code is a recover-user key (init_user_email_recovery), SPEC §5.
      const mail = await lastMail(email)
      expect(mail.subject).toBe('Recover your Latchkey Demo account')
      await otherView.code.fill(/\n\n(\S+)\n\n/.exec(mail.text)![1]!)
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
      await view.code.fill('not-a-recovery-credential')
      await view.button('Verify').click()
      await waitForText(view.alert, /^The code is invalid or expired\./)
      expect(await demo(page).address.count()).toBe(0)
    })
  })
})
