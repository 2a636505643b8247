import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import type { Relay } from '@latchkey/relay'
import { SignClient as OfficialSignClient } from '@walletconnect/sign-client'
import { Web3Wallet } from '@walletconnect/web3wallet'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import type { PeerError } from '../src/index.js'
import { account, closing, eip155, grant, next, type Peer, peer, startRelay } from './peers.js'

// Our Sign client against the official Apache-2.0 clients (test-only): @walletconnect/sign-client
// @2.21.8 in both directions, and @walletconnect/web3wallet@1.16.1 (which runs sign-client 2.17.1,
// the generation that still publishes proposals with irn_publish) as a wallet, through our relay. Vitest sets IS_VITEST, which keeps the official client
// from calling the vendor's verify and telemetry hosts.

type Official = InstanceType<typeof OfficialSignClient>
let relay: Relay
const ours: Peer[] = []
const theirs: Official[] = []

beforeAll(async () => {
  relay = await startRelay()
})
afterEach(async () => {
  for (const client of ours.splice(0)) client.close()
  for (const client of theirs.splice(0)) await client.core.relayer.transportClose().catch(() => undefined)
  for (const wallet of wallets.splice(0)) await wallet.core.relayer.transportClose().catch(() => undefined)
})
afterAll(() => relay.stop())

async function official(name: string): Promise<Official> {
  const client = await OfficialSignClient.init({
    projectId: 'local',
    relayUrl: relay.url,
    customStoragePrefix: `${name}-${Math.random()}`,
    telemetryEnabled: false,
    logger: 'silent',
    metadata: { name, description: `${name} (official client)`, url: `http://${name}.test`, icons: [] },
  })
  theirs.push(client)
  return client
}

type Wallet = Awaited<ReturnType<typeof Web3Wallet.init>>
const wallets: Wallet[] = []

/** web3wallet 1.16.1 with the Core of its own generation (2.17.1), as its users run it. */
async function web3wallet(name: string): Promise<Wallet> {
  const nested = createRequire(createRequire(import.meta.url).resolve('@walletconnect/web3wallet')).resolve('@walletconnect/core')
  const { Core } = (await import(pathToFileURL(nested).href)) as typeof import('@walletconnect/core')
  const core = new Core({ projectId: 'local', relayUrl: relay.url, customStoragePrefix: `${name}-${Math.random()}`, logger: 'silent' })
  const wallet = await Web3Wallet.init({
    core: core as never,
    metadata: { name, description: `${name} (web3wallet)`, url: `http://${name}.test`, icons: [] },
  })
  wallets.push(wallet)
  return wallet
}

async function ourPeer(name: string) {
  const client = await peer(relay, name)
  ours.push(client)
  return client
}

describe('our dapp, their wallet', () => {
  test('default: pair, settle, sign, receive events and a disconnect', async () => {
    const dapp = await ourPeer('our-dapp')
    const wallet = await official('their-wallet')
    wallet.on('session_proposal', ({ id, params }) => {
      expect(params.proposer.metadata.name).toBe('our-dapp')
      wallet.approve({ id, namespaces: grant() }).catch(closing)
    })
    wallet.on('session_request', ({ id, topic, params }) => {
      const [message] = params.request.params as string[]
      const response =
        params.request.method === 'personal_sign'
          ? { id, jsonrpc: '2.0', result: `their-signature-of-${message}` }
          : { id, jsonrpc: '2.0', error: { code: 4001, message: 'User rejected the request.' } }
      wallet.respond({ topic, response }).catch(closing)
    })

    const { uri, approval } = await dapp.connect({ optionalNamespaces: { eip155 } })
    await wallet.pair({ uri })
    const session = await approval()
    expect(session.peer.metadata.name).toBe('their-wallet')
    expect(session.namespaces.eip155?.accounts).toContain(`eip155:31337:${account}`)

    const signed = await dapp.request({ topic: session.topic, chainId: 'eip155:31337', request: { method: 'personal_sign', params: ['0x6869', account] } })
    expect(signed).toBe('their-signature-of-0x6869')
    const refused = await dapp
      .request({ topic: session.topic, chainId: 'eip155:31337', request: { method: 'eth_sendTransaction', params: [{}] } })
      .catch((e: unknown) => e)
    expect((refused as PeerError).rpcCode).toBe(4001)

    const event = next(dapp, 'session_event')
    await wallet.emit({ topic: session.topic, chainId: 'eip155:31338', event: { name: 'chainChanged', data: 31338 } })
    expect((await event).params.event).toEqual({ name: 'chainChanged', data: 31338 })

    const update = next(dapp, 'session_update')
    await (await wallet.update({ topic: session.topic, namespaces: grant(['eip155:31337']) })).acknowledged()
    expect((await update).params.namespaces.eip155?.accounts).toEqual([`eip155:31337:${account}`])

    const deleted = next(dapp, 'session_delete')
    await wallet.disconnect({ topic: session.topic, reason: { code: 6000, message: 'User disconnected.' } })
    await deleted
    expect(dapp.sessions()).toEqual([])
  })
})

