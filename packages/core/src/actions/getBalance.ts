import { type Chain, createClient, http, type Client as ViemClient, type Transport } from 'viem'
import { getBalance as readBalance } from 'viem/actions'
import type { Client } from '../createClient.js'
import { ChainNotConfiguredError } from '../errors/connection.js'
import type { Address } from '../types.js'

export type GetBalanceParameters = { address: Address; chainId?: number | undefined }

export type GetBalanceReturnType = { value: bigint; decimals: number; symbol: string }

// A bare viem client per chain: the account modal reads balances, and a public client would bring
// every public action into its chunk.
const readers = new WeakMap<Client, Map<number, ViemClient<Transport, Chain>>>()

/**
 * The native balance of an address on a configured chain, read from the chain's RPC.
 *
 * @example
 * const { value, symbol } = await getBalance(client, { address })
 */
export async function getBalance(client: Client, parameters: GetBalanceParameters): Promise<GetBalanceReturnType> {
  const id = parameters.chainId ?? client.getState().chainId
  const chain = client.chains.find((c) => c.id === id)
  if (!chain) throw new ChainNotConfiguredError({ chainId: id })
  const byChain = readers.get(client) ?? new Map<number, ViemClient<Transport, Chain>>()
  readers.set(client, byChain)
  let reader = byChain.get(id)
  if (!reader) {
    reader = createClient({ chain, transport: http(chain.rpcUrls.default.http[0]) })
    byChain.set(id, reader)
  }
  const value = await readBalance(reader, { address: parameters.address })
  return { value, decimals: chain.nativeCurrency.decimals, symbol: chain.nativeCurrency.symbol }
}
