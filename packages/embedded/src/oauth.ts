import { EmbeddedError } from './errors.js'
import { openOAuthPopup, postOAuthCallback, readOAuthCallback } from './popup.js'
import type { EmbeddedWallet, EmbeddedWalletCredential } from './wallet.js'

// "Continue with Google / Apple": OpenID Connect, authorization code with PKCE, in a popup (a
// redirect where popups are blocked). Apple answers by form_post, through the backend. The nonce is the SHA-256 of the browser's new session key, so
// the ID token can only sign in that key (Turnkey's oauth_login rule); the backend exchanges the
// code, verifies the token against the issuer's JWKS and has the kms register the key.

/** The social sign-ins offered. */
export type OAuthProvider = 'google' | 'apple'

/** The social sign-in did not finish: the window was closed, the provider refused, or the answer was not ours. */
export class OAuthError extends EmbeddedError {
  override name = 'OAuthError'
  constructor(details: string, options: { cause?: unknown } = {}) {
    super('oauth_failed', 'The sign-in with the provider did not finish.', { details, ...options })
  }
}

/** What a pending sign-in keeps across the redirect (sessionStorage), and checks the answer against. */
type Pending = { provider: string; state: string; codeVerifier: string; sessionPublicKey: string; redirectUri: string; returnTo: string }

const PENDING_KEY = 'latchkey.embedded.oauth'

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')
const random = (length: number) => base64url(crypto.getRandomValues(new Uint8Array(length)))
const sha256 = async (text: string) => new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
const hex = (bytes: Uint8Array) => Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')

/** The nonce that binds an ID token to `publicKey`: hex SHA-256 of the key's hex. */
export async function oauthNonce(publicKey: string): Promise<string> {
  return hex(await sha256(publicKey))
}

/** Where the provider sends the browser back by default: `/oauth/callback` on this origin. */
export const defaultRedirectUri = () => `${location.origin}/oauth/callback`

/** In-app browsers (Instagram, Facebook, LINE, ...) open popups as new screens or not at all. */
const inAppBrowser = () => typeof navigator !== 'undefined' && /\b(FBAN|FBAV|Instagram|Line\/|Twitter|MicroMessenger)\b/.test(navigator.userAgent)

/** The code the provider answered for `pending`, once its state is checked; the provider's refusal as OAuthError. */
function codeOf(pending: Pending, answer: URLSearchParams): string {
  const error = answer.get('error')
  if (error) throw new OAuthError(`${pending.provider} answered ${error}${answer.get('error_description') ? `: ${answer.get('error_description')}` : ''}`)
  if (answer.get('state') !== pending.state) throw new OAuthError('The answer does not belong to this sign-in (state)')
  const code = answer.get('code')
  if (!code) throw new OAuthError('The provider sent no code')
  return code
}

async function finish(wallet: EmbeddedWallet, pending: Pending, answer: URLSearchParams): Promise<EmbeddedWalletCredential> {
  return wallet.signInWithOAuth({
    provider: pending.provider as OAuthProvider,
    sessionPublicKey: pending.sessionPublicKey,
    code: codeOf(pending, answer),
    codeVerifier: pending.codeVerifier,
    redirectUri: pending.redirectUri,
  })
}

/**
 * Signs in with Google or Apple. Opens the provider in a popup and resolves once signed in; where
 * a popup cannot open, the page goes to the provider and `completeOAuthRedirect` finishes on return.
 *
 * @example
 * const credential = await signInWithOAuth(wallet, { provider: 'google' })
 */
export async function signInWithOAuth(
  wallet: EmbeddedWallet,
  parameters: {
    provider: OAuthProvider
    redirectUri?: string | undefined
    mode?: 'popup' | 'redirect' | undefined
    /** A window the caller opened in the click itself (popup blockers allow only that); it is sent to the provider. */
    popup?: Window | null | undefined
  },
): Promise<EmbeddedWalletCredential> {
  // The key is made beside the config's fetch (the popup waits for both), as the passkey sign-in does.
  const [{ oauth }, sessionPublicKey] = await Promise.all([wallet.backendConfig(), wallet.newSessionKey()])
  const issuer = oauth?.[parameters.provider]
  if (!issuer) throw new OAuthError(`${parameters.provider} sign-in is not configured on the backend`)
  const { pending, answer } = await authorize(issuer, { ...parameters, sessionPublicKey })
  return finish(wallet, pending, answer)
}

/** A provider as `/auth/config` names it: its client id and where its sign-in starts. */
type Issuer = { clientId: string; authorizationEndpoint: string; responseMode?: 'query' | 'form_post' | undefined; redirectUri?: string | undefined }

/**
 * The authorization request to `issuer` (PKCE, the nonce bound to `sessionPublicKey`), in the
 * popup, or by redirect where none opens (never, when `popupOnly`: then OAuthError); answers
 * the provider's answer in the popup, and never resolves after a redirect.
 */
