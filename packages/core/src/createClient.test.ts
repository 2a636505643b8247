import { defineChain } from 'viem'
import { mainnet } from 'viem/chains'
import { describe, expect, test } from 'vitest'
import { injected } from './connectors/injected.js'
import { createClient } from './createClient.js'
import { announceProvider } from './dev/devWallet.js'
import { InvalidChainsError, NoRpcUrlError } from './errors/connection.js'
import { createMemoryStorage } from './storage.js'

const chainA = defineChain({
  id: 31337,
  name: 'A',
  nativeCurrency: { name: 'E', symbol: 'E', decimals: 18 },
  rpcUrls: { default: { http: ['http://127.0.0.1:1'] } },
})
const chainB = defineChain({ ...chainA, id: 31338, name: 'B' })

const fakeProvider = () => ({ request: async () => [] })
const icon = 'data:image/svg+xml,%3Csvg/%3E'
const announce = (target: EventTarget, rdns: string, name: string, provider: unknown = fakeProvider()) =>
  announceProvider(target, { info: { uuid: crypto.randomUUID(), name, icon, rdns }, provider })

describe('createClient', () => {
  test('error: a chain without an RPC url', () => {
    const noRpc = defineChain({ ...chainA, rpcUrls: { default: { http: [] } } })
    expect(() => createClient({ chains: [noRpc] })).toThrow(NoRpcUrlError)
    expect(() => createClient({ chains: [noRpc] })).toThrow('No RPC url provided for chainId')
  })

  test('error: no chains', () => {
    expect(() => createClient({ chains: [] as never })).toThrow(InvalidChainsError)
  })

  test('behavior: default chain is 1 when configured, else the first chain', () => {
    expect(createClient({ chains: [chainA, mainnet], storage: createMemoryStorage() }).getState().chainId).toBe(1)
    expect(createClient({ chains: [chainB, chainA], storage: createMemoryStorage() }).getState().chainId).toBe(31338)
  })

  test('behavior: the last used chain is restored when it is still configured', () => {
    const storage = createMemoryStorage()
    storage.setItem('latchkey.lastUsedChainId', '31338')
    expect(createClient({ chains: [chainA, chainB], storage }).getState().chainId).toBe(31338)
    storage.setItem('latchkey.lastUsedChainId', '999')
    expect(createClient({ chains: [chainA, chainB], storage }).getState().chainId).toBe(31337)
  })

  test('behavior: SSR-safe: without a window, mount discovers nothing and nothing throws', () => {
    const client = createClient({ chains: [chainA], storage: createMemoryStorage() })
    const unmount = client.mount()
    expect(client.getConnectors()).toEqual([])
    unmount()
  })
})

