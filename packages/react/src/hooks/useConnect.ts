import { type Connector, type ConnectParameters, type ConnectReturnType, connect, connectAndSignIn } from '@latchkey/core'
import { useCallback, useRef, useState } from 'react'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

export type UseConnectParameters = Omit<ConnectParameters, 'signal' | 'signIn'> & {
  /** Sign in too (the client needs `signIn`): with WalletConnect in the same approval where the wallet can. */
  signIn?: boolean | undefined
}

export type UseConnectReturnType = ActionState<ConnectReturnType> & {
  connect(parameters: UseConnectParameters): Promise<ConnectReturnType>
  /** Stops waiting for the wallet; the pending connect rejects with CancelledError. */
  cancel(): void
  /** The connector of the attempt in progress or last finished. */
  pendingConnector: Connector | string | undefined
}

/**
 * Connects a wallet, with pending and error state and a way out.
 *
 * @example
 * const { connect, cancel, error } = useConnect()
 * await connect({ connector })
 */
export function useConnect(): UseConnectReturnType {
  const client = useClient()
  const controller = useRef<AbortController>(undefined)
  const [pendingConnector, setPendingConnector] = useState<Connector | string>()
  const [run, state] = useAction(({ signIn, ...parameters }: UseConnectParameters) => {
    controller.current?.abort()
    const current = new AbortController()
    controller.current = current
    setPendingConnector(parameters.connector)
    if (signIn && client.auth) return connectAndSignIn(client, { ...parameters, signal: current.signal })
    return connect(client, { ...parameters, signal: current.signal })
  })
  const cancel = useCallback(() => controller.current?.abort(), [])
  return { ...state, connect: run, cancel, pendingConnector }
}
