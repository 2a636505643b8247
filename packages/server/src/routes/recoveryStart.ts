import { RECOVERY_CODE_VALIDITY_S } from '@latchkey/constants'
import type { Context } from 'hono'
import { z } from 'zod'
import { incompleteAnswer } from '../errors.js'
import { callKms, enforce, type RouteContext, readBody } from '../internal/context.js'
import { email, locale, mailLocale, p256PublicKey } from '../internal/schemas.js'

/** How long the emailed recovery credential works (SPEC §5, §9). */
export { RECOVERY_CODE_VALIDITY_S as RECOVERY_CODE_SECONDS } from '@latchkey/constants'

const recoverySchema = z.object({ email, targetPublicKey: p256PublicKey, recoveryType: z.enum(['email', 'passkey']).default('email'), locale })

/**
 * `POST /auth/recovery/start` `{email, targetPublicKey, recoveryType?}` → `{}`: the kms emails a
 * recovery credential, encrypted to the recovery frame's `targetPublicKey` and valid 900 s, to the
 * account's email (SPEC §5). For `recoveryType: 'email'` (the default) it is an API key
 * (email_auth) that signs the browser in for a recovery session; for `'passkey'` a recover-user key
 * (init_user_email_recovery) that registers a new passkey (recover_user).
 *
 * An email with no account is answered the same, and nothing is sent; no ids are answered either
 * (security review L2): the credential, once opened, names its user to the kms (whoami).
 *
 * @example
 * app.post('/auth/recovery/start', recoveryStart(context))
 */
export const recoveryStart = (context: RouteContext) => async (c: Context) => {
  const input = await readBody(c.req.raw, recoverySchema)
  const address = input.email.toLowerCase()
  enforce(await context.limits.signInsPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  enforce(await context.limits.recoveriesPerEmail(address), (minutes) => `Too many recovery emails sent to this email; try again in ${minutes} minutes`)
  const account = await context.store.account(address)
  if (!account) return c.json({})
  const common = { email: address, targetPublicKey: input.targetPublicKey, expirationSeconds: String(RECOVERY_CODE_VALIDITY_S) }
  const userId =
    input.recoveryType === 'email'
      ? (
          await callKms(() =>
            context.kms.emailAuth({
              type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3',
              timestampMs: String(context.now()),
              organizationId: account.organization_id,
              parameters: { ...common, emailCustomization: { appName: context.appName, ...mailLocale(input.locale, c.req.header('accept-language')) } },
            }),
          )
        ).activity.result.emailAuthResult?.userId
      : (
          await callKms(() =>
            context.kms.initUserEmailRecovery({
              type: 'ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2',
              timestampMs: String(context.now()),
              organizationId: account.organization_id,
              parameters: { ...common, emailCustomization: { appName: context.appName, ...mailLocale(input.locale, c.req.header('accept-language')) } },
            }),
          )
        ).activity.result.initUserEmailRecoveryResult?.userId
  if (!userId) throw incompleteAnswer()
  return c.json({})
}
