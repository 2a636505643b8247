import type { Client } from '../createClient.js'
import type { Address } from '../types.js'
import { getPublicClient } from './getPublicClient.js'

export type GetBalanceParameters = { address: Address; chainId?: number | undefined }

export type GetBalanceReturnType = { value: bigint; decimals: number; symbol: string }

/**
 * The native balance of an address on a configured chain, read from the chain's RPC.
 *
 * @example
 * const { value, symbol } = await getBalance(client, { address })
 */
export async function getBalance(client: Client, parameters: GetBalanceParameters): Promise<GetBalanceReturnType> {
  const publicClient = getPublicClient(client, { chainId: parameters.chainId })
  const value = await publicClient.getBalance({ address: parameters.address })
  const { decimals, symbol } = publicClient.chain.nativeCurrency
  return { value, decimals, symbol }
}
