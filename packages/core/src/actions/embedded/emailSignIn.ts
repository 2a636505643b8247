import type { Client } from '../../createClient.js'
import type { ConnectReturnType } from '../connect.js'
import { connectSignedIn, type EmbeddedTarget, runFlow } from './internal.js'

export type StartEmailSignInParameters = EmbeddedTarget & { email: string }
/** The code on its way: what `verifyEmailSignIn` hands the consent frame, where the user types the code. */
export type StartEmailSignInReturnType = { otpId: string; otpEncryptionTargetBundle: string; email: string }

/**
 * Emails a sign-in code (the first sign-in of an address creates its wallet). Errors:
 * CannotProceedError (rate limit, a refused address).
 *
 * @example
 * const sent = await startEmailSignIn(client, { email: 'ada@example.com' })
 */
export function startEmailSignIn(client: Client, parameters: StartEmailSignInParameters): Promise<StartEmailSignInReturnType> {
  return runFlow(client, 'startEmailSignIn', parameters, (flows) => flows.wallet.startEmail(parameters.email.trim()))
}

/**
 * Sends a new code to the same address: the earlier one stops working once this one is used.
 *
 * @example
 * const sent = await resendEmailCode(client, { email: 'ada@example.com' })
 */
export function resendEmailCode(client: Client, parameters: StartEmailSignInParameters): Promise<StartEmailSignInReturnType> {
  return runFlow(client, 'resendEmailCode', parameters, (flows) => flows.wallet.startEmail(parameters.email.trim()))
}

export type VerifyEmailSignInParameters = EmbeddedTarget & StartEmailSignInReturnType

/**
 * Connects the embedded wallet with the emailed code, which the user types in the consent frame
 * (the kms frames origin): this page never sees it, only the sealed copy the backend relays.
 * Errors: InvalidCodeError (wrong, spent or expired code: call again to retry), UserRejectedRequestError
 * (4001: cancelled in the frame).
 *
 * @example
 * const sent = await startEmailSignIn(client, { email: 'ada@example.com' })
 * const { accounts } = await verifyEmailSignIn(client, sent)
 */
export function verifyEmailSignIn(client: Client, parameters: VerifyEmailSignInParameters): Promise<ConnectReturnType> {
  return runFlow(client, 'verifyEmailSignIn', parameters, async (flows, connector) => {
    await flows.wallet.verifyEmail({ otpId: parameters.otpId, otpEncryptionTargetBundle: parameters.otpEncryptionTargetBundle, email: parameters.email })
    return connectSignedIn(client, connector)
  })
}
