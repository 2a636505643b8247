import type * as Embedded from '@latchkey/embedded'
import type { EmbeddedFlows } from '../../connectors/embedded.js'
import type { Client } from '../../createClient.js'
import type { Connector } from '../../types.js'
import { type EmbeddedTarget, runFlow } from './internal.js'

/** How a login signs in: `oauth:<provider>` for each configured OpenID Connect provider. */
export type LoginKind = Embedded.LoginKind
/** A login linked to the user: its id (for `unlinkAccount`), kind, what users read, and when it was linked (ISO 8601). */
export type LinkedLogin = Embedded.LinkedLogin
/** The signed-in user as the backend answers `GET /auth/user`: logins (oldest first), wallets and second factors. */
export type EmbeddedUser = Embedded.EmbeddedUser
/** A second factor the kms holds for the user: its id (for `verifyMfa`), type, name, when enrolled, and `lockedUntil` while five wrong codes lock it. */
export type MfaFactor = Embedded.MfaFactor
/** A social sign-in the backend offers, which a user may link: `name` for `linkAccount`, `displayName` to show. */
export type LinkableProvider = Embedded.LinkableProvider

export type LinkAccountParameters = EmbeddedTarget &
  (
    | { kind: 'email'; email: string }
    | { kind: 'passkey'; name?: string | undefined }
    | {
        kind: 'oauth'
        /** A configured provider's name: 'google', 'apple', or one the operator configures ('github', …). */
        provider: string
        /** A window opened in the click itself (`openOAuthPopup()`): popup blockers let only a click open one. */
        popup?: Window | null | undefined
      }
    | {
        kind: 'wallet'
        /** The external wallet's connector (or its id), which signs the SIWE message; it need not be the connected one. */
        wallet: Connector | string
      }
  )

export type UnlinkAccountParameters = EmbeddedTarget & { id: string }

/**
 * The signed-in embedded-wallet user: linked logins, wallets and second factors; `null` while the
 * app backend has no session (signed out there, or ended when the account changed). Errors:
 * AccountNotFoundError (the embedded wallet is not signed in), CannotProceedError.
 *
 * @example
 * const user = await getUser(client)
 * if (user) console.log(user.logins.map((login) => login.label))
 */
export function getUser(client: Client, parameters: EmbeddedTarget = {}): Promise<EmbeddedUser | null> {
  return runFlow(client, 'getUser', parameters, (flows) => flows.linking.getUser())
}

/**
 * The social sign-ins the backend offers, which `linkAccount({ kind: 'oauth' })` can link.
 *
 * @example
 * const providers = await getLinkableProviders(client)
 */
export function getLinkableProviders(client: Client, parameters: EmbeddedTarget = {}): Promise<LinkableProvider[]> {
  return runFlow(client, 'getLinkableProviders', parameters, (flows) => flows.linking.providers())
}

// One function per kind of login: how each is proven and carried lives here and in the embedded
// wallet's linking flow of the same name, nowhere else.
const LINKS: {
  [kind in LinkAccountParameters['kind']]: (
    client: Client,
    flows: EmbeddedFlows,
    parameters: Extract<LinkAccountParameters, { kind: kind }>,
  ) => Promise<LinkedLogin>
} = {
  email: (_client, flows, { email }) => flows.linking.linkEmail(email),
  passkey: (_client, flows, { name }) => flows.linking.linkPasskey(name),
  oauth: (_client, flows, { provider, popup }) => flows.linking.linkOAuth(provider, popup),
  // Loaded with the first wallet link: viem's helpers and Sign-In with Ethereum stay out of the eager bundle.
  wallet: async (client, flows, parameters) => (await import('./linkWallet.js')).linkWallet(client, flows, parameters),
}

/**
 * Links another login to the signed-in user, proven by its own flow: an email by the code it
 * receives (typed in the consent frame), a new passkey, an identity at a configured OAuth
 * provider (popup), an external wallet by a SIWE signature. Answers the new login. Errors:
 * AccountAlreadyLinkedError (the login is another user's: nothing changed), InvalidCodeError,
 * WebauthnCeremonyError, OAuthError, UserRejectedRequestError (4001: cancelled), CannotProceedError
 * (linked to you already, a second email, a rate limit: `details` says which).
 *
 * @example
 * const login = await linkAccount(client, { kind: 'passkey', name: 'Laptop' })
 */
export function linkAccount(client: Client, parameters: LinkAccountParameters): Promise<LinkedLogin> {
  return runFlow(client, 'linkAccount', parameters, (flows) =>
    (LINKS[parameters.kind] as (client: Client, flows: EmbeddedFlows, parameters: LinkAccountParameters) => Promise<LinkedLogin>)(client, flows, parameters),
  )
}

/**
 * Unlinks a login (by its `id` from `getUser`) while another remains. Errors: LastLoginError (the
 * account's last login: nothing changed), CannotProceedError (no such login).
 *
 * @example
 * await unlinkAccount(client, { id: login.id })
 */
export function unlinkAccount(client: Client, parameters: UnlinkAccountParameters): Promise<void> {
  return runFlow(client, 'unlinkAccount', parameters, (flows) => flows.linking.unlink(parameters.id))
}

/**
 * Sets up an authenticator app (TOTP) as the user's second factor, in the consent frame: the
 * frame shows the secret (as text and a QR code), takes the first code and shows the 10 recovery
 * codes; the page never sees them. Answers the factor's id. Errors: UserRejectedRequestError
 * (4001: cancelled in the frame), AccountNotFoundError (not signed in).
 *
 * @example
 * const { factorId } = await enrollTotp(client)
 */
export function enrollTotp(client: Client, parameters: EmbeddedTarget = {}): Promise<{ factorId: string }> {
  return runFlow(client, 'enrollTotp', parameters, (flows) => flows.wallet.enrollTotp())
}

export type VerifyMfaParameters = EmbeddedTarget & {
  /** The factor to verify: one of `getUser(client).mfa.enrolled`'s `factorId`s. */
  factorId: string
}

/**
 * Verifies the user's second factor for this session, in the consent frame (a code from the
 * authenticator app, or a recovery code; the page never sees it): what an action refused with
 * `MfaRequiredError` (`reason` 'MFA_REQUIRED') needs before it is repeated, within the operator's
 * grace window. Errors: UserRejectedRequestError (4001: cancelled in the frame, nothing changed),
 * AccountNotFoundError (not signed in).
 *
 * @example
 * const user = await getUser(client)
 * await verifyMfa(client, { factorId: user!.mfa.enrolled[0]!.factorId })
 */
export function verifyMfa(client: Client, parameters: VerifyMfaParameters): Promise<{ verified: true }> {
  return runFlow(client, 'verifyMfa', parameters, (flows) => flows.wallet.verifyMfa(parameters.factorId))
}
