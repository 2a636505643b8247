import { MAX_PAIRING_ATTEMPTS, PROVIDER_REINIT_WAIT_MS } from '@latchkey/constants'
import { getFreePort } from '@latchkey/devnet'
import { createRelay, type Relay } from '@latchkey/relay'
import { createSignClient, type SignClient, type WebSocketConstructor } from '@latchkey/walletconnect'
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest'
import { WebSocket } from 'ws'
import { testChains } from '../../../../test/chains.js'
import { connect } from '../actions/connect.js'
import { createClient } from '../createClient.js'
import { createMemoryStorage } from '../storage.js'
import { type WalletConnectParameters, walletConnect } from './walletConnect.js'

// SPEC §9's pairing limits where they take effect: the walletConnect connector, paired through our
// relay with a wallet (our wallet-role Sign client) that rejects every proposal.

let relay: Relay
const closers: (() => void)[] = []

beforeAll(async () => {
  relay = createRelay({ port: await getFreePort() })
  await relay.start()
})
afterEach(() => {
  for (const close of closers.splice(0)) close()
})
afterAll(() => relay.stop())

/** A wallet that rejects every proposal it is shown. */
async function rejectingWallet(): Promise<SignClient> {
  const client = await createSignClient({
    relayUrl: relay.url,
    metadata: { name: 'Rejecting Wallet', description: 'test', url: 'http://wallet.test', icons: [] },
    WebSocket: WebSocket as unknown as WebSocketConstructor,
  })
  closers.push(() => client.close())
  client.events.on('session_proposal', ({ id }) => void client.reject({ id }).catch(() => undefined))
  return client
}

/** A client with the walletConnect connector whose first `scans` pairing URIs `w` scans; the URIs it showed. */
function pairingWith(w: SignClient, extra: Partial<WalletConnectParameters> = {}, scans = Number.POSITIVE_INFINITY) {
  const client = createClient({
    chains: testChains(),
    connectors: [walletConnect({ relayUrl: relay.url, WebSocket: WebSocket as unknown as WebSocketConstructor, ...extra })],
    storage: createMemoryStorage(),
  })
  const connector = client.getConnectors().find((c) => c.id === 'walletConnect')!
  closers.push(
    () =>
      void connector
        .getProvider()
        .then((p) => (p as unknown as { close?: () => void }).close?.())
        .catch(() => undefined),
  )
  const uris: string[] = []
  client.subscribe((state) => {
    if (state.status !== 'pairing' || !state.pairingUri || uris.includes(state.pairingUri)) return
    uris.push(state.pairingUri)
    if (uris.length <= scans) void w.pair({ uri: state.pairingUri }).catch(() => undefined)
  })
  return { client, connector, uris }
}

describe('SPEC §9 pairing limits in the walletConnect connector', () => {
  test('behavior: after 10 rejected pairings, "Max auto pairing attempts reached"', async () => {
    const w = await rejectingWallet()
    // The wait between attempts is pinned below; here it is left out so ten attempts run quickly.
    const { client, connector, uris } = pairingWith(w, { reinitWaitMs: 0 })
    await expect(connect(client, { connector })).rejects.toMatchObject({
      code: 'max_pairing_attempts',
      shortMessage: 'Max auto pairing attempts reached',
    })
    expect(MAX_PAIRING_ATTEMPTS).toBe(10)
    expect(uris).toHaveLength(10)
    expect(new Set(uris).size).toBe(10)
  })

  test('behavior: after a rejection the provider is re-initialised and the next URI waits for the 1000 ms wait', async () => {
    // Timers of exactly the SPEC §9 wait are held until the test lets them run; every other timer
    // (the relay client's, the Sign client's) runs as usual.
    const held: { delay: number; run: () => void }[] = []
    const realSetTimeout = globalThis.setTimeout
    const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((handler: () => void, delay?: number, ...args: unknown[]) => {
      if (delay !== 1000) return realSetTimeout(handler, delay, ...args)
      held.push({ delay, run: () => handler(...(args as [])) })
      return realSetTimeout(() => undefined, 0)
    }) as typeof setTimeout)
    try {
      const w = await rejectingWallet()
      // The wallet rejects the first proposal only; the second URI then waits for a scan.
      const { client, connector, uris } = pairingWith(w, {}, 1)
      const messages: string[] = []
      connector.emitter.on('message', (message) => messages.push(message.type))
      const controller = new AbortController()
      const attempt = connect(client, { connector, signal: controller.signal }).catch((error: unknown) => error)
      await expect.poll(() => held.length, { timeout: 20_000 }).toBe(1)
      // Rejected and re-initialised, the provider waits: no second URI while the wait is held.
      expect(PROVIDER_REINIT_WAIT_MS).toBe(1000)
      expect(messages).toEqual(['display_uri', 'connection_rejected'])
      expect(uris).toHaveLength(1)
      held[0]!.run()
      await expect.poll(() => uris.length, { timeout: 20_000 }).toBe(2)
      controller.abort()
      expect(await attempt).toMatchObject({ code: 'pairing_aborted' })
    } finally {
      spy.mockRestore()
    }
  })
})
