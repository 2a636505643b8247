import { type GetAccountReturnType, getAccount } from '@latchkey/core'
import { useCallback, useSyncExternalStore } from 'react'
import { useClient } from './useClient.js'

/**
 * The connected account, chain and status; re-renders when they change.
 *
 * @example
 * const { address, isConnected } = useAccount()
 */
export function useAccount(): GetAccountReturnType {
  const client = useClient()
  const subscribe = useCallback(
    (listener: () => void) => {
      const offState = client.subscribe(listener)
      const offConnectors = client.subscribeConnectors(listener)
      return () => (offState(), offConnectors())
    },
    [client],
  )
  const snapshot = () => getAccount(client)
  return useSyncExternalStore(subscribe, snapshot, snapshot)
}
