import { type ConnectReturnType, resendEmailCode, startEmailSignIn, verifyEmailSignIn } from '@latchkey/core'
import { useState } from 'react'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

export type UseEmailSignInReturnType = {
  /** Emails a code; the hook keeps its `otpId` for `verify`. */
  start(email: string): Promise<{ otpId: string }>
  /** Emails a new code to the last address. */
  resend(): Promise<{ otpId: string }>
  /** Redeems the code and connects the embedded wallet. */
  verify(code: string): Promise<ConnectReturnType>
  /** The address a code was sent to, once one was. */
  email: string | undefined
  sending: ActionState<{ otpId: string }>
  verifying: ActionState<ConnectReturnType>
}

/**
 * Email sign-in for the embedded wallet without our modal: start, resend, verify. Errors are core
 * classes (InvalidCodeError, CannotProceedError).
 *
 * @example
 * const { start, verify, verifying } = useEmailSignIn()
 * await start('ada@example.com'); await verify('123456')
 */
export function useEmailSignIn(): UseEmailSignInReturnType {
  const client = useClient()
  const [sent, setSent] = useState<{ email: string; otpId: string }>()
  const [send, sending] = useAction(async (email: string, again: boolean) => {
    const answer = await (again ? resendEmailCode : startEmailSignIn)(client, { email })
    setSent({ email, otpId: answer.otpId })
    return answer
  })
  const [verify, verifying] = useAction((code: string) => verifyEmailSignIn(client, { otpId: sent?.otpId ?? '', code }))
  return {
    start: (email) => send(email, false),
    resend: () => send(sent?.email ?? '', true),
    verify,
    email: sent?.email,
    sending,
    verifying,
  }
}
