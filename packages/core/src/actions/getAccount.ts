import type { Chain } from 'viem'
import type { Client } from '../createClient.js'
import type { Address, ConnectionStatus, Connector } from '../types.js'

export type GetAccountReturnType = {
  address: Address | undefined
  addresses: readonly Address[]
  chainId: number
  /** The configured chain the wallet is on, or undefined when it is on one we do not support. */
  chain: Chain | undefined
  connector: Connector | undefined
  status: ConnectionStatus
  isConnected: boolean
}

/**
 * The connected account, chain and status. The result is cached per state, so it can feed
 * `useSyncExternalStore` directly.
 *
 * @example
 * const { address, chainId, isConnected } = getAccount(client)
 */
export function getAccount(client: Client): GetAccountReturnType {
  const state = client.getState()
  const connectors = client.getConnectors()
  const cached = cache.get(client)
  if (cached && cached.state === state && cached.connectors === connectors) return cached.value
  const connection = state.connection
  const value: GetAccountReturnType = {
    address: connection?.accounts[0],
    addresses: connection?.accounts ?? [],
    chainId: state.chainId,
    chain: client.chains.find((c) => c.id === state.chainId),
    connector: connection ? connectors.find((c) => c.id === connection.connectorId) : undefined,
    status: state.status,
    isConnected: state.status === 'connected',
  }
  cache.set(client, { state, connectors, value })
  return value
}

const cache = new WeakMap<Client, { state: unknown; connectors: unknown; value: GetAccountReturnType }>()
