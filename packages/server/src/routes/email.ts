import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { decryptCredentialBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import type { Context } from 'hono'
import { z } from 'zod'
import { incompleteAnswer, ServerError } from '../errors.js'
import { callKms, enforce, type RouteContext, readBody, startSession } from '../internal/context.js'
import { compressedP256Key, email, p256PublicKey, SESSION_KEY_SECONDS, sessionKeySeconds } from '../internal/schemas.js'
import { createAccountSubOrganization } from '../internal/subOrganization.js'
import { noteEmail } from '../middleware/audit.js'

const startSchema = z.object({ email })
const verifySchema = z
  .object({
    otpId: z.string().min(1).max(64),
    code: z.string().regex(/^[0-9A-Za-z]{6,9}$/, 'must be the 6 to 9 characters of the code'),
    targetPublicKey: p256PublicKey.optional(),
    sessionPublicKey: compressedP256Key.optional(),
    sessionSeconds: sessionKeySeconds.optional(),
  })
  .refine((input) => (input.targetPublicKey === undefined) !== (input.sessionPublicKey === undefined), 'send either targetPublicKey or sessionPublicKey')

/** How long the credential the backend itself opens (to register a browser's session key) lives. */
const REGISTRATION_CREDENTIAL_SECONDS = 60

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
    account = await store.insertAccount({
      email: address,
      organization_id: created.subOrganizationId,
      user_id: created.userId,
      address: created.address,
      created_at: now(),
    })
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
  await store.insertPendingCode({ otp_id: otpId, email: address, organization_id: organizationId, created_at: now() })
  return c.json({ otpId })
}

/**
 * `POST /auth/email/verify` `{otpId, code, sessionPublicKey | targetPublicKey, sessionSeconds?}` and
 * the session cookie. Tries are limited per IP, per code and per email per day (`LIMITS`). Two ways to receive the key the code earns, lasting `sessionSeconds`
 * (default 900):
 * - `sessionPublicKey`: the browser's own key (non-extractable, never leaves it). The backend
 *   redeems the code for a short-lived credential of the user, and with it registers that key as
 *   the user's API key (no delegated access needed on hosted Turnkey) → `{organizationId, userId,
 *   address, sessionExpiresAt}`.
 * - `targetPublicKey`: the credential itself, HPKE-encrypted to that key → `{credentialBundle,
 *   organizationId, userId, address}` (for frames and SDKs that open bundles).
 *
 * @example
 * app.post('/auth/email/verify', emailVerify(context))
 */
export const emailVerify = (context: RouteContext) => async (c: Context) => {
  const { store, kms, now } = context
  const input = await readBody(c.req.raw, verifySchema)
  enforce(await context.limits.verifiesPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  const pending = await store.pendingCode(input.otpId)
  if (!pending) throw new ServerError(400, 'unknown_code', 'This code was not sent, or has been used; ask for a new one')
  // Counted before the kms compares: guesses racing on several instances cannot pass the kms's own count.
  enforce(await context.limits.verifiesPerCode(input.otpId), () => 'Too many tries of this code; ask for a new one')
  enforce(
    await context.limits.verifiesPerEmailPerDay(pending.email),
    (minutes) => `Too many sign-in attempts for this email today; try again in ${minutes} minutes`,
  )
  noteEmail(c.req.raw, pending.email)
  const seconds = input.sessionSeconds ?? SESSION_KEY_SECONDS.default
  const target = input.targetPublicKey ? undefined : generateP256KeyPair()
  // Everything the kms refuses here is about the code (wrong, spent, expired, too many tries):
  // one code, invalid_code, for the browser to branch on; the kms's words stay the message.
  const { activity } = await callKms(() =>
    kms.otpAuth({
      type: 'ACTIVITY_TYPE_OTP_AUTH',
      timestampMs: String(now()),
      organizationId: pending.organization_id,
      parameters: {
        otpId: input.otpId,
        otpCode: input.code,
        targetPublicKey: input.targetPublicKey ?? target!.publicKeyUncompressed,
        expirationSeconds: String(target ? REGISTRATION_CREDENTIAL_SECONDS : seconds),
      },
    }),
  ).catch((error: unknown) => {
    if (error instanceof ServerError && error.code === 'kms_refused') throw new ServerError(error.status, 'invalid_code', error.message)
    throw error
  })
  const result = activity.result.otpAuthResult
  if (!result?.credentialBundle || !result.userId) throw incompleteAnswer()
  await store.deletePendingCode(input.otpId)
  const account = (await store.account(pending.email))!
  const answer = { organizationId: account.organization_id, userId: account.user_id, address: account.address }
  if (!target) {
    await startSession(c, context, account, 'email')
    return c.json({ credentialBundle: result.credentialBundle, ...answer })
  }
  // The user's own short-lived credential registers the browser's key; then it is forgotten.
  const credential = decryptCredentialBundle(result.credentialBundle, target.privateKey)
  const asUser = new TurnkeyClient(
    { baseUrl: context.kmsUrl },
    new ApiKeyStamper({ apiPublicKey: Buffer.from(getPublicKey(credential, true)).toString('hex'), apiPrivateKey: credential }),
  )
  const at = now()
  const registered = await callKms(() =>
    asUser.createApiKeys({
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      timestampMs: String(at),
      organizationId: account.organization_id,
      parameters: {
        userId: result.userId!,
        apiKeys: [
          {
            apiKeyName: `session ${new Date(at).toISOString()}`,
            publicKey: input.sessionPublicKey!,
            curveType: 'API_KEY_CURVE_P256',
            expirationSeconds: String(seconds),
          },
        ],
      },
    }),
  )
  if (!registered.activity.result.createApiKeysResult?.apiKeyIds[0]) throw incompleteAnswer()
  await startSession(c, context, { ...account, session_public_key: input.sessionPublicKey! }, 'email')
  return c.json({ ...answer, sessionExpiresAt: new Date(at + seconds * 1000).toISOString() })
}
