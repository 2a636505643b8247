import { type Address, type Hex, isAddress, isAddressEqual, parseTransaction } from 'viem'
import type { Caller } from '../context.js'
import type { Db } from '../db.js'
import { GrpcCode } from '../errors.js'
import { batchCalls } from '../grants/rule.js'
import { ORGANIZATION_ACCESS_ACTIVITIES } from '../policies/freshVerification.js'
import type { OrganizationRow } from '../storage/tables.js'
import { DEFAULT_MFA_GRACE_SECONDS, mfaRefusal } from './factors.js'

// The kms's rule for second factors (issue 28, item 2): in a sub-organization, the actions the
// operator names, and for a user with a factor enrolled always export, a new login, key or
// session and the removal of a passkey or factor, need a factor verified within the grace window
// on the session key that asks. The backend is not trusted with this: a stolen session key
// without the factor is refused here, before anything is read for the activity or written.

/** The actions an operator may put behind the second factor (`--mfa-required`). */
export const MFA_ACTIONS = ['sign-in', 'export', 'add-login', 'add-key', 'grant'] as const
export type MfaAction = (typeof MFA_ACTIONS)[number]

/** The operator's choice: actions that need a factor, a transaction value (wei) over which signing needs one, and the grace window. */
export type MfaSettings = {
  readonly required: ReadonlySet<MfaAction>
  /** sign_transaction of a value above this many wei needs a factor; undefined: no value does. */
  readonly txOverWei?: bigint | undefined
  /** How long a verified factor counts, in seconds. Default 900. */
  readonly graceSeconds: number
}

