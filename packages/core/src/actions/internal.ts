import type { Client } from '../createClient.js'
import { ConnectorNotFoundError, NotConnectedError } from '../errors/connection.js'
import type { Address, Connector } from '../types.js'

/** @internal The live connection with its connector, or NotConnectedError (SPEC §5). */
export function requireConnection(client: Client): { connector: Connector; account: Address; chainId: number } {
  const { connection } = client.getState()
  const connector = connection && client.getConnectors().find((c) => c.id === connection.connectorId)
  if (!connection || !connector) throw new NotConnectedError()
  return { connector, account: connection.accounts[0], chainId: connection.chainId }
}

/** @internal A connector by id or instance. */
export function resolveConnector(client: Client, connector: Connector | string): Connector {
  if (typeof connector !== 'string') return connector
  const found = client.getConnectors().find((c) => c.id === connector)
  if (!found) throw new ConnectorNotFoundError({ id: connector })
  return found
}
