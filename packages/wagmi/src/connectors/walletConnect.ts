import type { EIP1193Provider, WalletConnectParameters } from '@latchkey/core'
import type { CreateConnectorFn } from 'wagmi'
import { fromLatchkey } from '../internal/fromLatchkey.js'

export type { WalletConnectParameters }

// Core's WALLETCONNECT_ID and its connector's name and icon, here so that wagmi can list the
// connector before its code loads.
const id = 'walletConnect'
const icon =
  'data:image/svg+xml,' +
  encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="8" fill="#3b99fc"/><path d="M9.6 12.2c3.5-3.4 9.3-3.4 12.8 0l.4.4c.2.2.2.5 0 .6l-1.5 1.4a.2.2 0 0 1-.3 0l-.6-.6a6.3 6.3 0 0 0-8.8 0l-.6.6a.2.2 0 0 1-.3 0l-1.5-1.4a.4.4 0 0 1 0-.6zm15.8 2.9 1.3 1.3c.2.2.2.5 0 .6l-6 5.8a.5.5 0 0 1-.6 0l-4.2-4.1a.1.1 0 0 0-.2 0l-4.2 4.1a.5.5 0 0 1-.6 0l-6-5.8a.4.4 0 0 1 0-.6l1.3-1.3a.5.5 0 0 1 .6 0l4.2 4.1a.1.1 0 0 0 .2 0l4.2-4.1a.5.5 0 0 1 .6 0l4.2 4.1a.1.1 0 0 0 .2 0l4.2-4.1a.5.5 0 0 1 .6 0z" fill="#fff"/></svg>',
  )
// Where core's connection store keeps the session topic (SPEC §3): with none, there is nothing to restore.
const sessionTopicKey = `latchkey.${id}.sessionTopic`

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
    { id, name: 'WalletConnect', type: 'walletConnect', icon },
    {
      load: async () => {
        const { walletConnect: create, store } = await import('../internal/latchkeyConnectors.js')
        return { create: create(parameters), store }
      },
      // The connection store lives in the page's storage, whatever the protocol's `storage` is.
      canRestore: () => stored(undefined, sessionTopicKey),
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
