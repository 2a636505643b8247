import type { Page } from 'playwright-core'
import { createPublicClient, type Hex, http, parseEther } from 'viem'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { BATCH_RECIPIENTS } from '../apps/demo/src/typedData.js'
import { launch } from './browser.js'
import { embeddedSignUp } from './embeddedSignUp.js'
import { answerConsent, demo, referenceWallet, waitForText } from './page.js'

// "Send batch" (EIP-5792): two transfers of 0.001 ETH in one wallet_sendCalls, with the dev
// wallet, with the reference wallet over WalletConnect, and with the embedded wallet, whose
// account becomes an EIP-7702 smart account and sends both in one atomic transaction. The demo's "Batch status" shows the
// batch id, its status and the transaction hashes; anvil shows the balances moved.

const stack = inject('stack')
const chainA = createPublicClient({ transport: http(stack.chainA) })
const BATCH_STATUS = /^(0x[0-9a-f]{64}): confirmed (0x[0-9a-f]{64}) (0x[0-9a-f]{64})$/

let browser: Awaited<ReturnType<typeof launch>>
beforeEach(async () => {
  browser = await launch()
})
afterEach(async () => {
  await browser.close()
})

const balances = () => Promise.all(BATCH_RECIPIENTS.map((address) => chainA.getBalance({ address })))

/** Clicks "Send batch", lets `approve` answer in the wallet, and checks the status, the chain and the balances. */
async function sendBatch(page: Page, from: string, approve: () => Promise<void>) {
  const ui = demo(page)
  const batchStatus = page.getByRole('status', { name: 'Batch status' })
  const before = await balances()
  await ui.button('Send batch').click()
  await approve()
  const text = await waitForText(batchStatus, BATCH_STATUS)
  const [, id, ...hashes] = BATCH_STATUS.exec(text) as unknown as [string, string, `0x${string}`, `0x${string}`]
  expect(id).toMatch(/^0x[0-9a-f]{64}$/)
  const transactions = await Promise.all(hashes.map((hash) => chainA.getTransaction({ hash })))
  expect(transactions.map((tx) => [tx.from, tx.to, tx.value])).toEqual(
    BATCH_RECIPIENTS.map((to) => [from.toLowerCase(), to.toLowerCase(), parseEther('0.001')]),
  )
  const receipts = await Promise.all(hashes.map((hash) => chainA.getTransactionReceipt({ hash })))
  expect(receipts.map((receipt) => receipt.status)).toEqual(['success', 'success'])
  const after = await balances()
  expect(after.map((balance, index) => balance - before[index]!)).toEqual([parseEther('0.001'), parseEther('0.001')])
}

describe('Send batch (EIP-5792)', () => {
  test('default: with the dev wallet, one approval sends both transfers; Batch status shows confirmed with both hashes', async () => {
    const { page } = browser
    const ui = demo(page)
    const devAddress = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
    await page.goto(stack.demo)
    await ui.connectButton.click()
    await ui.wallet('Latchkey Dev Wallet').click()
    await ui.answer('Connection request', true)
    expect(await waitForText(ui.address, devAddress)).toBe(devAddress)
    await sendBatch(page, devAddress, () => ui.answer('Batch request', true))
  })

  test('behavior: with WalletConnect and the reference wallet, the batch shows as two calls; Approve sends both', async () => {
    const { page } = browser
    const ui = demo(page)
    const walletPage = await browser.context.newPage()
    const wallet = referenceWallet(walletPage)
    // The reference wallet signs with anvil's test key #1.
    const walletAddress = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
    await walletPage.goto(stack.wallet)
    expect(await waitForText(wallet.address, walletAddress)).toBe(walletAddress)
    await page.goto(stack.demo)
    await ui.connectButton.click()
    await ui.wallet('WalletConnect').click()
    await page.getByRole('img', { name: 'QR code for WalletConnect' }).waitFor()
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'])
    await ui.button('Copy link').click()
    await ui.button('Copied').waitFor()
    await wallet.pair(await page.evaluate(() => navigator.clipboard.readText()))
    await wallet.proposal.getByRole('button', { name: 'Approve' }).click()
    expect(await waitForText(ui.address, walletAddress)).toBe(walletAddress)

    await sendBatch(page, walletAddress, async () => {
      const calls = wallet.request('wallet_sendCalls').getByRole('list', { name: 'Calls' })
      await calls.getByRole('listitem').nth(1).waitFor()
      expect(await calls.getByRole('listitem').allTextContents()).toEqual(BATCH_RECIPIENTS.map((to) => `${to} 0.001 ETH`))
      await wallet.answer('wallet_sendCalls', true)
    })
  })
})

