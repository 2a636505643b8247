import { describe, expect, test } from 'vitest'
import { testChains } from '../../../../test/chains.js'
import { createConnectionStore } from '../connectionStore.js'
import { createMemoryStorage } from '../storage.js'
import { embedded } from './embedded.js'
import { EMBEDDED_INFO, WALLETCONNECT_INFO, WALLETCONNECT_SESSION_KEY } from './info.js'
import { walletConnect } from './walletConnect.js'

describe('@latchkey/core/connectors', () => {
  test('default: exports', async () => {
    expect(Object.keys(await import('./info.js')).sort()).toMatchInlineSnapshot(`
      [
        "EMBEDDED_INFO",
        "EMBEDDED_WALLET_KEY",
        "STORAGE_PREFIX",
        "WALLETCONNECT_INFO",
        "WALLETCONNECT_SESSION_KEY",
        "connectionStorageKey",
        "guestsOffered",
      ]
    `)
  })

  test("behavior: core's connectors are who the info says", () => {
    const chains = testChains()
    const stored = () => ({ activeAccount: null, sessionTopic: null, currentChain: null, providerChainId: null, namespaces: null })
    const [wc, email] = [walletConnect({ relayUrl: 'ws://127.0.0.1:9' }), embedded({ appName: 'Test', backendUrl: 'http://127.0.0.1:9' })].map((create) =>
      create({ chains, stored }),
    )
    expect({ id: wc!.id, name: wc!.name, type: wc!.type, icon: wc!.icon }).toEqual(WALLETCONNECT_INFO)
    expect({ id: email!.id, name: email!.name, type: email!.type, icon: email!.icon }).toEqual(EMBEDDED_INFO)
  })

  test('behavior: the connection store keeps the WalletConnect session topic under WALLETCONNECT_SESSION_KEY', () => {
    const storage = createMemoryStorage()
    const store = createConnectionStore({ storage })
    store.report(WALLETCONNECT_INFO.id, {
      type: 'connect',
      accounts: ['0x70997970C51812dc3A010C7d01b50e0d17dc79C8'],
      chainId: 31337,
      session: { topic: 'a'.repeat(64), namespaces: {} },
    })
    expect(storage.getItem(WALLETCONNECT_SESSION_KEY)).toBe(JSON.stringify('a'.repeat(64)))
  })
})
