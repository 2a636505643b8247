import { join } from 'node:path'
import { type AnvilInstance, anvil, getFreePort } from '@latchkey/devnet'
import type { Browser, Page } from 'playwright-core'
import { type Address, createPublicClient, type Hex, http, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { runInstalledBin, startInstalledBin } from './harness/bins.js'
import { launchBrowser, openPage } from './harness/browser.js'
import { installWagmi2 } from './harness/install.js'
import { installTestWallet, testWalletInfo } from './harness/testWallet.js'

// The same Vite app (apps/wagmi) on wagmi 3 (the shared install) and on wagmi 2 (its own install):
// wagmi's hooks drive the wallet, Latchkey's modal connects it, and after every step wagmi's
// useAccount and Latchkey's ConnectButton and account modal say the same.

const dir = inject('consumers')
const recipient = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'
let chainA: AnvilInstance
let chainB: AnvilInstance
let browser: Browser
let wagmi2: Promise<string>

beforeAll(async () => {
  chainA = anvil({ port: await getFreePort(), chainId: 31337 })
  chainB = anvil({ port: await getFreePort(), chainId: 31338 })
  // The wagmi 2 install downloads while the wagmi 3 app builds and runs.
  wagmi2 = installWagmi2(dir)
  wagmi2.catch(() => undefined)
  ;[browser] = await Promise.all([launchBrowser(), chainA.start(), chainB.start()])
})
afterAll(async () => {
  await browser?.close()
  await chainA?.stop()
  await chainB?.stop()
})

const shortAddress = (address: Address) => `${address.slice(0, 6)}…${address.slice(-4)}`

/** wagmi's useAccount and Latchkey's button and account modal, read until they show `expected` (or no connection). */
async function agree(page: Page, expected: { address: Address; chainId: number; chainName: string } | undefined) {
  const wagmiAccount = page.getByTestId('wagmi account')
  await expect
    .poll(() => wagmiAccount.textContent(), { timeout: 15_000 })
    .toBe(expected ? `connected ${expected.address} ${expected.chainId}` : 'disconnected - -')
  if (!expected) return void (await page.getByRole('button', { name: 'Connect Wallet', exact: true }).waitFor())
  await page.getByRole('button', { name: `Account ${shortAddress(expected.address)}` }).click()
  const modal = page.getByRole('dialog', { name: 'Account' })
  expect(await modal.locator('.lk-address').textContent()).toBe(expected.address)
  expect(await modal.getByRole('button', { pressed: true }).textContent()).toBe(`${expected.chainName} (${expected.chainId})`)
  await page.keyboard.press('Escape')
  await modal.waitFor({ state: 'detached' })
}

async function journey(installDir: string, cwd: string) {
  const build = await runInstalledBin({
    dir: installDir,
    name: 'vite',
    args: ['build'],
    cwd,
    env: { VITE_RPC_URL: chainA.url, VITE_RPC_URL_B: chainB.url, VITE_RELAY_URL: 'ws://127.0.0.1:9', VITE_BACKEND_URL: 'http://127.0.0.1:9' },
  })
  expect(build.code, build.output).toBe(0)
  const port = await getFreePort()
  const preview = await startInstalledBin({
    dir: installDir,
    cwd,
    name: 'vite',
    args: ['preview', '--host', '127.0.0.1', '--port', String(port), '--strictPort'],
    ready: /Local:/,
  })
  const { page, consoleMessages, close } = await openPage(browser)
  try {
    const first = privateKeyToAccount(generatePrivateKey())
    const second = privateKeyToAccount(generatePrivateKey())
    const clientA = createPublicClient({ transport: http(chainA.url) })
    const clientB = createPublicClient({ transport: http(chainB.url) })
    for (const client of [clientA, clientB])
      for (const account of [first, second])
        await client.request({ method: 'anvil_setBalance' as never, params: [account.address, '0xde0b6b3a7640000'] as never })
    const wallet = await installTestWallet(page, { account: first, chainId: 31337, rpcUrl: chainA.url, otherChains: [{ chainId: 31338, rpcUrl: chainB.url }] })
    const onA = { chainId: 31337, chainName: 'Anvil A' }
    const onB = { chainId: 31338, chainName: 'Anvil B' }
    await page.goto(`http://127.0.0.1:${port}/`)
    await agree(page, undefined)

    // A browser wallet, found by wagmi's EIP-6963 discovery, picked in Latchkey's modal.
    await page.getByRole('button', { name: 'Connect Wallet', exact: true }).click()
    await page.getByRole('dialog', { name: 'Connect a wallet' }).getByRole('button', { name: testWalletInfo.name, exact: true }).click()
    await agree(page, { address: first.address, ...onA })

    // wagmi's hooks sign and send through it.
    await page.getByRole('button', { name: 'wagmi sign message' }).click()
    const signature = (await waitForHex(page, 'message signature')) as Hex
    expect(await clientA.verifyMessage({ address: first.address, message: 'gm', signature })).toBe(true)
    await page.getByRole('button', { name: 'wagmi sign typed data' }).click()
    const typedSignature = (await waitForHex(page, 'typed data signature')) as Hex
    expect(
      await clientA.verifyTypedData({
        address: first.address,
        domain: { name: 'Consumer', version: '1', chainId: 31337 },
        types: { Note: [{ name: 'text', type: 'string' }] },
        primaryType: 'Note',
        message: { text: 'gm' },
        signature: typedSignature,
      }),
    ).toBe(true)
    await page.getByRole('button', { name: 'wagmi send transaction' }).click()
    const hash = (await waitForHex(page, 'transaction hash')) as Hex
    const receipt = await clientA.waitForTransactionReceipt({ hash })
    expect({ status: receipt.status, from: receipt.from, to: receipt.to }).toEqual({
      status: 'success',
      from: first.address.toLowerCase(),
      to: recipient.toLowerCase(),
    })

    // wagmi switches the chain, Latchkey's modal switches it back: each shows in the other.
    await page.getByRole('button', { name: 'wagmi switch chain' }).click()
    await agree(page, { address: first.address, ...onB })
    await page.getByRole('button', { name: `Account ${shortAddress(first.address)}` }).click()
    await page.getByRole('dialog', { name: 'Account' }).getByRole('button', { name: 'Anvil A (31337)' }).click()
    await page.getByRole('dialog', { name: 'Account' }).getByRole('button', { name: 'Anvil A (31337)', pressed: true }).waitFor()
    await page.keyboard.press('Escape')
    await agree(page, { address: first.address, ...onA })

    // The user picks another account in the wallet.
    await wallet.switchAccount(second)
    await agree(page, { address: second.address, ...onA })

    // ethers v6 over the same EIP-1193 provider.
    await page.getByRole('button', { name: 'ethers sign and send' }).click()
    await expect.poll(() => page.getByTestId('ethers result').textContent(), { timeout: 15_000 }).toMatch(/^0x[0-9a-f]{130} 0x[0-9a-f]{64}$/)
    const [ethersSignature, ethersHash] = (await page.getByTestId('ethers result').textContent())!.split(' ') as [Hex, Hex]
    expect(await clientA.verifyMessage({ address: second.address, message: 'ethers gm', signature: ethersSignature })).toBe(true)
    const ethersReceipt = await clientA.waitForTransactionReceipt({ hash: ethersHash })
    expect({ status: ethersReceipt.status, from: ethersReceipt.from, value: (await clientA.getTransaction({ hash: ethersHash })).value }).toEqual({
      status: 'success',
      from: second.address.toLowerCase(),
      value: parseEther('0.001'),
    })

    // wagmi disconnects; wagmi connects again; a reload restores through wagmi's reconnect.
    await page.getByRole('button', { name: 'wagmi disconnect' }).click()
    await agree(page, undefined)
    await page.getByRole('button', { name: `wagmi connect ${testWalletInfo.name}` }).click()
    await agree(page, { address: second.address, ...onA })
    await page.reload()
    await agree(page, { address: second.address, ...onA })

    // Latchkey's modal disconnects: wagmi hears it.
    await page.getByRole('button', { name: `Account ${shortAddress(second.address)}` }).click()
    await page.getByRole('dialog', { name: 'Account' }).getByRole('button', { name: 'Disconnect' }).click()
    await agree(page, undefined)

    expect(consoleMessages).toEqual([])
  } finally {
    await close()
    await preview.stop()
  }
}

async function waitForHex(page: Page, testId: string): Promise<string> {
  const output = page.getByTestId(testId)
  await expect.poll(() => output.textContent(), { timeout: 15_000 }).toMatch(/^0x[0-9a-f]+$/)
  return (await output.textContent())!
}

describe('wagmi consumer', () => {
  test('default: on wagmi 3, wagmi hooks and Latchkey modal drive a browser wallet and agree at every step; ethers signs and sends over it', async () => {
    await journey(dir, 'wagmi')
  })

  test('default: the same app on wagmi 2', async () => {
    const app = await wagmi2
    const manifest = await import(join(app, 'node_modules/wagmi/package.json'), { with: { type: 'json' } })
    expect(manifest.default.version).toMatch(/^2\./)
    await journey(app, '.')
  })
})
