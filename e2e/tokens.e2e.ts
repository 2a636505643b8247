import type { Page } from 'playwright-core'
import { type Address, createPublicClient, erc20Abi, http, parseUnits } from 'viem'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { TEST_ACCOUNT, TOKEN } from '../apps/demo/src/testToken.js'
import { launch } from './browser.js'
import { embeddedSignUp } from './embeddedSignUp.js'
import { answerConsent, demo, latchkeyWarning, typeCodeInFrame, waitForText } from './page.js'

// The demo's Test Token (TKN) with the embedded wallet, against the whole local stack: the faucet
// mints without a prompt; a transfer is approved in the kms's consent frame, which shows it
// decoded and simulated; an unlimited approval is shown with its warning and rejected there (4001
// to the app). Once in the demo with its modal, once on the headless page through the hooks.

const stack = inject('stack')
const chainA = createPublicClient({ transport: http(stack.chainA) })
const tkn = (amount: string) => parseUnits(amount, 18)
const tokenBalance = (owner: Address) => chainA.readContract({ address: TOKEN, abi: erc20Abi, functionName: 'balanceOf', args: [owner] })
const allowance = (owner: Address) => chainA.readContract({ address: TOKEN, abi: erc20Abi, functionName: 'allowance', args: [owner, TEST_ACCOUNT] })

let browser: Awaited<ReturnType<typeof launch>>
beforeEach(async () => {
  browser = await launch()
})
afterEach(async () => {
  await browser.close()
})

/** The consent frame's dialog titled `title`. */
const consentDialog = (page: Page, title: string) => page.frameLocator('iframe[id^="latchkey-consent-frame-"]').getByRole('dialog', { name: title })

/**
 * Runs the token journey the demo and the headless page share, from a signed-in embedded wallet
 * with no TKN: mint, a transfer approved in the frame, an unlimited approval rejected there.
 * `rejection` is the text the page shows for the 4001.
 */
async function tokenJourney(page: Page, address: Address, rejection: string | RegExp) {
  const button = (name: string) => page.getByRole('button', { name, exact: true })
  const balance = page.getByRole('status', { name: 'Token balance' })
  expect(await waitForText(balance, '0 TKN')).toBe('0 TKN')

  // The faucet: anvil mints from its unlocked test account; the user is asked nothing.
  await button('Get test tokens').click()
  expect(await waitForText(balance, '100 TKN')).toBe('100 TKN')
  expect(await tokenBalance(address)).toBe(tkn('100'))

  // A transfer: the frame decodes it (symbol and decimals read from the chain) and simulates it.
  const received = await tokenBalance(TEST_ACCOUNT)
  await button('Send tokens').click()
  const send = consentDialog(page, 'Send a transaction')
  await send.getByText(`Send 1.5 TKN to ${TEST_ACCOUNT}`, { exact: true }).waitFor()
  expect(await waitForText(send.getByRole('status'), 'You send 1.5 TKN. You receive nothing')).toBe('You send 1.5 TKN. You receive nothing')
  await answerConsent(page, 'Approve', 'Send a transaction')
  expect(await waitForText(balance, '98.5 TKN')).toBe('98.5 TKN')
  expect(await tokenBalance(address)).toBe(tkn('98.5'))
  expect((await tokenBalance(TEST_ACCOUNT)) - received).toBe(tkn('1.5'))

  // An unlimited approval: the frame warns; Reject is EIP-1193 4001 to the app, and nothing is sent.
  browser.expectConsole('the rejected approval, logged as a warning', latchkeyWarning('sendTransaction'))
  await button('Approve unlimited').click()
  const approve = consentDialog(page, 'Send a transaction')
  await approve.getByText(`Allow ${TEST_ACCOUNT} to spend unlimited TKN`, { exact: true }).waitFor()
  expect(await approve.getByRole('list', { name: 'Warnings' }).getByRole('listitem').allTextContents()).toEqual([
    `Unlimited approval: ${TEST_ACCOUNT} may take all your TKN, now and later, until you revoke it.`,
  ])
  await answerConsent(page, 'Reject', 'Send a transaction')
  expect(await waitForText(page.getByRole('alert'), rejection)).toMatch(rejection)
  expect(await allowance(address)).toBe(0n)
  expect(await tokenBalance(address)).toBe(tkn('98.5'))
}

