import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import type { Relay } from '@latchkey/relay'
import { SignClient as OfficialSignClient } from '@walletconnect/sign-client'
import { Web3Wallet } from '@walletconnect/web3wallet'
import { verifyMessage } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { WebSocket } from 'ws'
import { anvilKeys } from '../../../test/chains.js'
import { createCacao, formatAuthMessage, populateAuthPayload } from '../src/cacao.js'
import {
  type AuthenticateParameters,
  type Cacao,
  createEthereumProvider,
  ExpiredError,
  PeerError,
  type SignClient,
  type WebSocketConstructor,
} from '../src/index.js'
import { closing, grant, next, type Peer, peer, startRelay } from './peers.js'

// One-click sign-in (wc_sessionAuthenticate, CAIP-222) in both roles: ours against ours, their
// sign-client dapp against our wallet, our dapp against their web3wallet; and each way it falls
// back to a plain proposal.

const signer = privateKeyToAccount(anvilKeys[8]!)
const CHAINS = ['eip155:31337', 'eip155:31338']
const METHODS = ['personal_sign', 'eth_sendTransaction']

let relay: Relay
const closers: (() => unknown)[] = []
beforeAll(async () => {
  relay = await startRelay()
})
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})
afterAll(() => relay.stop())

async function ours(name: string, extra: { now?: () => number } = {}): Promise<Peer> {
  const client = await peer(relay, name, extra)
  closers.push(() => client.close())
  return client
}

const request = (nonce = 'abcdef123456'): AuthenticateParameters => ({
  chains: CHAINS,
  domain: 'dapp.test',
  uri: 'http://dapp.test/login',
  nonce,
  statement: 'Sign in to the test dapp.',
  methods: METHODS,
})

/** What a wallet does on "Approve": one CACAO per chain it supports, each an EIP-191 signature. */
async function cacaosFor(authPayload: Parameters<typeof populateAuthPayload>[0]['authPayload']): Promise<Cacao[]> {
  const payload = populateAuthPayload({ authPayload, chains: CHAINS, methods: METHODS })
  return Promise.all(
    payload.chains.map(async (chain) => {
      const iss = `did:pkh:${chain}:${signer.address}`
      const signature = await signer.signMessage({ message: formatAuthMessage({ payload, iss }) })
      return createCacao({ payload, iss, signature: { t: 'eip191', s: signature } })
    }),
  )
}

function signsIn(wallet: SignClient) {
  wallet.events.on('session_authenticate', async ({ id, params }) => {
    await wallet.approveAuthenticate({ id, auths: await cacaosFor(params.authPayload) }).catch(closing)
  })
}

async function verified(cacaos: readonly Cacao[]) {
  return Promise.all(
    cacaos.map((cacao) =>
      verifyMessage({ address: signer.address, message: formatAuthMessage({ payload: cacao.p, iss: cacao.p.iss }), signature: cacao.s.s as `0x${string}` }),
    ),
  )
}

describe('ours, both roles', () => {
  test('default: one approval gives a session and one verified CACAO per chain', async () => {
    const dapp = await ours('dapp')
    const wallet = await ours('wallet')
    signsIn(wallet)
    const seen = next(wallet, 'session_authenticate')
    const { uri, response } = await dapp.authenticate(request())
    expect(uri).toMatch(/&methods=wc_sessionAuthenticate$/)
    await wallet.pair({ uri })
    const { params } = await seen
    expect(params.authPayload).toMatchObject({ domain: 'dapp.test', aud: 'http://dapp.test/login', nonce: 'abcdef123456', chains: CHAINS })
    const { session, cacaos } = await response()
    expect(cacaos?.map((c) => c.p.iss)).toEqual(CHAINS.map((chain) => `did:pkh:${chain}:${signer.address}`))
    expect(await verified(cacaos!)).toEqual([true, true])
    expect(formatAuthMessage({ payload: cacaos![0]!.p, iss: cacaos![0]!.p.iss })).toContain(
      "Sign in to the test dapp. I further authorize the stated URI to perform the following actions on my behalf: (1) 'request': 'eth_sendTransaction', 'personal_sign' for 'eip155'.",
    )
    expect(session.namespaces.eip155).toEqual({
      accounts: CHAINS.map((chain) => `${chain}:${signer.address}`),
      chains: CHAINS,
      methods: ['eth_sendTransaction', 'personal_sign'],
      events: ['chainChanged', 'accountsChanged'],
    })
    // The session works at once, with no settlement round: the wallet answers a request on it.
    expect(wallet.session(session.topic)?.peer.metadata.name).toBe('dapp')
    wallet.events.on('session_request', ({ id, topic }) => void wallet.respond({ topic, response: { id, jsonrpc: '2.0', result: '0xok' } }).catch(closing))
    expect(await dapp.request({ topic: session.topic, chainId: 'eip155:31338', request: { method: 'personal_sign', params: ['0x01', signer.address] } })).toBe(
      '0xok',
    )
    // The wallet never saw the fallback proposal.
    expect(wallet.proposals()).toEqual([])
  })

  test('fallback: a wallet without the method approves the proposal instead; no CACAOs', async () => {
    const dapp = await ours('dapp')
    const wallet = await ours('wallet')
    wallet.events.on('session_proposal', ({ id, params }) => {
      expect(params.optionalNamespaces.eip155?.methods).toEqual(['personal_sign', 'eth_sendTransaction'])
      void wallet.approve({ id, namespaces: grant(CHAINS) }).catch(closing)
    })
    const { uri, response } = await dapp.authenticate(request())
    await wallet.pair({ uri })
    const result = await response()
    expect(result.cacaos).toBeUndefined()
    expect(result.session.peer.metadata.name).toBe('wallet')
  })

  test('error: a rejection ends the request with the wallet’s reason and drops the fallback', async () => {
    const dapp = await ours('dapp')
    const wallet = await ours('wallet')
    wallet.events.on('session_authenticate', ({ id }) => void wallet.rejectAuthenticate({ id }).catch(closing))
    const { uri, response } = await dapp.authenticate(request())
    await wallet.pair({ uri })
    const error = await response().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PeerError)
    expect((error as PeerError).rpcCode).toBe(5000)
    expect(dapp.sessions()).toEqual([])
    expect(dapp.storage.getItem('latchkey.wc.proposals')).toBeNull()
  })

  test('error: no answer before the expiry ends the request', async () => {
    let clock = Date.now()
    const dapp = await ours('dapp', { now: () => clock })
    const { response } = await dapp.authenticate({ ...request(), expiry: 300 })
    clock += 301_000
    await dapp.cleanup()
    await expect(response()).rejects.toBeInstanceOf(ExpiredError)
    expect(dapp.storage.getItem('latchkey.wc.auths')).toBeNull()
  })
})

