// How Turnkey files each activity type for the policy engine (`activity.resource` and
// `activity.action`, from the "Activity breakdown" of docs.turnkey.com/concepts/policies/language),
// and which activities need no policy at all.

type Kind = readonly [resource: string, action: string]

const KINDS: Readonly<Record<string, Kind>> = {
  ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7: ['ORGANIZATION', 'CREATE'],
  ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8: ['ORGANIZATION', 'CREATE'],
  ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION: ['ORGANIZATION', 'DELETE'],
  ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME: ['ORGANIZATION', 'UPDATE'],
  ACTIVITY_TYPE_CREATE_INVITATIONS: ['INVITATION', 'CREATE'],
  ACTIVITY_TYPE_DELETE_INVITATION: ['INVITATION', 'DELETE'],
  ACTIVITY_TYPE_CREATE_POLICY_V3: ['POLICY', 'CREATE'],
  ACTIVITY_TYPE_CREATE_POLICIES: ['POLICY', 'CREATE'],
  ACTIVITY_TYPE_UPDATE_POLICY_V2: ['POLICY', 'UPDATE'],
  ACTIVITY_TYPE_DELETE_POLICY: ['POLICY', 'DELETE'],
  ACTIVITY_TYPE_DELETE_POLICIES: ['POLICY', 'DELETE'],
  ACTIVITY_TYPE_CREATE_WALLET: ['WALLET', 'CREATE'],
  ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS: ['WALLET', 'CREATE'],
  ACTIVITY_TYPE_EXPORT_WALLET: ['WALLET', 'EXPORT'],
  ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT: ['WALLET', 'EXPORT'],
  ACTIVITY_TYPE_INIT_IMPORT_WALLET: ['WALLET', 'IMPORT'],
  ACTIVITY_TYPE_IMPORT_WALLET: ['WALLET', 'IMPORT'],
  ACTIVITY_TYPE_DELETE_WALLETS: ['WALLET', 'DELETE'],
  ACTIVITY_TYPE_DELETE_WALLET_ACCOUNTS: ['WALLET', 'DELETE'],
  ACTIVITY_TYPE_UPDATE_WALLET: ['WALLET', 'UPDATE'],
  ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2: ['PRIVATE_KEY', 'CREATE'],
  ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG: ['PRIVATE_KEY', 'CREATE'],
  ACTIVITY_TYPE_UPDATE_PRIVATE_KEY_TAG: ['PRIVATE_KEY', 'UPDATE'],
  ACTIVITY_TYPE_DELETE_PRIVATE_KEY_TAGS: ['PRIVATE_KEY', 'DELETE'],
  ACTIVITY_TYPE_DELETE_PRIVATE_KEYS: ['PRIVATE_KEY', 'DELETE'],
  ACTIVITY_TYPE_EXPORT_PRIVATE_KEY: ['PRIVATE_KEY', 'EXPORT'],
  ACTIVITY_TYPE_INIT_IMPORT_PRIVATE_KEY: ['PRIVATE_KEY', 'IMPORT'],
  ACTIVITY_TYPE_IMPORT_PRIVATE_KEY: ['PRIVATE_KEY', 'IMPORT'],
  ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2: ['PRIVATE_KEY', 'SIGN'],
  ACTIVITY_TYPE_SIGN_RAW_PAYLOADS: ['PRIVATE_KEY', 'SIGN'],
  ACTIVITY_TYPE_SIGN_TRANSACTION_V2: ['PRIVATE_KEY', 'SIGN'],
  ACTIVITY_TYPE_CREATE_USERS_V4: ['USER', 'CREATE'],
  ACTIVITY_TYPE_CREATE_USER_TAG: ['USER', 'CREATE'],
  ACTIVITY_TYPE_CREATE_API_ONLY_USERS: ['USER', 'CREATE'],
  ACTIVITY_TYPE_UPDATE_USER: ['USER', 'UPDATE'],
  ACTIVITY_TYPE_UPDATE_USER_NAME: ['USER', 'UPDATE'],
  ACTIVITY_TYPE_UPDATE_USER_EMAIL: ['USER', 'UPDATE'],
  ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER: ['USER', 'UPDATE'],
  ACTIVITY_TYPE_UPDATE_USER_TAG: ['USER', 'UPDATE'],
  ACTIVITY_TYPE_DELETE_USERS: ['USER', 'DELETE'],
  ACTIVITY_TYPE_DELETE_USER_TAGS: ['USER', 'DELETE'],
  ACTIVITY_TYPE_CREATE_API_KEYS_V2: ['CREDENTIAL', 'CREATE'],
  ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2: ['CREDENTIAL', 'CREATE'],
  ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2: ['CREDENTIAL', 'CREATE'],
  ACTIVITY_TYPE_DELETE_API_KEYS: ['CREDENTIAL', 'DELETE'],
  // Latchkey's ERC-7715 grants: a grant is an API key with a rule.
  ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT: ['CREDENTIAL', 'CREATE'],
  ACTIVITY_TYPE_LATCHKEY_REVOKE_GRANT: ['CREDENTIAL', 'DELETE'],
  // Latchkey's second factors (mfa/): a factor is a credential of its user.
  ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR: ['CREDENTIAL', 'CREATE'],
  ACTIVITY_TYPE_LATCHKEY_CREATE_PASSKEY_FACTOR: ['CREDENTIAL', 'CREATE'],
  ACTIVITY_TYPE_LATCHKEY_DELETE_MFA_FACTOR: ['CREDENTIAL', 'DELETE'],
  ACTIVITY_TYPE_DELETE_AUTHENTICATORS: ['CREDENTIAL', 'DELETE'],
  ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS: ['CREDENTIAL', 'DELETE'],
  ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2: ['RECOVERY', 'CREATE'],
  // Not in Turnkey's table: recovery adds a passkey to the recovering user, a credential of their own.
  ACTIVITY_TYPE_RECOVER_USER: ['CREDENTIAL', 'CREATE'],
  ACTIVITY_TYPE_EMAIL_AUTH_V3: ['AUTH', 'CREATE'],
  ACTIVITY_TYPE_INIT_OTP_AUTH_V3: ['AUTH', 'CREATE'],
  ACTIVITY_TYPE_OTP_AUTH: ['AUTH', 'CREATE'],
  ACTIVITY_TYPE_INIT_OTP_V3: ['AUTH', 'CREATE'],
  ACTIVITY_TYPE_VERIFY_OTP_V2: ['AUTH', 'CREATE'],
  ACTIVITY_TYPE_OTP_LOGIN_V2: ['AUTH', 'CREATE'],
  ACTIVITY_TYPE_OAUTH: ['AUTH', 'CREATE'],
  ACTIVITY_TYPE_OAUTH_LOGIN: ['AUTH', 'CREATE'],
  ACTIVITY_TYPE_STAMP_LOGIN: ['AUTH', 'CREATE'],
  ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2: ['AUTH', 'CREATE'],
  // Not in Turnkey's table either; a session is an authentication like the others.
  ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION: ['AUTH', 'CREATE'],
}

