import { EMBEDDED_ID, type EmbeddedConnector, type EmbeddedFlows, isEmbeddedConnector } from '../../connectors/embedded.js'
import type { Client } from '../../createClient.js'
import type { BaseError } from '../../errors/base.js'
import { ConnectorNotFoundError } from '../../errors/connection.js'
import { AccountAlreadyLinkedError, InvalidCodeError, LastLoginError, toEmbeddedFlowError } from '../../errors/embedded.js'
import { toProviderError } from '../../errors/rpc.js'
import { type ConnectReturnType, connect } from '../connect.js'

/** @internal Which embedded connector an action uses. */
export type EmbeddedTarget = { connector?: EmbeddedConnector | string | undefined }

/** @internal The embedded connector (by instance or id; default the one with id 'embedded'). */
export function embeddedConnector(client: Client, target: EmbeddedTarget = {}): EmbeddedConnector {
  const wanted = target.connector ?? EMBEDDED_ID
  const connector = typeof wanted === 'string' ? client.getConnectors().find((candidate) => candidate.id === wanted) : wanted
  if (!isEmbeddedConnector(connector)) throw new ConnectorNotFoundError({ id: typeof wanted === 'string' ? wanted : wanted.id })
  return connector
}

/**
 * @internal Runs an embedded flow: loads the wallet's code (once), and turns its errors into core's
 * classes (InvalidCodeError, WebauthnCeremonyError, ...), reported as every action's are.
 */
export async function runFlow<result>(
  client: Client,
  action: string,
  target: EmbeddedTarget,
  work: (flows: EmbeddedFlows, connector: EmbeddedConnector) => Promise<result>,
): Promise<result> {
  const connector = embeddedConnector(client, target)
  try {
    return await work(await connector.getFlows(), connector)
  } catch (error) {
    const typed = toEmbeddedFlowError(error)
    const reported = (typed instanceof Error && 'shortMessage' in typed ? typed : toProviderError(typed)) as BaseError
    // A mistyped code, another user's login, the last login: the user's to fix and the caller's to show, not failures to log.
    if (!(reported instanceof InvalidCodeError || reported instanceof AccountAlreadyLinkedError || reported instanceof LastLoginError))
      client._internal.report(action, reported)
    throw reported
  }
}

/** @internal After a sign-in flow: the connector connects the signed-in wallet. */
export function connectSignedIn(client: Client, connector: EmbeddedConnector): Promise<ConnectReturnType> {
  return connect(client, { connector })
}
