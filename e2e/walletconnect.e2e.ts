import type { Page } from 'playwright-core'
import { createPublicClient, defineChain, http, verifyMessage, verifyTypedData } from 'viem'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { mailTypedData } from '../apps/demo/src/typedData.js'
import { launch } from './browser.js'
import { demo, referenceWallet, waitForText } from './page.js'

// The demo pairs with the reference wallet (apps/wallet on its own origin, the "phone") through
// our relay; both are pages in one Chromium. The URI travels as a user carries it: "Copy link"
// and paste, or a deep link.

const stack = inject('stack')
// The reference wallet signs with anvil's test key #1.
const walletAddress = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const chainA = defineChain({
  id: 31337,
  name: 'Anvil A',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [stack.chainA] } },
})

let browser: Awaited<ReturnType<typeof launch>>
let walletPage: Page
beforeEach(async () => {
  browser = await launch()
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'])
  walletPage = await browser.context.newPage()
})
afterEach(async () => {
  await browser.close()
})

/** Opens the demo's WalletConnect view and copies the pairing URI with "Copy link". */
async function copyPairingUri(page: Page): Promise<string> {
  const ui = demo(page)
  await page.getByRole('img', { name: 'QR code for WalletConnect' }).waitFor()
  await ui.button('Copy link').click()
  await ui.button('Copied').waitFor()
  const uri = await page.evaluate(() => navigator.clipboard.readText())
  expect(uri).toMatch(/^wc:[0-9a-f]{64}@2\?relay-protocol=irn&symKey=[0-9a-f]{64}&expiryTimestamp=\d+$/)
  return uri
}

describe('WalletConnect journey with the reference wallet', () => {
  test('default: Copy link, pair, sign, send, switch, follow the wallet, reload, wallet disconnects', async () => {
    const { page } = browser
    const ui = demo(page)
    const wallet = referenceWallet(walletPage)
    await walletPage.goto(stack.wallet)
    expect(await waitForText(wallet.address, walletAddress)).toBe(walletAddress)
    await page.goto(stack.demo)

    await ui.connectButton.click()
    await ui.wallet('WalletConnect').click()
    const uri = await copyPairingUri(page)
    await wallet.pair(uri)

    // The proposal names the dapp and what it asks for.
    await wallet.proposal.filter({ hasText: 'Latchkey Demo wants to connect' }).waitFor()
    await wallet.proposal.getByText('eip155:31337, eip155:31338', { exact: true }).waitFor()
    await wallet.proposal.getByRole('button', { name: 'Approve' }).click()

    expect(await waitForText(ui.address, walletAddress)).toBe(walletAddress)
    expect(await waitForText(ui.chainId, '31337')).toBe('31337')
    await ui.connectModal.waitFor({ state: 'detached' })
    await wallet.session('Latchkey Demo').waitFor()

    // A message: the wallet shows it as text; the signature verifies for the wallet's address.
    const message = await ui.message.inputValue()
    await ui.button('Sign message').click()
    await wallet.request('personal_sign').getByLabel('Message').filter({ hasText: message }).waitFor()
    await wallet.answer('personal_sign', true)
    const signature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(await verifyMessage({ address: walletAddress, message, signature })).toBe(true)

    await ui.button('Sign typed data').click()
    await wallet.request('eth_signTypedData_v4').getByLabel('Typed data').filter({ hasText: '"primaryType": "Mail"' }).waitFor()
    await wallet.answer('eth_signTypedData_v4', true)
    await ui.signature
      .filter({ hasNotText: signature })
      .filter({ hasText: /^0x[0-9a-f]{130}$/ })
      .waitFor()
    const typedSignature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(
      await verifyTypedData({
        ...mailTypedData({ from: walletAddress, chainId: 31337, contents: message }),
        address: walletAddress,
        signature: typedSignature,
      }),
    ).toBe(true)

    // A transaction: the wallet shows the transfer, sends it to chain A, the demo shows the receipt.
    await ui.button('Send transaction').click()
    await wallet.request('eth_sendTransaction').getByText('0.001 ETH', { exact: true }).waitFor()
    await wallet.answer('eth_sendTransaction', true)
    const hash = (await waitForText(ui.txHash, /^0x[0-9a-f]{64}$/)) as `0x${string}`
    const receipt = await createPublicClient({ chain: chainA, transport: http() }).waitForTransactionReceipt({ hash, pollingInterval: 100 })
    expect(receipt.status).toBe('success')
    expect(receipt.from).toBe(walletAddress.toLowerCase())
    await page.getByText(`Confirmed in block ${receipt.blockNumber}`, { exact: true }).waitFor()

    // The wallet changes network; the demo follows.
    await wallet.network.selectOption({ label: 'Anvil B (31338)' })
    expect(await waitForText(ui.chainId, '31338')).toBe('31338')

    // A chain in the session switches in the demo at once; the wallet is not asked.
    await ui.network.selectOption({ label: 'Anvil A (31337)' })
    expect(await waitForText(ui.chainId, '31337')).toBe('31337')
    expect(await walletPage.getByRole('article').count()).toBe(0)

    // Reloads on both sides keep the session.
    await page.reload()
    expect(await waitForText(ui.address, walletAddress)).toBe(walletAddress)
    await walletPage.reload()
    await wallet.session('Latchkey Demo').waitFor()
    await expect.poll(() => wallet.network.inputValue()).toBe('31338')

    // The wallet ends the session; the demo is disconnected and forgets it.
    await wallet.session('Latchkey Demo').getByRole('button', { name: 'Disconnect' }).click()
    await ui.connectButton.waitFor()
    await expect.poll(() => page.evaluate(() => localStorage.getItem('latchkey.walletConnect.sessionTopic'))).toBeNull()
    await walletPage.getByText('No dapp is connected.', { exact: true }).waitFor()
  })

  test('behavior: Reject in the wallet shows "Connection rejected" with a fresh code; a deep link then pairs', async () => {
    const { page } = browser
    const ui = demo(page)
    const wallet = referenceWallet(walletPage)
    await page.goto(stack.demo)
    await ui.connectButton.click()
    await ui.wallet('WalletConnect').click()
    const first = await copyPairingUri(page)

    await walletPage.goto(`${stack.wallet}/wc?uri=${encodeURIComponent(first)}`)
    await wallet.proposal.getByRole('button', { name: 'Reject' }).click()
    await wallet.proposal.waitFor({ state: 'detached' })
    // The deep link's URI does not stay in the address bar, so a reload does not pair again.
    await walletPage.waitForURL((url) => url.search === '')

    await ui.alert.filter({ hasText: 'Connection rejected. Please try again.' }).waitFor()
    await ui.button('Copy link').click()
    const second = await page.evaluate(() => navigator.clipboard.readText())
    expect(second).toMatch(/^wc:[0-9a-f]{64}@2\?/)
    expect(second).not.toBe(first)

    await walletPage.goto(`${stack.wallet}/?uri=${encodeURIComponent(second)}`)
    await wallet.proposal.getByRole('button', { name: 'Approve' }).click()
    expect(await waitForText(ui.address, walletAddress)).toBe(walletAddress)
  })

  test('error: a malformed pairing URI is refused in the wallet and nothing pairs', async () => {
    const wallet = referenceWallet(walletPage)
    await walletPage.goto(stack.wallet)
    await wallet.pair('wc:not-a-pairing-uri')
    await wallet.alert.waitFor()
    expect(await wallet.alert.textContent()).toBe('This is not a valid WalletConnect pairing link.')
    expect(await walletPage.getByRole('article').count()).toBe(0)
  })
})