describe('their dapp, our wallet', () => {
  test('default: pair, settle, answer a request, emit an event, disconnect from their side', async () => {
    const dapp = await official('their-dapp')
    const wallet = await ourPeer('our-wallet')
    wallet.events.on('session_proposal', ({ id, params }) => {
      expect(params.proposer.metadata.name).toBe('their-dapp')
      wallet.approve({ id, namespaces: grant() }).catch(closing)
    })
    wallet.events.on('session_request', ({ id, topic, params }) => {
      wallet.respond({ topic, response: { id, jsonrpc: '2.0', result: `our-answer-on-${params.chainId}` } }).catch(closing)
    })

    const { uri, approval } = await dapp.connect({ optionalNamespaces: { eip155 } })
    await wallet.pair({ uri: uri as string })
    const session = await approval()
    expect(session.peer.metadata.name).toBe('our-wallet')
    expect(session.namespaces['eip155']?.accounts).toEqual([`eip155:31337:${account}`, `eip155:31338:${account}`])
    await expect.poll(() => wallet.session(session.topic)?.acknowledged).toBe(true)

    const answer = await dapp.request({ topic: session.topic, chainId: 'eip155:31338', request: { method: 'personal_sign', params: ['0x01', account] } })
    expect(answer).toBe('our-answer-on-eip155:31338')

    const event = new Promise<{ name: string; data: unknown }>((resolve) => dapp.once('session_event', ({ params }) => resolve(params.event)))
    await wallet.emit({ topic: session.topic, chainId: 'eip155:31337', event: { name: 'accountsChanged', data: [account] } })
    expect(await event).toEqual({ name: 'accountsChanged', data: [account] })

    await dapp.ping({ topic: session.topic })

    const deleted = next(wallet, 'session_delete')
    await dapp.disconnect({ topic: session.topic, reason: { code: 6000, message: 'User disconnected.' } })
    await deleted
    expect(wallet.sessions()).toEqual([])
  })

  test('our wallet rejects; their approval() rejects with our reason', async () => {
    const dapp = await official('their-dapp')
    const wallet = await ourPeer('our-wallet')
    wallet.events.on('session_proposal', ({ id }) => wallet.reject({ id }).catch(closing))
    const { uri, approval } = await dapp.connect({ optionalNamespaces: { eip155 } })
    await wallet.pair({ uri: uri as string })
    await expect(approval()).rejects.toMatchObject({ code: 5000, message: 'User rejected.' })
  })
})

describe('web3wallet 1.16.1 as the wallet', () => {
  test('default: our dapp pairs with it, gets a signature and follows its chain change and disconnect', async () => {
    const dapp = await ourPeer('our-dapp')
    const wallet = await web3wallet('their-web3wallet')
    wallet.on('session_proposal', ({ id }) => wallet.approveSession({ id, namespaces: grant() }).catch(closing))
    wallet.on('session_request', ({ id, topic, params }) =>
      wallet.respondSessionRequest({ topic, response: { id, jsonrpc: '2.0', result: `web3wallet-signed-${params.request.method}` } }).catch(closing),
    )
    const { uri, approval } = await dapp.connect({ optionalNamespaces: { eip155 } })
    await wallet.core.pairing.pair({ uri })
    const session = await approval()
    expect(session.peer.metadata.name).toBe('their-web3wallet')

    const signed = await dapp.request({ topic: session.topic, chainId: 'eip155:31337', request: { method: 'personal_sign', params: ['0x6869', account] } })
    expect(signed).toBe('web3wallet-signed-personal_sign')

    const event = next(dapp, 'session_event')
    await wallet.emitSessionEvent({ topic: session.topic, chainId: 'eip155:31338', event: { name: 'chainChanged', data: 31338 } })
    expect((await event).params.chainId).toBe('eip155:31338')

    const deleted = next(dapp, 'session_delete')
    await wallet.disconnectSession({ topic: session.topic, reason: { code: 6000, message: 'User disconnected.' } })
    await deleted
  })

  test('relay conformance: their sign-client dapp and their web3wallet, through our relay alone', async () => {
    const dapp = await official('their-dapp')
    const wallet = await web3wallet('their-web3wallet')
    wallet.on('session_proposal', ({ id }) => wallet.approveSession({ id, namespaces: grant() }).catch(closing))
    wallet.on('session_request', ({ id, topic }) =>
      wallet.respondSessionRequest({ topic, response: { id, jsonrpc: '2.0', result: '0xsigned' } }).catch(closing),
    )
    const { uri, approval } = await dapp.connect({ optionalNamespaces: { eip155 } })
    await wallet.core.pairing.pair({ uri: uri as string })
    const session = await approval()
    const result = await dapp.request({ topic: session.topic, chainId: 'eip155:31337', request: { method: 'personal_sign', params: ['0x01', account] } })
    expect(result).toBe('0xsigned')
  })
})
