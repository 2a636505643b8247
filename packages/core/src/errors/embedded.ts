import { BaseError, type BaseErrorParameters } from './base.js'

// The embedded wallet's catalogue errors (SPEC §8) as classes of core, so that an app (and our
// modal) branches with `instanceof` without loading @latchkey/embedded: the package's own errors
// become these at the action boundary, by their stable code.

type Source = { code?: unknown; shortMessage?: unknown; details?: unknown }

/** The base of the embedded flows' errors; `code` is the embedded package's stable code. */
export class EmbeddedFlowError extends BaseError {
  override name = 'EmbeddedFlowError'
  constructor(shortMessage: string, code: string, parameters: BaseErrorParameters = {}) {
    super(shortMessage, parameters)
    this.code = code
  }
}

/** A catalogue error class. Declared, not inferred: an inferred class type would copy
 * ErrorConstructor's statics into the published declarations, `prepareStackTrace(…:
 * NodeJS.CallSite[])` among them, which fail to type-check in an app without @types/node. */
type EmbeddedFlowErrorClass = new (parameters?: BaseErrorParameters) => EmbeddedFlowError

const define = (name: string, code: string, shortMessage: string): EmbeddedFlowErrorClass =>
  class extends EmbeddedFlowError {
    override name = name
    constructor(parameters: BaseErrorParameters = {}) {
      super(shortMessage, code, parameters)
    }
  }

/**
 * A sign-in or recovery code that is wrong, spent, expired, or (recovery) older than 900 s.
 *
 * @example
 * if (error instanceof InvalidCodeError) showCodeAgain()
 */
export const InvalidCodeError = define('InvalidCodeError', 'invalid_code', 'The code is invalid or expired.')
/** No signed-in embedded wallet, or no account in it. */
export const AccountNotFoundError = define('AccountNotFoundError', 'account_not_found', 'Account not found')
/** The backend refused (rate limit, no account with this email, ...); `details` says why. */
export const CannotProceedError = define('CannotProceedError', 'cannot_proceed', 'Cannot proceed with your request')
/** No WebAuthn here (or not a secure context). */
export const WebauthnNotSupportedError = define('WebauthnNotSupportedError', 'webauthn_not_supported', 'Webauthn is not supported on this device')
/** No session could be created or restored (an expired recovery session, a lost key). */
export const SessionError = define('SessionError', 'session_failed', 'Failed to create or restore session')
/** The social sign-in did not finish: the popup was closed, or the provider refused. */
export const OAuthError = define('OAuthError', 'oauth_failed', 'The sign-in with the provider did not finish.')
/**
 * A login being linked (`linkAccount`) belongs to another user: nothing was linked and no account
 * was merged; `details` has the backend's words.
 *
 * @example
 * if (error instanceof AccountAlreadyLinkedError) say('That login is another account’s')
 */
export const AccountAlreadyLinkedError = define('AccountAlreadyLinkedError', 'account_already_linked', 'This login belongs to another account.')
/**
 * `unlinkAccount` of the account's last login: it stays until another login is linked.
 *
 * @example
 * if (error instanceof LastLoginError) say('Link another sign-in method first')
 */
export const LastLoginError = define('LastLoginError', 'last_login', 'The last sign-in method cannot be removed.')

/**
 * An EIP-7702 authorization the embedded wallet will not sign (another chain, another nonce,
 * another contract than its batch executor): a 'Cannot proceed with your request' with code
 * `invalid_authorization`. Nothing was signed or sent.
 *
 * @example
 * if (error instanceof InvalidAuthorizationError) console.log(error.details)
 */
export class InvalidAuthorizationError extends CannotProceedError {
  override name = 'InvalidAuthorizationError'
  constructor(parameters: BaseErrorParameters = {}) {
    super(parameters)
    this.code = 'invalid_authorization'
  }
}

/**
 * A request inside a permission the user granted (ERC-7715 `wallet_grantPermissions`) that the
 * key-management service refused under the grant's rule (its limit for the period spent, expired,
 * revoked): nothing was signed, and no prompt was shown instead. `details` says why.
 *
 * @example
 * if (error instanceof GrantRefusedError) askForANewGrant()
 */
export const GrantRefusedError = define('GrantRefusedError', 'grant_refused', 'The permission you granted does not allow this request.')

/** Why a sponsorship was refused (the embedded wallet's, or `unavailable` when a wallet or service cannot sponsor). */
export type SponsorshipRefusal = 'budget' | 'chain' | 'target' | 'gas' | 'account' | 'token' | 'unavailable'

/**
 * Gas sponsorship asked for (the embedded connector's `sponsorship`, or ERC-7677's
 * `paymasterService`) that cannot be had: the paymaster refused (`reason`: `budget`, `chain`,
 * `target`, `gas`, `account`, `token`), or the paymaster, the bundler or the wallet cannot sponsor
 * (`unavailable`). Nothing was sent, and no user-paid transaction was sent instead unless the app
 * set `fallback: 'user-pays'`.
 *
 * @example
 * if (error instanceof SponsorshipUnavailableError && error.reason === 'budget') showBudgetSpent()
 */
