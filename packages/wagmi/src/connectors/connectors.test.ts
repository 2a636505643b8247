import { embedded as coreEmbedded, walletConnect as coreWalletConnect } from '@latchkey/core'
import { describe, expect, test } from 'vitest'
import { createConfig, http } from 'wagmi'
import { reconnect } from 'wagmi/actions'
import { testChains } from '../../../../test/chains.js'
import { createWagmiClient } from '../internal/createWagmiClient.js'
import { embedded } from './embedded.js'
import { walletConnect } from './walletConnect.js'

function setup() {
  const chains = testChains()
  return createConfig({
    chains,
    connectors: [walletConnect({ relayUrl: 'ws://127.0.0.1:9' }), embedded({ appName: 'Test', backendUrl: 'http://127.0.0.1:9' })],
    transports: { [chains[0].id]: http(), [chains[1].id]: http() },
    multiInjectedProviderDiscovery: false,
  })
}

describe('walletConnect() and embedded() on wagmi', () => {
  test('default: wagmi lists them before their code loads', () => {
    expect(setup().connectors.map(({ id, name, type }) => ({ id, name, type }))).toEqual([
      { id: 'walletConnect', name: 'WalletConnect', type: 'walletConnect' },
      { id: 'embedded', name: 'Email or passkey', type: 'embedded' },
    ])
  })

  test("behavior: they are core's connectors by id, name, type and icon (one source, @latchkey/core/connectors)", () => {
    const chains = testChains()
    const core = [coreWalletConnect({ relayUrl: 'ws://127.0.0.1:9' }), coreEmbedded({ appName: 'Test', backendUrl: 'http://127.0.0.1:9' })].map((create) =>
      create({ chains, stored: () => ({ activeAccount: null, sessionTopic: null, currentChain: null, providerChainId: null, namespaces: null }) }),
    )
    const info = ({ id, name, type, icon }: { id: string; name: string; type: string; icon?: string | undefined }) => ({ id, name, type, icon })
    expect(setup().connectors.map(info)).toEqual(core.map(info))
    expect(core.map(({ icon }) => icon)).toEqual([expect.stringMatching(/^data:image\/svg\+xml,/), expect.stringMatching(/^data:image\/svg\+xml,/)])
  })

  test('behavior: with nothing to restore, wagmi reconnect gets no provider and connects nothing', async () => {
    const config = setup()
    expect(await reconnect(config)).toEqual([])
    expect(config.state.status).toBe('disconnected')
    for (const connector of config.connectors) {
      expect(await connector.getProvider()).toBeUndefined()
      expect(await connector.isAuthorized()).toBe(false)
    }
  })

  test('behavior: the embedded connector says whether the backend offers guests, to wagmi and to the Latchkey modal, reading /auth/config once', async () => {
    const chains = testChains()
    const reads: string[] = []
    const config = createConfig({
      chains,
      connectors: [
        embedded({
          appName: 'Test',
          backendUrl: 'http://backend.test/',
          walletOptions: {
            fetch: async (input) => {
              reads.push(String(input))
              return new Response(JSON.stringify({ organizationId: 'org-1', kmsUrl: 'http://kms.test', guests: true }))
            },
          },
        }),
      ],
      transports: { [chains[0].id]: http(), [chains[1].id]: http() },
      multiInjectedProviderDiscovery: false,
    })
    const wagmiConnector = config.connectors[0] as unknown as { offersGuests(): Promise<boolean> }
    const latchkeyConnector = createWagmiClient(config).getConnectors()[0] as unknown as { offersGuests(): Promise<boolean> }
    expect([await wagmiConnector.offersGuests(), await latchkeyConnector.offersGuests()]).toEqual([true, true])
    expect(reads).toEqual(['http://backend.test/auth/config'])
  })
})
