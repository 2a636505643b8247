import type { Client } from '../createClient.js'

/**
 * The current chain id: the wallet's when connected, otherwise the last used or default one.
 *
 * @example
 * const chainId = getChainId(client)
 */
export function getChainId(client: Client): number {
  return client.getState().chainId
}
