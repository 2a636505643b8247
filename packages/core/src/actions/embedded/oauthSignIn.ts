import type { Client } from '../../createClient.js'
import type { ConnectReturnType } from '../connect.js'
import { connectSignedIn, type EmbeddedTarget, runFlow } from './internal.js'

export type OAuthProviderName = 'google' | 'apple'

export type SignInWithOAuthParameters = EmbeddedTarget & {
  provider: OAuthProviderName
  /** Default 'popup', which falls back to a redirect where a popup cannot open. */
  mode?: 'popup' | 'redirect' | undefined
  /**
   * A window opened in the click itself (`openOAuthPopup()`): popup blockers let only a click open
   * one, and loading the wallet's code takes longer than a click lasts.
   */
  popup?: Window | null | undefined
}

/**
 * "Continue with Google / Apple": OpenID Connect with the nonce bound to the browser's new
 * session key; connects once signed in. After a redirect, `completeOAuthRedirect` finishes on the
 * way back. Errors: OAuthError (window closed, provider refused), CannotProceedError (the backend
 * refused the token).
 *
 * @example
 * await signInWithOAuth(client, { provider: 'google' })
 */
export function signInWithOAuth(client: Client, parameters: SignInWithOAuthParameters): Promise<ConnectReturnType> {
  return runFlow(client, 'signInWithOAuth', parameters, async (flows, connector) => {
    await flows.oauth.signIn(parameters.provider, parameters.mode, parameters.popup)
    return connectSignedIn(client, connector)
  })
}

/**
 * On the page the provider returns to: finishes a redirect sign-in and connects; answers where the
 * user started (to go back to), or undefined when there was nothing to finish.
 *
 * @example
 * const done = await completeOAuthRedirect(client)
 * if (done) history.replaceState(null, '', done.returnTo)
 */
export function completeOAuthRedirect(client: Client, parameters: EmbeddedTarget = {}): Promise<(ConnectReturnType & { returnTo: string }) | undefined> {
  return runFlow(client, 'completeOAuthRedirect', parameters, async (flows, connector) => {
    const done = await flows.oauth.completeRedirect()
    if (!done || done === 'popup') return undefined
    return { ...(await connectSignedIn(client, connector)), returnTo: done.returnTo }
  })
}