/** The calls a transaction made, from anvil's call tracer: who called whom with how much. */
async function internalTransfers(hash: Hex): Promise<{ from: string; to: string; value: bigint }[]> {
  type Frame = { from: string; to: string; value?: Hex; calls?: Frame[] }
  const root = (await chainA.request({ method: 'debug_traceTransaction' as never, params: [hash, { tracer: 'callTracer' }] as never })) as Frame
  const flat = (frame: Frame): Frame[] => [frame, ...(frame.calls ?? []).flatMap(flat)]
  return flat(root)
    .slice(1)
    .map((frame) => ({ from: frame.from, to: frame.to, value: BigInt(frame.value ?? '0x0') }))
}

describe('Send batch with the embedded wallet (EIP-7702)', () => {
  const EMBEDDED_STATUS = /^(0x[0-9a-f]+): confirmed (0x[0-9a-f]{64})$/

  test('default: both transfers in one atomic transaction; the first batch upgrades the account, the next one runs on it', async () => {
    const { page } = browser
    const ui = demo(page)
    const batchStatus = page.getByRole('status', { name: 'Batch status' })
    const address = await embeddedSignUp(page, { demo: stack.demo, kms: stack.kms, email: `batch.${Date.now()}@example.test` })
    await ui.button('Get test ETH').click()
    await page.getByText('Added 10 test ETH', { exact: true }).waitFor()
    expect(await chainA.getCode({ address })).toBeUndefined()
    // The embedded wallet's batch starts sponsored (sponsorship.e2e.ts); this one pays its own ETH.
    await page.getByLabel('Gas', { exact: true }).selectOption('eth')

    let previous: string | undefined
    for (const round of ['upgrades', 'upgraded'] as const) {
      const before = await balances()
      await ui.button('Send batch').click()
      // The first batch also delegates the account (EIP-7702): its authorization is approved first.
      if (round === 'upgrades') await answerConsent(page, 'Approve', 'Upgrade your account (EIP-7702)')
      await answerConsent(page, 'Approve', 'Send 2 calls at once')
      // The second round's status is the one that no longer names the first batch.
      const text = await waitForText(previous ? batchStatus.filter({ hasNotText: previous }) : batchStatus, EMBEDDED_STATUS)
      const [, id, hash] = EMBEDDED_STATUS.exec(text) as unknown as [string, string, Hex]
      previous = id
      // The one transaction: from the account to itself; the first carries the authorization.
      const [transaction, receipt] = await Promise.all([chainA.getTransaction({ hash }), chainA.getTransactionReceipt({ hash })])
      expect({ from: transaction.from, to: transaction.to, type: transaction.type }).toEqual({
        from: address.toLowerCase(),
        to: address.toLowerCase(),
        type: round === 'upgrades' ? 'eip7702' : 'eip1559',
      })
      expect(receipt.status).toBe('success')
      // It carried both transfers: its calls, and the balances moved in its block and by it alone.
      expect(await internalTransfers(hash)).toEqual(
        BATCH_RECIPIENTS.map((to) => ({ from: address.toLowerCase(), to: to.toLowerCase(), value: parseEther('0.001') })),
      )
      const block = await chainA.getBlock({ blockNumber: receipt.blockNumber })
      expect(block.transactions).toEqual([hash])
      const atParent = await Promise.all(BATCH_RECIPIENTS.map((recipient) => chainA.getBalance({ address: recipient, blockNumber: receipt.blockNumber - 1n })))
      const atBlock = await Promise.all(BATCH_RECIPIENTS.map((recipient) => chainA.getBalance({ address: recipient, blockNumber: receipt.blockNumber })))
      expect(atBlock.map((balance, index) => balance - atParent[index]!)).toEqual([parseEther('0.001'), parseEther('0.001')])
      expect((await balances()).map((balance, index) => balance - before[index]!)).toEqual([parseEther('0.001'), parseEther('0.001')])
      // The account now runs the batch executor (EIP-7702 delegation designator).
      expect(await chainA.getCode({ address })).toMatch(/^0xef0100[0-9a-f]{40}$/)
    }
  })
})
