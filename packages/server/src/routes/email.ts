import type { Context } from 'hono'
import { z } from 'zod'
import { incompleteAnswer, ServerError } from '../errors.js'
import { callKms, enforce, readBody, type RouteContext, startSession } from '../internal/context.js'
import { email, p256PublicKey, SESSION_KEY_SECONDS, sessionKeySeconds } from '../internal/schemas.js'
import { ETHEREUM_ACCOUNT, WALLET_NAME } from '../internal/wallet.js'

const startSchema = z.object({ email })
const verifySchema = z.object({
  otpId: z.string().min(1).max(64),
  code: z.string().regex(/^[0-9A-Za-z]{6,9}$/, 'must be the 6 to 9 characters of the code'),
  targetPublicKey: p256PublicKey,
  sessionSeconds: sessionKeySeconds.optional(),
})

/**
 * `POST /auth/email/start` `{email}` → `{otpId}`: on the first sign-in of an email, a
 * sub-organization whose root user has that email, with the 'Turnkey HD' Ethereum wallet; then
 * the kms emails a code.
 *
 * @example
 * app.post('/auth/email/start', emailStart(context))
 */
export const emailStart = (context: RouteContext) => async (c: Context) => {
  const { store, kms, now } = context
  const address = (await readBody(c.req.raw, startSchema)).email.toLowerCase()
  enforce(context.limits.signInsPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  enforce(context.limits.codesPerEmail(address), (minutes) => `Too many codes sent to this email; try again in ${minutes} minutes`)

  let account = store.account(address)
  if (!account) {
    const { activity } = await callKms(() =>
      kms.createSubOrganization({
        type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
        timestampMs: String(now()),
        organizationId: context.organizationId,
        parameters: {
          subOrganizationName: address,
          rootQuorumThreshold: 1,
          rootUsers: [{ userName: address, userEmail: address, apiKeys: [], authenticators: [], oauthProviders: [] }],
          wallet: { walletName: WALLET_NAME, accounts: [ETHEREUM_ACCOUNT] },
        },
      }),
    )
    const result = activity.result.createSubOrganizationResultV8
    if (!result?.subOrganizationId || !result.rootUserIds?.[0] || !result.wallet?.addresses[0]) throw incompleteAnswer()
    account = { email: address, organization_id: result.subOrganizationId, user_id: result.rootUserIds[0], address: result.wallet.addresses[0], created_at: now() }
    store.insertAccount(account)
  }
  const organizationId = account.organization_id
  const { activity } = await callKms(() =>
    kms.initOtpAuth({
      type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
      timestampMs: String(now()),
      organizationId,
      parameters: { otpType: 'OTP_TYPE_EMAIL', contact: address, appName: context.appName },
    }),
  )
  const otpId = activity.result.initOtpAuthResultV2?.otpId
  if (!otpId) throw incompleteAnswer()
  store.insertPendingCode({ otp_id: otpId, email: address, organization_id: organizationId, created_at: now() })
  return c.json({ otpId })
}

/**
 * `POST /auth/email/verify` `{otpId, code, targetPublicKey, sessionSeconds?}` → `{credentialBundle,
 * organizationId, userId, address}` and the session cookie. The bundle holds a key that works
 * `sessionSeconds` (default 900), encrypted to `targetPublicKey`.
 *
 * @example
 * app.post('/auth/email/verify', emailVerify(context))
 */
export const emailVerify = (context: RouteContext) => async (c: Context) => {
  const { store, kms, now } = context
  const input = await readBody(c.req.raw, verifySchema)
  const pending = store.pendingCode(input.otpId)
  if (!pending) throw new ServerError(400, 'unknown_code', 'This code was not sent, or has been used; ask for a new one')
  const { activity } = await callKms(() =>
    kms.otpAuth({
      type: 'ACTIVITY_TYPE_OTP_AUTH',
      timestampMs: String(now()),
      organizationId: pending.organization_id,
      parameters: {
        otpId: input.otpId,
        otpCode: input.code,
        targetPublicKey: input.targetPublicKey,
        expirationSeconds: String(input.sessionSeconds ?? SESSION_KEY_SECONDS.default),
      },
    }),
  )
  const result = activity.result.otpAuthResult
  if (!result?.credentialBundle) throw incompleteAnswer()
  store.deletePendingCode(input.otpId)
  const account = store.account(pending.email)!
  startSession(c, context, account, 'email')
  return c.json({ credentialBundle: result.credentialBundle, organizationId: account.organization_id, userId: account.user_id, address: account.address })
}
