import { readdirSync, readFileSync } from 'node:fs'
import type { Relay } from '@latchkey/relay'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { WebSocket } from 'ws'
import {
  ChainIdNotFoundError,
  createRelayClient,
  EventNotGrantedError,
  encrypt,
  MethodNotGrantedError,
  NamespaceNotConfiguredError,
  NotControllerError,
  PairingInUseError,
  ProposalNotFoundError,
  type RelayClient,
  WalletConnectError,
  type WebSocketConstructor,
} from '../src/index.js'
import { eip155, next, type Peer, peer, settle, startRelay, warnings } from './peers.js'

// The protocol's edges: what a peer sends is schema-checked before use, and what we throw is a
// catalogue class with its stable code.

let relay: Relay
const open: { close(): void }[] = []
const track = <value extends { close(): void }>(client: value) => (open.push(client), client)

beforeAll(async () => {
  relay = await startRelay()
})
afterEach(() => {
  for (const client of open.splice(0)) client.close()
})
afterAll(() => relay.stop())

/** A raw relay client that publishes whatever we seal: a peer that does not follow the rules. */
function rogue(): RelayClient {
  return track(createRelayClient({ relayUrl: relay.url, seed: '11'.repeat(32), WebSocket: WebSocket as unknown as WebSocketConstructor }))
}

function sessionKey(client: Peer, topic: string): string {
  const sessions = JSON.parse(client.storage.getItem('latchkey.wc.sessions') ?? '{}') as Record<string, { symKey: string }>
  return sessions[topic]!.symKey
}

describe('peer messages are checked against their schema', () => {
  test('error: a malformed session request is dropped with a warning; the session carries on', async () => {
    const logger = warnings()
    const dapp = track(await peer(relay, 'dapp'))
    const wallet = track(await peer(relay, 'wallet', { logger }))
    const session = await settle(dapp, wallet)
    const seen: unknown[] = []
    wallet.events.on('session_request', (request) => {
      seen.push(request.params.request.params)
      wallet.respond({ topic: request.topic, response: { id: request.id, jsonrpc: '2.0', result: '0xsigned' } }).catch(() => undefined)
    })
    const symKey = sessionKey(wallet, session.topic)
    const bad = [
      { id: 1, jsonrpc: '2.0', method: 'wc_sessionRequest', params: { request: { method: 42, params: [] }, chainId: 'eip155:31337' } },
      { id: 2, jsonrpc: '2.0', method: 'wc_sessionRequest', params: { chainId: 'eip155:31337' } },
      { id: 3, jsonrpc: '2.0', method: 'wc_sessionUpdate', params: { namespaces: 'all of them' } },
    ]
    const sender = rogue()
    for (const payload of bad)
      await sender.publish(session.topic, encrypt({ symKey, message: JSON.stringify(payload) }), { tag: 1108, ttl: 300, prompt: false })
    // A good request sent after the bad ones is answered: the bad ones were dropped on the way.
    const result = await dapp.request({ topic: session.topic, chainId: 'eip155:31337', request: { method: 'personal_sign', params: ['0x01'] } })
    expect(result).toBe('0xsigned')
    expect(seen).toEqual([['0x01']])
    expect([...logger]).toEqual([
      `WalletConnect: dropped wc_sessionRequest on ${session.topic}: request.method must be a string`,
      `WalletConnect: dropped wc_sessionRequest on ${session.topic}: request must be an object`,
      `WalletConnect: dropped wc_sessionUpdate on ${session.topic}: namespaces must be an object`,
    ])
    expect(wallet.session(session.topic)?.namespaces).toEqual(dapp.session(session.topic)?.namespaces)
  })

  test('error: a proposal without a proposer key never reaches the wallet', async () => {
    const logger = warnings()
    const dapp = track(await peer(relay, 'dapp'))
    const wallet = track(await peer(relay, 'wallet', { logger }))
    const proposals: number[] = []
    wallet.events.on('session_proposal', ({ id }) => proposals.push(id))
    const { uri, pairingTopic } = await dapp.connect({ optionalNamespaces: { eip155 } })
    const symKey = new URL(uri.replace('wc:', 'wc://')).searchParams.get('symKey')!
    await rogue().publish(
      pairingTopic,
      encrypt({ symKey, message: JSON.stringify({ id: 7, jsonrpc: '2.0', method: 'wc_sessionPropose', params: { proposer: { metadata: {} } } }) }),
      { tag: 1100, ttl: 300, prompt: false },
    )
    const proposal = next(wallet, 'session_proposal')
    await wallet.pair({ uri })
    await proposal
    // The answer to a ping comes after everything the relay held for the pairing.
    await wallet.ping({ topic: pairingTopic })
    expect(proposals).toHaveLength(1)
    expect([...logger]).toEqual([`WalletConnect: dropped wc_sessionPropose on ${pairingTopic}: proposer.publicKey must be a string`])
  })
})

