import type { Relay } from '@latchkey/relay'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { ExpiredError, memoryStorage, PeerError, SdkErrors, SessionNotFoundError, StorageWriteError } from '../src/index.js'
import { account, closing, eip155, grant, next, type Peer, paired, peer, settle, startRelay } from './peers.js'

// Our Sign client in both roles, dapp and wallet, through our relay on loopback.

let relay: Relay
const open: Peer[] = []
const track = <value extends Peer>(client: value) => (open.push(client), client)

beforeAll(async () => {
  relay = await startRelay()
})
afterEach(() => {
  for (const client of open.splice(0)) client.close()
})
afterAll(() => relay.stop())

async function pair() {
  const result = await paired(relay)
  track(result.dapp)
  track(result.wallet)
  return result
}

describe('pairing and settlement', () => {
  test('default: the dapp proposes, the wallet pairs and approves, both hold the same session', async () => {
    const { dapp, wallet, session } = await pair()
    expect(session.topic).toMatch(/^[0-9a-f]{64}$/)
    expect(session.acknowledged).toBe(true)
    expect(session.namespaces.eip155?.accounts).toEqual([`eip155:31337:${account}`, `eip155:31338:${account}`])
    expect(session.peer.metadata.name).toBe('wallet')
    const walletSide = wallet.session(session.topic)
    expect(walletSide?.acknowledged).toBe(true)
    expect(walletSide?.peer.metadata.name).toBe('dapp')
    expect(walletSide?.controller).toBe(walletSide?.self.publicKey)
    expect(dapp.pairings()).toEqual([expect.objectContaining({ active: true, peerMetadata: expect.objectContaining({ name: 'wallet' }) })])
  })

  test('the URI carries the pairing topic, key and expiry; the proposal carries namespaces and metadata', async () => {
    const dapp = track(await peer(relay, 'dapp'))
    const wallet = track(await peer(relay, 'wallet'))
    const proposal = next(wallet, 'session_proposal')
    const { uri, pairingTopic } = await dapp.connect({ requiredNamespaces: { eip155: { chains: ['eip155:31337'], methods: ['personal_sign'], events: [] } } })
    expect(uri).toMatch(new RegExp(`^wc:${pairingTopic}@2\\?relay-protocol=irn&symKey=[0-9a-f]{64}&expiryTimestamp=\\d+$`))
    await wallet.pair({ uri })
    const { params } = await proposal
    expect(params.requiredNamespaces).toEqual({ eip155: { chains: ['eip155:31337'], methods: ['personal_sign'], events: [] } })
    expect(params.proposer.metadata.url).toBe('http://dapp.test')
    expect(wallet.proposals().map((p) => p.id)).toEqual([params.id])
  })

  test('a rejected proposal rejects approval() with the wallet’s reason', async () => {
    const dapp = track(await peer(relay, 'dapp'))
    const wallet = track(await peer(relay, 'wallet'))
    const proposal = next(wallet, 'session_proposal')
    const { uri, approval } = await dapp.connect({ optionalNamespaces: { eip155 } })
    await wallet.pair({ uri })
    await wallet.reject({ id: (await proposal).id })
    const error = await approval().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PeerError)
    expect((error as PeerError).rpcCode).toBe(SdkErrors.userRejected.code)
    expect(wallet.proposals()).toEqual([])
  })

  test('the wallet cannot approve namespaces that miss what was required', async () => {
    const dapp = track(await peer(relay, 'dapp'))
    const wallet = track(await peer(relay, 'wallet'))
    const proposal = next(wallet, 'session_proposal')
    const { uri } = await dapp.connect({ requiredNamespaces: { eip155: { chains: ['eip155:1'], methods: ['personal_sign'], events: [] } } })
    await wallet.pair({ uri })
    const { id } = await proposal
    await expect(wallet.approve({ id, namespaces: grant(['eip155:31337']) })).rejects.toThrow('required chain eip155:1 was not granted')
  })

  test('an aborted connect drops its proposal and pairing', async () => {
    const dapp = track(await peer(relay, 'dapp'))
    const controller = new AbortController()
    const { approval } = await dapp.connect({ optionalNamespaces: { eip155 }, signal: controller.signal })
    controller.abort(new Error('closed the modal'))
    await expect(approval()).rejects.toThrow('closed the modal')
    expect(dapp.pairings()).toEqual([])
  })
})

