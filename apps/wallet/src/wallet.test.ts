import { getFreePort } from '@latchkey/devnet'
import { createRelay, type Relay } from '@latchkey/relay'
import {
  createSignClient,
  memoryStorage,
  type PendingRequest,
  type Session,
  type SignClient,
  type SignClientEvents,
  type WebSocketConstructor,
} from '@latchkey/walletconnect'
import { formatAuthMessage } from '@latchkey/walletconnect/cacao'
import { ed25519 } from '@noble/curves/ed25519.js'
import { utf8ToBytes } from '@noble/hashes/utils.js'
import { base58 } from '@scure/base'
import { createPublicClient, type Hex, http, toHex, verifyMessage, verifyTypedData } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, test } from 'vitest'
import { WebSocket } from 'ws'
import { createWallet, SOLANA_MAINNET, type Wallet, type WalletChain } from './wallet.js'

// The reference wallet's logic against our relay, with our Sign client as the dapp and the test
// run's anvil chains. A fresh key per test run (funded through anvil_setBalance) keeps its nonces
// apart from every other test file's.

const key = generatePrivateKey()
const address = privateKeyToAccount(key).address
const chains: [WalletChain, WalletChain] = [
  { id: 31337, name: 'Anvil A', rpcUrl: inject('chainARpc') },
  { id: 31338, name: 'Anvil B', rpcUrl: inject('chainBRpc') },
]
const eip155 = {
  chains: ['eip155:31337', 'eip155:31338'],
  methods: ['personal_sign', 'eth_signTypedData_v4', 'eth_sendTransaction', 'wallet_switchEthereumChain', 'eth_chainId'],
  events: ['chainChanged', 'accountsChanged'],
}
const typedData = {
  domain: { name: 'Test', version: '1', chainId: 31337 },
  types: { Note: [{ name: 'text', type: 'string' }] },
  primaryType: 'Note',
  message: { text: 'hello' },
} as const

let relay: Relay
beforeAll(async () => {
  relay = createRelay({ port: await getFreePort() })
  await relay.start()
  await createPublicClient({ transport: http(chains[0].rpcUrl) }).request({
    method: 'anvil_setBalance' as never,
    params: [address, toHex(10n ** 20n)] as never,
  })
})
afterAll(() => relay.stop())

const open: { close(): void }[] = []
afterEach(() => {
  for (const item of open.splice(0)) item.close()
})

async function dappClient(): Promise<SignClient> {
  const client = await createSignClient({
    relayUrl: relay.url,
    metadata: { name: 'Test Dapp', description: 'test', url: 'http://dapp.test', icons: [] },
    WebSocket: WebSocket as unknown as WebSocketConstructor,
  })
  open.push(client)
  return client
}

async function wallet(storage = memoryStorage()): Promise<Wallet> {
  const created = await createWallet({ relayUrl: relay.url, chains, privateKey: key, storage, WebSocket: WebSocket as unknown as WebSocketConstructor })
  open.push(created)
  return created
}

/** Resolves once `check` holds for the wallet's state. */
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

function next<name extends keyof SignClientEvents>(client: SignClient, name: name): Promise<SignClientEvents[name]> {
  return new Promise((resolve) => client.events.once(name, resolve))
}

async function connect(subject: Wallet, dapp: SignClient, namespaces: object = { eip155 }) {
  const { uri, approval } = await dapp.connect({ optionalNamespaces: namespaces as never })
  await subject.pair(uri)
  const proposal = await until(subject, (state) => state.proposals[0])
  return { proposal, approval }
}

async function session(subject: Wallet, dapp: SignClient): Promise<Session> {
  const { proposal, approval } = await connect(subject, dapp)
  await subject.approve(proposal.id)
  return approval()
}

/** Sends a request from the dapp and waits until the wallet shows it. */
async function ask(subject: Wallet, dapp: SignClient, topic: string, method: string, params: unknown, chainId = 'eip155:31337') {
  const result = dapp.request({ topic, chainId, request: { method, params } })
  result.catch(() => undefined)
  const request = await until(subject, (state) => state.requests.find((item: PendingRequest) => item.params.request.method === method))
  return { request, result }
}