export class SponsorshipUnavailableError extends EmbeddedFlowError {
  override name = 'SponsorshipUnavailableError'
  readonly reason: SponsorshipRefusal
  constructor(parameters: BaseErrorParameters & { reason: SponsorshipRefusal }) {
    const { reason, ...rest } = parameters
    super('The network fee cannot be sponsored.', 'sponsorship_unavailable', rest)
    this.reason = reason
  }
}

/**
 * @internal The embedded wallet's refused sponsorship anywhere down the cause chain (viem wraps what
 * a provider throws) as core's {@link SponsorshipUnavailableError}; `undefined` for anything else.
 * Called by the send actions, not the connector boundary, so apps that never send do not carry it.
 */
export function sponsorshipErrorOf(error: unknown): SponsorshipUnavailableError | undefined {
  for (let cause = error, depth = 0; cause && typeof cause === 'object' && depth < 8; cause = (cause as { cause?: unknown }).cause, depth++) {
    if (cause instanceof SponsorshipUnavailableError) return cause
    const source = cause as Source & { reason?: unknown }
    if (source.code === 'sponsorship_unavailable' && typeof source.shortMessage === 'string')
      return new SponsorshipUnavailableError({
        reason: (typeof source.reason === 'string' ? source.reason : 'unavailable') as SponsorshipRefusal,
        details: typeof source.details === 'string' ? source.details : undefined,
        cause,
      })
  }
  return undefined
}

/** Why a second factor stopped an action: none verified within the grace window, or none enrolled when the operator asks for one. */
export type MfaRequirement = 'MFA_REQUIRED' | 'MFA_ENROLLMENT_REQUIRED'

/**
 * The key-management service refused an action (adding a login, exporting, …) for want of a
 * second factor, and did nothing: `reason` `MFA_REQUIRED` (verify it, `verifyMfa`, then repeat the
 * action) or `MFA_ENROLLMENT_REQUIRED` (set one up first, `enrollTotp`). `activityType` is the
 * refused activity's; `details` the service's words.
 *
 * @example
 * if (error instanceof MfaRequiredError && error.reason === 'MFA_REQUIRED') await verifyMfa(client, { factorId })
 */
export class MfaRequiredError extends EmbeddedFlowError {
  override name = 'MfaRequiredError'
  readonly reason: MfaRequirement
  readonly activityType: string | undefined
  constructor(parameters: BaseErrorParameters & { reason: MfaRequirement; activityType?: string | undefined }) {
    const { reason, activityType, ...rest } = parameters
    super('Your second factor is needed for this.', 'mfa_required', rest)
    this.reason = reason
    this.activityType = activityType
  }
}

/** A passkey ceremony that failed; `code` is its SPEC §8 ceremony code (ERROR_CEREMONY_ABORTED, ...). */
export class WebauthnCeremonyError extends EmbeddedFlowError {
  override name = 'WebauthnCeremonyError'
}

const BY_CODE: Record<string, EmbeddedFlowErrorClass> = {
  invalid_code: InvalidCodeError,
  account_not_found: AccountNotFoundError,
  cannot_proceed: CannotProceedError,
  invalid_authorization: InvalidAuthorizationError,
  grant_refused: GrantRefusedError,
  webauthn_not_supported: WebauthnNotSupportedError,
  session_failed: SessionError,
  oauth_failed: OAuthError,
  account_already_linked: AccountAlreadyLinkedError,
  last_login: LastLoginError,
}

/**
 * @internal An error of @latchkey/embedded as its core class; anything else unchanged (a
 * BaseError stays one). Ceremony codes (ERROR_*) become WebauthnCeremonyError.
 */
export function toEmbeddedFlowError(error: unknown): unknown {
  if (error instanceof BaseError || !error || typeof error !== 'object') return error
  const source = error as Source
  if (typeof source.code !== 'string' || typeof source.shortMessage !== 'string') return error
  const details = typeof source.details === 'string' ? source.details : undefined
  if (source.code.startsWith('ERROR_')) return new WebauthnCeremonyError(source.shortMessage, source.code, { details, cause: error })
  if (source.code === 'mfa_required') {
    const { reason, activityType } = error as { reason?: unknown; activityType?: unknown }
    return new MfaRequiredError({
      reason: reason === 'MFA_ENROLLMENT_REQUIRED' ? reason : 'MFA_REQUIRED',
      activityType: typeof activityType === 'string' ? activityType : undefined,
      details: details ?? source.shortMessage,
      cause: error,
    })
  }
  if (source.code === 'sponsorship_unavailable')
    return new SponsorshipUnavailableError({
      reason: ((error as { reason?: SponsorshipRefusal }).reason ?? 'unavailable') as SponsorshipRefusal,
      details,
      cause: error,
    })
  const Class = BY_CODE[source.code]
  return Class ? new Class({ details, cause: error }) : new EmbeddedFlowError(source.shortMessage, source.code, { details, cause: error })
}
