import { createPublicClient, encodeFunctionData, type Hex, http, numberToHex, parseAbi, parseEther, parseEventLogs, toHex } from 'viem'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { BATCH_RECIPIENTS } from '../apps/demo/src/typedData.js'
import { executeCallData } from '../test/batch.js'
import { launch } from './browser.js'
import { embeddedSignUp } from './embeddedSignUp.js'
import { answerConsent, demo, waitForText } from './page.js'

// Sponsored gas in the demo (ERC-4337 through the stack's Alto bundler, ERC-7677 through the
// backend's paymaster): a fresh embedded user with no ETH sends "Send batch" (two TKN mints); the
// consent frame says who pays; the batch is mined as a UserOperation the app's paymaster paid for,
// and the user's ETH stays 0. With the user's budget for the day spent, the demo shows the typed
// refusal and nothing is sent.

const stack = inject('stack')
const chainA = createPublicClient({ transport: http(stack.chainA) })
const EMBEDDED_STATUS = /^(0x[0-9a-f]+): confirmed (0x[0-9a-f]{64})$/
const TOKEN_ABI = parseAbi(['function mint(address to, uint256 amount)', 'function balanceOf(address) view returns (uint256)'])
const TOKEN = '0xf0F3A2044dEC38152A467aD6ABaC0AB98e50516d'
const ENTRY_POINT = '0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108'
const USER_OPERATION_EVENT = parseAbi([
  'event UserOperationEvent(bytes32 indexed userOpHash, address indexed sender, address indexed paymaster, uint256 nonce, bool success, uint256 actualGasCost, uint256 actualGasUsed)',
])

let browser: Awaited<ReturnType<typeof launch>>
beforeEach(async () => {
  browser = await launch()
})
afterEach(async () => {
  await browser.close()
})

const tokenBalances = () =>
  Promise.all(BATCH_RECIPIENTS.map((address) => chainA.readContract({ address: TOKEN, abi: TOKEN_ABI, functionName: 'balanceOf', args: [address] })))

