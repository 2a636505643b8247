import { type Chain, createClient, http, type Transport, type Client as ViemClient } from 'viem'
import type { Client } from '../createClient.js'
import type { Address } from '../types.js'
import { perChain } from './perChain.js'

export type GetBalanceParameters = { address: Address; chainId?: number | undefined }

export type GetBalanceReturnType = { value: bigint; decimals: number; symbol: string }

// A bare viem client per chain: the account modal reads balances, and a public client would bring
// every public action into its chunk. The request is sent directly rather than through viem's
// getBalance action, which imports the multicall path (call, ABI coding, contract errors: about
// 18 KiB gzip) that a client without batch.multicall never takes.
const readers = new WeakMap<Client, Map<number, ViemClient<Transport, Chain>>>()

/**
 * The native balance of an address on a configured chain, read from the chain's RPC.
 *
 * @example
 * const { value, symbol } = await getBalance(client, { address })
 */
export async function getBalance(client: Client, parameters: GetBalanceParameters): Promise<GetBalanceReturnType> {
  const reader = perChain(readers, client, parameters.chainId, (chain) => createClient({ chain, transport: http(chain.rpcUrls.default.http[0]) }))
  const value = BigInt(await reader.request({ method: 'eth_getBalance', params: [parameters.address, 'latest'] }))
  return { value, decimals: reader.chain.nativeCurrency.decimals, symbol: reader.chain.nativeCurrency.symbol }
}
