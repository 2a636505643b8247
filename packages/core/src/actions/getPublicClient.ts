import { type Chain, createPublicClient, http, type PublicClient, type Transport } from 'viem'
import type { Client } from '../createClient.js'
import { perChain } from './perChain.js'

const cache = new WeakMap<Client, Map<number, PublicClient<Transport, Chain>>>()

/**
 * A viem public client for a configured chain, over its RPC url. One per chain and client.
 *
 * @example
 * const block = await getPublicClient(client, { chainId: 31337 }).getBlockNumber()
 */
export function getPublicClient(client: Client, { chainId }: { chainId?: number | undefined } = {}): PublicClient<Transport, Chain> {
  return perChain(
    cache,
    client,
    chainId,
    (chain) => createPublicClient({ chain, transport: http(chain.rpcUrls.default.http[0]) }) as PublicClient<Transport, Chain>,
  )
}
