import { RECOVERY_CODE_VALIDITY_S } from '@latchkey/constants'

// How long email credentials and codes work, and how often a code may be guessed.

/** A recovery credential works this long at most (SPEC §5, §9). */
export const RECOVERY_CODE_SECONDS = RECOVERY_CODE_VALIDITY_S
/** OTP codes: valid this long by default, and this many wrong guesses end one. */
export const OTP_DEFAULT_SECONDS = 300
export const OTP_MAX_ATTEMPTS = 3
/** init_otp (V3) codes live at most this long (Turnkey's maximum). */
export const OTP_MAX_SECONDS = 600
/** verify_otp's token is spent by the otp_login right after it: short-lived by default and at most. */
export const VERIFICATION_TOKEN_DEFAULT_SECONDS = 120
export const VERIFICATION_TOKEN_MAX_SECONDS = 600
