/**
 * The one error base of @latchkey/embedded. `shortMessage` is the catalogue text (SPEC §8), `code`
 * a stable identifier; core carries both onto its own `ConnectorError` at the connector.
 *
 * @example
 * try { await wallet.verifyEmail({ otpId, code }) } catch (e) { if (e instanceof EmbeddedError) console.log(e.code) }
 */
export class EmbeddedError extends Error {
  override name = 'EmbeddedError'
  readonly code: string
  readonly shortMessage: string
  readonly details: string | undefined

  constructor(code: string, shortMessage: string, options: { details?: string | undefined; cause?: unknown } = {}) {
    super(options.details ? `${shortMessage}\n\nDetails: ${options.details}` : shortMessage, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.shortMessage = shortMessage
    this.details = options.details
  }
}

const details = (cause: unknown) => (cause instanceof Error ? cause.message : cause === undefined ? undefined : String(cause))

/**
 * A catalogue error class. Declared, not inferred: an inferred class type would copy
 * ErrorConstructor's statics into the published declarations, `prepareStackTrace(…:
 * NodeJS.CallSite[])` among them, which fail to type-check in an app without @types/node.
 */
type CataloguedError = new (options?: { details?: string | undefined; cause?: unknown }) => EmbeddedError

/** A catalogue error: one class per SPEC §8 text, each with its code. */
function catalogued(code: string, shortMessage: string, name: string): CataloguedError {
  const Class = class extends EmbeddedError {
    constructor(options: { details?: string | undefined; cause?: unknown } = {}) {
      super(code, shortMessage, { details: options.details ?? details(options.cause), cause: options.cause })
      this.name = name
    }
  }
  return Class
}

/** No signed-in embedded wallet, or it has no Ethereum account. */
export const AccountNotFoundError = catalogued('account_not_found', 'Account not found', 'AccountNotFoundError')
/** The backend refused the request (rate limit, an account that already exists, ...); `details` says why. */
export const CannotProceedError = catalogued('cannot_proceed', 'Cannot proceed with your request', 'CannotProceedError')
/** A sign-in or recovery code that is wrong, used, expired or too old (SPEC §5: 900 s for recovery). */
export const InvalidCodeError = catalogued('invalid_code', 'The code is invalid or expired.', 'InvalidCodeError')
/** No WebAuthn in this browser (or not a secure context). */
export const WebauthnNotSupportedError = catalogued('webauthn_not_supported', 'Webauthn is not supported on this device', 'WebauthnNotSupportedError')
/** Neither a stored session key nor a new one could be set up. */
export const SessionError = catalogued('session_failed', 'Failed to create or restore session', 'SessionError')
/** The backend would not register a new session key (signed out there, or unreachable). */
export const SessionKeyRegistrationError = catalogued('session_key_registration', 'Cannot register session key to init provider', 'SessionKeyRegistrationError')
/**
 * A login being linked belongs to another user (issue 28): nothing was linked, and no account was
 * merged. The user signs in with that login, or unlinks it from the other account first.
 */
export const AccountAlreadyLinkedError = catalogued('account_already_linked', 'This login belongs to another account.', 'AccountAlreadyLinkedError')
/** The login is the account's last way in: it stays until another login is linked. */
export const LastLoginError = catalogued('last_login', 'The last sign-in method cannot be removed.', 'LastLoginError')
/**
 * An EIP-7702 authorization the wallet will not sign: for another chain (or every chain), another
 * nonce, or a contract other than its batch executor. Nothing was signed or sent.
 */
export class InvalidAuthorizationError extends CannotProceedError {
  override readonly code = 'invalid_authorization'
  constructor(options: { details?: string | undefined; cause?: unknown } = {}) {
    super(options)
    this.name = 'InvalidAuthorizationError'
  }
}
/**
 * A request inside a permission the user granted (ERC-7715) that the key-management service
 * refused under the grant's rule: its limit for the period is spent, it expired, or it was
 * revoked. Nothing was signed, and the wallet does not fall back to asking the user: the app asks
 * for a new grant or sends the request without one. `reason` is the kms's (GRANT_LIMIT_EXCEEDED,
 * GRANT_EXPIRED, …), `details` its words.
 */
export class GrantRefusedError extends EmbeddedError {
  override name = 'GrantRefusedError'
  readonly reason: string
  constructor(options: { reason: string; details?: string | undefined; cause?: unknown }) {
    super('grant_refused', 'The permission you granted does not allow this request.', options)
    this.reason = options.reason
  }
}
/**
 * A `wallet_grantPermissions` request the wallet will not grant: it reaches the app as JSON-RPC
 * invalid params (-32602), and nothing is signed or stored. `code`: `grant_without_expiry`,
 * `unknown_permission`, `malformed_grant`.
 *
 * @example
 * try { await provider.request({ method: 'wallet_grantPermissions', params }) } catch (e) { if (e instanceof GrantRequestError) console.log(e.code) }
 */
export class GrantRequestError extends EmbeddedError {
  override name = 'GrantRequestError'
  readonly rpcCode = -32602
}
/** The request has no expiry: a permission that never ends is refused. */
export class GrantWithoutExpiryError extends GrantRequestError {
  override name = 'GrantWithoutExpiryError'
  constructor() {
    super('grant_without_expiry', 'The grant has no expiry: a permission that never ends is refused')
  }
}
/** A permission type, rule or policy the kms cannot enforce. */
export class UnknownPermissionError extends GrantRequestError {
  override name = 'UnknownPermissionError'
  constructor(message: string) {
    super('unknown_permission', message)
  }
}
/** A request that is not a grant the wallet can read: a malformed amount, address, period or signer. */
export class MalformedGrantError extends GrantRequestError {
  override name = 'MalformedGrantError'
  constructor(message: string) {
    super('malformed_grant', message)
  }
}

/** A call that needs the key-management client before the wallet was set up. */
export const ClientsNotFoundError = catalogued('clients_not_found', 'Required clients not found', 'ClientsNotFoundError')
/** The session does not name the user's sub-organization. */
export const SubOrganizationNotFoundError = catalogued('sub_organization_not_found', 'Turnkey sub organization id not found', 'SubOrganizationNotFoundError')
/** A completed sign_raw_payload without r, s and v. */
export const SignRawPayloadResultNotFoundError = catalogued(
  'sign_raw_payload_result_not_found',
  'Sign raw payload result not found',
  'SignRawPayloadResultNotFoundError',
)
/** A signing call without the address or key id to sign with. */
export const MissingSignWithError = catalogued('missing_sign_with', 'Missing signWith parameter', 'MissingSignWithError')
/** The organization needs more approvals (root quorum) before this runs. */
export const ConsensusNeededError = catalogued('consensus_needed', 'Activity requires consensus', 'ConsensusNeededError')
/** The embedded wallet was set up without an app name (SPEC §5). */
export const MissingAppNameError = catalogued('missing_app_name', 'The embedded wallet needs an appName', 'MissingAppNameError')
/** The key-management client was set up without a base url (SPEC §5). */
export const MissingBaseUrlError = catalogued('missing_base_url', 'The key-management client needs a base url', 'MissingBaseUrlError')
/** Passkey sign-up without a name for the passkey (SPEC §5). */
export const PasskeyIdentifierRequiredError = catalogued(
  'passkey_identifier_required',
  'Registering a passkey needs an email or a passkeyIdentifier',
  'PasskeyIdentifierRequiredError',
)

/** An activity that ended in any status but COMPLETED or CONSENSUS_NEEDED. */
export class ActivityStatusError extends EmbeddedError {
  override name = 'ActivityStatusError'
  constructor(
    readonly status: string,
    options: { details?: string | undefined } = {},
  ) {
    super('activity_status', `Expected COMPLETED status, got ${status}`, options)
  }
}

/** The key-management API refused a request: "Turnkey error {code}: {message}". */
export class KmsRequestError extends EmbeddedError {
  override name = 'KmsRequestError'
  constructor(
    readonly kmsCode: number,
    message: string,
    options: { details?: string | undefined; cause?: unknown } = {},
  ) {
    super('kms_request', `Turnkey error ${kmsCode}: ${message}`, options)
  }
}

/**
 * The kms refused a request for want of a second factor: `MFA_REQUIRED` (the session has not
 * verified its factor within the grace window: `wallet.verifyMfa(factorId)`, then retry) or
 * `MFA_ENROLLMENT_REQUIRED` (the operator asks for a factor and the user has none:
 * `wallet.enrollTotp()`). Nothing was done. `activityType` is the refused activity's.
 */
export class MfaRequiredError extends KmsRequestError {
  override name = 'MfaRequiredError'
  override readonly code = 'mfa_required'
  readonly reason: 'MFA_REQUIRED' | 'MFA_ENROLLMENT_REQUIRED'
  readonly activityType: string | undefined
  constructor(options: {
    kmsCode: number
    message: string
    reason: 'MFA_REQUIRED' | 'MFA_ENROLLMENT_REQUIRED'
    activityType?: string | undefined
    cause?: unknown
  }) {
    super(options.kmsCode, options.message, { cause: options.cause })
    this.reason = options.reason
    this.activityType = options.activityType
  }
}

/** A WebAuthn ceremony that failed; `code` is the @simplewebauthn code (ERROR_CEREMONY_ABORTED, ...). */
export class WebauthnCeremonyError extends EmbeddedError {
  override name = 'WebauthnCeremonyError'
  constructor(code: string, options: { details?: string | undefined; cause?: unknown } = {}) {
    super(code, CEREMONY_TEXT[code] ?? 'The passkey could not be used.', options)
  }
}

const CEREMONY_TEXT: Record<string, string> = {
  ERROR_CEREMONY_ABORTED: 'The passkey prompt was closed.',
  ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED: 'This passkey is already registered.',
  ERROR_INVALID_DOMAIN: 'Passkeys cannot be used on this domain.',
  ERROR_INVALID_RP_ID: 'The passkey relying party id does not match this site.',
  ERROR_INVALID_USER_ID_LENGTH: 'The passkey user id must be 1 to 64 bytes.',
  ERROR_AUTHENTICATOR_GENERAL_ERROR: 'The authenticator failed.',
}

/** The two messages of an expired or unknown session key (research/turnkey-api.md §3.5). */
export function isSessionKeyExpired(error: unknown): boolean {
  const message = error instanceof Error ? error.message : ''
  return message.includes('could not find public key in organization or its parent organization') || message.includes('expired api key')
}

/** An EIP-1193 error: a numeric `code` as wallets send them (4100, 4200, 4902). */
export class ProviderRpcError extends Error {
  override name = 'ProviderRpcError'
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

/** Why a sponsorship was refused: the paymaster's ERC-7677 `data.reason`, or `unavailable` when it or the bundler did not answer. */
export type SponsorshipRefusal = 'budget' | 'chain' | 'target' | 'gas' | 'account' | 'token' | 'unavailable'

/** The reasons a paymaster may give (ERC-7677 error `data.reason`); anything else reads as `unavailable`. */
export const SPONSORSHIP_REASONS: readonly SponsorshipRefusal[] = ['budget', 'chain', 'target', 'gas', 'account', 'token', 'unavailable']

/**
 * A sponsored call (sponsorship on, or the ERC-7677 `paymasterService` capability) that cannot be
 * sponsored: the paymaster refused it (`reason`: `budget`, `chain`, `target`, `gas`, `account`,
 * `token`) or the paymaster or the bundler did not answer in time (`unavailable`). Nothing was
 * sent, and the wallet did not switch to user-paid gas unless the app set `fallback: 'user-pays'`.
 *
 * @example
 * try { await wallet.sendCalls({ calls }) } catch (e) { if (e instanceof SponsorshipUnavailableError && e.reason === 'budget') showBudgetSpent() }
 */
export class SponsorshipUnavailableError extends EmbeddedError {
  override name = 'SponsorshipUnavailableError'
  readonly reason: SponsorshipRefusal
  constructor(options: { reason: SponsorshipRefusal; details?: string | undefined; cause?: unknown }) {
    super('sponsorship_unavailable', 'The network fee cannot be sponsored.', options)
    this.reason = options.reason
  }
}