/** The activities behind each action. */
const ACTION_ACTIVITIES: Readonly<Record<Exclude<MfaAction, 'sign-in'>, readonly string[]>> = {
  export: ['ACTIVITY_TYPE_EXPORT_WALLET', 'ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT', 'ACTIVITY_TYPE_EXPORT_PRIVATE_KEY'],
  'add-login': [
    'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
    'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
    'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
    // An email recovery adds a passkey, and a passkey stamp is not asked for the factor: without
    // this, whoever reads the user's mail would step around it.
    'ACTIVITY_TYPE_RECOVER_USER',
    'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR',
    'ACTIVITY_TYPE_LATCHKEY_CREATE_PASSKEY_FACTOR',
  ],
  'add-key': ['ACTIVITY_TYPE_CREATE_API_KEYS_V2', 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2', 'ACTIVITY_TYPE_STAMP_LOGIN'],
  grant: ['ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT'],
}

/**
 * What needs a factor once the user has one, whatever the operator chose: export, a new login,
 * key or session, a new user, invitation or root user (ORGANIZATION_ACCESS_ACTIVITIES: else
 * a stolen session would add a user of its own, without the factor, and export as that user), and
 * taking a passkey or a factor away (else a stolen session would remove the factor that stops it).
 * update_user setting an email counts too (alwaysOnceEnrolled).
 */
export const MFA_ALWAYS_ONCE_ENROLLED: ReadonlySet<string> = new Set([
  ...ACTION_ACTIVITIES.export,
  ...ACTION_ACTIVITIES['add-login'],
  ...ACTION_ACTIVITIES['add-key'],
  ...ORGANIZATION_ACCESS_ACTIVITIES,
  'ACTIVITY_TYPE_DELETE_AUTHENTICATORS',
  'ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS',
  'ACTIVITY_TYPE_LATCHKEY_DELETE_MFA_FACTOR',
])

/** What a session key runs without a factor, even when sign-in needs one: verifying one, and enrolling a first one. */
const MFA_OWN_ACTIVITIES: ReadonlySet<string> = new Set([
  'ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR',
  'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR',
  'ACTIVITY_TYPE_LATCHKEY_CREATE_PASSKEY_FACTOR',
])

/**
 * Parses the operator's list, e.g. `['sign-in', 'export', 'tx-over:1000000000000000000']`.
 * Throws on an unknown action or a value that is not a whole number of wei.
 *
 * @example
 * mfaSettings(['export', 'tx-over:10'], 600) // { required: Set {'export'}, txOverWei: 10n, graceSeconds: 600 }
 */
export function mfaSettings(actions: readonly string[] = [], graceSeconds = DEFAULT_MFA_GRACE_SECONDS): MfaSettings {
  if (!Number.isSafeInteger(graceSeconds) || graceSeconds < 0) throw new Error('mfa graceSeconds must be a whole number of seconds')
  const required = new Set<MfaAction>()
  let txOverWei: bigint | undefined
  for (const action of actions) {
    const over = /^tx-over:(\d{1,78})$/.exec(action)
    if (over) txOverWei = BigInt(over[1]!)
    else if ((MFA_ACTIONS as readonly string[]).includes(action)) required.add(action as MfaAction)
    else throw new Error(`mfa: unknown action ${action}: one of ${MFA_ACTIONS.join(', ')}, or tx-over:<wei>`)
  }
  return { required, txOverWei, graceSeconds }
}

/** update_user that sets an email: a new email login, as update_user_email is. */
const changesEmail = (type: string, params: unknown) =>
  type === 'ACTIVITY_TYPE_UPDATE_USER' && (params as { userEmail?: unknown } | null)?.userEmail !== undefined

/** Whether the request is one of `action`'s. */
const isAction = (action: Exclude<MfaAction, 'sign-in'>, type: string, params: unknown) =>
  ACTION_ACTIVITIES[action].includes(type) || (action === 'add-login' && changesEmail(type, params))

/** Whether the request adds or takes away a way to sign in (not a key: a new session key still has to verify the factor itself). */
const changesLogins = (type: string, params: unknown) =>
  isAction('add-login', type, params) || ['ACTIVITY_TYPE_DELETE_AUTHENTICATORS', 'ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS'].includes(type)

/** Whether the request needs a factor once the user has one, whatever the operator chose. */
const alwaysOnceEnrolled = (type: string, params: unknown) => MFA_ALWAYS_ONCE_ENROLLED.has(type) || changesEmail(type, params)

/** A call's native value, plus, for a call to the account itself, each call of the batch it executes; undefined: calldata to the account that is not a batch. */
function nativeValueOfCall(call: { to: Address; value: bigint; data: Hex }, accounts: readonly Address[]): bigint | undefined {
  if (call.data === '0x' || !accounts.some((account) => isAddressEqual(account, call.to))) return call.value
  let calls: ReturnType<typeof batchCalls>
  try {
    calls = batchCalls(call.data)
  } catch {
    return undefined
  }
  let total = call.value
  for (const inner of calls) {
    const value = nativeValueOfCall(inner, accounts)
    if (value === undefined) return undefined
    total += value
  }
  return total
}

/**
 * The native value (wei) a sign_transaction sends from `accounts`, the signer's addresses, counted
 * as grants count it (grants/rule.ts, spendsOf): the top-level value, plus each call's value when
 * the transaction calls the account itself with the batch executor's `execute`, a batch inside a
 * batch included. `unreadable`: calldata to the account that is not such a batch, which the rule
 * cannot count and so does not let pass. Undefined: not a transaction (the activity refuses it).
 */
function nativeValueOf(unsignedTransaction: string, accounts: readonly Address[]): bigint | 'unreadable' | undefined {
  let transaction: ReturnType<typeof parseTransaction>
  try {
    transaction = parseTransaction((unsignedTransaction.startsWith('0x') ? unsignedTransaction : `0x${unsignedTransaction}`) as Hex)
  } catch {
    return undefined
  }
  const value = transaction.value ?? 0n
  if (!transaction.to) return value
  return nativeValueOfCall({ to: transaction.to, value, data: transaction.data ?? '0x' }, accounts) ?? 'unreadable'
}

/** The addresses `signWith` signs as: itself, or a private key's addresses. */
async function signerAddresses(db: Db, signWith: string): Promise<Address[]> {
  if (isAddress(signWith, { strict: false })) return [signWith]
  return (await db.privateKeyAddresses(signWith)).map((row) => row.address as Address).filter((address) => isAddress(address, { strict: false }))
}

/**
 * Whether a create_grant lets its key send more native value in one transaction than `txOverWei`:
 * a native allowance above it. A grant's key is never asked for the factor (it signs within its
 * rule), so the factor is asked when the grant is made; an allowance at or below the threshold
 * lets no single transaction over it, as the rule would on a session key. Malformed permissions
 * are left to the activity, which refuses them (grants/rule.ts, parseGrant).
 */
function grantExceeds(params: unknown, txOverWei: bigint): boolean {
  const permissions = (params as { grant?: { permissions?: unknown } } | null)?.grant?.permissions
  if (!Array.isArray(permissions)) return false
  return permissions.some((permission: { type?: unknown; data?: { allowance?: unknown } } | null) => {
    const allowance = permission?.data?.allowance
    return (
      permission?.type === 'native-token-recurring-allowance' && typeof allowance === 'string' && /^\d{1,78}$/.test(allowance) && BigInt(allowance) > txOverWei
    )
  })
}

/** Whether the operator's settings put this request behind the factor (sign-in aside). */
async function operatorRequires(db: Db, settings: MfaSettings, type: string, params: unknown): Promise<boolean> {
  for (const action of settings.required) if (action !== 'sign-in' && isAction(action, type, params)) return true
  if (settings.txOverWei === undefined) return false
  if (type === 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT') return grantExceeds(params, settings.txOverWei)
  if (type !== 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2') return false
  const { unsignedTransaction, signWith } = (params ?? {}) as { unsignedTransaction?: unknown; signWith?: unknown }
  if (typeof unsignedTransaction !== 'string' || typeof signWith !== 'string') return false
  const value = nativeValueOf(unsignedTransaction, await signerAddresses(db, signWith))
  return value === 'unreadable' || (value !== undefined && value > settings.txOverWei)
}

/**
 * Refuses (PermissionDenied, reason MFA_REQUIRED or MFA_ENROLLMENT_REQUIRED, before anything is
 * read for the activity or written) a request that needs the second factor, stamped in a
 * sub-organization by its own user's session key without one verified within the grace window.
 * Not asked: a passkey stamp (the user is there with a phishing-resistant authenticator), a
 * backend's key without an expiry, a grant's key (it signs within the rule the user approved), a
 * parent organization's user.
 *
 * @example
 * await requireMfa(db, { caller, organization, type, params, passkey: false, settings, now: Date.now() })
 */
export async function requireMfa(
  db: Db,
  request: { caller: Caller; organization: OrganizationRow; type: string; params: unknown; passkey: boolean; settings: MfaSettings; now: number },
): Promise<void> {
  const { caller, organization, type, params, settings } = request
  if (request.passkey || !caller.apiKeyId || caller.grantKeyId) return
  if (caller.homeOrganizationId !== organization.id || organization.parent_id === null) return
  const signIn = settings.required.has('sign-in') && !MFA_OWN_ACTIVITIES.has(type)
  const byOperator = await operatorRequires(db, settings, type, params)
  const always = alwaysOnceEnrolled(type, params)
  if (!signIn && !byOperator && !always) return
  const key = await db.apiKey(caller.apiKeyId, organization.id)
  if (!key) return
  // Another user's key (an app backend's delegated user) cannot show this user's factor: a login
  // added to or taken from a user who has one needs that user's own session key, after the factor.
  const target = (params as { userId?: unknown } | null)?.userId
  if (changesLogins(type, params) && typeof target === 'string' && target !== caller.userId && (await db.activeMfaFactorCount(target)) > 0)
    throw mfaRefusal(
      GrpcCode.permissionDenied,
      'MFA_REQUIRED',
      `second factor required: ${type} for a user with a second factor needs that user's own session key and factor (verify_mfa_factor); another user's key cannot give it`,
      { activityType: type },
    )
  if (key.expires_at === null) return
  const enrolled = (await db.activeMfaFactorCount(caller.userId)) > 0
  // Enrolment counts per organization: a user without a factor, where another user has one, is one
  // someone added (a stolen session could have, with the attacker's key), and may not enrol a factor
  // of its own and go on without the one the organization's user holds.
  if (!enrolled && (await db.activeMfaFactorCountOfOrganization(organization.id)) > 0)
    throw mfaRefusal(
      GrpcCode.permissionDenied,
      'MFA_REQUIRED',
      `second factor required: ${type} needs a second factor, and another user of this organization has one: a user without one cannot run it from a session key`,
      { activityType: type },
    )
  if (!enrolled) {
    // Enrolment itself is how a user without a factor gets one.
    if (MFA_OWN_ACTIVITIES.has(type) || (!signIn && !byOperator)) return
    throw mfaRefusal(
      GrpcCode.permissionDenied,
      'MFA_ENROLLMENT_REQUIRED',
      `second factor required: ${type} needs a second factor, and this user has none: enrol one first (create_totp_factor or create_passkey_factor)`,
      { activityType: type },
    )
  }
  const verifiedAt = await db.mfaVerifiedAt(key.id)
  const graceOnly = byOperator || always
  if (verifiedAt !== undefined && (!graceOnly || request.now - verifiedAt <= settings.graceSeconds * 1000)) return
  throw mfaRefusal(
    GrpcCode.permissionDenied,
    'MFA_REQUIRED',
    graceOnly
      ? `second factor required: ${type} from a session key needs a second factor verified in the last ${settings.graceSeconds} seconds (verify_mfa_factor)`
      : `second factor required: this session has not verified a second factor yet (verify_mfa_factor)`,
    { activityType: type },
  )
}
