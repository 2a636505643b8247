import type { Client } from '../createClient.js'
import type { Connector } from '../types.js'

/**
 * Calls `onChange` when a wallet announces itself or goes away.
 *
 * @example
 * const stop = watchConnectors(client, { onChange: (connectors) => render(connectors) })
 */
export function watchConnectors(client: Client, { onChange }: { onChange(connectors: readonly Connector[]): void }): () => void {
  return client.subscribeConnectors(onChange)
}
