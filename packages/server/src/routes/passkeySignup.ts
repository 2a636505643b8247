import type { Context } from 'hono'
import { z } from 'zod'
import { incompleteAnswer, ServerError } from '../errors.js'
import { callKms, enforce, type RouteContext, readBody, startSession } from '../internal/context.js'
import { proveEmail } from '../internal/emailProof.js'
import { attestation, challenge, compressedP256Key, email, locale, mailLocale, SESSION_KEY_SECONDS, sessionKeySeconds } from '../internal/schemas.js'
import { createAccountSubOrganization } from '../internal/subOrganization.js'
import { StoreConflictError } from '../store.js'

const startSchema = z.object({ email, locale })
const signupSchema = z.object({
  email: email.optional(),
  passkeyIdentifier: z.string().trim().min(1).max(128).optional(),
  // With an email: the code /auth/passkey/signup/start sent to it, typed and sealed in the consent frame.
  otpId: z.string().min(1).max(64).optional(),
  encryptedOtpBundle: z.string().min(1).max(4096).optional(),
  challenge,
  attestation,
  sessionPublicKey: compressedP256Key,
  sessionSeconds: sessionKeySeconds.optional(),
})

const passkeyTaken = () => new ServerError(409, 'passkey_exists', 'This passkey is already registered; sign in with it')
const emailTaken = () => new ServerError(409, 'email_exists', 'This email has an account already; sign in with it by email')

/**
 * `POST /auth/passkey/signup/start` `{email}` → `{otpId, otpEncryptionTargetBundle}`: the kms emails
 * a code to the address a passkey sign-up gives (init_otp V3 in the parent organization: no
 * sub-organization or user exists before the code is proven). The consent frame seals the code the
 * user types to the bundle's key; `POST /auth/passkey/signup` takes the sealed copy. The answer is the
 * same for an address with an account and one without (review L2).
 *
 * @example
 * app.post('/auth/passkey/signup/start', passkeySignupStart(context))
 */
export const passkeySignupStart = (context: RouteContext) => async (c: Context) => {
  const { store, kms, now } = context
  const body = await readBody(c.req.raw, startSchema)
  const address = body.email.toLowerCase()
  enforce(await context.limits.signInsPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  enforce(await context.limits.codesPerEmail(address), (minutes) => `Too many codes sent to this email; try again in ${minutes} minutes`)
  const { activity } = await callKms(() =>
    kms.initOtp({
      type: 'ACTIVITY_TYPE_INIT_OTP_V3',
      timestampMs: String(now()),
      organizationId: context.organizationId,
      parameters: { otpType: 'OTP_TYPE_EMAIL', contact: address, appName: context.appName, ...mailLocale(body.locale, c.req.header('accept-language')) },
    }),
  )
  const { otpId, otpEncryptionTargetBundle } = activity.result.initOtpResultV2 ?? {}
  if (!otpId || !otpEncryptionTargetBundle) throw incompleteAnswer()
  // Kept under the parent organization: email sign-in (its codes are a sub-organization's) never takes it.
  await store.insertPendingCode({ otp_id: otpId, email: address, organization_id: context.organizationId, created_at: now() })
  return c.json({ otpId, otpEncryptionTargetBundle })
}

/**
 * `POST /auth/passkey/signup` `{email?, otpId?, encryptedOtpBundle?, passkeyIdentifier?, challenge,
 * attestation, sessionPublicKey, sessionSeconds?}` → `{organizationId, userId, address}` (of the
 * account it creates) and the session cookie (kind 'passkey').
 *
 * Creates a sub-organization whose root user (named by the email, else the passkey identifier)
 * has the passkey as its authenticator and the browser's session key as an API key that expires
 * after `sessionSeconds` (default 900), with the 'Turnkey HD' Ethereum wallet. The kms verifies the
 * attestation; nothing is stored when it refuses.
 *
 * An email is proven first (security review H2): `otpId` is the code `/auth/passkey/signup/start`
 * sent to that very email, `encryptedOtpBundle` the code typed and sealed in the consent frame. The
 * kms checks it (verify_otp: once, within its lifetime, three tries), then the email is the kms
 * user's and the account's, as an email sign-in's is: email and OAuth sign-ins of it land here. An
 * email without its code, with another email's, a wrong, spent or expired one, is refused before
 * anything is written; so is an email that has an account already (told only to who proved it).
 *
 * @example
 * app.post('/auth/passkey/signup', passkeySignup(context))
 */
export const passkeySignup = (context: RouteContext) => async (c: Context) => {
  const { store, now } = context
  const input = await readBody(c.req.raw, signupSchema)
  const address = input.email?.toLowerCase()
  const userName = address ?? input.passkeyIdentifier
  if (userName === undefined) throw new ServerError(400, 'missing_identifier', 'Registering a passkey needs an email or a passkeyIdentifier')
  const code =
    input.otpId !== undefined && input.encryptedOtpBundle !== undefined ? { otpId: input.otpId, encryptedOtpBundle: input.encryptedOtpBundle } : undefined
  if (address !== undefined && code === undefined)
    throw new ServerError(
      400,
      'email_unverified',
      'An email needs its code: send the otpId of /auth/passkey/signup/start and the encryptedOtpBundle the consent frame sealed',
    )
  if (address === undefined && (input.otpId !== undefined || input.encryptedOtpBundle !== undefined))
    throw new ServerError(400, 'invalid_request', 'otpId and encryptedOtpBundle prove an email: send the email too')
  enforce(await context.limits.signInsPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  if (await store.passkeyAccount(input.attestation.credentialId)) throw passkeyTaken()
  if (address !== undefined && code !== undefined) {
    await proveEmail(c, context, code, address)
    // Only who proved the email learns it has an account (review L2).
    if (await context.store.account(address)) throw emailTaken()
  }

  const created = await createAccountSubOrganization(context, userName, {
    userName,
    ...(address === undefined ? {} : { userEmail: address }),
    apiKeys: [
      {
        apiKeyName: 'session',
        publicKey: input.sessionPublicKey,
        curveType: 'API_KEY_CURVE_P256',
        expirationSeconds: String(input.sessionSeconds ?? SESSION_KEY_SECONDS.default),
      },
    ],
    authenticators: [{ authenticatorName: 'Passkey', challenge: input.challenge, attestation: input.attestation }],
    oauthProviders: [],
  })
  const at = now()
  const account = {
    credential_id: input.attestation.credentialId,
    organization_id: created.subOrganizationId,
    user_id: created.userId,
    address: created.address,
    // A proven email is the account's (below); nothing unproven is kept.
    unverified_email: null,
    passkey_identifier: input.passkeyIdentifier ?? null,
    created_at: at,
  }
  try {
    if (address === undefined) await store.insertPasskeyAccount(account)
    else
      await store.insertVerifiedPasskeyAccount(
        { email: address, organization_id: account.organization_id, user_id: account.user_id, address: account.address, created_at: at },
        account,
      )
  } catch (error) {
    // Two sign-ups with the same passkey, or the same email, at once: the second loses here.
    if (error instanceof StoreConflictError) throw error.message === 'email' ? emailTaken() : passkeyTaken()
    throw error
  }
  await startSession(c, context, { ...account, email: address ?? null, session_public_key: input.sessionPublicKey }, 'passkey')
  return c.json({ organizationId: account.organization_id, userId: account.user_id, address: account.address })
}