describe('errors', () => {
  test('every error the protocol throws is a catalogue class with its code', async () => {
    const dapp = track(await peer(relay, 'dapp'))
    const wallet = track(await peer(relay, 'wallet'))
    const proposal = next(wallet, 'session_proposal')
    const { uri, approval } = await dapp.connect({ optionalNamespaces: { eip155 } })
    await wallet.pair({ uri })
    const { id } = await proposal
    const { acknowledged } = await wallet.approve({
      id,
      namespaces: {
        eip155: {
          chains: eip155.chains,
          methods: ['personal_sign'],
          events: ['chainChanged'],
          accounts: eip155.chains.map((c) => `${c}:0x0000000000000000000000000000000000000001`),
        },
      },
    })
    const [session] = await Promise.all([approval(), acknowledged()])
    const caught = async (promise: Promise<unknown>) => {
      const error = await promise.then(
        () => undefined,
        (e: unknown) => e,
      )
      return error instanceof WalletConnectError ? [error.constructor.name, error.code] : error
    }
    expect(await caught(wallet.pair({ uri }))).toEqual([PairingInUseError.name, 'pairing_in_use'])
    expect(await caught(wallet.approve({ id: 1, namespaces: {} }))).toEqual([ProposalNotFoundError.name, 'proposal_not_found'])
    expect(await caught(wallet.reject({ id: 1 }))).toEqual([ProposalNotFoundError.name, 'proposal_not_found'])
    expect(await caught(wallet.approveAuthenticate({ id: 1, auths: [] }))).toEqual([ProposalNotFoundError.name, 'proposal_not_found'])
    expect(await caught(dapp.update({ topic: session.topic, namespaces: session.namespaces }))).toEqual([NotControllerError.name, 'not_controller'])
    const ask = (chainId: string, method = 'personal_sign') => dapp.request({ topic: session.topic, chainId, request: { method } })
    expect(await caught(ask('eip155:1'))).toEqual([ChainIdNotFoundError.name, 'chain_id_not_found'])
    expect(await caught(ask('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'))).toEqual([NamespaceNotConfiguredError.name, 'namespace_not_configured'])
    expect(await caught(ask('eip155:31337', 'eth_sign'))).toEqual([MethodNotGrantedError.name, 'method_not_granted'])
    expect(await caught(wallet.emit({ topic: session.topic, chainId: 'eip155:31337', event: { name: 'message', data: 1 } }))).toEqual([
      EventNotGrantedError.name,
      'event_not_granted',
    ])
    expect(await caught(wallet.emit({ topic: session.topic, chainId: 'eip155:5', event: { name: 'chainChanged', data: 5 } }))).toEqual([
      ChainIdNotFoundError.name,
      'chain_id_not_found',
    ])
  })

  test('no code throws an ad-hoc WalletConnectError: each throw names a class of errors.ts', () => {
    const dir = new URL('../src/', import.meta.url)
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
    const adHoc = files.filter((file) => file !== 'errors.ts' && readFileSync(new URL(file, dir), 'utf8').includes('new WalletConnectError('))
    expect(adHoc).toEqual([])
  })
})
