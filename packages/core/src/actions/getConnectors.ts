import type { Client } from '../createClient.js'
import type { Connector } from '../types.js'

/**
 * The connectors the app can offer: its own, then one per discovered wallet.
 *
 * @example
 * for (const connector of getConnectors(client)) console.log(connector.name)
 */
export function getConnectors(client: Client): readonly Connector[] {
  return client.getConnectors()
}
