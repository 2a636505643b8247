import { BATCH_CALLS_PARAMETERS, BATCH_EXECUTOR_ABI, BATCH_MODE } from '@latchkey/constants/batch-executor'
import type { Frame, Page } from 'playwright-core'
import {
  type Address,
  concatHex,
  encodeAbiParameters,
  encodeFunctionData,
  getTypesForEIP712Domain,
  type Hex,
  numberToHex,
  parseAbi,
  parseGwei,
  recoverAddress,
  serializeSignature,
  serializeTypedData,
} from 'viem'
import { getUserOperationHash, getUserOperationTypedData, type UserOperation } from 'viem/account-abstraction'
import { describe, expect, inject, test } from 'vitest'
import { batchExecutorAddress, testTokenAddress } from '../../../contracts/index.js'
import { dialogViolations } from './frameAxe.js'
import { useFrameHarness } from './frameHarness.js'
import { ethereumAccount } from './harness.js'

// A UserOperation in the consent frame, in Chromium: the wallet asks for EntryPoint v0.8's EIP-712
// PackedUserOperation message to be signed (eth_signTypedData_v4, SIGN_RAW_PAYLOAD_V2 with
// PAYLOAD_ENCODING_EIP712). The frame shows its calls as a batch and a "Network fee" row for each
// kind of payer (the account, the app's sponsor paymaster, the app's token paymaster, a stranger),
// from the kms's frame settings; once approved with a trusted key press, the kms signs the op's hash
// as viem computes it for the account. An op for another EntryPoint or sender is refused (-32602).

const ENTRY_POINT = '0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108'
const SPONSOR = '0x5050505050505050505050505050505050505050'
const TOKEN_PAYMASTER = '0x7070707070707070707070707070707070707070'
const STRANGER = '0x9090909090909090909090909090909090909090'
const recipient = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'