type Official = InstanceType<typeof OfficialSignClient>

describe('with clients we did not write', () => {
  test('their sign-client 2.21.8 authenticate() against our wallet: a session and verified CACAOs', async () => {
    const dapp: Official = await OfficialSignClient.init({
      projectId: 'local',
      relayUrl: relay.url,
      customStoragePrefix: `their-dapp-${Math.random()}`,
      telemetryEnabled: false,
      logger: 'silent',
      metadata: { name: 'their-dapp', description: 'official', url: 'http://their-dapp.test', icons: [] },
    })
    closers.push(() => dapp.core.relayer.transportClose().catch(() => undefined))
    const wallet = await ours('our-wallet')
    signsIn(wallet)
    const { uri, response } = await dapp.authenticate({
      chains: CHAINS,
      domain: 'their-dapp.test',
      uri: 'http://their-dapp.test',
      nonce: 'xyz98765432',
      methods: METHODS,
    })
    await wallet.pair({ uri })
    const { session, auths } = await response()
    expect(auths).toHaveLength(2)
    expect(await verified(auths as Cacao[])).toEqual([true, true])
    expect(session?.namespaces.eip155?.accounts).toEqual(CHAINS.map((chain) => `${chain}:${signer.address}`))
    expect(wallet.session(session!.topic)).toBeDefined()
  })

  test('their web3wallet 1.16.1 answers our one-click request in one approval', async () => {
    const nested = createRequire(createRequire(import.meta.url).resolve('@walletconnect/web3wallet')).resolve('@walletconnect/core')
    const { Core } = (await import(pathToFileURL(nested).href)) as typeof import('@walletconnect/core')
    const core = new Core({ projectId: 'local', relayUrl: relay.url, customStoragePrefix: `w3w-${Math.random()}`, logger: 'silent' })
    const wallet = await Web3Wallet.init({ core: core as never, metadata: { name: 'their-wallet', description: 'w3w', url: 'http://w.test', icons: [] } })
    closers.push(() => wallet.core.relayer.transportClose().catch(() => undefined))
    wallet.on('session_authenticate', async ({ id, params }) => {
      const auths = await cacaosFor(params.authPayload as never)
      await wallet.approveSessionAuthenticate({ id, auths: auths as never }).catch(closing)
    })
    const dapp = await ours('our-dapp')
    const { uri, response } = await dapp.authenticate(request())
    await wallet.pair({ uri })
    const { session, cacaos } = await response()
    expect(await verified(cacaos!)).toEqual([true, true])
    expect(session.peer.metadata.name).toBe('their-wallet')
  })
})

describe('through the provider', () => {
  test('fallback: no answer before the expiry, then a plain pairing on a new URI', async () => {
    let clock = Date.now()
    const dapp = createEthereumProvider({
      relayUrl: relay.url,
      metadata: { name: 'dapp', description: 'test', url: 'http://dapp.test', icons: [] },
      chains: [31337],
      optionalChains: [31338],
      WebSocket: WebSocket as unknown as WebSocketConstructor,
      reinitWaitMs: 0,
      now: () => clock,
    })
    closers.push(() => dapp.close())
    await dapp.init()
    // A wallet that hears the one-click request and never answers it (nor its fallback proposal).
    const wallet = await ours('silent-wallet')
    const heard = next(wallet, 'session_authenticate')
    const uris: string[] = []
    dapp.on('display_uri', (uri) => {
      uris.push(uri)
      if (uris.length === 1) void wallet.pair({ uri }).catch(closing)
    })
    const result = dapp.authenticate({ domain: 'dapp.test', uri: 'http://dapp.test', nonce: 'abcdef123456' })
    await heard
    clock += 301_000
    const second = new Promise<string>((resolve) => dapp.on('display_uri', resolve))
    await dapp.signClient!.cleanup()
    const phone = await ours('phone')
    phone.events.on('session_proposal', ({ id }) => void phone.approve({ id, namespaces: grant(CHAINS) }).catch(closing))
    await phone.pair({ uri: await second })
    const { session, cacaos } = await result
    expect(cacaos).toBeUndefined()
    expect(session.peer.metadata.name).toBe('phone')
    expect(uris).toHaveLength(2)
  })
})