describe('EIP-6963 discovery', () => {
  test('behavior: two wallets, one announcing twice, are listed once each', () => {
    const target = new EventTarget()
    announce(target, 'io.rabby', 'Rabby')
    const client = createClient({ chains: [chainA], storage: createMemoryStorage(), window: target })
    client.mount()
    announce(target, 'io.rabby', 'Rabby')
    announce(target, 'me.rainbow', 'Rainbow')
    target.dispatchEvent(new Event('eip6963:requestProvider'))
    expect(client.getConnectors().map((c) => [c.id, c.name, c.rdns, c.icon])).toEqual([
      ['io.rabby', 'Rabby', 'io.rabby', icon],
      ['me.rainbow', 'Rainbow', 'me.rainbow', icon],
    ])
  })

  test('behavior: a late announcement appears and subscribers hear of it', () => {
    const target = new EventTarget()
    const client = createClient({ chains: [chainA], storage: createMemoryStorage(), window: target })
    client.mount()
    const seen: string[][] = []
    client.subscribeConnectors((connectors) => seen.push(connectors.map((c) => c.id)))
    announce(target, 'app.late', 'Late Wallet')
    expect(seen).toEqual([['app.late']])
  })

  test('behavior: an unknown wallet is listed with the name and icon it announced', () => {
    const target = new EventTarget()
    const client = createClient({ chains: [chainA], storage: createMemoryStorage(), window: target })
    client.mount()
    announce(target, 'xyz.unheard-of', 'Unheard Of')
    expect(client.getConnectors()[0]).toMatchObject({ id: 'xyz.unheard-of', name: 'Unheard Of', icon })
  })

  test('behavior: malformed announcements and non-data icons are refused', () => {
    const target = new EventTarget()
    const client = createClient({ chains: [chainA], storage: createMemoryStorage(), window: target })
    client.mount()
    target.dispatchEvent(new CustomEvent('eip6963:announceProvider', { detail: { info: { name: 'x' }, provider: {} } }))
    target.dispatchEvent(new CustomEvent('eip6963:announceProvider', { detail: { info: { uuid: '1', name: 'NoProvider', icon, rdns: 'a.b' }, provider: {} } }))
    announceProvider(target, { info: { uuid: '2', name: 'Remote Icon', icon: 'https://evil.example/i.png', rdns: 'c.d' }, provider: fakeProvider() })
    expect(client.getConnectors().map((c) => [c.id, c.icon])).toEqual([['c.d', '']])
  })

  test('behavior: the legacy window.ethereum is offered only while nothing announces', () => {
    const target = Object.assign(new EventTarget(), { ethereum: { isMetaMask: true, request: async () => [] } })
    const client = createClient({ chains: [chainA], storage: createMemoryStorage(), window: target })
    client.mount()
    expect(client.getConnectors().map((c) => [c.id, c.name])).toEqual([['injected', 'MetaMask']])
    announce(target, 'io.rabby', 'Rabby')
    expect(client.getConnectors().map((c) => c.id)).toEqual(['io.rabby'])
  })

  test('behavior: an excluded-key wallet is listed under its dedicated key, once', () => {
    const target = new EventTarget()
    const client = createClient({ chains: [chainA], storage: createMemoryStorage(), window: target })
    client.mount()
    announce(target, 'io.metamask', 'MetaMask')
    expect(client.getConnectors().map((c) => [c.id, c.rdns])).toEqual([['metamask', 'io.metamask']])
  })

  test('behavior: a configured dedicated connector wins over the announcement of the same wallet', () => {
    const target = new EventTarget()
    const client = createClient({
      chains: [chainA],
      storage: createMemoryStorage(),
      window: target,
      connectors: [injected({ id: 'metamask', name: 'MetaMask (dedicated)', provider: fakeProvider() as never })],
    })
    client.mount()
    announce(target, 'io.metamask', 'MetaMask')
    announce(target, 'io.rabby', 'Rabby')
    expect(client.getConnectors().map((c) => [c.id, c.name])).toEqual([
      ['metamask', 'MetaMask (dedicated)'],
      ['io.rabby', 'Rabby'],
    ])
  })

  test("behavior: connectors read the app's UI language when they need it: the config's, then setLocale's", () => {
    const reads: (() => string | undefined)[] = []
    const dev = injected({ id: 'dev', name: 'Dev', provider: fakeProvider() as never })
    const probe = Object.assign((config: Parameters<typeof dev>[0]) => (reads.push(config.locale!), dev(config)), { id: 'dev' })
    const client = createClient({ chains: [chainA], storage: createMemoryStorage(), window: new EventTarget(), connectors: [probe], locale: 'pt-BR' })
    expect(reads.map((read) => read())).toEqual(['pt-BR'])
    client.setLocale('ar')
    expect(reads.map((read) => read())).toEqual(['ar'])
    client.setLocale(undefined)
    expect(reads.map((read) => read())).toEqual([undefined])
  })

  test('behavior: connector instances stay the same across remounts (StrictMode)', () => {
    const target = new EventTarget()
    announce(target, 'io.rabby', 'Rabby')
    const client = createClient({ chains: [chainA], storage: createMemoryStorage(), window: target })
    const unmount = client.mount()
    const first = client.getConnectors()[0]
    unmount()
    client.mount()
    expect(client.getConnectors()[0]).toBe(first)
  })
})
