import { RECONNECT_TIMEOUT_MS } from '../constants.js'
import type { Client } from '../createClient.js'
import { TimeoutError } from '../errors/connection.js'
import type { Connector } from '../types.js'

export type ReconnectParameters = {
  /** How long to wait for the last used wallet to appear and answer. */
  timeoutMs?: number | undefined
}

export type ReconnectReturnType = { connected: boolean }

/**
 * Restores the last used connection on load, without prompting. Waits (bounded) for an EIP-6963
 * wallet that announces late; a wallet that no longer knows us is forgotten.
 *
 * @example
 * client.mount()
 * await reconnect(client)
 */
export async function reconnect(client: Client, parameters: ReconnectParameters = {}): Promise<ReconnectReturnType> {
  const connectorId = client.connections.getRecentConnectorId()
  if (!connectorId || client.getState().status !== 'disconnected') return { connected: false }
  if (!client.connections.read(connectorId).activeAccount) return { connected: false }

  const timeoutMs = parameters.timeoutMs ?? RECONNECT_TIMEOUT_MS
  const attempt = client._internal.nextAttempt()
  client._internal.dispatch({ type: 'reconnect', connectorId })
  try {
    const connector = await waitForConnector(client, connectorId, timeoutMs)
    const result = await connector.connect({ isReconnecting: true })
    if (!client._internal.isCurrentAttempt(attempt)) return { connected: false }
    if (result.accounts.length === 0) throw new Error('The wallet no longer shares an account.')
    client._internal.setConnection(connector, result)
    return { connected: true }
  } catch (error) {
    if (client._internal.isCurrentAttempt(attempt)) {
      client._internal.dispatch({ type: 'failed' })
      client._internal.forget(connectorId)
    }
    client._internal.report('reconnect', error)
    return { connected: false }
  }
}

function waitForConnector(client: Client, id: string, ms: number): Promise<Connector> {
  const find = () => client.getConnectors().find((c) => c.id === id)
  const found = find()
  if (found) return Promise.resolve(found)
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off()
      reject(new TimeoutError({ what: `Waiting for wallet "${id}"`, ms }))
    }, ms)
    const off = client.subscribeConnectors(() => {
      const connector = find()
      if (!connector) return
      clearTimeout(timer)
      off()
      resolve(connector)
    })
  })
}
