import { type ConnectReturnType, resendEmailCode, type StartEmailSignInReturnType, startEmailSignIn, verifyEmailSignIn } from '@latchkey/core'
import { useRef, useState } from 'react'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

export type UseEmailSignInReturnType = {
  /** Emails a code; the hook keeps what `verify` needs. */
  start(email: string): Promise<StartEmailSignInReturnType>
  /** Emails a new code to the last address. */
  resend(): Promise<StartEmailSignInReturnType>
  /**
   * Opens the consent frame's code dialog (the kms frames origin), where the user types the code;
   * then connects the embedded wallet. The page never sees the code. Call again after an
   * InvalidCodeError to let the user retry.
   */
  verify(): Promise<ConnectReturnType>
  /** The address a code was sent to, once one was. */
  email: string | undefined
  sending: ActionState<StartEmailSignInReturnType>
  verifying: ActionState<ConnectReturnType>
}

/**
 * Email sign-in for the embedded wallet without our modal: start, resend, verify. The code is
 * typed in the consent frame's own dialog, not in your UI. Errors are core classes
 * (InvalidCodeError, CannotProceedError, UserRejectedRequestError when cancelled in the frame).
 *
 * @example
 * const { start, verify, verifying } = useEmailSignIn()
 * await start('ada@example.com'); await verify() // the user types the code in the secure window
 */
export function useEmailSignIn(): UseEmailSignInReturnType {
  const client = useClient()
  const [sent, setSent] = useState<StartEmailSignInReturnType>()
  // The newest code, for a verify that runs right after start (before the next render).
  const latest = useRef<StartEmailSignInReturnType>(undefined)
  const [send, sending] = useAction(async (email: string, again: boolean) => {
    const answer = await (again ? resendEmailCode : startEmailSignIn)(client, { email })
    latest.current = answer
    setSent(answer)
    return answer
  })
  const [verify, verifying] = useAction(() => verifyEmailSignIn(client, latest.current ?? { otpId: '', otpEncryptionTargetBundle: '', email: '' }))
  return {
    start: (email) => send(email, false),
    resend: () => send(sent?.email ?? '', true),
    verify,
    email: sent?.email,
    sending,
    verifying,
  }
}