/** `activity.resource` and `activity.action` of an activity type. */
export function kindOf(type: string): { resource: string; action: string } {
  const kind = Object.hasOwn(KINDS, type) ? KINDS[type]! : (['ORGANIZATION', 'UPDATE'] as const)
  return { resource: kind[0], action: kind[1] }
}

/** Activity types Turnkey's table of activity kinds leaves out: root quorum activities, votes, and those it does not list. */
const WITHOUT_KIND = new Set([
  'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
  'ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE',
  'ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE',
  'ACTIVITY_TYPE_APPROVE_ACTIVITY',
  'ACTIVITY_TYPE_REJECT_ACTIVITY',
  'ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME',
  'ACTIVITY_TYPE_RECOVER_USER',
  'ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION',
])

/**
 * `activity.kind`: the activity's name without its version, matching every version of it
 * (`SIGN_TRANSACTION` for `ACTIVITY_TYPE_SIGN_TRANSACTION_V2`), as Turnkey's "Activity kinds" table
 * files them; undefined for the types that table leaves out (a clause on it then errors).
 *
 * @example
 * activityKind('ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8') // 'CREATE_SUB_ORGANIZATION'
 */
export function activityKind(type: string): string | undefined {
  if (WITHOUT_KIND.has(type) || !type.startsWith('ACTIVITY_TYPE_')) return undefined
  return type.slice('ACTIVITY_TYPE_'.length).replace(/_V\d+$/, '')
}

