import { useSyncExternalStore } from 'react'
import { useClient } from './useClient.js'

/**
 * The id of the wallet used last (for the "Recent" marker), refreshed on every state change.
 *
 * @example
 * const recent = useRecentConnectorId()
 */
export function useRecentConnectorId(): string | null {
  const client = useClient()
  const snapshot = () => client.connections.getRecentConnectorId()
  return useSyncExternalStore(client.subscribe, snapshot, () => null)
}
