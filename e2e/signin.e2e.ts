import type { Page } from 'playwright-core'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { launch } from './browser.js'
import { answerConsent, demo, latchkeyWarning, referenceWallet, typeCodeInFrame, waitForText } from './page.js'

// Sign-In with Ethereum in the demo for each wallet kind, against our backend: the dev browser
// wallet, the reference WalletConnect wallet and the embedded wallet. "Session" shows the address
// the backend vouches for; the backend's own answer is read too.

const stack = inject('stack')
const DEV_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
const DEV_SECOND_ADDRESS = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'
const WALLET_ADDRESS = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const WALLET_SECOND_ADDRESS = '0x90F79bf6EB2c4f870365E785982E1f101E93b906'
const ADDRESS = /^0x[0-9a-fA-F]{40}$/
// The demo calls the backend on localhost, same-site with itself, for the SameSite cookies.
const backend = stack.server.replace('127.0.0.1', 'localhost')

let browser: Awaited<ReturnType<typeof launch>>
beforeEach(async () => {
  browser = await launch()
})
afterEach(async () => {
  await browser.close()
})

function session(page: Page) {
  return page.getByRole('status', { name: 'Session' })
}

/** What the backend says about this browser's session cookie: the session, or null when signed out. */
function backendSession(page: Page): Promise<{ status: number; body: Record<string, unknown> | null }> {
  return page.evaluate(async (url) => {
    const response = await fetch(`${url}/auth/session`, { credentials: 'include' })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> | null }
  }, backend)
}

const signedOut = { status: 200, body: null }

/** Reloads `page` and waits for the demo's question to the backend about its session; answers the backend's answer. */
async function reloadAndRestore(page: Page): Promise<unknown> {
  const restore = page.waitForResponse((response) => response.url() === `${backend}/auth/session` && response.request().method() === 'GET')
  await page.reload()
  return (await restore).json()
}