describe('requests, events and updates', () => {
  test('default: a request reaches the wallet and its answer comes back', async () => {
    const { dapp, wallet, session } = await pair()
    wallet.events.on('session_request', ({ id, topic, params }) => {
      wallet
        .respond({ topic, response: { id, jsonrpc: '2.0', result: `signed:${String((params.request.params as string[])[0])}:${params.chainId}` } })
        .catch(closing)
    })
    const result = await dapp.request({ topic: session.topic, chainId: 'eip155:31338', request: { method: 'personal_sign', params: ['0x68690a', account] } })
    expect(result).toBe('signed:0x68690a:eip155:31338')
    expect(wallet.pendingRequests()).toEqual([])
  })

  test('a refused request rejects with the wallet’s error code', async () => {
    const { dapp, wallet, session } = await pair()
    wallet.events.on('session_request', ({ id, topic }) => {
      wallet.respond({ topic, response: { id, jsonrpc: '2.0', error: { code: 4001, message: 'User rejected the request.' } } }).catch(closing)
    })
    const error = await dapp
      .request({ topic: session.topic, chainId: 'eip155:31337', request: { method: 'personal_sign', params: [] } })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PeerError)
    expect((error as PeerError).rpcCode).toBe(4001)
  })

  test('requests arrive in the order they were sent, once each', async () => {
    const { dapp, wallet, session } = await pair()
    const seen: number[] = []
    wallet.events.on('session_request', ({ id, topic, params }) => {
      seen.push((params.request.params as number[])[0]!)
      wallet.respond({ topic, response: { id, jsonrpc: '2.0', result: true } }).catch(closing)
    })
    await Promise.all(
      [1, 2, 3, 4, 5, 6, 7, 8].map((n) =>
        dapp.request({ topic: session.topic, chainId: 'eip155:31337', request: { method: 'eth_sendTransaction', params: [n] } }),
      ),
    )
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
  })

  test('the dapp cannot ask for a chain or method outside the session', async () => {
    const { dapp, session } = await pair()
    await expect(dapp.request({ topic: session.topic, chainId: 'eip155:1', request: { method: 'personal_sign' } })).rejects.toThrow('does not include eip155:1')
    await expect(dapp.request({ topic: session.topic, chainId: 'eip155:31337', request: { method: 'eth_sign' } })).rejects.toThrow('did not grant eth_sign')
  })

  test('a wallet event reaches the dapp; an event outside the session is refused', async () => {
    const { dapp, wallet, session } = await pair()
    const event = next(dapp, 'session_event')
    await wallet.emit({ topic: session.topic, chainId: 'eip155:31338', event: { name: 'chainChanged', data: 31338 } })
    expect((await event).params).toEqual({ chainId: 'eip155:31338', event: { name: 'chainChanged', data: 31338 } })
    await expect(wallet.emit({ topic: session.topic, chainId: 'eip155:31338', event: { name: 'message', data: 1 } })).rejects.toThrow('did not ask for message')
  })

  test('the wallet updates the namespaces; the dapp may not', async () => {
    const { dapp, wallet, session } = await pair()
    const update = next(dapp, 'session_update')
    await wallet.update({ topic: session.topic, namespaces: grant(['eip155:31337']) })
    expect((await update).params.namespaces.eip155?.chains).toEqual(['eip155:31337'])
    expect(dapp.session(session.topic)?.namespaces.eip155?.chains).toEqual(['eip155:31337'])
    await expect(dapp.update({ topic: session.topic, namespaces: grant() })).rejects.toThrow('Only the wallet can update a session.')
  })

  test('extend and ping work from either side, on sessions and pairings', async () => {
    const { dapp, wallet, session } = await pair()
    const extended = next(wallet, 'session_extend')
    await dapp.extend({ topic: session.topic })
    await extended
    await wallet.ping({ topic: session.topic })
    const pairingPing = next(wallet, 'pairing_ping')
    await dapp.ping({ topic: session.pairingTopic })
    expect((await pairingPing).topic).toBe(session.pairingTopic)
  })
})

