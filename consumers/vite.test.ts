import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type AnvilInstance, anvil, getFreePort } from '@latchkey/devnet'
import type { Browser } from 'playwright-core'
import { createPublicClient, type Hex, http, toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, expect, inject, test } from 'vitest'
import { runInstalledBin, startInstalledBin } from './harness/bins.js'
import { launchBrowser, openPage } from './harness/browser.js'
import { appsDir } from './harness/install.js'
import { readmeExampleOnDevChain } from './harness/readme.js'
import { installTestWallet, testWalletInfo } from './harness/testWallet.js'

const dir = inject('consumers')
let chain: AnvilInstance
let browser: Browser

beforeAll(async () => {
  chain = anvil({ port: await getFreePort(), chainId: 31337 })
  ;[browser] = await Promise.all([launchBrowser(), chain.start()])
})
afterAll(async () => {
  await browser?.close()
  await chain?.stop()
})

test('default: the app is the README integration example, with the local chain in place of mainnet and base', async () => {
  expect(await readFile(join(appsDir, 'vite/src/App.tsx'), 'utf8')).toBe(await readmeExampleOnDevChain())
})

test('behavior: strict tsc --noEmit passes', async () => {
  const tsc = await runInstalledBin({ dir, name: 'tsc', args: ['--noEmit', '-p', 'tsconfig.json'], cwd: 'vite' })
  expect(tsc.code, tsc.output).toBe(0)
})

test('behavior: vite build passes', async () => {
  const build = await runInstalledBin({ dir, name: 'vite', args: ['build'], cwd: 'vite', env: { VITE_RPC_URL: chain.url } })
  expect(build.code, build.output).toBe(0)
  expect(await readFile(join(dir, 'vite/dist/index.html'), 'utf8')).toContain('<div id="root"></div>')
})

test('behavior: in Chromium it connects an EIP-6963 wallet and signs a message that viem verifies; a refusal shows as an alert', async () => {
  const port = await getFreePort()
  const preview = await startInstalledBin({
    dir,
    name: 'vite',
    args: ['preview', '--host', '127.0.0.1', '--port', String(port), '--strictPort'],
    cwd: 'vite',
    ready: /Local:/,
  })
  const { page, consoleMessages, close } = await openPage(browser)
  try {
    const account = privateKeyToAccount(generatePrivateKey())
    const wallet = await installTestWallet(page, { account, chainId: chain.chainId, rpcUrl: chain.url })
    await page.goto(`http://127.0.0.1:${port}/`)

    // Latchkey's stylesheet reached the page with the button: its accent colour, not the browser's grey.
    expect(await page.getByRole('button', { name: 'Connect Wallet' }).evaluate((button) => getComputedStyle(button).backgroundColor)).toBe('rgb(91, 76, 240)')
    await page.getByRole('button', { name: 'Connect Wallet' }).click()
    await page.getByRole('dialog', { name: 'Connect a wallet' }).getByRole('button', { name: testWalletInfo.name, exact: true }).click()
    await page.getByText(account.address, { exact: true }).waitFor()
    await page.getByRole('button', { name: `Account ${account.address.slice(0, 6)}…${account.address.slice(-4)}` }).waitFor()
    expect(wallet.isConnected).toBe(true)

    wallet.rejectNextSignature()
    await page.getByRole('button', { name: 'Sign', exact: true }).click()
    expect(await page.getByRole('alert').textContent()).toBe('User rejected the request.')

    await page.getByRole('button', { name: 'Sign', exact: true }).click()
    const signed = (await page.getByText(/^Signed: 0x/).textContent())!
    const signature = signed.slice('Signed: '.length) as Hex
    expect(await page.getByRole('alert').count()).toBe(0)
    expect(wallet.requests.filter((request) => request.method === 'personal_sign').map((request) => request.params)).toEqual([
      [toHex('gm'), account.address],
      [toHex('gm'), account.address],
    ])
    const publicClient = createPublicClient({ transport: http(chain.url) })
    expect(await publicClient.verifyMessage({ address: account.address, message: 'gm', signature })).toBe(true)

    // The refusal is the one thing the console may say: the SPEC's warning for a user's denial.
    expect(consoleMessages).toEqual(['warning: [latchkey] signMessage: User rejected the request.'])
  } finally {
    await close()
    await preview.stop()
  }
})
