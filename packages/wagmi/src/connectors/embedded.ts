import type { EIP1193Provider, EmbeddedFlows, EmbeddedParameters } from '@latchkey/core'
import type { CreateConnectorFn } from 'wagmi'
import { fromLatchkey } from '../internal/fromLatchkey.js'
import { stored } from './walletConnect.js'

export type { EmbeddedParameters }

/** What the embedded connector adds to a wagmi connector: the sign-in and wallet flows the Latchkey modal drives. */
export type EmbeddedProperties = {
  /** The social sign-ins the modal offers (from the parameters), known before the code loads. */
  readonly oauthProviders: readonly ('google' | 'apple')[]
  getFlows(): Promise<EmbeddedFlows>
}

// Core's EMBEDDED_ID and its connector's name and icon, so that wagmi can list it before its code loads.
const id = 'embedded'
const icon =
  'data:image/svg+xml,' +
  encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="8" fill="#6d28d9"/><path d="M8 11h16v10H8z" fill="none" stroke="#fff" stroke-width="2" stroke-linejoin="round"/><path d="m8 11 8 6 8-6" fill="none" stroke="#fff" stroke-width="2" stroke-linejoin="round"/></svg>',
  )
// The embedded wallet's own record (its session key): with none, there is nothing to restore.
const walletKey = 'latchkey.embedded.wallet'

/**
 * Latchkey's embedded wallet (email or passkey, keys held by the key-management service) as a
 * wagmi connector. Takes core's options (`appName`, `backendUrl` …). The wallet's code loads on
 * first use; `connect` succeeds once the user has signed in, which `LatchkeyWagmiProvider`'s modal
 * does (or the app, through `getFlows()`).
 *
 * @example
 * const config = createConfig({ chains: [mainnet], connectors: [embedded({ appName: 'My app' })], transports: { [mainnet.id]: http() } })
 */
export function embedded(parameters: EmbeddedParameters): CreateConnectorFn<EIP1193Provider, EmbeddedProperties> {
  return fromLatchkey<EmbeddedProperties>(
    { id, name: 'Email or passkey', type: 'embedded', icon },
    {
      load: async () => {
        const { embedded: create, store } = await import('../internal/latchkeyConnectors.js')
        return { create: create(parameters), store }
      },
      canRestore: () => stored(parameters.walletOptions?.storage, walletKey),
      properties: (load) => ({
        oauthProviders: parameters.oauthProviders ?? [],
        async getFlows() {
          const connector = await load()
          return (connector as unknown as EmbeddedProperties).getFlows()
        },
      }),
    },
  )
}