describe('pairing', () => {
  test('default: the proposal shows the dapp; Approve settles a session for the wallet account, its chain first', async () => {
    const subject = await wallet()
    const dapp = await dappClient()
    const { proposal, approval } = await connect(subject, dapp)
    expect(proposal.proposer.metadata.name).toBe('Test Dapp')
    await subject.setChain(31338)
    await subject.approve(proposal.id)
    const settled = await approval()
    expect(settled.namespaces['eip155']?.accounts).toEqual([`eip155:31338:${address}`, `eip155:31337:${address}`])
    expect(settled.namespaces['eip155']?.methods).toEqual(eip155.methods)
    await until(subject, (state) => state.sessions.length === 1 && state.proposals.length === 0)
    expect(subject.getState().log.map((entry) => entry.text)).toContain('Approved Test Dapp')
  })

  test('behavior: Reject answers the dapp with "User rejected."', async () => {
    const subject = await wallet()
    const { proposal, approval } = await connect(subject, await dappClient())
    await subject.reject(proposal.id)
    await expect(approval()).rejects.toThrow('User rejected.')
    expect(subject.getState().proposals).toEqual([])
  })

  test('error: a proposal that requires a chain the wallet lacks is rejected as unsupported', async () => {
    const subject = await wallet()
    const dapp = await dappClient()
    const { uri, approval } = await dapp.connect({ requiredNamespaces: { eip155: { chains: ['eip155:1'], methods: ['personal_sign'], events: [] } } })
    approval().catch(() => undefined)
    await subject.pair(uri)
    const proposal = await until(subject, (state) => state.proposals[0])
    await expect(subject.approve(proposal.id)).rejects.toThrow('Test Dapp requires chains this wallet does not have: eip155:1')
    await expect(approval()).rejects.toThrow('Unsupported chains.')
    expect(subject.getState().sessions).toEqual([])
  })

  test('error: a malformed URI is refused and nothing is paired', async () => {
    const subject = await wallet()
    await expect(subject.pair('wc:nonsense')).rejects.toThrow('This is not a valid WalletConnect pairing link.')
    expect(subject.getState().log).toEqual([])
  })
})

