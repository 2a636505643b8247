import type { Chain } from 'viem'
import type { Client } from '../createClient.js'
import type { BaseError } from '../errors/base.js'
import { ChainNotConfiguredError, type ChainNotConfiguredErrorType, type NetworkSwitchingNotAvailableErrorType } from '../errors/connection.js'
import { toProviderError } from '../errors/rpc.js'
import { requireConnection } from './internal.js'

export type SwitchChainParameters = { chainId: number; signal?: AbortSignal | undefined }

export type SwitchChainReturnType = Chain

export type SwitchChainErrorType = ChainNotConfiguredErrorType | NetworkSwitchingNotAvailableErrorType | BaseError

/**
 * Switches the connected wallet to a configured chain (`wallet_switchEthereumChain`; on 4902 the
 * chain is added with `wallet_addEthereumChain` first). Only chains in the client's config are
 * allowed (SPEC §5).
 *
 * @example
 * await switchChain(client, { chainId: 31338 })
 */
export async function switchChain(client: Client, parameters: SwitchChainParameters): Promise<SwitchChainReturnType> {
  const { chainId, signal } = parameters
  const chain = client.chains.find((c) => c.id === chainId)
  if (!chain) throw new ChainNotConfiguredError({ chainId })
  const { connector } = requireConnection(client)
  try {
    await connector.switchChain({ chainId, signal })
    return chain
  } catch (error) {
    const typed = toProviderError(error)
    client._internal.report('switchChain', typed)
    throw typed
  }
}
