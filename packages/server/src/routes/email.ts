import type { Context } from 'hono'
import { z } from 'zod'
import { incompleteAnswer, ServerError } from '../errors.js'
import { callKms, enforce, type RouteContext, readBody, startSession } from '../internal/context.js'
import { compressedP256Key, email, locale, mailLocale, SESSION_KEY_SECONDS, sessionKeySeconds } from '../internal/schemas.js'
import { createAccountSubOrganization } from '../internal/subOrganization.js'
import { noteEmail } from '../middleware/audit.js'

const startSchema = z.object({ email, locale })
const PLAINTEXT_CODE = 'The code is typed in the consent frame: send its encryptedOtpBundle and clientSignature, never the code'
const verifySchema = z.object({
  // First, so a page still sending the code is told so before anything else.
  code: z.undefined(PLAINTEXT_CODE).optional(),
  otpId: z.string().min(1).max(64),
  // The code itself was typed in the consent frame and sealed there to the kms's target key.
  encryptedOtpBundle: z.string().min(1).max(4096),
  clientSignature: z.object({
    publicKey: compressedP256Key,
    scheme: z.literal('CLIENT_SIGNATURE_SCHEME_API_P256'),
    message: z.string().min(1).max(1024),
    signature: z.string().regex(/^[0-9a-f]{128}$/, 'must be the raw r‖s signature, 64 bytes of hex'),
  }),
  sessionSeconds: sessionKeySeconds.optional(),
})

/**
 * `POST /auth/email/start` `{email}` → `{otpId, otpEncryptionTargetBundle}`: on the first sign-in
 * of an email, a sub-organization whose root user has that email, with the 'Turnkey HD' Ethereum
 * wallet; then the kms emails a code (init_otp V3). The bundle names the key the consent frame
 * seals the typed code to, signed by the kms's signer key; the page only relays it. Anyone can
 * type any address here, so the account's email login stays unproven until a sign-in proves its
 * code: until then an account that proves the address by linking it takes it over.
 *
 * @example
 * app.post('/auth/email/start', emailStart(context))
 */
