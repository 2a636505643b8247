// The sign-in popup's two ends that run without the wallet's code: opening the window in the click,
// and the callback page in it handing the answer back. This module imports nothing, so that an
// app's callback page is only these few lines (the demo's is apps/demo/src/oauthCallback.ts).

// The message @latchkey/embedded's popup sign-in waits for, and its window's name and size (its
// MESSAGE_TYPE, OAUTH_WINDOW, OAUTH_WINDOW_FEATURES): kept in step by hand so that neither the
// click nor the callback page in the popup loads the embedded wallet.
const MESSAGE_TYPE = 'latchkey:oauth-callback'

/**
 * Opens the sign-in popup, empty, in a click handler (before anything async); pass it to
 * `signInWithOAuth`. Null where popups are blocked: the sign-in then redirects.
 *
 * @example
 * onClick={() => signInWithOAuth(client, { provider: 'google', popup: openOAuthPopup() })}
 */
export function openOAuthPopup(): Window | null {
  return typeof window === 'undefined' ? null : window.open('', 'latchkey-oauth', 'popup,width=480,height=680')
}

/**
 * In the sign-in popup, on the redirect page: hands the provider's answer to the page that opened
 * the popup and answers true; that page closes the popup once the answer is in. (Closing it here
 * could beat the message, and the opener would take it for the user closing the window.) Answers
 * false outside a popup: after a redirect sign-in, `completeOAuthRedirect` finishes instead.
 * Loads nothing.
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
