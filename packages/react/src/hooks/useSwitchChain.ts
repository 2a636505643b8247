import { type SwitchChainParameters, switchChain } from '@latchkey/core'
import type { Chain } from 'viem'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

/**
 * Switches the wallet to one of the configured `chains`.
 *
 * @example
 * const { switchChain, chains } = useSwitchChain()
 */
export function useSwitchChain(): ActionState<Chain> & {
  switchChain(parameters: SwitchChainParameters): Promise<Chain>
  chains: readonly Chain[]
} {
  const client = useClient()
  const [run, state] = useAction((parameters: SwitchChainParameters) => switchChain(client, parameters))
  return { ...state, switchChain: run, chains: client.chains }
}
