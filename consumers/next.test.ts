import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type AnvilInstance, anvil, getFreePort } from '@latchkey/devnet'
import type { Browser } from 'playwright-core'
import { createPublicClient, type Hex, http } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, expect, inject, test } from 'vitest'
import { runInstalledBin, startInstalledBin } from './harness/bins.js'
import { launchBrowser, openPage } from './harness/browser.js'
import { appsDir } from './harness/install.js'
import type { StartedProcess } from './harness/process.js'
import { readmeExampleOnDevChain } from './harness/readme.js'
import { installTestWallet, testWalletInfo } from './harness/testWallet.js'

const dir = inject('consumers')
const connectButtonHtml = '<button type="button" class="lk-button">Connect Wallet</button>'
let chain: AnvilInstance
let browser: Browser
let server: { url: string; process: StartedProcess } | undefined

beforeAll(async () => {
  chain = anvil({ port: await getFreePort(), chainId: 31337 })
  ;[browser] = await Promise.all([launchBrowser(), chain.start()])
})
afterAll(async () => {
  await server?.process.stop()
  await browser?.close()
  await chain?.stop()
})

/** `next start` on the built app, started once for the tests that need it. */
async function started() {
  if (server) return server.url
  const port = await getFreePort()
  const started = await startInstalledBin({
    dir,
    name: 'next',
    args: ['start', '--hostname', '127.0.0.1', '--port', String(port)],
    cwd: 'next',
    env: { NEXT_TELEMETRY_DISABLED: '1' },
    ready: /Ready in/,
  })
  server = { url: `http://127.0.0.1:${port}/`, process: started }
  return server.url
}

test('default: the client component is the README integration example with its "use client" line', async () => {
  expect(await readFile(join(appsDir, 'next/app/App.tsx'), 'utf8')).toBe(`'use client'\n${await readmeExampleOnDevChain()}`)
})

test('behavior: next build passes (App Router, strict TypeScript)', async () => {
  const build = await runInstalledBin({
    dir,
    name: 'next',
    args: ['build'],
    cwd: 'next',
    env: { NEXT_PUBLIC_RPC_URL: chain.url, NEXT_TELEMETRY_DISABLED: '1' },
  })
  expect(build.code, build.output).toBe(0)
})

test('behavior: next start serves the connect button in the server-rendered HTML', async () => {
  const response = await fetch(await started())
  expect(response.status).toBe(200)
  expect(await response.text()).toContain(connectButtonHtml)
})

test('behavior: the page hydrates without a console error or hydration warning, then connects the EIP-6963 wallet and signs', async () => {
  const url = await started()
  const { page, consoleMessages, close } = await openPage(browser)
  try {
    const account = privateKeyToAccount(generatePrivateKey())
    const wallet = await installTestWallet(page, { account, chainId: chain.chainId, rpcUrl: chain.url })
    await page.goto(url)
    await page.getByRole('status').filter({ hasText: 'Hydrated' }).waitFor()

    // Latchkey's stylesheet reached the page with the button: its accent colour, not the browser's grey.
    expect(await page.getByRole('button', { name: 'Connect Wallet' }).evaluate((button) => getComputedStyle(button).backgroundColor)).toBe('rgb(91, 76, 240)')
    await page.getByRole('button', { name: 'Connect Wallet' }).click()
    await page.getByRole('dialog', { name: 'Connect a wallet' }).getByRole('button', { name: testWalletInfo.name, exact: true }).click()
    await page.getByText(account.address, { exact: true }).waitFor()
    expect(wallet.isConnected).toBe(true)

    await page.getByRole('button', { name: 'Sign', exact: true }).click()
    const signature = (await page.getByText(/^Signed: 0x/).textContent())!.slice('Signed: '.length) as Hex
    const publicClient = createPublicClient({ transport: http(chain.url) })
    expect(await publicClient.verifyMessage({ address: account.address, message: 'gm', signature })).toBe(true)

    expect(consoleMessages).toEqual([])
  } finally {
    await close()
  }
})
