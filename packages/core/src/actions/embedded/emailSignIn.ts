import type { Client } from '../../createClient.js'
import type { ConnectReturnType } from '../connect.js'
import { connectSignedIn, type EmbeddedTarget, runFlow } from './internal.js'

export type StartEmailSignInParameters = EmbeddedTarget & { email: string }
export type StartEmailSignInReturnType = { otpId: string }

/**
 * Emails a sign-in code (the first sign-in of an address creates its wallet). Errors:
 * CannotProceedError (rate limit, a refused address).
 *
 * @example
 * const { otpId } = await startEmailSignIn(client, { email: 'ada@example.com' })
 */
export function startEmailSignIn(client: Client, parameters: StartEmailSignInParameters): Promise<StartEmailSignInReturnType> {
  return runFlow(client, 'startEmailSignIn', parameters, (flows) => flows.wallet.startEmail(parameters.email.trim()))
}

/**
 * Sends a new code to the same address: the earlier one stops working once this one is used.
 *
 * @example
 * const { otpId } = await resendEmailCode(client, { email: 'ada@example.com' })
 */
export function resendEmailCode(client: Client, parameters: StartEmailSignInParameters): Promise<StartEmailSignInReturnType> {
  return runFlow(client, 'resendEmailCode', parameters, (flows) => flows.wallet.startEmail(parameters.email.trim()))
}

export type VerifyEmailSignInParameters = EmbeddedTarget & { otpId: string; code: string }

/**
 * Redeems the emailed code and connects the embedded wallet. Errors: InvalidCodeError (wrong,
 * spent or expired code).
 *
 * @example
 * const { accounts } = await verifyEmailSignIn(client, { otpId, code: '123456' })
 */
export function verifyEmailSignIn(client: Client, parameters: VerifyEmailSignInParameters): Promise<ConnectReturnType> {
  return runFlow(client, 'verifyEmailSignIn', parameters, async (flows, connector) => {
    await flows.wallet.verifyEmail({ otpId: parameters.otpId, code: parameters.code })
    return connectSignedIn(client, connector)
  })
}
