import { type ConnectReturnType, type EmbeddedConnector, getGuestSignIn, isEmbeddedConnector, signInAsGuest } from '@latchkey/core'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'
import { useConnectors } from './useConnectors.js'
import { useRead } from './useRead.js'

export type UseGuestSignInReturnType = ActionState<ConnectReturnType> & {
  /**
   * "Continue as guest": a wallet with no login, then connected. Call it from the user's click,
   * after they read that clearing this browser's data, or a day passing, loses a guest wallet
   * unless they add an email, a passkey or a social login.
   */
  signIn(): Promise<ConnectReturnType>
  /** Whether the app backend offers guests (`GET /auth/config`): undefined while that is being read, false without an embedded connector. */
  offered: boolean | undefined
}

/**
 * Guest sign-in for the embedded wallet without our modal. `offered` reads the backend's
 * `guests` setting (loading the embedded wallet's code); `signIn` creates the guest wallet.
 * Errors: CannotProceedError (no guests here, a rate limit).
 *
 * @example
 * const guest = useGuestSignIn()
 * if (guest.offered) <button onClick={() => guest.signIn()}>Continue as guest</button>
 */
export function useGuestSignIn(parameters: { connector?: EmbeddedConnector | undefined } = {}): UseGuestSignInReturnType {
  const client = useClient()
  const connectors = useConnectors()
  const connector = parameters.connector ?? (connectors.find(isEmbeddedConnector) as EmbeddedConnector | undefined)
  const [signIn, state] = useAction(() => signInAsGuest(client, { connector }))
  const offered = useRead([client, connector], connector !== undefined, () => getGuestSignIn(client, { connector }))
  return { ...state, signIn, offered: connector ? (offered.status === 'success' ? offered.data : offered.status === 'error' ? false : undefined) : false }
}
