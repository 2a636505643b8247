import type { Caller } from '../context.js'
import type { Db } from '../db.js'
import { freshVerificationRequired } from '../errors.js'
import type { ApiKeyRow, OrganizationRow } from '../storage/tables.js'

// Fresh verification (security review H1, fix 3): in a sub-organization, the activities that hand
// out the wallet or a lasting way into it need the user themselves, not just a session.

/**
 * Activities that give someone a way into the organization or a seat in its root quorum: a user
 * with its keys, passkeys and OAuth identities, an invitation, the quorum itself. A session that
 * could run them alone would add a user holding the attacker's key, make it a root user, and export
 * through it (security review, finding 1). The app backend's delegated user runs update_root_quorum
 * after create_sub_organization with its key that never expires, which is not a session: neither
 * this rule nor the second factor asks it (mfa/enforce.ts).
 *
 * Policies are not here: no policy overrides the kms's own rules (fresh verification, the second
 * factor, readable signing), so a policy a session writes opens no way in; and the backend's
 * `delegated narrow` command writes the end user's policies with a short key of that user.
 */
export const ORGANIZATION_ACCESS_ACTIVITIES: ReadonlySet<string> = new Set([
  'ACTIVITY_TYPE_CREATE_USERS_V4',
  'ACTIVITY_TYPE_CREATE_API_ONLY_USERS',
  'ACTIVITY_TYPE_CREATE_INVITATIONS',
  'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
])

/**
 * Activities a session credential may not run alone in a sub-organization: exporting the wallet or
 * an account, and creating any credential or session (each is a way to keep access after the
 * session ends), a second factor included (mfa/: its secret and recovery codes outlast the session,
 * and a factor the user does not hold would lock them out of their own export), and each of
 * ORGANIZATION_ACCESS_ACTIVITIES. A request that gives a user an email they do not have
 * (update_user_email, update_user) needs it too (`setsNewEmail`), though the type is not listed: its
 * clearing is how the app backend unlinks an email.
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
  ...ORGANIZATION_ACCESS_ACTIVITIES,
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
 * Whether the organization has no way in but its session keys: none of its users has a passkey, an
 * OAuth identity or an email (a guest, issue 28). Nothing could verify them afresh, and whoever
 * holds a key holds the account already, so the key's own stamp (approved in the consent frame) is
 * all there is to ask for.
 *
 * Asked of the whole organization, not of the user alone: a user without a way in, in an
 * organization where another user has one, is a user someone added later by their stamp
 * (create_users, create_api_only_users), whose keys nothing ties to a person: a stolen session
 * could have added it with the attacker's key (security review, finding 1). It gets no exemption, so
 * it needs a fresh verification it can never give (no email, no passkey, keys registered for it
 * carry none): it exports, registers keys and enrols a factor only by a passkey stamp.
 */
const onlyWayIn = (db: Db, userId: string, organizationId: string): Promise<boolean> => db.onlyKeysLetIn(userId, organizationId)

/** The activities that can set a user's email: update_user_email, and update_user with `userEmail`. */
const EMAIL_ACTIVITIES: ReadonlySet<string> = new Set(['ACTIVITY_TYPE_UPDATE_USER_EMAIL', 'ACTIVITY_TYPE_UPDATE_USER'])

/**
 * Whether the request gives a user of the organization an email they do not have (case aside): a
 * new way in, since the codes sent there sign in (security review 2: a stale session set the
 * attacker's address, then signed in by a code sent there). Proving the new address proves nothing
 * here (the attacker owns it); the user must be there. Not asked: clearing the email (the app
 * backend's delegated user unlinks one so), setting the one the user has, and a user the
 * organization does not have (the activity refuses it).
 */
async function setsNewEmail(db: Db, organizationId: string, type: string, params: unknown): Promise<boolean> {
  if (!EMAIL_ACTIVITIES.has(type)) return false
  const { userId, userEmail } = (params ?? {}) as { userId?: unknown; userEmail?: unknown }
  if (typeof userEmail !== 'string' || userEmail === '' || typeof userId !== 'string') return false
  const user = await db.user(userId, organizationId)
  return user !== undefined && user.email?.toLowerCase() !== userEmail.toLowerCase()
}

/**
 * Refuses (PermissionDenied, before anything is read for the activity or written) one of
 * FRESH_VERIFICATION_ACTIVITIES, or a request that sets a new email (`setsNewEmail`), stamped in a
 * sub-organization by a session credential without a fresh verification. Allowed: a passkey
 * stamp (`passkey`, X-Stamp-Webauthn: the user was just there); an API key whose moment of
 * verification (`verifiedAtOf`: an email code it was made from, or the verification a key
 * registered it inherited) is at most `freshSeconds` old; a parent organization's user (a
 * backend's own key); an exempted request; the key of a user in an organization with no other
 * way in (a guest: `onlyWayIn`). A session credential is any API key with an expiry: sessions,
 * sign-in credentials, and keys from create_api_keys, which in a sub-organization must expire. A key without one is in a sub-organization only because its parent
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
  const listed = FRESH_VERIFICATION_ACTIVITIES.has(type)
  if ((!listed && !EMAIL_ACTIVITIES.has(type)) || request.passkey || !caller.credential) return
  // A sub-organization's own user; a parent's user is refused these by the permission model anyway.
  if (caller.homeOrganizationId !== organization.id || organization.parent_id === null) return
  if (FRESH_VERIFICATION_EXEMPTIONS.some((exempt) => exempt(type, params))) return
  const key = await db.apiKeyByPublicKey(caller.credential)
  if (!key || key.expires_at === null) return
  if (!listed && !(await setsNewEmail(db, organization.id, type, params))) return
  const verifiedAt = verifiedAtOf(key)
  if (verifiedAt !== null && request.now - verifiedAt <= request.freshSeconds * 1000) return
  if (await onlyWayIn(db, key.user_id, organization.id)) return
  throw freshVerificationRequired(type, request.freshSeconds)
}
