import { type ConnectReturnType, type OAuthProviderName, openOAuthPopup, signInWithOAuth } from '@latchkey/core'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

/**
 * "Continue with Google / Apple" for the embedded wallet: call `signIn` from the click itself (it
 * opens the popup first; a redirect where popups are blocked). Errors: OAuthError, CannotProceedError.
 *
 * @example
 * const { signIn, isPending } = useOAuthSignIn()
 * <button onClick={() => signIn('google')}>Continue with Google</button>
 */
export function useOAuthSignIn(): ActionState<ConnectReturnType> & { signIn(provider: OAuthProviderName, popup?: Window | null): Promise<ConnectReturnType> } {
  const client = useClient()
  const [run, state] = useAction((provider: OAuthProviderName, popup: Window | null) => signInWithOAuth(client, { provider, popup }))
  return { ...state, signIn: (provider, popup) => run(provider, popup === undefined ? openOAuthPopup() : popup) }
}
