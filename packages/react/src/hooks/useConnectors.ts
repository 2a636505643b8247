import type { Connector } from '@latchkey/core'
import { useSyncExternalStore } from 'react'
import { useClient } from './useClient.js'

/**
 * The connectors to offer: the app's own, then one per discovered wallet.
 *
 * @example
 * const connectors = useConnectors()
 */
export function useConnectors(): readonly Connector[] {
  const client = useClient()
  return useSyncExternalStore(client.subscribeConnectors, client.getConnectors, client.getConnectors)
}
