import { createHash, randomInt, randomUUID, timingSafeEqual } from 'node:crypto'
import { z } from 'zod'
import type { ActivityTable } from '../activities/table.js'
import type { ActivityContext } from '../context.js'
import { DEFAULT_SESSION_SECONDS, insertAuthenticator, invalidateKeys, prepareCredential, refuseLongLifetime, registerCredential } from '../credentials.js'
import { alreadyExists, failedPrecondition, GrpcCode, KmsError, notFound, permissionDenied } from '../errors.js'
import { codeMail, mailLocale, recoveryMail, signInMail } from '../mails.js'
import { authenticatorParams, parse, targetPublicKey } from '../params.js'
import { keepingWrites } from '../refusal.js'
import { verifyRegistration } from '../webauthn.js'
import { OTP_DEFAULT_SECONDS, OTP_MAX_ATTEMPTS, RECOVERY_CODE_SECONDS } from './limits.js'
import { OAUTH_ACTIVITIES } from './oauth.js'

// Signing in and recovering an account: by email (a credential bundle or a one-time code), by a
// new passkey after email recovery, and by an OAuth ID token (auth/oauth.ts).

async function userByEmail(context: ActivityContext, email: string) {
  const user = await context.db.userByEmail(context.caller.organizationId, email)
  if (!user) throw notFound(`no user with email ${email} in organization ${context.caller.organizationId}`)
  return user
}

const hashCode = (otpId: string, code: string) => createHash('sha256').update(`${otpId}:${code}`).digest()

export function newCode(length: number, alphanumeric: boolean): string {
  const alphabet = alphanumeric ? 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789' : '0123456789'
  return Array.from({ length }, () => alphabet[randomInt(alphabet.length)]).join('')
}

