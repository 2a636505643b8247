import type { FrameHandler } from './channel.js'

// Second factors in the consent frame (issue 28): the TOTP secret, the codes and the recovery codes
// are shown and typed here, never in the app page. The frame cannot reach the kms itself (its CSP
// allows no connection to it), so the page carries the frame's stamped bodies to the kms and the
// kms's answers back, and can read neither: the secret and recovery codes come sealed to a key of
// this enrolment only, and the codes the user types go out only sealed to the kms's code key
// (`latchkey-mfa-code-key`, mfa/codeKey.ts), inside bodies the frame's session key stamped: never
// in clear.
//
//   ENROLL_TOTP {organizationId, userId}   → MFA_SUBMIT {op, body, stampHeaderName, stampHeaderValue}
//   MFA_RESULT {status, body} (the kms's)   → MFA_SUBMIT … again, or TOTP_ENROLLED {factorId}
//   VERIFY_MFA {organizationId, factorId}  → (the code typed) MFA_SUBMIT …
//   MFA_RESULT {status, body}               → MFA_SUBMIT … again, or MFA_VERIFIED {verified: true}
//
// A wrong code, a locked factor or a refused recovery code is shown in the dialog and the user may
// try again; Cancel or Escape answer 4001; any other refusal of the kms closes the dialog and is
// answered as an error with the kms's message.

import { ENROLL_TOTP, MFA_RESULT, type MfaParameters, VERIFY_MFA } from './consentMfaNames.js'

export { ENROLL_TOTP, MFA_RESULT, type MfaParameters, VERIFY_MFA } from './consentMfaNames.js'

/**
 * The ENROLL_TOTP, VERIFY_MFA and MFA_RESULT handlers of the consent frame, over its page's `#mfa`
 * dialog. `before` runs first (the frame closes a refusal it still shows).
 *
 * @example
 * handlers: { ...mfaHandlers({ signerPublicKeys, codeKey, log }) }
 */
export function mfaHandlers(parameters: MfaParameters): Record<string, FrameHandler> {
  let flows: Promise<Record<string, FrameHandler>> | undefined
  const handler =
    (type: string): FrameHandler =>
    async (request, context) => {
      flows ??= import('./consentMfaFlow.js').then((module) => module.createMfaHandlers(parameters))
      return (await flows)[type]!(request, context)
    }
  return { [ENROLL_TOTP]: handler(ENROLL_TOTP), [VERIFY_MFA]: handler(VERIFY_MFA), [MFA_RESULT]: handler(MFA_RESULT) }
}
