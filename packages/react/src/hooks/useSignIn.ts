import { getSignIn, type SignInParameters, type SignInSession, type SignInState, signIn, signOut, watchSignIn } from '@latchkey/core'
import { useCallback, useSyncExternalStore } from 'react'
import { useClient } from './useClient.js'

const none: SignInState = { status: 'idle', session: undefined, error: undefined }

/**
 * Where sign-in stands, re-rendering on each change: `status` (idle, signing, verifying, signedIn,
 * error), the backend's `session` and the last `error`. Idle when the client has no sign-in adapter.
 *
 * @example
 * const { session } = useSession()
 */
export function useSession(): SignInState {
  const client = useClient()
  const subscribe = useCallback((listener: () => void) => (client.auth ? watchSignIn(client, listener) : () => {}), [client])
  const snapshot = () => (client.auth ? getSignIn(client) : none)
  return useSyncExternalStore(subscribe, snapshot, snapshot)
}

/**
 * Sign-In with Ethereum for the connected wallet, with the state of `useSession`.
 *
 * @example
 * const { signIn, signOut, status, error } = useSignIn()
 */
export function useSignIn(): SignInState & {
  signIn(parameters?: SignInParameters): Promise<SignInSession>
  signOut(): Promise<void>
  isPending: boolean
} {
  const client = useClient()
  const state = useSession()
  return {
    ...state,
    isPending: state.status === 'signing' || state.status === 'verifying',
    signIn: useCallback((parameters?: SignInParameters) => signIn(client, parameters), [client]),
    signOut: useCallback(() => signOut(client), [client]),
  }
}