describe('ending a session', () => {
  test('default: the dapp disconnects, the wallet hears session_delete, both forget the session', async () => {
    const { dapp, wallet, session } = await pair()
    const deleted = next(wallet, 'session_delete')
    await dapp.disconnect({ topic: session.topic })
    expect((await deleted).topic).toBe(session.topic)
    expect(dapp.sessions()).toEqual([])
    expect(wallet.sessions()).toEqual([])
    const error = await dapp.request({ topic: session.topic, chainId: 'eip155:31337', request: { method: 'personal_sign' } }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SessionNotFoundError)
    expect((error as SessionNotFoundError).shortMessage).toBe('No session found')
  })

  test('the wallet disconnects and the dapp follows; the pairing outlives the session', async () => {
    const { dapp, wallet, session } = await pair()
    const deleted = next(dapp, 'session_delete')
    await wallet.disconnect({ topic: session.topic })
    await deleted
    expect(dapp.sessions()).toEqual([])
    expect(dapp.pairings()).toHaveLength(1)
    const pairingDeleted = next(wallet, 'pairing_delete')
    await dapp.disconnect({ topic: session.pairingTopic })
    await pairingDeleted
    expect(wallet.pairings()).toEqual([])
  })
})

describe('persistence and expiry', () => {
  test('default: a reloaded dapp restores its session and a request sent while the wallet was away arrives when it returns', async () => {
    const { dapp, wallet, session } = await pair()
    dapp.close()
    wallet.close()

    const dappAgain = track(await peer(relay, 'dapp', { storage: dapp.storage }))
    expect(dappAgain.session(session.topic)?.peer.metadata.name).toBe('wallet')
    const result = dappAgain.request({ topic: session.topic, chainId: 'eip155:31337', request: { method: 'personal_sign', params: ['0x01'] } })

    const walletAgain = track(await peer(relay, 'wallet', { storage: wallet.storage }))
    walletAgain.events.on('session_request', ({ id, topic }) =>
      walletAgain.respond({ topic, response: { id, jsonrpc: '2.0', result: 'late but here' } }).catch(closing),
    )
    expect(await result).toBe('late but here')
  })

  test('an unanswered request survives a wallet reload', async () => {
    const { dapp, wallet, session } = await pair()
    const received = next(wallet, 'session_request')
    const result = dapp.request({ topic: session.topic, chainId: 'eip155:31337', request: { method: 'personal_sign', params: ['0x02'] } })
    const { id } = await received
    wallet.close()
    const walletAgain = track(await peer(relay, 'wallet', { storage: wallet.storage }))
    expect(walletAgain.pendingRequests().map((r) => r.id)).toEqual([id])
    await walletAgain.respond({ topic: session.topic, response: { id, jsonrpc: '2.0', result: 'after reload' } })
    expect(await result).toBe('after reload')
  })

  test('expired sessions, proposals and pairings are removed from storage', async () => {
    let clock = Date.now()
    const now = () => clock
    const dapp = track(await peer(relay, 'dapp', { now }))
    const wallet = track(await peer(relay, 'wallet', { now }))
    const session = await settle(dapp, wallet)
    const pending = await dapp.connect({ optionalNamespaces: { eip155 } })

    clock += 8 * 86_400_000
    const expired = next(dapp, 'session_expire')
    const proposalExpired = next(dapp, 'proposal_expire')
    await dapp.cleanup()
    expect((await expired).topic).toBe(session.topic)
    expect((await proposalExpired).id).toBe(pending.id)
    await expect(pending.approval()).rejects.toBeInstanceOf(ExpiredError)
    expect(dapp.sessions()).toEqual([])
    expect(dapp.storage.getItem('latchkey.wc.sessions')).toBeNull()
    expect(dapp.storage.getItem('latchkey.wc.proposals')).toBeNull()
    // The active pairing lives 30 days, the unused one only 5 minutes.
    expect(dapp.pairings().map((p) => p.topic)).toEqual([session.pairingTopic])
    clock += 30 * 86_400_000
    await dapp.cleanup()
    expect(dapp.storage.getItem('latchkey.wc.pairings')).toBeNull()
  })

  test('a full storage is reported, not thrown, and the client carries on in memory', async () => {
    const backing = memoryStorage()
    const full = {
      getItem: backing.getItem,
      removeItem: backing.removeItem,
      setItem(key: string, value: string) {
        if (key.endsWith('.seed')) return backing.setItem(key, value)
        throw new DOMException('The quota has been exceeded.', 'QuotaExceededError')
      },
    }
    const dapp = track(await peer(relay, 'dapp', { storage: full }))
    const wallet = track(await peer(relay, 'wallet'))
    const errors: Error[] = []
    dapp.events.on('error', (error) => errors.push(error))
    const session = await settle(dapp, wallet)
    expect(dapp.session(session.topic)).toBeDefined()
    expect(errors.length).toBeGreaterThan(0)
    expect(errors.every((e) => e instanceof StorageWriteError && e.code === 'storage_write')).toBe(true)
  })
})
