import type { EIP1193Provider, EmbeddedFlows, EmbeddedParameters } from '@latchkey/core'
import { EMBEDDED_INFO, EMBEDDED_WALLET_KEY, guestsOffered } from '@latchkey/core/connectors'
import type { CreateConnectorFn } from 'wagmi'
import { fromLatchkey } from '../internal/fromLatchkey.js'
import { stored } from './walletConnect.js'

export type { EmbeddedParameters }

/** What the embedded connector adds to a wagmi connector: the sign-in and wallet flows the Latchkey modal drives. */
export type EmbeddedProperties = {
  /** The social sign-ins the modal offers (from the parameters), known before the code loads. */
  readonly oauthProviders: readonly ('google' | 'apple')[]
  /** Whether the app backend offers "Continue as guest" (its /auth/config), read without the wallet's code. */
  offersGuests(): Promise<boolean>
  getFlows(): Promise<EmbeddedFlows>
}

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
    // Core's connector's id, name, type and icon: wagmi lists the connector before its code loads.
    EMBEDDED_INFO,
    {
      load: async () => {
        const { embedded: create, store } = await import('../internal/latchkeyConnectors.js')
        return { create: create(parameters), store }
      },
      canRestore: () => stored(parameters.walletOptions?.storage, EMBEDDED_WALLET_KEY),
      properties: (load) => ({
        oauthProviders: parameters.oauthProviders ?? [],
        offersGuests: guestsOffered(parameters),
        async getFlows() {
          const connector = await load()
          return (connector as unknown as EmbeddedProperties).getFlows()
        },
      }),
    },
  )
}
