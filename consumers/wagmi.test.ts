import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { type AnvilInstance, anvil, getFreePort } from '@latchkey/devnet'
import type { Browser, Page } from 'playwright-core'
import { type Address, createPublicClient, type Hex, http, type PublicClient, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { referenceWallet } from '../e2e/page.js'
import { runInstalledBin, startInstalledBin } from './harness/bins.js'
import { launchBrowser, openPage } from './harness/browser.js'
import { installWagmi2, prepareWagmiApp } from './harness/install.js'
import { run, runOrThrow, type StartedProcess } from './harness/process.js'
import { type LatchkeyServices, startLatchkeyServices } from './harness/services.js'
import { installTestWallet, testWalletInfo } from './harness/testWallet.js'

// The same Vite app (apps/wagmi) on wagmi 3 (the shared install) and on wagmi 2 (its own install).
// wagmi's hooks drive each Latchkey wallet kind: a browser wallet (EIP-6963), WalletConnect paired
// with the reference wallet through our relay, and the embedded wallet signed up by email (our
// kms and backend); Latchkey's modal connects them; after every step wagmi's useAccount and
// Latchkey's ConnectButton and account modal say the same.

const dir = inject('consumers')
const recipient = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'
// The reference wallet signs with anvil's test key #1.
const referenceAddress = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const dappName = 'Latchkey consumer: wagmi'
const onA = { chainId: 31337, chainName: 'Anvil A' }
const onB = { chainId: 31338, chainName: 'Anvil B' }
let chainA: AnvilInstance
let chainB: AnvilInstance
let clientA: PublicClient
let browser: Browser
let wagmi2: Promise<string>
let services: Promise<LatchkeyServices>
/** Ports known before anything starts: the apps are built with the relay's and backend's URLs, the backend allows the apps' origins. */
const ports = { relay: 0, server: 0, wagmi3: 0, wagmi2: 0 }

beforeAll(async () => {
  chainA = anvil({ port: await getFreePort(), chainId: 31337 })
  chainB = anvil({ port: await getFreePort(), chainId: 31338 })
  for (const name of Object.keys(ports) as (keyof typeof ports)[]) ports[name] = await getFreePort()
  // The wagmi 2 install downloads while the wagmi 3 app builds and runs.
  wagmi2 = installWagmi2(dir)
  wagmi2.catch(() => undefined)
  ;[browser] = await Promise.all([launchBrowser(), chainA.start(), chainB.start()])
  clientA = createPublicClient({ transport: http(chainA.url) })
  // The relay, kms and backend wait for the SQLite compile: they start beside the first app's build and browser-wallet run.
  services = startLatchkeyServices({
    dir,
    ports: { relay: ports.relay, server: ports.server },
    chains: [
      { id: 31337, rpcUrl: chainA.url },
      { id: 31338, rpcUrl: chainB.url },
    ],
    allowedOrigins: [`http://127.0.0.1:${ports.wagmi3}`, `http://127.0.0.1:${ports.wagmi2}`],
  })
  services.catch(() => undefined)
})
afterAll(async () => {
  await browser?.close()
  await (await services.catch(() => undefined))?.stop()
  await chainA?.stop()
  await chainB?.stop()
})

const shortAddress = (address: Address) => `${address.slice(0, 6)}…${address.slice(-4)}`
type Expected = { address: Address; chainId: number; chainName: string }

/** wagmi's useAccount and Latchkey's button and account modal, read until they show `expected` (or no connection). */
async function agree(page: Page, expected: Expected | undefined) {
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

async function waitForHex(page: Page, testId: string): Promise<Hex> {
  const output = page.getByTestId(testId)
  await expect.poll(() => output.textContent(), { timeout: 15_000 }).toMatch(/^0x[0-9a-f]+$/)
  return (await output.textContent()) as Hex
}

async function fund(address: Address) {
  for (const url of [chainA.url, chainB.url])
    await createPublicClient({ transport: http(url) }).request({ method: 'anvil_setBalance' as never, params: [address, '0xde0b6b3a7640000'] as never })
}

/** What the app backend says of the page's sign-in session (its cookie). */
async function backendSession(page: Page): Promise<Record<string, unknown> | null> {
  const { server } = await services
  return page.evaluate(async (url) => (await fetch(`${url}/auth/session`, { credentials: 'include' })).json(), server)
}

/**
 * A wallet's side of each step: nothing for wallets that answer by themselves, the reference
 * wallet's Approve for WalletConnect (checked to show what the app asked for).
 */
type Approve = (method: string) => Promise<void>
const automatic: Approve = async () => {}

/** The embedded wallet's side: its user's Approve in the kms's consent frame, on the dialog the method opens. */
const inConsentFrame =
  (page: Page): Approve =>
  async (method) => {
    const titles: Record<string, string> = {
      personal_sign: 'Sign a message',
      eth_signTypedData_v4: 'Sign typed data',
      eth_sendTransaction: 'Send a transaction',
    }
    const frame = page.frameLocator('iframe[id^="latchkey-consent-frame-"]')
    const dialog = frame.getByRole('dialog', { name: titles[method] ?? method })
    await dialog.waitFor()
    await frame.locator('#approve').scrollIntoViewIfNeeded()
    await frame.locator('#approve:not([disabled])').waitFor()
    await frame.getByRole('button', { name: 'Approve', exact: true }).focus()
    await page.keyboard.press('Enter')
    await dialog.waitFor({ state: 'hidden' })
  }

/**
 * wagmi's hooks on a connected `account`: a message and typed data (viem verifies both), a
 * transaction (its receipt checked on the chain), `useSwitchChain` to chain B and Latchkey's
 * account modal back to A, and ethers v6's BrowserProvider over the connector's EIP-1193
 * provider signing and sending. Both sides agree after each.
 */
async function wagmiHooks(page: Page, address: Address, approve: Approve) {
  await page.getByRole('button', { name: 'wagmi sign message' }).click()
  await approve('personal_sign')
  const signature = await waitForHex(page, 'message signature')
  expect(await clientA.verifyMessage({ address, message: 'gm', signature })).toBe(true)

  await page.getByRole('button', { name: 'wagmi sign typed data' }).click()
  await approve('eth_signTypedData_v4')
  const typedSignature = await waitForHex(page, 'typed data signature')
  expect(
    await clientA.verifyTypedData({
      address,
      domain: { name: 'Consumer', version: '1', chainId: 31337 },
      types: { Note: [{ name: 'text', type: 'string' }] },
      primaryType: 'Note',
      message: { text: 'gm' },
      signature: typedSignature,
    }),
  ).toBe(true)

  await page.getByRole('button', { name: 'wagmi send transaction' }).click()
  await approve('eth_sendTransaction')
  const hash = await waitForHex(page, 'transaction hash')
  const receipt = await clientA.waitForTransactionReceipt({ hash })
  expect({ status: receipt.status, from: receipt.from, to: receipt.to }).toEqual({
    status: 'success',
    from: address.toLowerCase(),
    to: recipient.toLowerCase(),
  })

  // wagmi switches the chain, Latchkey's modal switches it back: each shows in the other.
  await page.getByRole('button', { name: 'wagmi switch chain' }).click()
  await agree(page, { address, ...onB })
  await page.getByRole('button', { name: `Account ${shortAddress(address)}` }).click()
  await page.getByRole('dialog', { name: 'Account' }).getByRole('button', { name: 'Anvil A (31337)' }).click()
  await page.getByRole('dialog', { name: 'Account' }).getByRole('button', { name: 'Anvil A (31337)', pressed: true }).waitFor()
  await page.keyboard.press('Escape')
  await agree(page, { address, ...onA })

  await ethersSignsAndSends(page, address, approve)
}

/** ethers v6 BrowserProvider over the connector's EIP-1193 provider, beside wagmi; viem verifies. */
async function ethersSignsAndSends(page: Page, address: Address, approve: Approve) {
  const result = page.getByTestId('ethers result')
  const before = await result.textContent()
  await page.getByRole('button', { name: 'ethers sign and send' }).click()
  await approve('personal_sign')
  await approve('eth_sendTransaction')
  // A second run in the same page: wait for its own result, not the one before.
  await expect
    .poll(async () => ((await result.textContent()) === before ? 'the earlier result' : result.textContent()), { timeout: 15_000 })
    .toMatch(/^0x[0-9a-f]{130} 0x[0-9a-f]{64}$/)
  const [signature, hash] = (await result.textContent())!.split(' ') as [Hex, Hex]
  expect(await clientA.verifyMessage({ address, message: 'ethers gm', signature })).toBe(true)
  const receipt = await clientA.waitForTransactionReceipt({ hash })
  expect({ status: receipt.status, from: receipt.from, value: (await clientA.getTransaction({ hash })).value }).toEqual({
    status: 'success',
    from: address.toLowerCase(),
    value: parseEther('0.001'),
  })
}

/** Builds the app (`cwd` inside `installDir`) against the test's chains and services and serves it with `vite preview`. */
async function serveApp(installDir: string, cwd: string, port: number): Promise<StartedProcess> {
  const build = await runInstalledBin({
    dir: installDir,
    name: 'vite',
    args: ['build'],
    cwd,
    env: {
      VITE_RPC_URL: chainA.url,
      VITE_RPC_URL_B: chainB.url,
      VITE_RELAY_URL: `ws://127.0.0.1:${ports.relay}`,
      VITE_BACKEND_URL: `http://127.0.0.1:${ports.server}`,
    },
  })
  expect(build.code, build.output).toBe(0)
  return startInstalledBin({
    dir: installDir,
    cwd,
    name: 'vite',
    args: ['preview', '--host', '127.0.0.1', '--port', String(port), '--strictPort'],
    ready: /Local:/,
  })
}

/** Runs `steps` in a fresh page of the app (nothing stored), expecting no console error or warning at the end. */
async function inPage(steps: (page: Page) => Promise<void>) {
  const { page, consoleMessages, close } = await openPage(browser)
  try {
    await steps(page)
    expect(consoleMessages).toEqual([])
  } finally {
    await close()
  }
}

async function browserWallet(page: Page, url: string) {
  const first = privateKeyToAccount(generatePrivateKey())
  const second = privateKeyToAccount(generatePrivateKey())
  await fund(first.address)
  await fund(second.address)
  const wallet = await installTestWallet(page, { account: first, chainId: 31337, rpcUrl: chainA.url, otherChains: [{ chainId: 31338, rpcUrl: chainB.url }] })
  await page.goto(url)
  await agree(page, undefined)

  // A browser wallet, found by wagmi's EIP-6963 discovery, picked in Latchkey's modal.
  await page.getByRole('button', { name: 'Connect Wallet', exact: true }).click()
  await page.getByRole('dialog', { name: 'Connect a wallet' }).getByRole('button', { name: testWalletInfo.name, exact: true }).click()
  await agree(page, { address: first.address, ...onA })
  await wagmiHooks(page, first.address, automatic)

  // The user picks another account in the wallet.
  await wallet.switchAccount(second)
  await agree(page, { address: second.address, ...onA })
  await ethersSignsAndSends(page, second.address, automatic)

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
}

async function walletConnect(page: Page, url: string) {
  const { wallet: walletUrl } = await services
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'])
  const walletPage = await page.context().newPage()
  const wallet = referenceWallet(walletPage)
  await walletPage.goto(walletUrl)
  await wallet.address.filter({ hasText: referenceAddress }).waitFor()
  const approve: Approve = (method) => wallet.answer(method, true)

  // <ConnectButton requireSignIn />: WalletConnect in Latchkey's modal, one approval in the wallet
  // (wc_sessionAuthenticate through the bridge) connects wagmi and signs in at the backend.
  await page.goto(`${url}?requireSignIn`)
  await agree(page, undefined)
  await page.getByRole('button', { name: 'Connect Wallet', exact: true }).click()
  await page.getByRole('dialog', { name: 'Connect a wallet' }).getByRole('button', { name: 'WalletConnect', exact: true }).click()
  await page.getByRole('img', { name: 'QR code for WalletConnect' }).waitFor()
  await page.getByRole('button', { name: 'Copy link', exact: true }).click()
  await page.getByRole('button', { name: 'Copied', exact: true }).waitFor()
  const oneClickUri = await page.evaluate(() => navigator.clipboard.readText())
  expect(oneClickUri).toMatch(/&methods=wc_sessionAuthenticate$/)
  await wallet.pair(oneClickUri)
  const card = walletPage.getByRole('article', { name: `Sign-in request from ${dappName}` })
  await card.getByRole('figure', { name: 'Sign-in message for eip155:31337' }).getByText(referenceAddress).waitFor()
  await card.getByRole('button', { name: 'Approve' }).click()
  await agree(page, { address: referenceAddress, ...onA })
  await expect.poll(() => page.getByTestId('sign-in').textContent()).toBe(`signedIn ${referenceAddress}`)
  expect(await backendSession(page)).toMatchObject({ address: referenceAddress, walletKind: 'walletConnect' })
  await wallet.session(dappName).waitFor()

  await wagmiHooks(page, referenceAddress, approve)

  // The wallet changes network: wagmi and the modal follow.
  await wallet.network.selectOption({ label: 'Anvil B (31338)' })
  await agree(page, { address: referenceAddress, ...onB })
  await page.getByRole('button', { name: 'wagmi switch chain' }).click()
  await agree(page, { address: referenceAddress, ...onA })

  // A reload restores the session through wagmi's reconnect, and the sign-in from the backend.
  await page.reload()
  await agree(page, { address: referenceAddress, ...onA })
  await expect.poll(() => page.getByTestId('sign-in').textContent()).toBe(`signedIn ${referenceAddress}`)

  // wagmi disconnects: the wallet's session ends.
  await page.getByRole('button', { name: 'wagmi disconnect' }).click()
  await agree(page, undefined)
  await walletPage.getByText('No dapp is connected.', { exact: true }).waitFor()

  // wagmi's useConnect pairs: the URI arrives as wagmi's own connector sends it (display_uri).
  await page.goto(url)
  await page.getByRole('button', { name: 'wagmi connect WalletConnect' }).click()
  const uri = page.getByTestId('pairing uri')
  await expect.poll(() => uri.textContent(), { timeout: 15_000 }).toMatch(/^wc:[0-9a-f]{64}@2\?/)
  await wallet.pair((await uri.textContent())!)
  await wallet.proposal
    .filter({ hasText: `${dappName} wants to connect` })
    .getByRole('button', { name: 'Approve' })
    .click()
  await agree(page, { address: referenceAddress, ...onA })

  // useSignIn: Sign-In with Ethereum through the wallet's personal_sign, at the backend.
  await page.getByRole('button', { name: 'latchkey sign in' }).click()
  await wallet.request('personal_sign').getByLabel('Message').filter({ hasText: 'wants you to sign in with your Ethereum account' }).waitFor()
  await approve('personal_sign')
  await expect.poll(() => page.getByTestId('sign-in').textContent()).toBe(`signedIn ${referenceAddress}`)
  expect(await backendSession(page)).toMatchObject({ address: referenceAddress })

  // Latchkey's modal disconnects: wagmi hears it, the wallet's session ends.
  await page.getByRole('button', { name: `Account ${shortAddress(referenceAddress)}` }).click()
  await page.getByRole('dialog', { name: 'Account' }).getByRole('button', { name: 'Disconnect' }).click()
  await agree(page, undefined)
  await walletPage.getByText('No dapp is connected.', { exact: true }).waitFor()
}

let people = 0
async function embeddedWallet(page: Page, url: string) {
  const { lastMail } = await services
  const email = `wagmi${++people}.${Date.now()}@example.test`
  await page.goto(url)
  await agree(page, undefined)

  // Email sign-up in Latchkey's modal, the code read from the kms's dev inbox and typed into the
  // consent frame's own dialog (never the app page), by keyboard.
  const modal = page.getByRole('dialog', { name: /Connect a wallet|Sign in/ })
  await page.getByRole('button', { name: 'Connect Wallet', exact: true }).click()
  await modal.getByRole('button', { name: 'Continue with email', exact: true }).click()
  await modal.getByRole('textbox', { name: 'Email' }).fill(email)
  await modal.getByRole('button', { name: 'Continue', exact: true }).click()
  const codeDialog = page.frameLocator('iframe[id^="latchkey-consent-frame-"]').getByRole('dialog', { name: 'Enter your sign-in code' })
  await codeDialog.waitFor()
  const code = /code is (\d{6})/.exec((await lastMail(email)).text)![1]!
  await codeDialog.getByRole('textbox', { name: 'Sign-in code' }).focus()
  await page.keyboard.type(code)
  await page.keyboard.press('Enter')
  await modal.waitFor({ state: 'detached' })
  await expect.poll(() => page.getByTestId('wagmi account').textContent(), { timeout: 15_000 }).toMatch(/^connected 0x[0-9a-fA-F]{40} 31337$/)
  const address = (await page.getByTestId('wagmi account').textContent())!.split(' ')[1] as Address
  await agree(page, { address, ...onA })
  await fund(address)

  await wagmiHooks(page, address, inConsentFrame(page))

  // A reload restores the wallet through wagmi's reconnect.
  await page.reload()
  await agree(page, { address, ...onA })

  // wagmi disconnects.
  await page.getByRole('button', { name: 'wagmi disconnect' }).click()
  await agree(page, undefined)
}

/** The three wallet kinds on the app built in `installDir`/`cwd`, served on `port`. */
function journeys(app: () => Promise<{ installDir: string; cwd: string }>, port: () => number) {
  let preview: StartedProcess
  let url: string
  beforeAll(async () => {
    const { installDir, cwd } = await app()
    preview = await serveApp(installDir, cwd, port())
    url = `http://127.0.0.1:${port()}/`
    // The services wait for the SQLite compile: up to a few minutes on a busy 2-core machine.
    await services
  }, 600_000)
  afterAll(async () => {
    await preview?.stop()
  })

  test('default: wagmi hooks and Latchkey modal drive a browser wallet and agree at every step; ethers signs and sends over it', async () => {
    await inPage((page) => browserWallet(page, url))
  })
  test('default: WalletConnect with the reference wallet through our relay: one-click sign-in (requireSignIn), wagmi hooks, ethers, display_uri, useSignIn', async () => {
    await inPage((page) => walletConnect(page, url))
  })
  test('default: the embedded wallet signed up by email: wagmi hooks, ethers, reload, disconnect', async () => {
    await inPage((page) => embeddedWallet(page, url))
  })
}

describe('wagmi 3', () => {
  journeys(
    async () => ({ installDir: dir, cwd: 'wagmi' }),
    () => ports.wagmi3,
  )
})

describe('wagmi 2', () => {
  journeys(
    async () => {
      const app = await wagmi2
      const manifest = await import(join(app, 'node_modules/wagmi/package.json'), { with: { type: 'json' } })
      expect(manifest.default.version).toMatch(/^2\./)
      return { installDir: app, cwd: '.' }
    },
    () => ports.wagmi2,
  )
})

test("behavior: ethers v6 BrowserProvider over Latchkey's dev wallet, in plain Node, signs and sends; viem verifies", async () => {
  const privateKey = generatePrivateKey()
  const account = privateKeyToAccount(privateKey)
  await fund(account.address)
  const printed = JSON.parse(await runOrThrow(process.execPath, ['ethersDevWallet.mjs', chainA.url, privateKey, recipient], { cwd: join(dir, 'node') })) as {
    address: Address
    signature: Hex
    hash: Hex
  }
  expect(printed.address).toBe(account.address)
  expect(await clientA.verifyMessage({ address: account.address, message: 'ethers gm', signature: printed.signature })).toBe(true)
  const receipt = await clientA.waitForTransactionReceipt({ hash: printed.hash })
  expect({ status: receipt.status, from: receipt.from, to: receipt.to }).toEqual({
    status: 'success',
    from: account.address.toLowerCase(),
    to: recipient.toLowerCase(),
  })
})

test('error: npm refuses @latchkey/wagmi beside wagmi 1 (outside its peer range) with ERESOLVE, and installs nothing', async () => {
  const app = await prepareWagmiApp(dir, 'wagmi1', '^1')
  const refused = await run('npm', ['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app })
  expect(refused.code).not.toBe(0)
  expect(refused.output).toContain('code ERESOLVE')
  expect(refused.output).toMatch(/peer wagmi@"?>=2 <4"? from @latchkey\/wagmi@/)
  expect(existsSync(join(app, 'node_modules'))).toBe(false)
})
