import type { Backend } from './backend.js'
import { AccountNotFoundError } from './errors.js'
import { kmsCall } from './kmsCalls.js'
import { oauthLinkProof } from './oauth.js'
import { createPasskey } from './passkeys.js'
import type { EmbeddedWallet } from './wallet.js'
import type { WalletContext } from './walletContext.js'

// Account linking (issue 28), the browser's side: one user, many logins. Each kind of login is
// proven by its own flow while signed in, and each has one function here that carries its proof
// to the backend's `/auth/user/link/*` route, so how one kind is proven changes in one place.

/** How a login signs in: `oauth:<provider>` for each configured OpenID Connect provider. */
export type LoginKind = 'email' | 'passkey' | 'wallet' | `oauth:${string}`

/** A login linked to the user, as `GET /auth/user` answers it. */
export type LinkedLogin = { id: string; kind: LoginKind; label: string; linkedAt: string }

/** The signed-in user as `GET /auth/user` answers: their logins (oldest first), wallets and second factors. */
export type EmbeddedUser = {
  userId: string
  organizationId: string
  logins: LinkedLogin[]
  wallets: { address: string; kind: 'embedded' | 'external' }[]
  mfa: { enrolled: MfaFactor[] }
  /** A guest account (`POST /auth/guest`) with no login linked yet: clearing the browser, or its key's day passing, loses it. */
  guest?: true | undefined
}

/** A second factor the kms holds for the user. */
export type MfaFactor = { factorId: string; type: 'totp' | 'passkey'; name: string; enrolledAt: string; lockedUntil?: string | undefined }

/** What linking needs of the wallet beyond its public face: the backend (the links that add a way in are the wallet's own, walletLinks.ts). */
export type LinkingPort = { backend: Backend }

/** @internal The wallet's linking port: its backend. */
export const linkingPortOf = (context: WalletContext): LinkingPort => ({ backend: context.backend })

/** A configured social sign-in a user may link: its name (`google`, `github`, …) and what users read. */
export type LinkableProvider = { name: string; displayName: string }

const BUILT_IN_NAMES: Readonly<Record<string, string>> = { google: 'Google', apple: 'Apple' }

/**
 * The linking flows of an embedded wallet: read the user, link a login of each kind, unlink one.
 * Refusals: AccountAlreadyLinkedError (the login is another user's; nothing changed),
 * LastLoginError (unlinking the last login), InvalidCodeError (email code), WebauthnCeremonyError,
 * OAuthError, CannotProceedError (anything else the backend refuses, with its words).
 *
 * @example
 * const linking = linkingFlows(wallet, port, { rpId: location.hostname, appName: 'Demo' })
 * await linking.linkPasskey('Laptop')
 */
export function linkingFlows(wallet: EmbeddedWallet, port: LinkingPort, options: { rpId: string; appName: string }) {
  const { backend } = port
  function signedIn() {
    const current = wallet.current
    if (!current) throw new AccountNotFoundError({ details: 'Sign in first: a login is linked to the signed-in user.' })
    return current
  }
  return {
    /**
     * `GET /auth/user`: the user's logins, wallets and second factors; `null` while the app backend
     * has no session for them (signed out there, or the app ended it when the account changed).
     */
    getUser(): Promise<EmbeddedUser | null> {
      signedIn()
      return backend.get<EmbeddedUser | null>('/auth/user')
    },

    /** The social sign-ins the backend offers (from `/auth/config`), Google and Apple first. */
    async providers(): Promise<LinkableProvider[]> {
      const { oauth } = await wallet.backendConfig()
      return Object.entries((oauth ?? {}) as Readonly<Record<string, { displayName?: string } | undefined>>)
        .filter(([, config]) => config !== undefined)
        .map(([name, config]) => ({ name, displayName: config?.displayName ?? BUILT_IN_NAMES[name] ?? name }))
    },

    /**
     * Links an email: the kms emails it a code, the user types it in the consent frame, which seals
     * it to the kms, then approves the email there, and their own key stamps it (walletLinks.ts).
     * Cancel in the frame is ProviderRpcError 4001.
     */
    async linkEmail(email: string): Promise<LinkedLogin> {
      signedIn()
      return (await wallet.linkEmail(email.trim())) as LinkedLogin
    },

    /**
     * Links a new passkey: the browser creates it (the user's passkeys excluded), and the kms
     * registers it for the user, who may then sign in with it.
     */
    async linkPasskey(name = 'Passkey'): Promise<LinkedLogin> {
      const current = signedIn()
      const registered = await wallet.withSession((kms) =>
        kmsCall(() => kms.getAuthenticators({ organizationId: current.organizationId, userId: current.userId })),
      )
      const { challenge, attestation } = await createPasskey({
        rpId: options.rpId,
        rpName: options.appName,
        userName: current.credential.address,
        excludeCredentialIds: registered.authenticators.map((authenticator) => authenticator.credentialId),
      })
      // The user approves it in the consent frame, whose key stamps its registration (walletLinks.ts).
      return (await wallet.linkPasskey({ passkeyName: name, challenge, attestation })) as LinkedLogin
    },

    /**
     * Links an identity at a configured OpenID Connect provider: its sign-in in a popup (`popup`, a
     * window opened in the click, else one opened here), the ID token bound to this session's key.
     */
    async linkOAuth(provider: string, popup?: Window | null): Promise<LinkedLogin> {
      const current = wallet.current
      if (!current) popup?.close()
      signedIn()
      const proof = await oauthLinkProof(wallet, { provider, sessionPublicKey: current!.session.publicKey, popup })
      return (await backend.post<{ login: LinkedLogin }>('/auth/user/link/oauth', proof)).login
    },

    /** A SIWE nonce for `linkWallet`'s message, issued to this browser. */
    async walletNonce(): Promise<string> {
      return (await backend.get<{ nonce: string }>('/auth/nonce')).nonce
    },

    /** Links an external wallet by its SIWE message (with a `walletNonce`) and signature. */
    async linkWallet(proof: { message: string; signature: string }): Promise<LinkedLogin> {
      signedIn()
      return (await backend.post<{ login: LinkedLogin }>('/auth/user/link/wallet', proof)).login
    },

    /** Unlinks a login by its id, while another remains; the last one is LastLoginError. */
    async unlink(id: string): Promise<void> {
      signedIn()
      await backend.delete(`/auth/user/logins/${encodeURIComponent(id)}`)
    },
  }
}

/** The linking flows of one embedded wallet. */
export type LinkingFlows = ReturnType<typeof linkingFlows>