export const emailStart = (context: RouteContext) => async (c: Context) => {
  const { store, kms, now } = context
  const body = await readBody(c.req.raw, startSchema)
  const address = body.email.toLowerCase()
  enforce(await context.limits.signInsPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  enforce(await context.limits.codesPerEmail(address), (minutes) => `Too many codes sent to this email; try again in ${minutes} minutes`)

  let account = await store.account(address)
  if (!account) {
    const created = await createAccountSubOrganization(context, address, {
      userName: address,
      userEmail: address,
      apiKeys: [],
      authenticators: [],
      oauthProviders: [],
    })
    account = await store.insertAccount(
      { email: address, organization_id: created.subOrganizationId, user_id: created.userId, address: created.address, created_at: now() },
      { unproven: true },
    )
  }
  const organizationId = account.organization_id
  const { activity } = await callKms(() =>
    kms.initOtp({
      type: 'ACTIVITY_TYPE_INIT_OTP_V3',
      timestampMs: String(now()),
      organizationId,
      parameters: { otpType: 'OTP_TYPE_EMAIL', contact: address, appName: context.appName, ...mailLocale(body.locale, c.req.header('accept-language')) },
    }),
  )
  const { otpId, otpEncryptionTargetBundle } = activity.result.initOtpResultV2 ?? {}
  if (!otpId || !otpEncryptionTargetBundle) throw incompleteAnswer()
  await store.insertPendingCode({ otp_id: otpId, email: address, organization_id: organizationId, created_at: now() })
  return c.json({ otpId, otpEncryptionTargetBundle })
}

/**
 * `POST /auth/email/verify` `{otpId, encryptedOtpBundle, clientSignature, sessionSeconds?}` and the
 * session cookie → `{organizationId, userId, address, sessionExpiresAt}`. The consent frame sealed
 * the code the user typed there, with its own signing key's public key, to the kms
 * (`encryptedOtpBundle`), and signed the login of that key (`clientSignature`); the backend runs
 * verify_otp and then otp_login with the parent's key, so the frame's key becomes the user's key
 * for `sessionSeconds` (default 900). No code reaches the backend or the page in clear: a `code`
 * is refused. Tries are limited per IP, per code and per email per day (`LIMITS`). A code sent for
 * an account that has lost the email since (a link took over its unproven login, or it was
 * unlinked) signs nobody in (400 `unknown_code`): a new one goes to the email's account now.
 *
 * @example
 * app.post('/auth/email/verify', emailVerify(context))
 */
export const emailVerify = (context: RouteContext) => async (c: Context) => {
  const { store, kms, now } = context
  const input = await readBody(c.req.raw, verifySchema).catch((error: unknown) => {
    if (error instanceof ServerError && error.message === `code: ${PLAINTEXT_CODE}`) throw new ServerError(400, 'plaintext_code', PLAINTEXT_CODE)
    throw error
  })
  enforce(await context.limits.verifiesPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  const pending = await store.pendingCode(input.otpId)
  // A passkey sign-up's code (the parent organization's) proves an email; it signs nobody in.
  if (!pending || pending.organization_id === context.organizationId)
    throw new ServerError(400, 'unknown_code', 'This code was not sent, or has been used; ask for a new one')
  // Counted before the kms compares: guesses racing on several instances cannot pass the kms's own count.
  enforce(await context.limits.verifiesPerCode(input.otpId), () => 'Too many tries of this code; ask for a new one')
  enforce(
    await context.limits.verifiesPerEmailPerDay(pending.email),
    (minutes) => `Too many sign-in attempts for this email today; try again in ${minutes} minutes`,
  )
  noteEmail(c.req.raw, pending.email)
  const seconds = input.sessionSeconds ?? SESSION_KEY_SECONDS.default
  // Everything the kms refuses here is about the code (wrong, spent, expired, too many tries, a
  // bundle or signature that does not fit it): one code, invalid_code, for the browser to branch
  // on; the kms's words stay the message.
  const asInvalidCode = (error: unknown) => {
    if (error instanceof ServerError && error.code === 'kms_refused') throw new ServerError(error.status, 'invalid_code', error.message)
    throw error
  }
  const verified = await callKms(() =>
    kms.verifyOtp({
      type: 'ACTIVITY_TYPE_VERIFY_OTP_V2',
      timestampMs: String(now()),
      organizationId: pending.organization_id,
      parameters: { otpId: input.otpId, encryptedOtpBundle: input.encryptedOtpBundle },
    }),
  ).catch(asInvalidCode)
  const verificationToken = verified.activity.result.verifyOtpResult?.verificationToken
  if (!verificationToken) throw incompleteAnswer()
  await store.deletePendingCode(input.otpId)
  // Before the kms registers a key there: the proven code makes the email this account's for good,
  // or the account lost it to a link meanwhile and the code opens nothing.
  if (!(await store.proveEmailSignIn(pending.email, pending.organization_id)))
    throw new ServerError(400, 'unknown_code', 'This code was not sent, or has been used; ask for a new one')
  const at = now()
  const login = await callKms(() =>
    kms.otpLogin({
      type: 'ACTIVITY_TYPE_OTP_LOGIN_V2',
      timestampMs: String(at),
      organizationId: pending.organization_id,
      parameters: {
        verificationToken,
        publicKey: input.clientSignature.publicKey,
        clientSignature: input.clientSignature,
        expirationSeconds: String(seconds),
      },
    }),
  ).catch(asInvalidCode)
  if (!login.activity.result.otpLoginResult?.session) throw incompleteAnswer()
  const account = (await store.account(pending.email))!
  // The session remembers the key it registered, so sign-out deletes it in the kms.
  await startSession(c, context, { ...account, session_public_key: input.clientSignature.publicKey }, 'email')
  return c.json({
    organizationId: account.organization_id,
    userId: account.user_id,
    address: account.address,
    sessionExpiresAt: new Date(at + seconds * 1000).toISOString(),
  })
}
