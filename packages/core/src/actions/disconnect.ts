import type { Client } from '../createClient.js'

export type DisconnectReturnType = undefined

/**
 * Disconnects the wallet and clears the session, accounts, namespaces and the stored active
 * account and chain (SPEC §4). A wallet that fails to forget us does not keep us connected.
 *
 * @example
 * await disconnect(client)
 */
export async function disconnect(client: Client): Promise<DisconnectReturnType> {
  const { connection } = client.getState()
  const connector = connection && client.getConnectors().find((c) => c.id === connection.connectorId)
  client._internal.nextAttempt()
  client._internal.clearConnection()
  await connector?.disconnect().catch((error: unknown) => client._internal.report('disconnect', error))
}