describe('requests', () => {
  let subject: Wallet
  let dapp: SignClient
  let topic: string
  beforeEach(async () => {
    subject = await wallet()
    dapp = await dappClient()
    topic = (await session(subject, dapp)).topic
  })

  test('default: personal_sign shows the request; Approve returns a signature by the wallet account', async () => {
    const message = 'Sign in to Test Dapp'
    const { request, result } = await ask(subject, dapp, topic, 'personal_sign', [toHex(message), address])
    await subject.answer(request.id, true)
    const signature = (await result) as Hex
    expect(await verifyMessage({ address, message, signature })).toBe(true)
    expect(subject.getState().requests).toEqual([])
  })

  test('behavior: eth_signTypedData_v4 signs the JSON the dapp sends', async () => {
    const { request, result } = await ask(subject, dapp, topic, 'eth_signTypedData_v4', [address, JSON.stringify(typedData)])
    await subject.answer(request.id, true)
    expect(await verifyTypedData({ ...typedData, address, signature: (await result) as Hex })).toBe(true)
  })

  test('behavior: eth_sendTransaction sends on the request chain and returns the hash', async () => {
    const to = '0x000000000000000000000000000000000000dEaD'
    const { request, result } = await ask(subject, dapp, topic, 'eth_sendTransaction', [{ from: address, to, value: toHex(1000n) }])
    await subject.answer(request.id, true)
    const hash = (await result) as Hex
    const receipt = await createPublicClient({ transport: http(chains[0].rpcUrl) }).waitForTransactionReceipt({ hash, pollingInterval: 50 })
    expect(receipt.status).toBe('success')
    expect(receipt.from).toBe(address.toLowerCase())
    expect(receipt.to).toBe(to.toLowerCase())
  })

  test('behavior: Reject answers 5000 "User rejected."', async () => {
    const { request, result } = await ask(subject, dapp, topic, 'personal_sign', [toHex('no'), address])
    await subject.answer(request.id, false)
    await expect(result).rejects.toMatchObject({ rpcCode: 5000, shortMessage: 'User rejected.' })
  })

  test('error: a message for another address is refused with 4100 and the request is gone', async () => {
    const other = privateKeyToAccount(generatePrivateKey()).address
    const { request, result } = await ask(subject, dapp, topic, 'personal_sign', [toHex('hi'), other])
    await expect(subject.answer(request.id, true)).rejects.toThrow(`${other} is not this wallet's address`)
    await expect(result).rejects.toMatchObject({ rpcCode: 4100, shortMessage: `${other} is not this wallet's address` })
    expect(subject.getState().requests).toEqual([])
  })

  test('behavior: eth_chainId is answered without asking the user', async () => {
    await subject.setChain(31338)
    expect(await dapp.request({ topic, chainId: 'eip155:31338', request: { method: 'eth_chainId', params: [] } })).toBe('0x7a6a')
    expect(subject.getState().requests).toEqual([])
  })

  test('behavior: the Network control emits chainChanged to the dapp and is remembered', async () => {
    const event = next(dapp, 'session_event')
    await subject.setChain(31338)
    expect((await event).params).toEqual({ chainId: 'eip155:31338', event: { name: 'chainChanged', data: 31338 } })
  })

  test('behavior: wallet_switchEthereumChain switches after approval; an unknown chain is 4902', async () => {
    const event = next(dapp, 'session_event')
    const { request, result } = await ask(subject, dapp, topic, 'wallet_switchEthereumChain', [{ chainId: '0x7a6a' }])
    await subject.answer(request.id, true)
    expect(await result).toBeNull()
    expect((await event).params.chainId).toBe('eip155:31338')
    expect(subject.getState().chainId).toBe(31338)

    const unknown = await ask(subject, dapp, topic, 'wallet_switchEthereumChain', [{ chainId: '0x1' }])
    await expect(subject.answer(unknown.request.id, true)).rejects.toThrow('Chain 1 is not one this wallet has')
    await expect(unknown.result).rejects.toMatchObject({ rpcCode: 4902 })
    expect(subject.getState().chainId).toBe(31338)
  })

  test('behavior: the Account control updates the session to the new account and tells the dapp; an unknown account is refused', async () => {
    const other = generatePrivateKey()
    const switching = await createWallet({
      relayUrl: relay.url,
      chains,
      privateKey: key,
      otherKeys: [other],
      storage: memoryStorage(),
      WebSocket: WebSocket as unknown as WebSocketConstructor,
    })
    open.push(switching)
    const dappSide = await dappClient()
    const settled = await session(switching, dappSide)
    const second = privateKeyToAccount(other).address
    expect(switching.getState().addresses).toEqual([address, second])
    const updated = next(dappSide, 'session_update')
    const event = next(dappSide, 'session_event')
    await switching.setAccount(second)
    expect((await updated).params.namespaces['eip155']?.accounts).toEqual(
      settled.namespaces['eip155']!.accounts.map((account) => account.replace(address, second)),
    )
    expect((await event).params.event).toEqual({ name: 'accountsChanged', data: [second] })
    expect(switching.getState().address).toBe(second)
    // It signs as the new account now.
    const { request, result } = await ask(switching, dappSide, settled.topic, 'personal_sign', [toHex('now me'), second])
    await switching.answer(request.id, true)
    expect(await verifyMessage({ address: second, message: 'now me', signature: (await result) as Hex })).toBe(true)
    await expect(switching.setAccount('0x000000000000000000000000000000000000dEaD')).rejects.toThrow('is not an account of this wallet')
  })

  test('behavior: Disconnect ends the session on both sides', async () => {
    const deleted = next(dapp, 'session_delete')
    await subject.disconnect(topic)
    expect((await deleted).topic).toBe(topic)
    expect(subject.getState().sessions).toEqual([])
  })
})

test('behavior: after a reload the session, the network and a request sent while away are there', async () => {
  const storage = memoryStorage()
  const first = await wallet(storage)
  const dapp = await dappClient()
  const { topic } = await session(first, dapp)
  await first.setChain(31338)
  first.close()

  const result = dapp.request({ topic, chainId: 'eip155:31337', request: { method: 'personal_sign', params: [toHex('while away'), address] } })
  const second = await wallet(storage)
  expect(second.getState().chainId).toBe(31338)
  expect(second.getState().sessions.map((item) => item.topic)).toEqual([topic])
  const request = await until(second, (state) => state.requests[0])
  await second.answer(request.id, true)
  expect(await verifyMessage({ address, message: 'while away', signature: (await result) as Hex })).toBe(true)
})

