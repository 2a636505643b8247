import { createPublicClient, http, verifyMessage, verifyTypedData } from 'viem'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { mailTypedData } from '../apps/demo/src/typedData.js'
import { latchkeyStorage, launch } from './browser.js'
import { demo, latchkeyWarning, waitForText } from './page.js'

const stack = inject('stack')
const DEV_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'

let browser: Awaited<ReturnType<typeof launch>>
beforeEach(async () => {
  browser = await launch()
})
afterEach(async () => {
  await browser.close()
})

describe('browser wallet journey', () => {
  test('default: connect, sign, send, switch, reload, reject, disconnect', async () => {
    const { page } = browser
    const ui = demo(page)
    await page.goto(stack.demo)

    // Connect through the modal with the dev wallet.
    await ui.connectButton.click()
    await ui.connectModal.waitFor()
    await ui.wallet('Latchkey Dev Wallet').click()
    await ui.answer('Connection request', true)
    expect(await waitForText(ui.address, DEV_ADDRESS)).toBe(DEV_ADDRESS)
    expect(await waitForText(ui.chainId, '31337')).toBe('31337')
    await ui.connectModal.waitFor({ state: 'detached' })

    // Sign a message; the signature recovers to the address.
    const message = await ui.message.inputValue()
    expect(message.length).toBeGreaterThan(0)
    await ui.button('Sign message').click()
    await ui.answer('Signature request', true)
    const signature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(await verifyMessage({ address: DEV_ADDRESS, message, signature })).toBe(true)

    // Sign typed data; verified against the same domain and message the demo builds.
    await ui.button('Sign typed data').click()
    await ui.answer('Typed data signature request', true)
    await ui.signature
      .filter({ hasNotText: signature })
      .filter({ hasText: /^0x[0-9a-f]{130}$/ })
      .waitFor()
    const typedSignature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(typedSignature).not.toBe(signature)
    expect(
      await verifyTypedData({
        ...mailTypedData({ from: DEV_ADDRESS, chainId: 31337, contents: message }),
        address: DEV_ADDRESS,
        signature: typedSignature,
      }),
    ).toBe(true)

    // Send a transaction; the receipt on anvil says success.
    await ui.button('Send transaction').click()
    await ui.answer('Transaction request', true)
    const hash = (await waitForText(ui.txHash, /^0x[0-9a-f]{64}$/)) as `0x${string}`
    const chainA = createPublicClient({ transport: http(stack.chainA) })
    const receipt = await chainA.waitForTransactionReceipt({ hash, pollingInterval: 100 })
    expect(receipt.status).toBe('success')
    expect(receipt.from).toBe(DEV_ADDRESS.toLowerCase())
    await page.getByText(`Confirmed in block ${receipt.blockNumber}`, { exact: true }).waitFor()
    // Its toast says confirmed, links to the chain's explorer, and Dismiss removes it.
    const toasts = page.getByRole('region', { name: 'Transactions' })
    await toasts.getByText('Transaction confirmed', { exact: true }).waitFor()
    expect(await toasts.getByRole('link', { name: 'View on Demo explorer' }).getAttribute('href')).toBe(`/explorer/31337/tx/${hash}`)
    await toasts.getByRole('button', { name: 'Dismiss' }).click()
    await toasts.getByRole('listitem').waitFor({ state: 'detached' })

    // Switch to the second chain.
    await ui.network.selectOption({ label: 'Anvil B (31338)' })
    await ui.answer('Switch network', true)
    expect(await waitForText(ui.chainId, '31338')).toBe('31338')

    // Reload: still connected, on that chain, without a prompt.
    await page.reload()
    expect(await waitForText(ui.address, DEV_ADDRESS)).toBe(DEV_ADDRESS)
    expect(await waitForText(ui.chainId, '31338')).toBe('31338')

    // Reject a request: a clear alert, still connected; the denial is logged as a warning.
    browser.expectConsole('the rejected signature', latchkeyWarning('signMessage'))
    await ui.button('Sign message').click()
    await ui.answer('Signature request', false)
    expect(await waitForText(ui.alert, /User rejected the request\./)).toContain('User rejected the request.')
    expect(await waitForText(ui.address, DEV_ADDRESS)).toBe(DEV_ADDRESS)

    // Disconnect: nothing of the session is left in storage.
    await ui.button('Disconnect').click()
    await ui.connectButton.waitFor()
    // The connector forgets its keys once the wallet has answered, which may be after the button shows.
    await expect.poll(() => latchkeyStorage(page)).toEqual({ 'latchkey.lastUsedChainId': '31338', 'latchkey.recentConnectorId': '"dev.latchkey.wallet"' })
    expect(JSON.stringify(await latchkeyStorage(page)).toLowerCase()).not.toContain(DEV_ADDRESS.slice(2).toLowerCase())

    // And a reload after disconnect does not reconnect.
    await page.reload()
    await ui.connectButton.waitFor()
    expect(await ui.address.count()).toBe(0)
  })

  test('behavior: two wallets announcing, one of them twice, are listed once each', async () => {
    const { page } = browser
    await page.addInitScript(() => {
      const provider = { request: async () => [], on() {}, removeListener() {} }
      const detail = Object.freeze({
        info: Object.freeze({
          uuid: 'test-uuid',
          name: 'Test Wallet',
          icon: 'data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22/%3E',
          rdns: 'com.example.testwallet',
        }),
        provider,
      })
      const announce = () => window.dispatchEvent(new CustomEvent('eip6963:announceProvider', { detail }))
      window.addEventListener('eip6963:requestProvider', () => {
        announce()
        announce()
      })
      announce()
    })
    const ui = demo(page)
    await page.goto(stack.demo)
    await ui.connectButton.click()
    await ui.connectModal.waitFor()
    await ui.wallet('Latchkey Dev Wallet').waitFor()
    await ui.wallet('Test Wallet').waitFor()
    expect(await ui.wallet('Latchkey Dev Wallet').count()).toBe(1)
    expect(await ui.wallet('Test Wallet').count()).toBe(1)
  })

  test('behavior: the modal code loads only when the user opens it', async () => {
    const { page } = browser
    const ui = demo(page)
    const scripts: string[] = []
    page.on('request', (request) => {
      if (request.resourceType() === 'script') scripts.push(new URL(request.url()).pathname)
    })
    await page.goto(stack.demo)
    await ui.connectButton.waitFor()
    const eager = [...scripts]
    await ui.connectButton.click()
    await ui.connectModal.waitFor()
    const lazy = scripts.filter((s) => !eager.includes(s))
    expect(eager.length).toBeGreaterThan(0)
    expect(lazy.length).toBeGreaterThan(0)
  })

  test('behavior: Escape closes the modal and focus returns to the button', async () => {
    const { page } = browser
    const ui = demo(page)
    await page.goto(stack.demo)
    await ui.connectButton.click()
    await ui.connectModal.waitFor()
    expect(await page.evaluate(() => document.activeElement?.closest('[role="dialog"]') !== null)).toBe(true)
    await page.keyboard.press('Escape')
    await ui.connectModal.waitFor({ state: 'detached' })
    expect(await page.evaluate(() => document.activeElement?.textContent?.trim())).toBe('Connect Wallet')
  })
})