const appHtml = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>App</title>
<script type="module">
window.openConsent = (framesUrl) => new Promise((resolve) => {
  const iframe = document.createElement('iframe')
  iframe.src = framesUrl + '/consent'
  iframe.style.cssText = 'width: 480px; height: 1300px; border: 0'
  const channel = new MessageChannel()
  const waiting = new Map()
  channel.port1.onmessage = (event) => {
    if (event.data.type === 'PUBLIC_KEY_READY') return resolve(event.data.value)
    waiting.get(event.data.requestId)?.(event.data)
  }
  window.ask = (requestId, value) => { window.answer = new Promise((done) => waiting.set(requestId, done)); channel.port1.postMessage({ type: 'REVIEW_AND_STAMP', requestId, value }) }
  iframe.addEventListener('load', () => iframe.contentWindow.postMessage({ type: 'TURNKEY_INIT_MESSAGE_CHANNEL' }, new URL(framesUrl).origin, [channel.port2]), { once: true })
  document.body.append(iframe)
})
</script></head><body></body></html>`

const harness = useFrameHarness(appHtml, {
  chains: [{ id: 31337, rpcUrl: inject('chainARpc') }],
  executor: batchExecutorAddress,
  paymasters: [
    { chainId: 31337, kind: 'sponsor', address: SPONSOR },
    { chainId: 31337, kind: 'token', address: TOKEN_PAYMASTER },
  ],
  appName: 'Demo App',
})

/** An app page with its consent frame open, and a sub-organization whose root user's key is the frame's. */
async function openConsent(): Promise<{ page: Page; frame: Frame; organizationId: string; account: Address }> {
  const page = await harness.browser.newPage({ viewport: { width: 800, height: 1400 } })
  await page.goto(harness.appOrigin)
  const publicKey = await page.evaluate(
    (framesUrl) => (window as unknown as { openConsent(url: string): Promise<string> }).openConsent(framesUrl),
    harness.kms.framesUrl!,
  )
  const created = await harness.backend.createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: String(Date.now()),
    organizationId: harness.parentOrganizationId,
    parameters: {
      subOrganizationName: `user ${publicKey}`,
      rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'user', apiKeys: [{ apiKeyName: 'frame', publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }],
      wallet: { walletName: 'wallet', accounts: [ethereumAccount] },
    },
  })
  const result = created.activity.result.createSubOrganizationResultV8!
  const frame = page.frames().find((candidate) => candidate.url() === `${harness.kms.framesUrl}/consent`)!
  return { page, frame, organizationId: result.subOrganizationId!, account: result.wallet!.addresses![0] as Address }
}

const transfer = encodeFunctionData({
  abi: parseAbi(['function transfer(address to, uint256 amount)']),
  functionName: 'transfer',
  args: [recipient, 1500000000000000000n],
})
const executeCalls = (calls: readonly { to: Address; value: bigint; data: Hex }[]) =>
  encodeFunctionData({ abi: BATCH_EXECUTOR_ABI, functionName: 'execute', args: [BATCH_MODE, encodeAbiParameters(BATCH_CALLS_PARAMETERS, [calls])] })

/** A UserOperation of `sender` that transfers 1.5 TKN through the executor; 350,000 gas at up to 2 gwei before any paymaster. */
const userOperation = (sender: Address, fields: Partial<UserOperation<'0.8'>> = {}): UserOperation<'0.8'> => ({
  sender,
  nonce: 7n,
  callData: executeCalls([{ to: testTokenAddress, value: 0n, data: transfer }]),
  callGasLimit: 200_000n,
  verificationGasLimit: 100_000n,
  preVerificationGas: 50_000n,
  maxFeePerGas: parseGwei('2'),
  maxPriorityFeePerGas: parseGwei('1'),
  signature: '0x',
  ...fields,
})

/** REVIEW_AND_STAMP of `operation`'s typed data for EntryPoint `entryPoint`, as the wallet sends it. */
function request(organizationId: string, account: Address, operation: UserOperation<'0.8'>, entryPoint: Address = ENTRY_POINT) {
  // As viem's signTypedData hands it to a local account (@turnkey/viem's): with its EIP712Domain type.
  const typed = getUserOperationTypedData({ chainId: 31337, entryPointAddress: entryPoint, userOperation: operation })
  const typedData = serializeTypedData({ ...typed, types: { EIP712Domain: getTypesForEIP712Domain({ domain: typed.domain }), ...typed.types } } as Parameters<
    typeof serializeTypedData
  >[0])
  return {
    request: { method: 'eth_signTypedData_v4', params: [account, typedData] },
    payload: JSON.stringify({
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: { signWith: account, payload: typedData, encoding: 'PAYLOAD_ENCODING_EIP712', hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' },
    }),
    context: { account, chainId: 31337 },
  }
}

const ask = (page: Page, requestId: string, value: unknown) =>
  page.evaluate(({ requestId, value }) => (window as unknown as { ask(id: string, value: unknown): void }).ask(requestId, value), { requestId, value })
const answer = (page: Page) => page.evaluate(() => (window as unknown as { answer: Promise<unknown> }).answer)

/** The dialog's rows as the user reads them: "label: value". */
async function rows(frame: Frame): Promise<string[]> {
  await frame.getByRole('dialog').waitFor()
  const cells = await frame.locator('#review-rows > *').allTextContents()
  return cells.flatMap((cell, index) => (index % 2 === 0 ? [`${cell}: ${cells[index + 1]}`] : []))
}

/** Approves with a trusted key press once "Approve" is armed; the kms runs the stamped payload; the signature's signer. */
async function approveAndSign(page: Page, frame: Frame, value: ReturnType<typeof request>, hash: Hex): Promise<Address> {
  const approve = frame.getByRole('button', { name: 'Approve' })
  await expect.poll(() => approve.isEnabled(), { timeout: 10_000 }).toBe(true)
  await approve.press('Enter')
  const stamp = (await answer(page)) as { type: string; value: { stampHeaderName: string; stampHeaderValue: string } }
  expect(stamp.type).toBe('STAMP')
  const response = await fetch(`${harness.kms.url}/public/v1/submit/sign_raw_payload`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [stamp.value.stampHeaderName]: stamp.value.stampHeaderValue },
    body: value.payload,
  })
  const body = (await response.json()) as { activity: { result: { signRawPayloadResult: { r: string; s: string; v: string } } } }
  const { r, s, v } = body.activity.result.signRawPayloadResult
  return recoverAddress({ hash, signature: serializeSignature({ r: `0x${r}`, s: `0x${s}`, yParity: Number(`0x${v}`) }) })
}

const hashOf = (operation: UserOperation<'0.8'>) =>
  getUserOperationHash({ chainId: 31337, entryPointAddress: ENTRY_POINT, entryPointVersion: '0.8', userOperation: operation })

const CALL_ROWS = ['Network: Anvil A (31337)', `Call 1: Send 1.5 TKN to ${recipient}`, 'Total value: 0 ETH']

describe('a UserOperation in the consent frame', () => {
  test('default: no paymaster: its calls as a batch and "Network fee: up to" the gas the account pays; the signature is the account’s over the op’s hash', async () => {
    const { page, frame, organizationId, account } = await openConsent()
    const operation = userOperation(account)
    const value = request(organizationId, account, operation)
    await ask(page, 'op-1', value)
    expect(await rows(frame)).toEqual([...CALL_ROWS, 'Network fee: up to 0.0007 ETH'])
    expect(await frame.locator('#review-title').textContent()).toBe('Send a transaction')
    expect(await dialogViolations(page, frame, 'UserOperation')).toEqual([])
    expect(await approveAndSign(page, frame, value, hashOf(operation))).toBe(account)
    await page.close()
  })

  test('behavior: the app’s sponsor paymaster reads "sponsored by" the app’s name from the kms settings; a delegation riding with the op shows as one', async () => {
    const { page, frame, organizationId, account } = await openConsent()
    const operation = userOperation(account, {
      factory: '0x7702',
      factoryData: '0x',
      authorization: { address: batchExecutorAddress, chainId: 31337, nonce: 0, r: '0x0', s: '0x0', yParity: 0 },
      paymaster: SPONSOR,
      paymasterVerificationGasLimit: 60_000n,
      paymasterPostOpGasLimit: 0n,
      paymasterData: concatHex([numberToHex(0, { size: 6 }), numberToHex(1_900_000_000, { size: 6 }), `0x${'11'.repeat(65)}`]),
    })
    const value = request(organizationId, account, operation)
    await ask(page, 'op-2', value)
    expect(await rows(frame)).toEqual([...CALL_ROWS, `Delegate to: ${batchExecutorAddress}`, 'Valid on: Anvil A (31337)', 'Network fee: sponsored by Demo App'])
    expect(await approveAndSign(page, frame, value, hashOf(operation))).toBe(account)
    await page.close()
  })

  test('behavior: the app’s token paymaster reads "up to" PaymasterERC20’s most tokens for the quote in its data, in the token’s symbol', async () => {
    const { page, frame, organizationId, account } = await openConsent()
    // (460,000 gas + 30,000 postOp + 5,000 penalty) × 2 gwei × 3,000 TKN per ETH = 2.97 TKN.
    const operation = userOperation(account, {
      paymaster: TOKEN_PAYMASTER,
      paymasterVerificationGasLimit: 60_000n,
      paymasterPostOpGasLimit: 50_000n,
      paymasterData: concatHex([
        numberToHex(0, { size: 6 }),
        numberToHex(1_900_000_000, { size: 6 }),
        testTokenAddress,
        numberToHex(3000n * 10n ** 18n, { size: 32 }),
        '0x0000000000000000000000000000000000000000',
        `0x${'22'.repeat(65)}`,
      ]),
    })
    const value = request(organizationId, account, operation)
    await ask(page, 'op-3', value)
    expect(await rows(frame)).toEqual([...CALL_ROWS, 'Network fee: up to 2.97 TKN'])
    expect(await approveAndSign(page, frame, value, hashOf(operation))).toBe(account)
    await page.close()
  })

  test('behavior: any other paymaster reads "paid by" its address, with a warning that the app did not configure it', async () => {
    const { page, frame, organizationId, account } = await openConsent()
    const operation = userOperation(account, { paymaster: STRANGER, paymasterVerificationGasLimit: 60_000n, paymasterPostOpGasLimit: 0n, paymasterData: '0x' })
    const value = request(organizationId, account, operation)
    await ask(page, 'op-4', value)
    expect(await rows(frame)).toEqual([...CALL_ROWS, `Network fee: paid by ${STRANGER}`])
    expect(await frame.locator('#review-warnings li').allTextContents()).toEqual([
      `The paymaster ${STRANGER} is not one this app configured: it decides whether, and for what, this operation runs.`,
    ])
    expect(await approveAndSign(page, frame, value, hashOf(operation))).toBe(account)
    await page.close()
  })

  test('error: an op for another EntryPoint, from another sender, or whose calls are not a batch of the executor is refused (-32602), with nothing to approve', async () => {
    const { page, frame, organizationId, account } = await openConsent()
    const v07 = '0x0000000071727De22E5E9d8BAf0edAc6f37da032'
    const cases: [string, ReturnType<typeof request>, string][] = [
      [
        'ep-1',
        request(organizationId, account, userOperation(account), v07),
        `The UserOperation is for the EntryPoint at ${v07}, not for EntryPoint v0.8 at ${ENTRY_POINT}`,
      ],
      [
        'sender-1',
        request(organizationId, account, userOperation(recipient)),
        `The UserOperation is sent from ${recipient}, not from this wallet's account ${account}`,
      ],
      [
        'calls-1',
        request(organizationId, account, userOperation(account, { callData: transfer })),
        "The UserOperation's callData is not the batch executor's execute of a batch of calls",
      ],
    ]
    for (const [requestId, value, reason] of cases) {
      await ask(page, requestId, value)
      expect(await answer(page)).toEqual({ type: 'ERROR', value: { code: -32602, message: reason }, requestId })
      expect(await frame.getByRole('alert').textContent()).toBe(`${reason}.`)
      expect(await frame.getByRole('button', { name: 'Approve' }).isHidden()).toBe(true)
      await frame.getByRole('button', { name: 'Reject' }).press('Enter')
      await frame.getByRole('dialog').waitFor({ state: 'hidden' })
    }
    await page.close()
  })
})
