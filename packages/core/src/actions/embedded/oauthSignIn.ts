import type { Client } from '../../createClient.js'
import type { ConnectReturnType } from '../connect.js'
import { connectSignedIn, type EmbeddedTarget, runFlow } from './internal.js'

export type OAuthProviderName = 'google' | 'apple'

export type SignInWithOAuthParameters = EmbeddedTarget & {
  provider: OAuthProviderName
  /** Default 'popup', which falls back to a redirect where a popup cannot open. */
  mode?: 'popup' | 'redirect' | undefined
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
    await flows.oauth.signIn(parameters.provider, parameters.mode)
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

// The message @latchkey/embedded's popup sign-in waits for (its MESSAGE_TYPE): kept in step by hand
// so that the callback page in a popup need not load the embedded wallet at all.
const MESSAGE_TYPE = 'latchkey:oauth-callback'

/**
 * In the sign-in popup, on the redirect page: hands the provider's answer to the page that opened
 * the popup and answers true (close the popup then). Loads nothing.
 *
 * @example
 * if (location.pathname === '/oauth/callback' && postOAuthCallback()) window.close()
 */
export function postOAuthCallback(): boolean {
  if (typeof window === 'undefined') return false
  const opener = window.opener as Window | null
  if (!opener || opener === window || !new URLSearchParams(location.search).has('state')) return false
  opener.postMessage({ type: MESSAGE_TYPE, search: location.search }, location.origin)
  return true
}
