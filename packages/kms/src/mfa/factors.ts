import { createHash, randomBytes } from 'node:crypto'
import { base32 } from '@scure/base'
import { GrpcCode, KmsError } from '../errors.js'

// Second factors (a Latchkey extension of the Turnkey API): what the activities (mfa/activities.ts)
// and the kms's rule (mfa/enforce.ts) share.

export const TOTP_FACTOR = 'MFA_FACTOR_TYPE_TOTP'
export const PASSKEY_FACTOR = 'MFA_FACTOR_TYPE_PASSKEY'
export const PENDING = 'MFA_FACTOR_STATUS_PENDING'
export const ACTIVE = 'MFA_FACTOR_STATUS_ACTIVE'

/** Wrong codes in a row that lock a factor. */
export const MFA_MAX_FAILURES = 5
/** How long a locked factor stays locked: 15 minutes (a recovery code unlocks it sooner). */
export const MFA_LOCK_SECONDS = 900
/** How many one-time recovery codes a user is given at their first factor. */
export const RECOVERY_CODE_COUNT = 10
/** How long a verified factor counts unless the operator says otherwise: 15 minutes. */
export const DEFAULT_MFA_GRACE_SECONDS = 900

/** The TOTP parameters (RFC 6238): SHA-1, 6 digits, 30-second steps; a code of the step before or after is accepted. */
export const TOTP = { algorithm: 'sha1', digits: 6, period: 30, toleranceSeconds: 30 } as const

/** The associated data a TOTP secret is sealed to. */
export const factorRecord = (factorId: string) => `mfa-factor:${factorId}`

/** A recovery code as stored: the SHA-256 of the user id and the code (normalised), in hex. Codes carry 60 random bits. */
export const recoveryCodeHash = (userId: string, code: string) =>
  createHash('sha256')
    .update(`${userId}:${code.trim().toLowerCase().replaceAll('-', '')}`)
    .digest('hex')

/** Ten fresh recovery codes, `xxxx-xxxx-xxxx` in lowercase base32 (60 random bits each). */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const text = base32.encode(randomBytes(10)).slice(0, 12).toLowerCase()
    return `${text.slice(0, 4)}-${text.slice(4, 8)}-${text.slice(8, 12)}`
  })
}

/** The domain of the ErrorInfo details a second factor's refusals carry. */
export const MFA_ERROR_DOMAIN = 'latchkey.mfa'

export type MfaRefusalReason = 'MFA_REQUIRED' | 'MFA_ENROLLMENT_REQUIRED' | 'MFA_INVALID_CODE' | 'MFA_FACTOR_LOCKED' | 'MFA_RECOVERY_CODE_REFUSED'

/**
 * A refusal about a second factor, its reason (a Latchkey code) in a `google.rpc.ErrorInfo` detail.
 *
 * @example
 * throw mfaRefusal(GrpcCode.permissionDenied, 'MFA_REQUIRED', 'second factor required: …')
 */
export function mfaRefusal(code: number, reason: MfaRefusalReason, message: string, metadata: Record<string, string> = {}): KmsError {
  return new KmsError(code, message, [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: MFA_ERROR_DOMAIN, metadata }])
}

/** The refusal of a locked factor, naming when it unlocks. */
export const factorLocked = (lockedUntil: number) =>
  mfaRefusal(
    GrpcCode.resourceExhausted,
    'MFA_FACTOR_LOCKED',
    `second factor locked after ${MFA_MAX_FAILURES} wrong codes until ${new Date(lockedUntil).toISOString()}: a recovery code unlocks it sooner`,
    { lockedUntil: String(lockedUntil) },
  )