export const AUTH_ACTIVITIES: ActivityTable = {
  ...OAUTH_ACTIVITIES,
  ACTIVITY_TYPE_EMAIL_AUTH_V3: {
    op: 'email_auth',
    intentKey: 'emailAuthIntentV3',
    resultKey: 'emailAuthResult',
    async run(params, context) {
      const input = parse(
        z.object({
          email: z.email(),
          targetPublicKey,
          apiKeyName: z.string().min(1).max(256).optional(),
          expirationSeconds: z.string().regex(/^\d+$/).optional(),
          // `locale`: a Latchkey extension, the mail's language (a BCP 47 tag or an Accept-Language list).
          emailCustomization: z
            .object({ appName: z.string().min(1), magicLinkTemplate: z.string().optional(), locale: z.string().max(256).optional() })
            .optional(),
        }),
        params,
      )
      refuseLongLifetime(context, input.expirationSeconds)
      const user = await userByEmail(context, input.email)
      const credential = await prepareCredential(input.targetPublicKey)
      const bundle = credential.credentialBundle
      const apiKeyId = await registerCredential(context, credential, {
        userId: user.id,
        credentialType: 'CREDENTIAL_TYPE_EMAIL_AUTH_KEY_P256',
        name: input.apiKeyName,
        expirationSeconds: input.expirationSeconds,
        // Only who reads the mailbox holds it: its arrival there is the verification.
        verifiedAt: 'at creation',
      })
      await context.mailer.send(
        signInMail({
          to: input.email,
          appName: input.emailCustomization?.appName ?? 'your app',
          credential: bundle,
          link: input.emailCustomization?.magicLinkTemplate?.replace('%s', encodeURIComponent(bundle)),
          minutes: Math.round(Number(input.expirationSeconds ?? DEFAULT_SESSION_SECONDS) / 60),
          origins: context.webauthn.origins,
          locale: mailLocale(input.emailCustomization?.locale),
        }),
      )
      // The bundle travels by email only.
      return { userId: user.id, apiKeyId }
    },
  },
  ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2: {
    op: 'init_user_email_recovery',
    intentKey: 'initUserEmailRecoveryIntentV2',
    resultKey: 'initUserEmailRecoveryResult',
    async run(params, context) {
      const input = parse(
        z.object({
          email: z.email(),
          targetPublicKey,
          expirationSeconds: z.string().regex(/^\d+$/).optional(),
          // `locale`: a Latchkey extension, the mail's language (a BCP 47 tag or an Accept-Language list).
          emailCustomization: z.object({ appName: z.string().min(1), locale: z.string().max(256).optional() }).optional(),
        }),
        params,
      )
      const user = await userByEmail(context, input.email)
      const seconds = Math.min(Number(input.expirationSeconds ?? RECOVERY_CODE_SECONDS), RECOVERY_CODE_SECONDS)
      const credential = await prepareCredential(input.targetPublicKey)
      await registerCredential(context, credential, {
        userId: user.id,
        credentialType: 'CREDENTIAL_TYPE_RECOVER_USER_KEY_P256',
        name: undefined,
        expirationSeconds: String(seconds),
        // It recovers the account (a new passkey), which is the user's next verification.
        verifiedAt: null,
      })
      await context.mailer.send(
        recoveryMail({
          to: input.email,
          appName: input.emailCustomization?.appName ?? 'your app',
          credential: credential.credentialBundle,
          minutes: Math.round(seconds / 60),
          origins: context.webauthn.origins,
          locale: mailLocale(input.emailCustomization?.locale),
        }),
      )
      return { userId: user.id }
    },
  },
  ACTIVITY_TYPE_RECOVER_USER: {
    op: 'recover_user',
    intentKey: 'recoverUserIntent',
    resultKey: 'recoverUserResult',
    async run(params, context) {
      const input = parse(z.object({ userId: z.string().min(1), authenticator: authenticatorParams }), params)
      const { db, caller, now } = context
      if (caller.userId !== input.userId && caller.homeOrganizationId === caller.organizationId)
        throw permissionDenied('a user can only recover their own account')
      if (!(await db.user(input.userId, caller.organizationId))) throw notFound(`user ${input.userId} not found in organization ${caller.organizationId}`)
      const passkey = await verifyRegistration(input.authenticator, context.webauthn)
      if (await db.authenticatorByCredential(passkey.credentialId)) throw alreadyExists(`credential ${passkey.credentialId} is already registered`)
      const id = await insertAuthenticator(db, input.userId, caller.organizationId, input.authenticator, passkey, now())
      return { authenticatorId: [id] }
    },
  },
  ACTIVITY_TYPE_INIT_OTP_AUTH_V3: {
    op: 'init_otp_auth',
    intentKey: 'initOtpAuthIntentV3',
    resultKey: 'initOtpAuthResultV2',
    async run(params, context) {
      const input = parse(
        z.object({
          otpType: z.literal('OTP_TYPE_EMAIL', 'only OTP_TYPE_EMAIL is supported'),
          contact: z.email(),
          otpLength: z.number().int().min(6).max(9).optional(),
          appName: z.string().min(1).max(128),
          /** Latchkey extension: the mail's language (a BCP 47 tag or an Accept-Language list); English otherwise. */
          locale: z.string().max(256).optional(),
          alphanumeric: z.boolean().optional(),
          expirationSeconds: z.string().regex(/^\d+$/).optional(),
        }),
        params,
      )
      const user = await userByEmail(context, input.contact)
      const otpId = randomUUID()
      const code = newCode(input.otpLength ?? 6, input.alphanumeric ?? false)
      const seconds = Number(input.expirationSeconds ?? OTP_DEFAULT_SECONDS)
      const at = context.now()
      // Only the newest code works: older ones cannot be guessed at alongside it.
      await context.db.retireOtps(user.id, context.caller.organizationId)
      await context.db.insertOtp({
        id: otpId,
        organization_id: context.caller.organizationId,
        user_id: user.id,
        code_hash: hashCode(otpId, code).toString('hex'),
        expires_at: at + seconds * 1000,
        created_at: at,
      })
      await context.mailer.send(
        codeMail({
          to: input.contact,
          appName: input.appName,
          code,
          minutes: Math.round(seconds / 60),
          origins: context.webauthn.origins,
          locale: mailLocale(input.locale),
        }),
      )
      return { otpId }
    },
  },
  ACTIVITY_TYPE_OTP_AUTH: {
    op: 'otp_auth',
    intentKey: 'otpAuthIntent',
    resultKey: 'otpAuthResult',
    async run(params, context) {
      const input = parse(
        z.object({
          otpId: z.string().min(1),
          otpCode: z.string().min(1).max(16),
          targetPublicKey,
          apiKeyName: z.string().min(1).max(256).optional(),
          expirationSeconds: z.string().regex(/^\d+$/).optional(),
          invalidateExisting: z.boolean().optional(),
        }),
        params,
      )
      refuseLongLifetime(context, input.expirationSeconds)
      const { db, caller, now } = context
      // The guess is counted before it is compared, in one conditional statement: however many
      // arrive at once, on however many instances, at most OTP_MAX_ATTEMPTS are ever compared.
      const attempts = await db.reserveOtpAttempt(input.otpId, caller.organizationId, now(), OTP_MAX_ATTEMPTS)
      const otp = await db.otp(input.otpId, caller.organizationId)
      if (!otp) throw notFound(`otp ${input.otpId} not found`)
      // A code of init_otp travels encrypted only (auth/otpV2.ts): never in clear through a page.
      if (otp.sealed_target_key !== null) throw failedPrecondition('this code was sent by init_otp: redeem it encrypted with verify_otp')
      if (attempts === undefined) {
        if (otp.used === 1) throw failedPrecondition('this code has already been used')
        if (otp.used === 2) throw failedPrecondition('a newer code was sent: use the latest one')
        if (otp.expires_at <= now()) throw failedPrecondition('this code has expired')
        throw new KmsError(GrpcCode.resourceExhausted, 'too many wrong codes: request a new one')
      }
      if (!timingSafeEqual(hashCode(otp.id, input.otpCode.toUpperCase()), Buffer.from(otp.code_hash, 'hex'))) {
        // The one write a refused request makes: the reserved guess stays counted.
        const left = OTP_MAX_ATTEMPTS - attempts
        throw keepingWrites(
          new KmsError(
            GrpcCode.invalidArgument,
            left > 0 ? `invalid code: ${left} attempt${left === 1 ? '' : 's'} left` : 'invalid code: no attempts left, request a new one',
          ),
        )
      }
      const credential = await prepareCredential(input.targetPublicKey)
      // Marked used only if still unused: two right answers racing redeem the code once.
      if (!(await db.otpUsed(otp.id))) throw failedPrecondition('this code has already been used')
      if (input.invalidateExisting) await invalidateKeys(db, otp.user_id, 'CREDENTIAL_TYPE_OTP_AUTH_KEY_P256')
      const apiKeyId = await registerCredential(context, credential, {
        userId: otp.user_id,
        credentialType: 'CREDENTIAL_TYPE_OTP_AUTH_KEY_P256',
        name: input.apiKeyName,
        expirationSeconds: input.expirationSeconds,
        // The code was proven just now.
        verifiedAt: 'at creation',
      })
      return { userId: otp.user_id, apiKeyId, credentialBundle: credential.credentialBundle }
    },
  },
}