async function authorize(
  issuer: Issuer,
  parameters: {
    provider: string
    sessionPublicKey: string
    redirectUri?: string | undefined
    mode?: 'popup' | 'redirect' | undefined
    popup?: Window | null | undefined
    popupOnly?: boolean | undefined
  },
): Promise<{ pending: Pending; answer: URLSearchParams }> {
  const { sessionPublicKey } = parameters
  const callbackPage = parameters.redirectUri ?? defaultRedirectUri()
  // Apple posts its answer (response_mode=form_post), which a page cannot receive: it goes to the
  // backend, which sends the browser on to the page the state names (on an allowed origin only).
  const formPost = issuer.responseMode === 'form_post' && issuer.redirectUri !== undefined
  const pending: Pending = {
    provider: parameters.provider,
    state: formPost ? `${random(16)}.${base64url(new TextEncoder().encode(callbackPage))}` : random(16),
    codeVerifier: random(32),
    sessionPublicKey,
    redirectUri: formPost ? issuer.redirectUri! : callbackPage,
    returnTo: location.href,
  }
  const url = new URL(issuer.authorizationEndpoint)
  url.search = new URLSearchParams({
    client_id: issuer.clientId,
    redirect_uri: pending.redirectUri,
    response_type: 'code',
    scope: 'openid email',
    state: pending.state,
    nonce: await oauthNonce(sessionPublicKey),
    code_challenge: base64url(await sha256(pending.codeVerifier)),
    code_challenge_method: 'S256',
    ...(formPost ? { response_mode: 'form_post' } : {}),
  }).toString()

  let popup: Window | null = null
  if (parameters.popupOnly || (parameters.mode !== 'redirect' && !inAppBrowser())) {
    popup = parameters.popup && !parameters.popup.closed ? parameters.popup : openOAuthPopup()
    if (popup) popup.location.href = url.toString()
  } else parameters.popup?.close()
  if (!popup && parameters.popupOnly) throw new OAuthError('The sign-in window could not open; allow popups for this site and try again')
  if (!popup) {
    sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending))
    location.assign(url)
    // The page is leaving; completeOAuthRedirect finishes on the way back.
    return new Promise<never>(() => undefined)
  }
  const opened = popup
  const answer = await new Promise<URLSearchParams>((resolve, reject) => {
    const closed = setInterval(() => {
      if (!opened.closed) return
      cleanup()
      reject(new OAuthError('The sign-in window was closed'))
    }, 500)
    function onMessage(event: MessageEvent) {
      const search = readOAuthCallback(event, opened)
      if (search === undefined) return
      cleanup()
      opened.close()
      resolve(new URLSearchParams(search))
    }
    function cleanup() {
      clearInterval(closed)
      window.removeEventListener('message', onMessage)
    }
    window.addEventListener('message', onMessage)
  })
  return { pending, answer }
}

/**
 * The proof of an identity at `provider` for the signed-in user's session key (the ID token's
 * nonce binds it), for `POST /auth/user/link/oauth`: the provider's code, in a popup only (a
 * redirect would leave the page mid-link). Errors: OAuthError (not configured, no popup, window
 * closed, the provider refused).
 *
 * @example
 * const proof = await oauthLinkProof(wallet, { provider: 'github', sessionPublicKey })
 */
export async function oauthLinkProof(
  wallet: EmbeddedWallet,
  parameters: { provider: string; sessionPublicKey: string; popup?: Window | null | undefined; redirectUri?: string | undefined },
): Promise<{ provider: string; sessionPublicKey: string; code: string; codeVerifier: string; redirectUri: string }> {
  const { oauth } = await wallet.backendConfig()
  const issuer = (oauth as Readonly<Record<string, Issuer | undefined>> | undefined)?.[parameters.provider]
  if (!issuer || !Object.hasOwn(oauth!, parameters.provider)) {
    parameters.popup?.close()
    throw new OAuthError(`${parameters.provider} sign-in is not configured on the backend`)
  }
  const { pending, answer } = await authorize(issuer, { ...parameters, popupOnly: true })
  return {
    provider: parameters.provider,
    sessionPublicKey: parameters.sessionPublicKey,
    code: codeOf(pending, answer),
    codeVerifier: pending.codeVerifier,
    redirectUri: pending.redirectUri,
  }
}

/**
 * On the redirect page (`/oauth/callback`): inside the sign-in popup, hands the answer to the page
 * that opened it and answers 'popup' (the popup then closes); after a redirect sign-in, finishes it
 * and answers the credential with where to return; elsewhere answers undefined.
 *
 * @example
 * const done = await completeOAuthRedirect(wallet)
 * if (done && done !== 'popup') history.replaceState(null, '', done.returnTo)
 */
export async function completeOAuthRedirect(wallet: EmbeddedWallet): Promise<'popup' | { credential: EmbeddedWalletCredential; returnTo: string } | undefined> {
  const answer = new URLSearchParams(location.search)
  if (!answer.has('state')) return undefined
  if (postOAuthCallback()) return 'popup'
  const stored = sessionStorage.getItem(PENDING_KEY)
  if (!stored) return undefined
  sessionStorage.removeItem(PENDING_KEY)
  const pending = JSON.parse(stored) as Pending
  return { credential: await finish(wallet, pending, answer), returnTo: pending.returnTo }
}
