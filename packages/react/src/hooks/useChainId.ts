import { useSyncExternalStore } from 'react'
import { useClient } from './useClient.js'

/**
 * The current chain id.
 *
 * @example
 * const chainId = useChainId()
 */
export function useChainId(): number {
  const client = useClient()
  const snapshot = () => client.getState().chainId
  return useSyncExternalStore(client.subscribe, snapshot, snapshot)
}
