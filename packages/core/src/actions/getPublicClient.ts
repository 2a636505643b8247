import { type Chain, createPublicClient, http, type PublicClient, type Transport } from 'viem'
import type { Client } from '../createClient.js'
import { ChainNotConfiguredError } from '../errors/connection.js'

const cache = new WeakMap<Client, Map<number, PublicClient<Transport, Chain>>>()

/**
 * A viem public client for a configured chain, over its RPC url. One per chain and client.
 *
 * @example
 * const block = await getPublicClient(client, { chainId: 31337 }).getBlockNumber()
 */
export function getPublicClient(client: Client, { chainId }: { chainId?: number | undefined } = {}): PublicClient<Transport, Chain> {
  const id = chainId ?? client.getState().chainId
  const chain = client.chains.find((c) => c.id === id)
  if (!chain) throw new ChainNotConfiguredError({ chainId: id })
  const clients = cache.get(client) ?? new Map<number, PublicClient<Transport, Chain>>()
  cache.set(client, clients)
  let publicClient = clients.get(id)
  if (!publicClient) {
    publicClient = createPublicClient({ chain, transport: http(chain.rpcUrls.default.http[0]) }) as PublicClient<Transport, Chain>
    clients.set(id, publicClient)
  }
  return publicClient
}
