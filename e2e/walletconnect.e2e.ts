import { buildApprovedNamespaces, createSignClient, type SignClient, type WebSocketConstructor } from '@latchkey/walletconnect'
import { createPublicClient, createWalletClient, defineChain, http, verifyMessage, verifyTypedData } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { WebSocket } from 'ws'
import { mailTypedData } from '../apps/demo/src/typedData.js'
import { anvilKeys } from '../test/chains.js'
import { launch } from './browser.js'
import { demo, waitForText } from './page.js'

// The demo pairs with a wallet over WalletConnect through our relay. The "phone" here is a wallet
// run in this Node process: our Sign client in the wallet role with an anvil key, signing with viem
// and sending to the stack's chain. The URI travels as a user would carry it: "Copy link".

const stack = inject('stack')
const account = privateKeyToAccount(anvilKeys[2]!)
const chains = {
  31337: defineChain({ id: 31337, name: 'Anvil A', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [stack.chainA] } } }),
  31338: defineChain({ id: 31338, name: 'Anvil B', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [stack.chainB] } } }),
} as const

let browser: Awaited<ReturnType<typeof launch>>
let wallet: SignClient
beforeEach(async () => {
  browser = await launch()
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'])
  wallet = await createSignClient({
    relayUrl: stack.relay,
    metadata: { name: 'Node Test Wallet', description: 'e2e', url: 'http://wallet.test', icons: [] },
    WebSocket: WebSocket as unknown as WebSocketConstructor,
  })
  wallet.events.on('session_proposal', ({ id, params }) => {
    const supported = ['eip155:31337', 'eip155:31338']
    const namespaces = buildApprovedNamespaces({
      proposal: params,
      supported: {
        eip155: {
          chains: supported,
          methods: ['personal_sign', 'eth_signTypedData_v4', 'eth_sendTransaction'],
          events: ['chainChanged', 'accountsChanged'],
          accounts: supported.map((chain) => `${chain}:${account.address}`),
        },
      },
    })
    void wallet.approve({ id, namespaces }).catch(() => undefined)
  })
  wallet.events.on('session_request', async ({ id, topic, params }) => {
    const chain = chains[Number(params.chainId.split(':')[1]) as 31337 | 31338]
    const [first, second] = params.request.params as [unknown, unknown]
    let result: unknown
    if (params.request.method === 'personal_sign') result = await account.signMessage({ message: { raw: first as `0x${string}` } })
    else if (params.request.method === 'eth_signTypedData_v4') result = await account.signTypedData(JSON.parse(second as string))
    else {
      const tx = first as { to: `0x${string}`; value?: `0x${string}`; data?: `0x${string}` }
      const client = createWalletClient({ account, chain, transport: http() })
      result = await client.sendTransaction({ to: tx.to, value: tx.value ? BigInt(tx.value) : 0n, ...(tx.data ? { data: tx.data } : {}) })
    }
    await wallet.respond({ topic, response: { id, jsonrpc: '2.0', result } }).catch(() => undefined)
  })
})
afterEach(async () => {
  wallet.close()
  await browser.close()
})

describe('WalletConnect journey', () => {
  test('default: Copy link, pair, sign, send, switch, follow the wallet, reload, wallet disconnects', async () => {
    const { page } = browser
    const ui = demo(page)
    await page.goto(stack.demo)

    await ui.connectButton.click()
    await ui.wallet('WalletConnect').click()
    await page.getByRole('img', { name: 'QR code for WalletConnect' }).waitFor()
    await page.getByRole('button', { name: 'Copy link' }).click()
    await page.getByRole('button', { name: 'Copied' }).waitFor()
    const uri = await page.evaluate(() => navigator.clipboard.readText())
    expect(uri).toMatch(/^wc:[0-9a-f]{64}@2\?relay-protocol=irn&symKey=[0-9a-f]{64}&expiryTimestamp=\d+$/)
    await wallet.pair({ uri })

    expect(await waitForText(ui.address, account.address)).toBe(account.address)
    expect(await waitForText(ui.chainId, '31337')).toBe('31337')
    await ui.connectModal.waitFor({ state: 'detached' })

    const message = await ui.message.inputValue()
    await ui.button('Sign message').click()
    const signature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(await verifyMessage({ address: account.address, message, signature })).toBe(true)

    await ui.button('Sign typed data').click()
    await ui.signature.filter({ hasNotText: signature }).filter({ hasText: /^0x[0-9a-f]{130}$/ }).waitFor()
    const typedSignature = (await waitForText(ui.signature, /^0x[0-9a-f]{130}$/)) as `0x${string}`
    expect(
      await verifyTypedData({ ...mailTypedData({ from: account.address, chainId: 31337, contents: message }), address: account.address, signature: typedSignature }),
    ).toBe(true)

    await ui.button('Send transaction').click()
    const hash = (await waitForText(ui.txHash, /^0x[0-9a-f]{64}$/)) as `0x${string}`
    const receipt = await createPublicClient({ chain: chains[31337], transport: http() }).waitForTransactionReceipt({ hash, pollingInterval: 100 })
    expect(receipt.status).toBe('success')
    expect(receipt.from).toBe(account.address.toLowerCase())
    await page.getByText(`Confirmed in block ${receipt.blockNumber}`, { exact: true }).waitFor()

    // A chain in the session switches at once; the wallet is not asked.
    await ui.network.selectOption({ label: 'Anvil B (31338)' })
    expect(await waitForText(ui.chainId, '31338')).toBe('31338')

    // The wallet changes chain; the demo follows.
    const [session] = wallet.sessions()
    await wallet.emit({ topic: session!.topic, chainId: 'eip155:31337', event: { name: 'chainChanged', data: 31337 } })
    expect(await waitForText(ui.chainId, '31337')).toBe('31337')

    // A reload restores the session.
    await page.reload()
    expect(await waitForText(ui.address, account.address)).toBe(account.address)

    // The wallet ends the session; the demo is disconnected.
    await wallet.disconnect({ topic: session!.topic })
    await ui.connectButton.waitFor()
    expect(await page.evaluate(() => localStorage.getItem('latchkey.walletConnect.sessionTopic'))).toBeNull()
  })
})
