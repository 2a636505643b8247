import type { EIP1193Provider, WalletConnectParameters } from '@latchkey/core'
import { WALLETCONNECT_INFO, WALLETCONNECT_SESSION_KEY } from '@latchkey/core/connectors'
import type { CreateConnectorFn } from 'wagmi'
import { fromLatchkey } from '../internal/fromLatchkey.js'

export type { WalletConnectParameters }

/**
 * WalletConnect for wagmi over Latchkey's own protocol code and relay (our relay needs no project
 * id). Takes core's options (`relayUrl`, `projectId`, `metadata`, `rpcMap`, `WebSocket`,
 * `showQrModal` …). The connector's code and the protocol load on first use. The pairing URI
 * reaches listeners as `emitter.emit('message', { type: 'display_uri', data: uri })`, as with
 * wagmi's own connector.
 *
 * @example
 * import { createConfig, http } from 'wagmi'
 * import { walletConnect } from '@latchkey/wagmi'
 * const config = createConfig({ chains: [mainnet], connectors: [walletConnect({ relayUrl: 'wss://relay.example' })], transports: { [mainnet.id]: http() } })
 */
export function walletConnect(parameters: WalletConnectParameters = {}): CreateConnectorFn<EIP1193Provider> {
  return fromLatchkey(
    // Core's connector's id, name, type and icon: wagmi lists the connector before its code loads.
    WALLETCONNECT_INFO,
    {
      load: async () => {
        const { walletConnect: create, store } = await import('../internal/latchkeyConnectors.js')
        return { create: create(parameters), store }
      },
      // The connection store lives in the page's storage, whatever the protocol's `storage` is.
      canRestore: () => stored(undefined, WALLETCONNECT_SESSION_KEY),
    },
  )
}

/** @internal Whether `key` holds something in `storage` (default localStorage); blocked storage holds nothing. */
export function stored(storage: { getItem(key: string): string | null } | undefined, key: string): boolean {
  try {
    return (storage ?? (typeof localStorage === 'undefined' ? undefined : localStorage))?.getItem(key) != null
  } catch {
    return false
  }
}
