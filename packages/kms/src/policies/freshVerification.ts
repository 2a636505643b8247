import type { Caller } from '../context.js'
import type { Db } from '../db.js'
import { freshVerificationRequired } from '../errors.js'
import type { ApiKeyRow, OrganizationRow } from '../storage/tables.js'

// Fresh verification (security review H1, fix 3): in a sub-organization, the activities that hand
// out the wallet or a lasting way into it need the user themselves, not just a session.

/**
 * Activities a session credential may not run alone in a sub-organization: exporting the wallet or
 * an account, and creating any credential or session (each is a way to keep access after the
 * session ends), a second factor included (mfa/: its secret and recovery codes outlast the session,
 * and a factor the user does not hold would lock them out of their own export).
 */
export const FRESH_VERIFICATION_ACTIVITIES: ReadonlySet<string> = new Set([
  'ACTIVITY_TYPE_EXPORT_WALLET',
  'ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT',
  'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
  'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
  'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2',
  'ACTIVITY_TYPE_STAMP_LOGIN',
  'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR',
  'ACTIVITY_TYPE_LATCHKEY_CREATE_PASSKEY_FACTOR',
])

/**
 * Requests of those activities that need no fresh verification, each a predicate over the
 * activity's type and parameters. Empty: no request of them is exempt.
 *
 * ERC-7715 grants (issue 25, item 4) need no exemption, because create_grant is deliberately not
 * among FRESH_VERIFICATION_ACTIVITIES, though it registers a credential: the grant's key is no
 * lasting way into the wallet. It signs only transactions inside the rule the user approved with a
 * click in the consent frame (grants/enforce.ts), expires with the grant (no later than any
 * credential may), never counts as a verification (`verified_at` null), and is deleted with the
 * session key that created it (migration 0011_grant_key_creators). A grant's key can run none of
 * these activities nor create_grant itself (http/authenticate.ts): a grant making grants would
 * outlive its session.
 */
export const FRESH_VERIFICATION_EXEMPTIONS: readonly ((type: string, params: unknown) => boolean)[] = []

/**
 * Credentials only someone who just read the user's mailbox can hold: an OTP credential (otp_auth,
 * registered when the code was proven; otp_login, with the token of a code just proven) and an
 * emailed credential (email_auth). Registered with `verified_at` = their `created_at`; for rows from
 * before `verified_at` existed, their type and `created_at` are the moment of verification.
 */
export const EMAIL_VERIFIED_CREDENTIALS: ReadonlySet<string> = new Set(['CREDENTIAL_TYPE_OTP_AUTH_KEY_P256', 'CREDENTIAL_TYPE_EMAIL_AUTH_KEY_P256'])

/**
 * When the user last proved themselves on the way to this API key (unix ms), or null: its
 * `verified_at`, else, for a row from before that column, its `created_at` if it is an
 * email-verified credential.
 *
 * @example
 * const verifiedAt = verifiedAtOf(key) // then fresh while now - verifiedAt <= freshSeconds * 1000
 */
export function verifiedAtOf(key: ApiKeyRow): number | null {
  if (key.verified_at !== null) return key.verified_at
  return EMAIL_VERIFIED_CREDENTIALS.has(key.credential_type) ? key.created_at : null
}

/**
 * How long an email-verified credential counts as a fresh verification unless the kms is told
 * otherwise: 15 minutes, as long as a recovery code is valid (SPEC §5), so that a recovery begun
 * with a code can finish with it.
 */
export const DEFAULT_FRESH_VERIFICATION_SECONDS = 900

/**
 * Whether the user has no way in but their session keys: no passkey, no OAuth identity, no email (a
 * guest, issue 28). Nothing could verify them afresh, and whoever holds the key holds the account
 * already, so the key's own stamp (approved in the consent frame) is all there is to ask for.
 */
async function onlyWayIn(db: Db, userId: string, organizationId: string): Promise<boolean> {
  const [user, authenticators, providers] = await Promise.all([
    db.user(userId, organizationId),
    db.authenticatorsOfUser(userId),
    db.oauthProvidersOfUser(userId),
  ])
  return user !== undefined && !user.email && authenticators.length === 0 && providers.length === 0
}

/**
 * Refuses (PermissionDenied, before anything is read for the activity or written) one of
 * FRESH_VERIFICATION_ACTIVITIES stamped in a sub-organization by a session credential without a
 * fresh verification. Allowed: a passkey stamp (`passkey`, X-Stamp-Webauthn: the user was just
 * there); an API key whose moment of verification (`verifiedAtOf`: an email code it was made from,
 * or the verification a key registered it inherited) is at most `freshSeconds` old; a parent
 * organization's user (a backend's own key); an exempted request; the key of a user with no other
 * way in (a guest: `onlyWayIn`). A session credential is any API
 * key with an expiry: sessions, sign-in credentials, and keys from create_api_keys, which in a
 * sub-organization must expire. A key without one is in a sub-organization only because its parent
 * put it there at create_sub_organization (a backend's delegated-access user), and is not a session.
 *
 * @example
 * await requireFreshVerification(db, { caller, organization, type, params, passkey: false, freshSeconds: 300, now: Date.now() })
 */
export async function requireFreshVerification(
  db: Db,
  request: { caller: Caller; organization: OrganizationRow; type: string; params: unknown; passkey: boolean; freshSeconds: number; now: number },
): Promise<void> {
  const { caller, organization, type, params } = request
  if (!FRESH_VERIFICATION_ACTIVITIES.has(type) || request.passkey || !caller.credential) return
  // A sub-organization's own user; a parent's user is refused these by the permission model anyway.
  if (caller.homeOrganizationId !== organization.id || organization.parent_id === null) return
  if (FRESH_VERIFICATION_EXEMPTIONS.some((exempt) => exempt(type, params))) return
  const key = await db.apiKeyByPublicKey(caller.credential)
  if (!key || key.expires_at === null) return
  const verifiedAt = verifiedAtOf(key)
  if (verifiedAt !== null && request.now - verifiedAt <= request.freshSeconds * 1000) return
  if (await onlyWayIn(db, key.user_id, organization.id)) return
  throw freshVerificationRequired(type, request.freshSeconds)
}
