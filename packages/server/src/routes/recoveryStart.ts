import type { Context } from 'hono'
import { z } from 'zod'
import { incompleteAnswer, ServerError } from '../errors.js'
import { callKms, enforce, type RouteContext, readBody } from '../internal/context.js'
import { email, p256PublicKey } from '../internal/schemas.js'

/** How long the emailed recovery credential works (SPEC §5). */
export const RECOVERY_CODE_SECONDS = 900

const recoverySchema = z.object({ email, targetPublicKey: p256PublicKey })

/**
 * `POST /auth/recovery/start` `{email, targetPublicKey}` → `{organizationId, userId}`: the kms emails
 * a recovery credential, encrypted to the recovery frame's `targetPublicKey` and valid 900 s, to
 * the account's email (init_user_email_recovery). 404 for an email with no account.
 *
 * @example
 * app.post('/auth/recovery/start', recoveryStart(context))
 */
export const recoveryStart = (context: RouteContext) => async (c: Context) => {
  const input = await readBody(c.req.raw, recoverySchema)
  const address = input.email.toLowerCase()
  enforce(context.limits.signInsPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  enforce(context.limits.recoveriesPerEmail(address), (minutes) => `Too many recovery emails sent to this email; try again in ${minutes} minutes`)
  const account = await context.store.account(address)
  if (!account) throw new ServerError(404, 'unknown_account', 'No account with this email')
  const { activity } = await callKms(() =>
    context.kms.initUserEmailRecovery({
      type: 'ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2',
      timestampMs: String(context.now()),
      organizationId: account.organization_id,
      parameters: {
        email: address,
        targetPublicKey: input.targetPublicKey,
        expirationSeconds: String(RECOVERY_CODE_SECONDS),
        emailCustomization: { appName: context.appName },
      },
    }),
  )
  const userId = activity.result.initUserEmailRecoveryResult?.userId
  if (!userId) throw incompleteAnswer()
  return c.json({ organizationId: account.organization_id, userId })
}
