import type { Chain } from 'viem'
import type { Client } from '../createClient.js'
import { ChainNotConfiguredError } from '../errors/connection.js'

/**
 * @internal One value per client and configured chain (default: the current one), made on first
 * use: the viem clients the read actions use.
 */
export function perChain<value>(cache: WeakMap<Client, Map<number, value>>, client: Client, chainId: number | undefined, make: (chain: Chain) => value): value {
  const id = chainId ?? client.getState().chainId
  const chain = client.chains.find((c) => c.id === id)
  if (!chain) throw new ChainNotConfiguredError({ chainId: id })
  const values = cache.get(client) ?? new Map<number, value>()
  cache.set(client, values)
  let value = values.get(id)
  if (value === undefined) {
    value = make(chain)
    values.set(id, value)
  }
  return value
}