describe('solana', () => {
  const solana = { chains: [SOLANA_MAINNET], methods: ['solana_signMessage'], events: [] }

  test('default: Approve grants a solana namespace beside eip155; solana_signMessage is an ed25519 signature', async () => {
    const subject = await wallet()
    const dapp = await dappClient()
    const { proposal, approval } = await connect(subject, dapp, { eip155, solana })
    await subject.approve(proposal.id)
    const settled = await approval()
    const solanaAddress = subject.getState().solanaAddress
    expect(settled.namespaces['solana']).toEqual({
      chains: [SOLANA_MAINNET],
      methods: ['solana_signMessage'],
      events: [],
      accounts: [`${SOLANA_MAINNET}:${solanaAddress}`],
    })
    const message = utf8ToBytes('Sign in to Test Dapp on Solana')
    const { request, result } = await ask(
      subject,
      dapp,
      settled.topic,
      'solana_signMessage',
      { message: base58.encode(message), pubkey: solanaAddress } as never,
      SOLANA_MAINNET,
    )
    expect(request.params.chainId).toBe(SOLANA_MAINNET)
    await subject.answer(request.id, true)
    const { signature } = (await result) as { signature: string }
    expect(ed25519.verify(base58.decode(signature), message, base58.decode(solanaAddress))).toBe(true)
    expect(ed25519.verify(base58.decode(signature), utf8ToBytes('another message'), base58.decode(solanaAddress))).toBe(false)
  })

  test('error: a Solana account that is not the wallet’s is refused', async () => {
    const subject = await wallet()
    const dapp = await dappClient()
    const { proposal, approval } = await connect(subject, dapp, { eip155, solana })
    await subject.approve(proposal.id)
    const settled = await approval()
    const { request, result } = await ask(subject, dapp, settled.topic, 'solana_signMessage', { message: 'abc', pubkey: 'someone' } as never, SOLANA_MAINNET)
    await expect(subject.answer(request.id, true)).rejects.toThrow("someone is not this wallet's Solana account")
    await expect(result).rejects.toThrow("someone is not this wallet's Solana account")
  })
})

describe('one-click sign-in', () => {
  const fields = {
    chains: ['eip155:31337', 'eip155:31338'],
    domain: 'dapp.test',
    uri: 'http://dapp.test',
    nonce: 'abcdef123456',
    statement: 'Sign in to Test Dapp.',
    methods: ['personal_sign'],
  }

  test('default: the SIWE message of each chain is shown; Approve answers with a verified CACAO per chain', async () => {
    const subject = await wallet()
    const dapp = await dappClient()
    const { uri, response } = await dapp.authenticate(fields)
    await subject.pair(uri)
    const pending = await until(subject, (state) => state.authenticates[0])
    expect(pending.messages.map((m) => m.chainId)).toEqual(['eip155:31337', 'eip155:31338'])
    expect(pending.messages[0]!.message).toContain(`dapp.test wants you to sign in with your Ethereum account:\n${address}\n\nSign in to Test Dapp.`)
    expect(subject.getState().proposals).toEqual([])
    await subject.approveAuthenticate(pending.id)
    const { session: made, cacaos } = await response()
    const verified = await Promise.all(
      cacaos!.map((cacao) => verifyMessage({ address, message: formatAuthMessage({ payload: cacao.p, iss: cacao.p.iss }), signature: cacao.s.s as Hex })),
    )
    expect(verified).toEqual([true, true])
    await until(subject, (state) => state.sessions.some((s) => s.topic === made.topic) && state.authenticates.length === 0)
    expect(subject.getState().log[0]?.text).toBe('Signed in to Test Dapp')
  })

  test('behavior: Reject refuses the sign-in; the dapp hears the user’s refusal', async () => {
    const subject = await wallet()
    const dapp = await dappClient()
    const { uri, response } = await dapp.authenticate(fields)
    await subject.pair(uri)
    const pending = await until(subject, (state) => state.authenticates[0])
    await subject.rejectAuthenticate(pending.id)
    await expect(response()).rejects.toThrow('User rejected.')
    expect(subject.getState().authenticates).toEqual([])
  })
})
