import type { Context } from 'hono'
import { incompleteAnswer, ServerError } from '../errors.js'
import { noteEmail } from '../middleware/audit.js'
import { callKms, enforce, type RouteContext } from './context.js'

/**
 * Proves an email with the code the parent organization sent it (a passkey sign-up's or a link's
 * start): the pending code must be the parent's, and for `expected` when one is given; the kms's
 * verify_otp spends it. Counted as email sign-in's codes are. Answers the proven address. Throws a
 * 4xx ServerError, having written nothing but the counts and the spent code.
 *
 * @example
 * const address = await proveEmail(c, context, { otpId, encryptedOtpBundle })
 */
export async function proveEmail(c: Context, context: RouteContext, code: { otpId: string; encryptedOtpBundle: string }, expected?: string): Promise<string> {
  const { store, kms, now } = context
  enforce(await context.limits.verifiesPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  const pending = await store.pendingCode(code.otpId)
  if (!pending || pending.organization_id !== context.organizationId)
    throw new ServerError(400, 'unknown_code', 'This code was not sent, or has been used; ask for a new one')
  if (expected !== undefined && pending.email !== expected) throw new ServerError(400, 'email_mismatch', 'This code was sent to another email')
  const address = pending.email
  enforce(await context.limits.verifiesPerCode(code.otpId), () => 'Too many tries of this code; ask for a new one')
  enforce(await context.limits.verifiesPerEmailPerDay(address), (minutes) => `Too many sign-in attempts for this email today; try again in ${minutes} minutes`)
  noteEmail(c.req.raw, address)
  const verified = await callKms(() =>
    kms.verifyOtp({
      type: 'ACTIVITY_TYPE_VERIFY_OTP_V2',
      timestampMs: String(now()),
      organizationId: context.organizationId,
      parameters: code,
    }),
  ).catch((error: unknown) => {
    // Wrong, spent, expired, too many tries, a bundle not sealed to it: the kms's words, one code.
    if (error instanceof ServerError && error.code === 'kms_refused') throw new ServerError(error.status, 'invalid_code', error.message)
    throw error
  })
  const token = verified.activity.result.verifyOtpResult?.verificationToken
  if (!token) throw incompleteAnswer()
  await store.deletePendingCode(code.otpId)
  // The kms answered it to this backend directly; its contact is the address the code went to.
  let contact: unknown
  try {
    contact = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString())?.contact
  } catch {
    throw incompleteAnswer()
  }
  if (contact !== address) throw incompleteAnswer()
  return address
}