/**
 * What a parent organization's users may start in a sub-organization: the authentication and
 * recovery activities Turnkey documents as "initiated by a parent organization for a
 * sub-organization" (email auth, OTP, OAuth, email recovery). Everything else the parent may only
 * read (queries); its users are no users of the sub-organization, so no policy there can grant more.
 */
export const PARENT_INITIATED = new Set([
  'ACTIVITY_TYPE_EMAIL_AUTH_V3',
  'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
  'ACTIVITY_TYPE_OTP_AUTH',
  'ACTIVITY_TYPE_INIT_OTP_V3',
  'ACTIVITY_TYPE_VERIFY_OTP_V2',
  'ACTIVITY_TYPE_OTP_LOGIN_V2',
  'ACTIVITY_TYPE_OAUTH',
  'ACTIVITY_TYPE_OAUTH_LOGIN',
  'ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2',
])

/** Activities only the root quorum decides: policies never grant them (Turnkey's "Root quorum activities"). */
export const ROOT_QUORUM_ONLY = new Set([
  'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
  'ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE',
  'ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE',
])

/** Activities on a user's own credentials, by the `userId` they name. */
const OWN_CREDENTIALS = new Set([
  'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
  'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
  'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
  'ACTIVITY_TYPE_DELETE_API_KEYS',
  'ACTIVITY_TYPE_DELETE_AUTHENTICATORS',
  'ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS',
  'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
  'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR',
  'ACTIVITY_TYPE_LATCHKEY_CREATE_PASSKEY_FACTOR',
])

/** A user's own second factors, verified or removed: the activities refuse any factor but the caller's (mfa/activities.ts). */
const OWN_FACTORS = new Set(['ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR', 'ACTIVITY_TYPE_LATCHKEY_DELETE_MFA_FACTOR'])

/**
 * Sign-ins and sessions that can only be the caller's own: stamp_login and create_read_only_session
 * register nothing for anyone but the stamping user, and recover_user refuses another user itself
 * (auth/activities.ts).
 */
const OWN_SESSIONS = new Set(['ACTIVITY_TYPE_STAMP_LOGIN', 'ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION', 'ACTIVITY_TYPE_RECOVER_USER'])

/**
 * Activities that give a credential to the user their `userId` names (the caller when absent):
 * a read-write session is as good as an API key of its user.
 */
const SESSIONS_FOR_NAMED_USER = new Set(['ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2'])

/**
 * Whether an activity is allowed without a policy: Turnkey lets users manage their own
 * credentials "unless policies explicitly deny this" (docs.turnkey.com/concepts/organizations,
 * Permissions). Here that is the credential activities naming the caller's own user, and the
 * sign-ins and sessions a user starts for themselves.
 *
 * Every default-allowed activity that yields a credential yields one only to the caller: a
 * credential of another user is that user's power (a root user's, everything), so it needs a
 * policy, or the root quorum (`sessionForAnotherRoot`). The auth activities a parent starts
 * (email_auth, otp_auth, oauth, oauth_login) are allowed by PARENT_INITIATED, not here: they hand
 * the credential to whoever proves the email or the OAuth identity.
 */
