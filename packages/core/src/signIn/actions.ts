import type { Client } from '../createClient.js'
import type { BaseError } from '../errors/base.js'
import type { NotConnectedError } from '../errors/connection.js'
import { SignInNotConfiguredError } from './errors.js'
import type { SignInState, SignInStore } from './store.js'

// The sign-in state, read and watched from the page (the button renders it). The signing itself is
// in signIn.ts, which only the click that signs in needs: it stays out of the eager bundle.

export type SignInErrorType = SignInNotConfiguredError | NotConnectedError | BaseError

/** @internal The client's sign-in store; refuses a client created without a `signIn` adapter. */
export function store(client: Client): SignInStore {
  if (!client.auth) throw new SignInNotConfiguredError()
  return client.auth
}

/**
 * Ends the session at the backend and here. The wallet stays connected.
 *
 * @example
 * await signOut(client)
 */
export async function signOut(client: Client): Promise<void> {
  await store(client).end()
}

/** Where sign-in stands: status, session, error. */
export function getSignIn(client: Client): SignInState {
  return store(client).getState()
}

/** Calls `onChange` with each change of the sign-in state; returns the unsubscribe function. */
export function watchSignIn(client: Client, onChange: (state: SignInState) => void): () => void {
  return store(client).subscribe(onChange)
}
