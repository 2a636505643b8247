// The sign-in popup's two ends that run without the wallet's code: opening the window in the click,
// and the callback page in it handing the provider's answer back. This module imports nothing, so an
// app's callback page bundles only these few lines (the demo's is apps/demo/src/oauthCallback.ts),
// and the popup sign-in in oauth.ts shares its window name and message with them.

/** The sign-in popup's name and size: open it with these in the click, before anything async. */
export const OAUTH_WINDOW = 'latchkey-oauth'
export const OAUTH_WINDOW_FEATURES = 'popup,width=480,height=680'
const MESSAGE_TYPE = 'latchkey:oauth-callback'

/**
 * Opens the sign-in popup, empty, in a click handler (before anything async); pass it to the
 * sign-in. Null where popups are blocked: the sign-in then redirects.
 *
 * @example
 * onClick={() => signInWithOAuth(client, { provider: 'google', popup: openOAuthPopup() })}
 */
export function openOAuthPopup(): Window | null {
  return typeof window === 'undefined' ? null : window.open('', OAUTH_WINDOW, OAUTH_WINDOW_FEATURES)
}

/**
 * In the sign-in popup, on the redirect page: hands the provider's answer to the page that opened
 * the popup and answers true; that page closes the popup once the answer is in. (Closing it here
 * could beat the message, and the opener would take it for the user closing the window.) Answers
 * false outside a popup: after a redirect sign-in, `completeOAuthRedirect` finishes instead.
 *
 * @example
 * if (!postOAuthCallback()) await completeOAuthRedirect(client)
 */
export function postOAuthCallback(): boolean {
  if (typeof window === 'undefined') return false
  const opener = window.opener as Window | null
  if (!opener || opener === window || !new URLSearchParams(location.search).has('state')) return false
  opener.postMessage({ type: MESSAGE_TYPE, search: location.search }, location.origin)
  return true
}

/**
 * @internal The provider's answer (the callback page's query string) in a message from `popup`,
 * as `postOAuthCallback` sent it; undefined for any other message.
 */
export function readOAuthCallback(event: MessageEvent, popup: Window): string | undefined {
  if (event.origin !== location.origin || event.source !== popup) return undefined
  const data = event.data as { type?: unknown; search?: unknown } | null
  return data?.type === MESSAGE_TYPE && typeof data.search === 'string' ? data.search : undefined
}