export function allowedByDefault(type: string, params: unknown, userId: string): boolean {
  if (OWN_SESSIONS.has(type) || OWN_FACTORS.has(type)) return true
  const named = (params as { userId?: unknown } | null | undefined)?.userId
  if (SESSIONS_FOR_NAMED_USER.has(type)) return named === undefined || named === userId
  if (!OWN_CREDENTIALS.has(type)) return false
  return named === userId
}

/**
 * The root user another user's read-write session would be for, if any: such a session makes its
 * holder that root user, so only the root quorum may grant it, never a policy (one root user must
 * not mint a second root's session to approve as them).
 */
export function sessionForAnotherRoot(type: string, params: unknown, userId: string, rootUserIds: readonly string[]): string | undefined {
  if (!SESSIONS_FOR_NAMED_USER.has(type)) return undefined
  const named = (params as { userId?: unknown } | null | undefined)?.userId
  return typeof named === 'string' && named !== userId && rootUserIds.includes(named) ? named : undefined
}

/** `activity.params`, for the activity types that expose some (the language page's "Activity parameters"). */
export function paramsOf(type: string, params: unknown): Record<string, unknown> {
  const input = (params ?? {}) as Record<string, unknown>
  const text = (value: unknown) => (typeof value === 'string' ? value : '')
  switch (type) {
    case 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2':
      return { hash_function: text(input['hashFunction']), encoding: text(input['encoding']) }
    case 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS':
      return { hash_function: text(input['hashFunction']), encoding: text(input['encoding']) }
    case 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2':
      return { type: text(input['type']) }
    case 'ACTIVITY_TYPE_DELETE_USERS':
      return { user_ids: Array.isArray(input['userIds']) ? input['userIds'].filter((id) => typeof id === 'string') : [] }
    case 'ACTIVITY_TYPE_UPDATE_WALLET':
      return { wallet_id: text(input['walletId']) }
    // Each key's `expires`, and `expiration_seconds` only when it has one: a clause on the lifetime
    // of a key that never expires errors, so an ALLOW on it does not allow and a DENY denies.
    case 'ACTIVITY_TYPE_CREATE_API_KEYS_V2':
      return {
        user_id: text(input['userId']),
        api_keys: (Array.isArray(input['apiKeys']) ? input['apiKeys'] : []).map((key: Record<string, unknown> | null) => {
          const seconds = key?.['expirationSeconds']
          const lifetime = typeof seconds === 'string' && /^\d+$/.test(seconds) ? { expiration_seconds: BigInt(seconds) } : {}
          return { public_key: text(key?.['publicKey']), curve_type: text(key?.['curveType']), expires: seconds !== undefined, ...lifetime }
        }),
      }
    case 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2':
      return {
        user_id: text(input['userId']),
        oauth_providers: (Array.isArray(input['oauthProviders']) ? input['oauthProviders'] : []).map((provider: Record<string, unknown> | null) => ({
          provider_name: text(provider?.['providerName']),
          has_oidc_claims: provider?.['oidcClaims'] !== undefined,
        })),
      }
    // The user whose credential or email they change, so that a policy can name its user (the
    // backend's delegated user links and unlinks the end user's logins, issue 28).
    case 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2':
    case 'ACTIVITY_TYPE_DELETE_AUTHENTICATORS':
    case 'ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS':
      return { user_id: text(input['userId']) }
    // and the email it sets: the delegated user may only remove one (`user_email == ''`).
    case 'ACTIVITY_TYPE_UPDATE_USER_EMAIL':
      return { user_id: text(input['userId']), user_email: text(input['userEmail']) }
    case 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3':
    case 'ACTIVITY_TYPE_INIT_OTP_V3': {
      const length = input['otpLength']
      return typeof length === 'number' && Number.isSafeInteger(length) ? { otp_length: BigInt(length) } : {}
    }
    default:
      return {}
  }
}
