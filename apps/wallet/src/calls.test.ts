import { getFreePort } from '@latchkey/devnet'
import { createRelay, type Relay } from '@latchkey/relay'
import { createSignClient, memoryStorage, type PendingRequest, type SignClient, type WebSocketConstructor } from '@latchkey/walletconnect'
import { createPublicClient, type Hex, http, parseEther, toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, afterEach, beforeAll, describe, expect, inject, test } from 'vitest'
import { WebSocket } from 'ws'
import { createWallet, type Wallet, type WalletChain } from './wallet.js'

// The reference wallet answering EIP-5792 over our relay, with our Sign client as the dapp and
// the test run's anvil chains. A fresh funded key keeps its nonces apart from other files'.

const key = generatePrivateKey()
const address = privateKeyToAccount(key).address
const chains: [WalletChain, WalletChain] = [
  { id: 31337, name: 'Anvil A', rpcUrl: inject('chainARpc') },
  { id: 31338, name: 'Anvil B', rpcUrl: inject('chainBRpc') },
]
const chainA = createPublicClient({ transport: http(chains[0].rpcUrl) })
const eip155 = {
  chains: ['eip155:31337', 'eip155:31338'],
  methods: ['eth_sendTransaction', 'wallet_sendCalls', 'wallet_getCallsStatus', 'wallet_getCapabilities', 'wallet_showCallsStatus'],
  events: ['chainChanged', 'accountsChanged'],
}

let relay: Relay
beforeAll(async () => {
  relay = createRelay({ port: await getFreePort() })
  await relay.start()
  await chainA.request({ method: 'anvil_setBalance' as never, params: [address, toHex(10n ** 20n)] as never })
})
afterAll(() => relay.stop())
const open: { close(): void }[] = []
afterEach(() => {
  for (const item of open.splice(0)) item.close()
})

/** A wallet and a dapp in one session; the dapp asked for the EIP-5792 methods as optional. */
async function session(storage = memoryStorage()) {
  const wallet = await createWallet({ relayUrl: relay.url, chains, privateKey: key, storage, WebSocket: WebSocket as unknown as WebSocketConstructor })
  const dapp = await createSignClient({
    relayUrl: relay.url,
    metadata: { name: 'Test Dapp', description: 'test', url: 'http://dapp.test', icons: [] },
    WebSocket: WebSocket as unknown as WebSocketConstructor,
  })
  open.push(wallet, dapp)
  const { uri, approval } = await dapp.connect({ optionalNamespaces: { eip155 } as never })
  await wallet.pair(uri)
  const proposal = await until(wallet, (state) => state.proposals[0])
  await wallet.approve(proposal.id)
  const { topic, namespaces } = await approval()
  return { wallet, dapp, topic, namespaces, storage }
}

function until<value>(subject: Wallet, check: (state: ReturnType<Wallet['getState']>) => value | undefined | false): Promise<value> {
  return new Promise((resolve) => {
    const test = () => {
      const value = check(subject.getState())
      if (value === undefined || value === false) return false
      off()
      resolve(value)
      return true
    }
    const off = subject.subscribe(test)
    test()
  })
}

const call = (dapp: SignClient, topic: string, method: string, params: unknown[]) =>
  dapp.request({ topic, chainId: 'eip155:31337', request: { method, params } })

const batch = (calls: object[], extra: object = {}) => [{ version: '2.0.0', chainId: '0x7a69', from: address, atomicRequired: false, calls, ...extra }]

describe('EIP-5792 in the reference wallet', () => {
  test('default: the session grants the methods; a batch is shown, approved, sent call by call; the status says confirmed with both receipts', async () => {
    const { wallet, dapp, topic, namespaces } = await session()
    expect(namespaces['eip155']?.methods).toEqual(['eth_sendTransaction', 'wallet_sendCalls', 'wallet_getCallsStatus', 'wallet_getCapabilities'])
    const alice = privateKeyToAccount(generatePrivateKey()).address
    const bob = privateKeyToAccount(generatePrivateKey()).address
    const sent = call(
      dapp,
      topic,
      'wallet_sendCalls',
      batch([
        { to: alice, value: toHex(parseEther('0.001')) },
        { to: bob, value: toHex(parseEther('0.001')) },
      ]),
    )
    const request = await until(wallet, (state) => state.requests.find((item: PendingRequest) => item.params.request.method === 'wallet_sendCalls'))
    await wallet.answer(request.id, true)
    const { id } = (await sent) as { id: string }
    expect(id).toMatch(/^0x[0-9a-f]{64}$/)
    const status = (await call(dapp, topic, 'wallet_getCallsStatus', [id])) as { status: number; receipts: { transactionHash: Hex; status: Hex }[] }
    expect(status).toMatchObject({ version: '2.0.0', id, chainId: '0x7a69', status: 200, atomic: false })
    expect(status.receipts.map((receipt) => receipt.status)).toEqual(['0x1', '0x1'])
    expect(await chainA.getBalance({ address: alice })).toBe(parseEther('0.001'))
    expect(await chainA.getBalance({ address: bob })).toBe(parseEther('0.001'))
    // Status and capabilities are answered without asking the user.
    expect(wallet.getState().requests).toEqual([])
    expect(await call(dapp, topic, 'wallet_getCapabilities', [address])).toEqual({
      '0x7a69': { atomic: { status: 'unsupported' } },
      '0x7a6a': { atomic: { status: 'unsupported' } },
    })
  })

  test('behavior: a reloaded wallet still knows the batches it sent', async () => {
    const first = await session()
    const sent = call(first.dapp, first.topic, 'wallet_sendCalls', batch([{ to: address, value: '0x1' }]))
    const request = await until(first.wallet, (state) => state.requests[0])
    await first.wallet.answer(request.id, true)
    const { id } = (await sent) as { id: string }
    first.wallet.close()
    const again = await createWallet({
      relayUrl: relay.url,
      chains,
      privateKey: key,
      storage: first.storage,
      WebSocket: WebSocket as unknown as WebSocketConstructor,
    })
    open.push(again)
    expect(await call(first.dapp, first.topic, 'wallet_getCallsStatus', [id])).toMatchObject({ id, status: 200 })
  })

  test('error: a malformed batch is refused before the user sees it, and nothing is sent', async () => {
    const { wallet, dapp, topic } = await session()
    const nonce = await chainA.getTransactionCount({ address })
    await expect(call(dapp, topic, 'wallet_sendCalls', batch([{ to: 'bob' }]))).rejects.toMatchObject({
      rpcCode: -32602,
      shortMessage: 'call 0: to is not hex',
    })
    await expect(call(dapp, topic, 'wallet_sendCalls', batch([{ to: address }, { to: address }], { atomicRequired: true }))).rejects.toMatchObject({
      rpcCode: 5760,
      shortMessage: 'This wallet cannot run calls atomically',
    })
    await expect(call(dapp, topic, 'wallet_getCallsStatus', ['0xfeed'])).rejects.toMatchObject({ rpcCode: 5730, shortMessage: 'Unknown bundle id 0xfeed' })
    expect(wallet.getState().requests).toEqual([])
    expect(await chainA.getTransactionCount({ address })).toBe(nonce)
  })
})