describe('Sign-In with Ethereum', () => {
  test('default: a signed-out first visit asks the backend for its session, hears null, and logs nothing', async () => {
    const { page } = browser
    const asked = page.waitForResponse((response) => response.url() === `${backend}/auth/session`)
    await page.goto(stack.demo)
    const answer = await asked
    expect([answer.status(), await answer.json()]).toEqual([200, null])
    await demo(page).connectButton.waitFor()
    // The quiet console itself is checked for every test when the browser closes (e2e/browser.ts).
    expect(browser.console()).toEqual([])
  })

  test('default: the dev browser wallet signs in, stays signed in across a reload, another account ends it, sign out', async () => {
    const { page } = browser
    const ui = demo(page)
    await page.goto(stack.demo)
    await ui.connectButton.click()
    await ui.wallet('Latchkey Dev Wallet').click()
    await ui.answer('Connection request', true)
    await waitForText(ui.address, DEV_ADDRESS)
    expect(await session(page).textContent()).toBe('')

    // A dismissed prompt: an alert (and a warning in the console), and signing in again works.
    browser.expectConsole('the dismissed sign-in signature', latchkeyWarning('signMessage'))
    await ui.button('Sign in').click()
    await ui.answer('Signature request', false)
    await waitForText(ui.alert, /User rejected the request\./)
    await ui.button('Sign in').click()
    await ui.answer('Signature request', true)
    expect(await waitForText(session(page), DEV_ADDRESS)).toBe(DEV_ADDRESS)
    expect(await backendSession(page)).toMatchObject({ status: 200, body: { address: DEV_ADDRESS, kind: 'siwe', walletKind: 'injected', chainId: 31337 } })

    await page.reload()
    expect(await waitForText(session(page), DEV_ADDRESS)).toBe(DEV_ADDRESS)

    // The user picks another account in the wallet: the old session ends, here and at the backend.
    await page.getByRole('combobox', { name: 'Dev wallet account' }).selectOption({ index: 1 })
    expect(await waitForText(ui.address, DEV_SECOND_ADDRESS)).toBe(DEV_SECOND_ADDRESS)
    await session(page).filter({ hasNotText: DEV_ADDRESS }).waitFor()
    expect(await session(page).textContent()).toBe('')
    await expect.poll(() => backendSession(page)).toEqual(signedOut)

    // Signing in as that account, then out.
    await ui.button('Sign in').click()
    await ui.answer('Signature request', true)
    expect(await waitForText(session(page), DEV_SECOND_ADDRESS)).toBe(DEV_SECOND_ADDRESS)
    await ui.button('Sign out').click()
    await session(page).filter({ hasNotText: DEV_SECOND_ADDRESS }).waitFor()
    await expect.poll(() => backendSession(page)).toEqual(signedOut)
    // After a reload the demo asks the backend, hears "signed out", and shows no session.
    expect(await reloadAndRestore(page)).toBeNull()
    await waitForText(ui.address, DEV_SECOND_ADDRESS)
    expect(await session(page).textContent()).toBe('')
  })

  test('behavior: the reference WalletConnect wallet signs the sign-in message; reload keeps it; another account in the wallet ends it; sign out', async () => {
    const { page, context } = browser
    await context.grantPermissions(['clipboard-read', 'clipboard-write'])
    const walletPage = await context.newPage()
    const ui = demo(page)
    const wallet = referenceWallet(walletPage)
    await walletPage.goto(stack.wallet)
    await waitForText(wallet.address, WALLET_ADDRESS)
    await page.goto(stack.demo)
    await ui.connectButton.click()
    await ui.wallet('WalletConnect').click()
    await page.getByRole('img', { name: 'QR code for WalletConnect' }).waitFor()
    await ui.button('Copy link').click()
    await ui.button('Copied').waitFor()
    await wallet.pair(await page.evaluate(() => navigator.clipboard.readText()))
    await wallet.proposal.getByRole('button', { name: 'Approve' }).click()
    await waitForText(ui.address, WALLET_ADDRESS)

    await ui.button('Sign in').click()
    await wallet.request('personal_sign').getByLabel('Message').filter({ hasText: 'wants you to sign in with your Ethereum account' }).waitFor()
    await wallet.answer('personal_sign', true)
    expect(await waitForText(session(page), WALLET_ADDRESS)).toBe(WALLET_ADDRESS)
    expect(await backendSession(page)).toMatchObject({ status: 200, body: { address: WALLET_ADDRESS, kind: 'siwe', walletKind: 'walletConnect' } })

    await page.reload()
    expect(await waitForText(session(page), WALLET_ADDRESS)).toBe(WALLET_ADDRESS)

    // The user switches account in the wallet: the session update reaches the demo, the session ends.
    await walletPage.getByRole('combobox', { name: 'Account' }).selectOption({ index: 1 })
    expect(await waitForText(ui.address, WALLET_SECOND_ADDRESS)).toBe(WALLET_SECOND_ADDRESS)
    await session(page).filter({ hasNotText: WALLET_ADDRESS }).waitFor()
    expect(await session(page).textContent()).toBe('')
    await expect.poll(() => backendSession(page)).toEqual(signedOut)

    // Signing in as that account, then out.
    await ui.button('Sign in').click()
    await wallet.answer('personal_sign', true)
    expect(await waitForText(session(page), WALLET_SECOND_ADDRESS)).toBe(WALLET_SECOND_ADDRESS)
    await ui.button('Sign out').click()
    await session(page).filter({ hasNotText: WALLET_SECOND_ADDRESS }).waitFor()
    await expect.poll(() => backendSession(page)).toEqual(signedOut)
    expect(await waitForText(ui.address, WALLET_SECOND_ADDRESS)).toBe(WALLET_SECOND_ADDRESS)
  })

  test('behavior: the embedded wallet signs in once its user approves in the consent frame; reload keeps it; another account ends it; sign out; disconnect ends it', async () => {
    const { page } = browser
    const ui = demo(page)
    const email = `siwe${Date.now()}@example.test`
    await page.goto(stack.demo)
    await ui.connectButton.click()
    const modal = page.getByRole('dialog', { name: /Connect a wallet|Sign in/ })
    await modal.getByRole('button', { name: 'Continue with email', exact: true }).click()
    await modal.getByRole('textbox', { name: 'Email' }).fill(email)
    await modal.getByRole('button', { name: 'Continue', exact: true }).click()
    await typeCodeInFrame(page, { kms: stack.kms, email })
    const address = (await waitForText(ui.address, ADDRESS)) as `0x${string}`

    await ui.button('Sign in').click()
    await answerConsent(page, 'Approve', 'Sign in with Ethereum')
    expect(await waitForText(session(page), address)).toBe(address)
    expect(await backendSession(page)).toMatchObject({ status: 200, body: { address, kind: 'siwe', walletKind: 'embedded', email } })

    await page.reload()
    expect(await waitForText(session(page), address)).toBe(address)

    // Another account of the embedded wallet: the session for the first one ends.
    await page.getByRole('button', { name: /^Account/ }).click()
    const account = page.getByRole('dialog', { name: 'Account' })
    await account.getByRole('button', { name: 'Add an account', exact: true }).click()
    await answerConsent(page, 'Approve', 'Add an account')
    const status = await waitForText(account.getByRole('status', { name: 'Wallet tools status' }), /^Now using 0x[0-9a-fA-F]{40}$/)
    const second = status.replace('Now using ', '')
    expect(second).not.toBe(address)
    await page.keyboard.press('Escape')
    expect(await waitForText(ui.address, second)).toBe(second)
    await session(page).filter({ hasNotText: address }).waitFor()
    expect(await session(page).textContent()).toBe('')
    await expect.poll(() => backendSession(page)).toEqual(signedOut)

    // Signed in again as the second account, then signed out; the wallet stays connected.
    await ui.button('Sign in').click()
    await answerConsent(page, 'Approve', 'Sign in with Ethereum')
    expect(await waitForText(session(page), second)).toBe(second)
    await ui.button('Sign out').click()
    await session(page).filter({ hasNotText: second }).waitFor()
    await expect.poll(() => backendSession(page)).toEqual(signedOut)
    expect(await waitForText(ui.address, second)).toBe(second)

    // Signed in once more, a disconnect ends that session too.
    await ui.button('Sign in').click()
    await answerConsent(page, 'Approve', 'Sign in with Ethereum')
    expect(await waitForText(session(page), second)).toBe(second)
    await ui.button('Disconnect').click()
    await ui.connectButton.waitFor()
    await expect.poll(() => backendSession(page)).toEqual(signedOut)
  })
})
