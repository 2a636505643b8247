import { type EIP1193Provider, type EmbeddedFlows, type EmbeddedParameters, isEmbeddedConnector, embedded as latchkeyEmbedded } from '@latchkey/core'
import type { CreateConnectorFn } from 'wagmi'
import { fromLatchkey } from '../internal/fromLatchkey.js'

export type { EmbeddedParameters }

/** What the embedded connector adds to a wagmi connector: the sign-in and wallet flows the Latchkey modal drives. */
export type EmbeddedProperties = { getFlows(): Promise<EmbeddedFlows> }

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
  // The wallet keeps its own record (the session key); account and chain are wagmi's.
  return fromLatchkey<EmbeddedProperties>(latchkeyEmbedded(parameters), {
    properties: (connector) => {
      if (!isEmbeddedConnector(connector)) throw new TypeError('The embedded connector has no flows.')
      return { getFlows: () => connector.getFlows() }
    },
  })
}