describe('Test Token (TKN) with the embedded wallet', () => {
  test('default: in the demo, Get test tokens mints 100 TKN; Send tokens is decoded, simulated and approved in the frame; Approve unlimited warns and its Reject is 4001', async () => {
    const { page } = browser
    const address = await embeddedSignUp(page, { demo: stack.demo, kms: stack.kms, email: `tokens.${Date.now()}@example.test` })
    expect(await waitForText(page.getByRole('status', { name: 'Test account' }), TEST_ACCOUNT)).toBe(TEST_ACCOUNT)
    await tokenJourney(page, address, /^User rejected the request\./)
  })

  test('behavior: on the headless page, the same through the hooks; the rejection is branched on by class', async () => {
    const { page } = browser
    const email = `tokens.headless.${Date.now()}@example.test`
    await page.goto(`${stack.demo}/headless`)
    await page.getByRole('textbox', { name: 'Email' }).fill(email)
    await page.getByRole('button', { name: 'Email me a code' }).click()
    // The code is typed in the consent frame's dialog, which the hook's verify opens once the code is sent.
    await typeCodeInFrame(page, { kms: stack.kms, email })
    const address = (await waitForText(page.getByRole('status', { name: 'Address' }), /^0x[0-9a-fA-F]{40}$/)) as Address
    await tokenJourney(page, address, 'You rejected the request in your wallet (4001).')
  })
})

describe('Grant permission (ERC-7715) with the embedded wallet', () => {
  test('behavior: once the grant is approved in the frame, Send tokens completes with no prompt until 5 TKN are spent; the next is refused with the typed error, nothing sent', async () => {
    const { page } = browser
    const ui = demo(page)
    const balance = page.getByRole('status', { name: 'Token balance' })
    const status = page.getByRole('status', { name: 'Token transaction' }).locator('..')
    const address = await embeddedSignUp(page, { demo: stack.demo, kms: stack.kms, email: `tokens.grant.${Date.now()}@example.test` })
    await ui.button('Get test tokens').click()
    expect(await waitForText(balance, '100 TKN')).toBe('100 TKN')

    // The grant, shown in the frame and approved there by the user.
    await ui.button('Grant permission').click()
    const grant = consentDialog(page, 'Grant a permission')
    await grant.getByText(/^5 TKN per day, from /).waitFor()
    await answerConsent(page, 'Approve', 'Grant a permission')
    await status.getByText(/^Granted: up to 5 TKN a day without asking, until \d\d:\d\d UTC/).waitFor()

    // Inside the grant: each send completes though nobody answers a dialog (only a trusted click
    // in the frame approves one), and none is showing.
    const send = consentDialog(page, 'Send a transaction')
    for (const left of ['98.5', '97', '95.5']) {
      await ui.button('Send tokens').click()
      expect(await waitForText(balance, `${left} TKN`)).toBe(`${left} TKN`)
      expect(await send.isVisible()).toBe(false)
    }
    expect(await tokenBalance(address)).toBe(tkn('95.5'))

    // 4.5 TKN spent: 1.5 more would pass 5 TKN a day. The kms refuses; the app sees its typed error, not a prompt.
    browser.expectConsole('the refusal, logged as an error', (entry) => entry.kind === 'error' && entry.text.startsWith('[latchkey] sendTransaction: '))
    browser.expectConsole(
      "the kms's 403 to the grant's key",
      (entry) => entry.kind === 'error' && entry.source.split('?')[0]!.endsWith('/public/v1/submit/sign_transaction'),
    )
    await ui.button('Send tokens').click()
    expect(await waitForText(ui.alert, /Grant limit: 5 TKN per 1 day; 4\.5 TKN already spent/)).toMatch(/Grant limit: 5 TKN per 1 day; 4\.5 TKN already spent/)
    expect(await send.isVisible()).toBe(false)
    expect(await tokenBalance(address)).toBe(tkn('95.5'))
    expect(await waitForText(balance, '95.5 TKN')).toBe('95.5 TKN')
  })
})
