import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import type { Cacao } from '@latchkey/walletconnect'
import { createCacao, formatAuthMessage, populateAuthPayload } from '@latchkey/walletconnect/cacao'
import { Web3Wallet } from '@walletconnect/web3wallet'
import type { Page } from 'playwright-core'
import { privateKeyToAccount } from 'viem/accounts'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { anvilKeys } from '../test/chains.js'
import { launch } from './browser.js'
import { demo, referenceWallet, waitForText } from './page.js'

// One-click sign-in in the demo ("Connect and sign in", WalletConnect): one approval in the wallet
// connects and signs in at our backend. The wallet is the official web3wallet 1.16.1 (Node, this
// process) or the reference wallet (a page in the same Chromium).

const stack = inject('stack')
const backend = stack.server.replace('127.0.0.1', 'localhost')
// The reference wallet signs with anvil's test key #1.
const WALLET_ADDRESS = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'

let browser: Awaited<ReturnType<typeof launch>>
const closers: (() => Promise<unknown>)[] = []
beforeEach(async () => {
  browser = await launch()
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'])
})
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
  await browser.close()
})

function backendSession(page: Page): Promise<Record<string, unknown> | null> {
  return page.evaluate(async (url) => (await fetch(`${url}/auth/session`, { credentials: 'include' })).json(), backend)
}

/** "Connect and sign in" → WalletConnect → "Copy link": the URI a phone would scan. */
async function oneClickUri(page: Page): Promise<string> {
  const ui = demo(page)
  await page.goto(stack.demo)
  await ui.button('Connect and sign in').click()
  await ui.wallet('WalletConnect').click()
  await page.getByRole('img', { name: 'QR code for WalletConnect' }).waitFor()
  await ui.button('Copy link').click()
  await ui.button('Copied').waitFor()
  const uri = await page.evaluate(() => navigator.clipboard.readText())
  expect(uri).toMatch(/&methods=wc_sessionAuthenticate$/)
  return uri
}

describe('one-click sign-in', () => {
  test('default: the official web3wallet answers session_authenticate; the demo is connected and signed in at the backend', async () => {
    const signer = privateKeyToAccount(anvilKeys[3]!)
    const nested = createRequire(createRequire(import.meta.url).resolve('@walletconnect/web3wallet')).resolve('@walletconnect/core')
    const { Core } = (await import(pathToFileURL(nested).href)) as typeof import('@walletconnect/core')
    const core = new Core({ projectId: 'local', relayUrl: stack.relay, customStoragePrefix: `e2e-w3w-${Math.random()}`, logger: 'silent' })
    const wallet = await Web3Wallet.init({ core: core as never, metadata: { name: 'web3wallet', description: 'official', url: 'http://w3w.test', icons: [] } })
    closers.push(() => wallet.core.relayer.transportClose().catch(() => undefined))
    const asked: string[] = []
    wallet.on('session_proposal', () => asked.push('session_proposal'))
    wallet.on('session_request', () => asked.push('session_request'))
    wallet.on('session_authenticate', async ({ id, params }) => {
      asked.push('session_authenticate')
      const payload = populateAuthPayload({ authPayload: params.authPayload as never, chains: ['eip155:31337'], methods: ['personal_sign'] })
      const iss = `did:pkh:eip155:31337:${signer.address}`
      const auths: Cacao[] = [
        createCacao({ payload, iss, signature: { t: 'eip191', s: await signer.signMessage({ message: formatAuthMessage({ payload, iss }) }) } }),
      ]
      await wallet.approveSessionAuthenticate({ id, auths: auths as never })
    })
    const { page } = browser
    await wallet.pair({ uri: await oneClickUri(page) })
    expect(await waitForText(page.getByRole('status', { name: 'Session' }), signer.address)).toBe(signer.address)
    expect(await waitForText(demo(page).address, signer.address)).toBe(signer.address)
    expect(await backendSession(page)).toMatchObject({ address: signer.address, kind: 'siwe', chainId: 31337, walletKind: 'walletConnect' })
    expect(asked).toEqual(['session_authenticate'])
  })

  test('behavior: the reference wallet shows the SIWE message per chain; "Approve" connects and signs in', async () => {
    const { page } = browser
    const walletPage = await browser.context.newPage()
    const wallet = referenceWallet(walletPage)
    await walletPage.goto(stack.wallet)
    await wallet.pair(await oneClickUri(page))
    const card = walletPage.getByRole('article', { name: 'Sign-in request from Latchkey Demo' })
    for (const chain of ['eip155:31337', 'eip155:31338'])
      await card
        .getByRole('figure', { name: `Sign-in message for ${chain}` })
        .getByText(`wants you to sign in with your Ethereum account:\n${WALLET_ADDRESS}`)
        .waitFor()
    await card.getByRole('button', { name: 'Approve' }).click()
    expect(await waitForText(page.getByRole('status', { name: 'Session' }), WALLET_ADDRESS)).toBe(WALLET_ADDRESS)
    expect(await backendSession(page)).toMatchObject({ address: WALLET_ADDRESS, walletKind: 'walletConnect' })
    await wallet.session('Latchkey Demo').waitFor()
  })
})
