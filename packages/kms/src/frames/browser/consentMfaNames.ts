// The second-factor messages' names and the handlers' parameters: shared by consentMfa.ts (the
// consent page's first load) and consentMfaFlow.ts (loaded with the first of them).

export const ENROLL_TOTP = 'ENROLL_TOTP'
export const VERIFY_MFA = 'VERIFY_MFA'
export const MFA_RESULT = 'MFA_RESULT'

/** What the second-factor handlers need: the kms's signer keys and code key, a log, and what to close first. */
export type MfaParameters = {
  signerPublicKeys: readonly string[]
  /** The kms's key for codes (uncompressed hex, the page's `latchkey-mfa-code-key`); empty: no code is taken. */
  codeKey: string
  log: (message: string) => void
  before?: () => void
}
