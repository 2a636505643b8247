import type { SignInParameters, SignInSession, SignInState } from '@latchkey/core'
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
  // The client's sign-in store itself (what getSignIn and watchSignIn read): the page needs no more of core's sign-in code.
  const subscribe = useCallback((listener: () => void) => client.auth?.subscribe(listener) ?? (() => {}), [client])
  const snapshot = () => client.auth?.getState() ?? none
  return useSyncExternalStore(subscribe, snapshot, snapshot)
}

/**
 * Sign-In with Ethereum for the connected wallet, with the state of `useSession`. The signing code
 * loads with the first `signIn()` or `signOut()`.
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
    signIn: useCallback((parameters?: SignInParameters) => import('./signInAction.js').then((module) => module.signIn(client, parameters)), [client]),
    signOut: useCallback(() => import('./signInAction.js').then((module) => module.signOut(client)), [client]),
  }
}
