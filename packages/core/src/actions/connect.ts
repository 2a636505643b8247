import type { Client } from '../createClient.js'
import type { BaseError } from '../errors/base.js'
import { CancelledError, ChainNotConfiguredError, type ConnectorNotFoundErrorType } from '../errors/connection.js'
import { toProviderError } from '../errors/rpc.js'
import type { Address, Connector, OneClickSignIn } from '../types.js'
import { resolveConnector } from './internal.js'

export type ConnectParameters = {
  /** The connector, or its id. */
  connector: Connector | string
  /** Ask the wallet to switch to this chain after connecting. Must be configured. */
  chainId?: number | undefined
  /** Cancels the wait for the wallet ("Cancel" in the pending view). */
  signal?: AbortSignal | undefined
  /** @internal One-click sign-in fields; `connectAndSignIn` passes them. */
  signIn?: OneClickSignIn | undefined
}

export type ConnectReturnType = { accounts: readonly Address[]; chainId: number; cacaos?: readonly unknown[] | undefined }

export type ConnectErrorType = BaseError | ConnectorNotFoundErrorType

/**
 * Connects a wallet. The state moves `connecting → connected`, or back to where it was on failure;
 * a later attempt supersedes an earlier one still waiting.
 *
 * @example
 * const { accounts, chainId } = await connect(client, { connector: 'io.metamask' })
 */
export async function connect(client: Client, parameters: ConnectParameters): Promise<ConnectReturnType> {
  const connector = resolveConnector(client, parameters.connector)
  const { chainId, signal, signIn } = parameters
  if (chainId !== undefined && !client.chains.some((c) => c.id === chainId)) throw new ChainNotConfiguredError({ chainId })
  const attempt = client._internal.nextAttempt()
  client._internal.dispatch({ type: 'connect', connectorId: connector.id, needsInit: connector.type === 'walletConnect' })
  const offMessage = connector.emitter.on('message', ({ type, data }) => {
    if (type === 'display_uri' && typeof data === 'string' && client._internal.isCurrentAttempt(attempt))
      client._internal.dispatch({ type: 'pairing', uri: data })
  })
  try {
    const result = await connector.connect({ chainId, signal, ...(signIn ? { signIn } : {}) })
    if (!client._internal.isCurrentAttempt(attempt)) throw new CancelledError({ details: 'A newer connect attempt replaced this one.' })
    client._internal.setConnection(connector, result.accounts, result.chainId)
    return result
  } catch (error) {
    const typed = toProviderError(error)
    if (client._internal.isCurrentAttempt(attempt)) client._internal.dispatch({ type: 'failed' })
    client._internal.report(`connect ${connector.name}`, typed)
    throw typed
  } finally {
    offMessage()
  }
}