describe('Send batch, sponsored (ERC-4337, ERC-7677)', () => {
  test('default: a fresh embedded user with 0 ETH sends the batch; the frame says the app pays; it is mined and their ETH stays 0', async () => {
    const { page } = browser
    const ui = demo(page)
    const address = await embeddedSignUp(page, { demo: stack.demo, kms: stack.kms, email: `sponsored.${Date.now()}@example.test` })
    expect(await chainA.getBalance({ address })).toBe(0n)
    expect(await page.getByLabel('Gas', { exact: true }).inputValue()).toBe('sponsored')
    const before = await tokenBalances()

    await ui.button('Send batch').click()
    // The first operation carries the account's EIP-7702 delegation, approved first; then the
    // operation itself, its fee row naming the app as the payer.
    await answerConsent(page, 'Approve', 'Upgrade your account (EIP-7702)')
    const frame = page.frameLocator('iframe[id^="latchkey-consent-frame-"]')
    const review = frame.getByRole('dialog')
    await review.getByText('Network fee', { exact: true }).waitFor()
    expect(await review.getByText('sponsored by Latchkey Demo', { exact: true }).isVisible()).toBe(true)
    // It reads as the ETH-paid batch's review: its title, and the two mints' warning once.
    expect(await frame.locator('#review-warnings li').allTextContents()).toEqual([
      `Calls 1 and 2: Unknown contract call: the data sent to ${TOKEN} could not be decoded. Approve only if you trust this app and this contract.`,
    ])
    await answerConsent(page, 'Approve', 'Send 2 calls at once')

    const text = await waitForText(page.getByRole('status', { name: 'Batch status' }), EMBEDDED_STATUS)
    const [, , hash] = EMBEDDED_STATUS.exec(text) as unknown as [string, string, Hex]
    const receipt = await chainA.getTransactionReceipt({ hash })
    const [operation] = parseEventLogs({ abi: USER_OPERATION_EVENT, logs: receipt.logs, eventName: 'UserOperationEvent' })
    expect(operation?.args).toMatchObject({ sender: address, success: true })
    expect(operation!.args.paymaster).not.toBe('0x0000000000000000000000000000000000000000')
    expect((await tokenBalances()).map((balance, index) => balance - before[index]!)).toEqual([parseEther('1'), parseEther('1')])
    expect(await chainA.getBalance({ address })).toBe(0n)
  })

  test('behavior: with "Pay gas in TKN", a user who holds only TKN pays the fee in TKN; the first batch approves the token paymaster; their ETH stays 0', async () => {
    const { page } = browser
    const ui = demo(page)
    const address = await embeddedSignUp(page, { demo: stack.demo, kms: stack.kms, email: `tkn.gas.${Date.now()}@example.test` })
    const balance = page.getByRole('status', { name: 'Token balance' })
    await ui.button('Get test tokens').click()
    expect(await waitForText(balance, '100 TKN')).toBe('100 TKN')
    expect(await chainA.getBalance({ address })).toBe(0n)
    await page.getByLabel('Gas', { exact: true }).selectOption('token')
    const before = await tokenBalances()

    await ui.button('Send batch').click()
    await answerConsent(page, 'Approve', 'Upgrade your account (EIP-7702)')
    const review = page.frameLocator('iframe[id^="latchkey-consent-frame-"]').getByRole('dialog')
    await review.getByText('Network fee', { exact: true }).waitFor()
    // The batch's first call approves the token paymaster; the fee row quotes TKN, not ETH.
    await review.getByText(`Allow ${stack.tokenPaymaster} to spend 20 TKN`, { exact: true }).waitFor()
    const quoted = await review.getByText(/^up to [0-9.]+ TKN$/).textContent()
    await answerConsent(page, 'Approve')

    const text = await waitForText(page.getByRole('status', { name: 'Batch status' }), EMBEDDED_STATUS)
    const [, , hash] = EMBEDDED_STATUS.exec(text) as unknown as [string, string, Hex]
    const receipt = await chainA.getTransactionReceipt({ hash })
    const [operation] = parseEventLogs({ abi: USER_OPERATION_EVENT, logs: receipt.logs, eventName: 'UserOperationEvent' })
    expect(operation?.args).toMatchObject({ sender: address, success: true, paymaster: stack.tokenPaymaster })
    expect((await tokenBalances()).map((balance, index) => balance - before[index]!)).toEqual([parseEther('1'), parseEther('1')])
    // The fee left in TKN: more than nothing, no more than the frame's quote.
    const paid = parseEther('100') - (await chainA.readContract({ address: TOKEN, abi: TOKEN_ABI, functionName: 'balanceOf', args: [address] }))
    expect(paid).toBeGreaterThan(0n)
    expect(paid).toBeLessThanOrEqual(parseEther(/^up to ([0-9.]+) TKN$/.exec(quoted ?? '')![1]!))
    expect(await chainA.getBalance({ address })).toBe(0n)
  })

  test('error: with the day’s budget spent, the demo shows SponsorshipUnavailableError and nothing is sent', async () => {
    const { page } = browser
    const ui = demo(page)
    const address = await embeddedSignUp(page, { demo: stack.demo, kms: stack.kms, email: `budget.${Date.now()}@example.test` })
    // The whole day's budget of this user (0.05 ETH) reserved by one operation of its own, asked
    // for straight from the paymaster: 2,500,000 gas at 20 gwei.
    const batch = executeCallData([{ to: TOKEN, data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'mint', args: [address, 1n] }) }])
    const reserved = await fetch(`${stack.server}/paymaster`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'pm_getPaymasterData',
        params: [
          {
            sender: address,
            nonce: toHex(12345n << 64n),
            callData: batch,
            callGasLimit: numberToHex(1_500_000),
            verificationGasLimit: numberToHex(820_000),
            preVerificationGas: numberToHex(100_000),
            paymasterVerificationGasLimit: numberToHex(80_000),
            paymasterPostOpGasLimit: '0x0',
            maxFeePerGas: numberToHex(20_000_000_000n),
            maxPriorityFeePerGas: numberToHex(1_000_000_000n),
          },
          ENTRY_POINT,
          '0x7a69',
          {},
        ],
      }),
    })
    expect(await reserved.json()).toMatchObject({ id: 1, result: { paymasterData: expect.stringMatching(/^0x/) } })
    const nonce = await chainA.getTransactionCount({ address })

    browser.expectConsole('the refused sponsorship', (entry) => entry.text.startsWith('[latchkey] sendCalls: The network fee cannot be sponsored.'))
    await ui.button('Send batch').click()
    const alert = page.getByRole('alert')
    await alert.waitFor()
    expect(await alert.locator('strong').textContent()).toBe('The network fee cannot be sponsored.')
    expect(await alert.textContent()).toContain('(-32005)')
    // Nothing was asked of the user, and nothing left the account.
    expect(await chainA.getTransactionCount({ address })).toBe(nonce)
    expect(await chainA.getBalance({ address })).toBe(0n)
  })
})
