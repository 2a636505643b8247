import { type EIP1193Provider, walletConnect as latchkeyWalletConnect, type WalletConnectParameters } from '@latchkey/core'
import type { CreateConnectorFn } from 'wagmi'
import { fromLatchkey } from '../internal/fromLatchkey.js'

export type { WalletConnectParameters }

/**
 * WalletConnect for wagmi over Latchkey's own protocol code and relay (our relay needs no project
 * id). Takes core's options (`relayUrl`, `projectId`, `metadata`, `rpcMap`, `WebSocket`,
 * `showQrModal` …). The protocol loads on first use. The pairing URI reaches listeners as
 * `emitter.emit('message', { type: 'display_uri', data: uri })`, as with wagmi's own connector.
 *
 * @example
 * import { createConfig, http } from 'wagmi'
 * import { walletConnect } from '@latchkey/wagmi'
 * const config = createConfig({ chains: [mainnet], connectors: [walletConnect({ relayUrl: 'wss://relay.example' })], transports: { [mainnet.id]: http() } })
 */
export function walletConnect(parameters: WalletConnectParameters = {}): CreateConnectorFn<EIP1193Provider> {
  // The session is kept by core's connection store (a reload restores it without loading the
  // protocol for apps that never paired); the account and chain are wagmi's to keep.
  return fromLatchkey(latchkeyWalletConnect(parameters))
}
