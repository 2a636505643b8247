import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import { z } from 'zod'
import type { ActivityTable } from '../activities/table.js'
import { hpkeOpen, signBundle } from '../bundles.js'
import type { ActivityContext } from '../context.js'
import { DEFAULT_SESSION_SECONDS, insertApiKey, invalidateKeys, refuseLongLifetime, sessionJwt } from '../credentials.js'
import { failedPrecondition, GrpcCode, invalid, KmsError, notFound, permissionDenied } from '../errors.js'
import { codeMail, mailLocale } from '../mails.js'
import { newP256Key, p256Sign, p256Verify, p256VerifyOwn } from '../p256.js'
import { parse } from '../params.js'
import { keepingWrites } from '../refusal.js'
import { open, seal } from '../secrets.js'
import { newCode } from './activities.js'
import { OTP_DEFAULT_SECONDS, OTP_MAX_ATTEMPTS, OTP_MAX_SECONDS, VERIFICATION_TOKEN_DEFAULT_SECONDS, VERIFICATION_TOKEN_MAX_SECONDS } from './limits.js'

// Turnkey's second OTP flow (research/turnkey-api.md §6.2, flow B): the code never travels in
// clear. init_otp (V3) emails a code and answers a target key signed by the kms's signer key;
// the client encrypts {otp_code, public_key} to it, and verify_otp (V2) answers a short-lived,
// single-use verification token binding that public key; otp_login (V2) spends the token for a
// session of a key the bound key signed for. The same guess limits as otp_auth hold here.

const hashCode = (otpId: string, code: string) => createHash('sha256').update(`${otpId}:${code}`).digest()
const targetRecord = (otpId: string) => `otp-target:${otpId}`
const compressedKey = z.string().regex(/^0[23][0-9a-f]{64}$/, 'must be a compressed P-256 public key in lowercase hex')
const seconds = z.string().regex(/^\d+$/)

// The parameters of each activity, built once: a zod schema compiles its parser on first use, and
// one built per request paid that again on every call.
const initOtpParams = z.object({
  otpType: z.literal('OTP_TYPE_EMAIL', 'only OTP_TYPE_EMAIL is supported'),
  contact: z.email(),
  appName: z.string().min(1).max(128),
  /** Latchkey extension: the mail's language (a BCP 47 tag or an Accept-Language list); English otherwise. */
  locale: z.string().max(256).optional(),
  otpLength: z.number().int().min(6).max(9).optional(),
  alphanumeric: z.boolean().optional(),
  expirationSeconds: seconds.optional(),
})
const verifyOtpParams = z.object({ otpId: z.string().min(1), encryptedOtpBundle: z.string().min(1).max(4096), expirationSeconds: seconds.optional() })
const otpLoginParams = z.object({
  verificationToken: z.string().min(1).max(4096),
  publicKey: compressedKey,
  clientSignature: z.object({
    publicKey: z.string().min(1),
    scheme: z.literal('CLIENT_SIGNATURE_SCHEME_API_P256', 'only CLIENT_SIGNATURE_SCHEME_API_P256 is supported'),
    message: z.string().min(1).max(4096),
    signature: z.string().regex(/^[0-9a-fA-F]{128}$/, 'must be the raw r‖s signature, 64 bytes of hex'),
  }),
  expirationSeconds: seconds.optional(),
  invalidateExisting: z.boolean().optional(),
  sessionProfileId: z.undefined('session profiles are not supported').optional(),
})

/** A standard ES256 JWT (one SHA-256, unlike the session JWT's two), as verifyOtpVerificationToken checks it. */
function verificationJwt(claims: Record<string, string>, privateKey: string): string {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const input = `${encode({ alg: 'ES256', typ: 'JWT' })}.${encode(claims)}`
  return `${input}.${p256Sign(privateKey, input, 'p1363').toString('base64url')}`
}

type TokenClaims = { id: string; organization_id: string; public_key: string; exp: string }

/** The claims of a verification token this kms signed and that has not expired; refused otherwise. */
function readVerificationToken(token: string, context: ActivityContext): TokenClaims {
  const refused = () => permissionDenied('the verification token is not one this kms issued')
  const parts = token.split('.')
  if (parts.length !== 3) throw refused()
  const [header, payload, signature] = parts as [string, string, string]
  let claims: Record<string, unknown>
  try {
    if (JSON.parse(Buffer.from(header, 'base64url').toString()).alg !== 'ES256') throw refused()
    if (!p256VerifyOwn(context.signerPrivateKey, `${header}.${payload}`, Buffer.from(signature, 'base64url'), 'p1363')) throw refused()
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
  } catch {
    throw refused()
  }
  for (const field of ['id', 'organization_id', 'public_key', 'exp'] as const) if (typeof claims[field] !== 'string') throw refused()
  if (Number(claims['exp']) <= context.now()) throw failedPrecondition('the verification token has expired: verify a new code')
  return claims as TokenClaims
}

/** The `{otp_code, public_key}` inside an encryptedOtpBundle, opened with the code's target key. */
async function openOtpBundle(bundle: string, targetPrivateKey: string): Promise<{ code: string; publicKey: string }> {
  let envelope: { encappedPublic?: unknown; ciphertext?: unknown }
  try {
    envelope = JSON.parse(bundle)
  } catch {
    throw invalid('encryptedOtpBundle is not JSON')
  }
  if (typeof envelope?.encappedPublic !== 'string' || typeof envelope.ciphertext !== 'string')
    throw invalid('encryptedOtpBundle must hold encappedPublic and ciphertext')
  const plaintext = await hpkeOpen(targetPrivateKey, Buffer.from(envelope.encappedPublic, 'hex'), Buffer.from(envelope.ciphertext, 'hex')).catch(() => {
    throw invalid('encryptedOtpBundle does not open with this code’s target key')
  })
  let inner: { otp_code?: unknown; public_key?: unknown }
  try {
    inner = JSON.parse(new TextDecoder().decode(plaintext))
  } catch {
    throw invalid('encryptedOtpBundle must hold JSON {otp_code, public_key}')
  }
  if (typeof inner?.otp_code !== 'string' || inner.otp_code.length === 0 || inner.otp_code.length > 16)
    throw invalid('encryptedOtpBundle: otp_code must be the code, a string')
  const publicKey = compressedKey.safeParse(inner.public_key)
  if (!publicKey.success) throw invalid('encryptedOtpBundle: public_key must be a compressed P-256 public key in lowercase hex')
  return { code: inner.otp_code, publicKey: publicKey.data }
}

/** Refuses unless `signature` (raw r‖s hex) is `publicKey`'s ECDSA P-256 SHA-256 signature of `message`. */
function verifyClientSignature(message: string, signature: string, publicKey: string) {
  if (!p256Verify(publicKey, message, Buffer.from(signature, 'hex'), 'p1363'))
    throw permissionDenied('clientSignature does not verify with the public key bound in the verification token')
}

export const OTP_V2_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_INIT_OTP_V3: {
    op: 'init_otp',
    intentKey: 'initOtpIntentV3',
    resultKey: 'initOtpResultV2',
    async run(params, context) {
      const input = parse(initOtpParams, params)
      const lifetime = Number(input.expirationSeconds ?? OTP_DEFAULT_SECONDS)
      if (lifetime > OTP_MAX_SECONDS) throw invalid(`invalid parameters: expirationSeconds: must be at most ${OTP_MAX_SECONDS} seconds`)
      const { db, caller, masterKey, now } = context
      const user = await db.userByEmail(caller.organizationId, input.contact)
      // An address no user has: a sign-up proving its email before its sub-organization exists, as
      // Turnkey's sign-up with a code does at the parent. Only a top-level organization (the app's
      // backend) sends one: a sub-organization's user may not have the kms mail any address.
      const contact = user ? undefined : input.contact.toLowerCase()
      if (!user && (await db.organization(caller.organizationId))?.parent_id !== null)
        throw notFound(`no user with email ${input.contact} in organization ${caller.organizationId}`)
      const otpId = randomUUID()
      const code = newCode(input.otpLength ?? 6, input.alphanumeric ?? false)
      const target = newP256Key()
      const at = now()
      if (user) await db.retireOtps(user.id, caller.organizationId)
      else await db.retireContactOtps(contact!, caller.organizationId)
      await db.insertOtp({
        id: otpId,
        organization_id: caller.organizationId,
        user_id: user?.id ?? '',
        ...(contact === undefined ? {} : { contact }),
        code_hash: hashCode(otpId, code).toString('hex'),
        expires_at: at + lifetime * 1000,
        created_at: at,
        sealed_target_key: seal(masterKey, targetRecord(otpId), target.privateKey.toString('hex')),
      })
      await context.mailer.send(
        codeMail({
          to: input.contact,
          appName: input.appName,
          code,
          minutes: Math.round(lifetime / 60),
          origins: context.webauthn.origins,
          locale: mailLocale(input.locale),
        }),
      )
      const targetPublic = target.publicKey.toString('hex')
      return {
        otpId,
        otpEncryptionTargetBundle: signBundle(context.signerPrivateKey, {
          targetPublic,
          organizationId: caller.organizationId,
          otpId,
          // A Latchkey field @turnkey/crypto ignores: the address the code went to, signed, so the
          // consent frame names it from the kms and not from the page that relays the bundle.
          contact: input.contact,
        }),
      }
    },
  },
  ACTIVITY_TYPE_VERIFY_OTP_V2: {
    op: 'verify_otp',
    intentKey: 'verifyOtpIntentV2',
    resultKey: 'verifyOtpResult',
    async run(params, context) {
      const input = parse(verifyOtpParams, params)
      const lifetime = Number(input.expirationSeconds ?? VERIFICATION_TOKEN_DEFAULT_SECONDS)
      if (lifetime > VERIFICATION_TOKEN_MAX_SECONDS)
        throw invalid(
          `invalid parameters: expirationSeconds: must be at most ${VERIFICATION_TOKEN_MAX_SECONDS} seconds: a verification token is spent right away`,
        )
      const { db, caller, masterKey, now } = context
      const otp = await db.otp(input.otpId, caller.organizationId)
      if (!otp) throw notFound(`otp ${input.otpId} not found`)
      if (otp.sealed_target_key === null) throw failedPrecondition('this code was sent by init_otp_auth: redeem it with otp_auth')
      const opened = await openOtpBundle(input.encryptedOtpBundle, open(masterKey, targetRecord(otp.id), otp.sealed_target_key))
      // Counted before compared, in one conditional statement, as otp_auth does (auth/activities.ts).
      const attempts = await db.reserveOtpAttempt(otp.id, caller.organizationId, now(), OTP_MAX_ATTEMPTS)
      if (attempts === undefined) {
        if (otp.used === 1 || otp.used === 3) throw failedPrecondition('this code has already been used')
        if (otp.used === 2) throw failedPrecondition('a newer code was sent: use the latest one')
        if (otp.expires_at <= now()) throw failedPrecondition('this code has expired')
        throw new KmsError(GrpcCode.resourceExhausted, 'too many wrong codes: request a new one')
      }
      if (!timingSafeEqual(hashCode(otp.id, opened.code.toUpperCase()), Buffer.from(otp.code_hash, 'hex'))) {
        const left = OTP_MAX_ATTEMPTS - attempts
        throw keepingWrites(
          new KmsError(
            GrpcCode.invalidArgument,
            left > 0 ? `invalid code: ${left} attempt${left === 1 ? '' : 's'} left` : 'invalid code: no attempts left, request a new one',
          ),
        )
      }
      if (!(await db.otpUsed(otp.id))) throw failedPrecondition('this code has already been used')
      // The token's id is the code's: otp_login spends it on the code's row, once.
      const claims = {
        id: otp.id,
        verification_type: 'OTP_TYPE_EMAIL',
        contact: otp.contact ?? (await db.user(otp.user_id, caller.organizationId))?.email ?? '',
        organization_id: caller.organizationId,
        public_key: opened.publicKey,
        exp: String(now() + lifetime * 1000),
      }
      return { verificationToken: verificationJwt(claims, context.signerPrivateKey) }
    },
  },
  ACTIVITY_TYPE_OTP_LOGIN_V2: {
    op: 'otp_login',
    intentKey: 'otpLoginIntentV2',
    resultKey: 'otpLoginResult',
    async run(params, context) {
      const input = parse(otpLoginParams, params)
      refuseLongLifetime(context, input.expirationSeconds)
      const { db, caller, now } = context
      const claims = readVerificationToken(input.verificationToken, context)
      if (claims.organization_id !== caller.organizationId)
        throw permissionDenied(`the verification token belongs to organization ${claims.organization_id}, not ${caller.organizationId}`)
      if (input.clientSignature.publicKey !== claims.public_key)
        throw permissionDenied('clientSignature.publicKey is not the public key bound in the verification token')
      const expected = JSON.stringify({ login: { publicKey: input.publicKey }, tokenId: claims.id, type: 'USAGE_TYPE_LOGIN' })
      if (input.clientSignature.message !== expected) throw invalid(`clientSignature.message must be ${expected}`)
      verifyClientSignature(input.clientSignature.message, input.clientSignature.signature, claims.public_key)
      const otp = await db.otp(claims.id, caller.organizationId)
      // Marked spent only if not yet: logins racing with one token sign in once.
      // A code to an address no user had proves the address (a sign-up's), and signs nobody in.
      if (otp?.contact != null) throw failedPrecondition('this verification token proves an email no user has: it signs nobody in')
      if (!otp || !(await db.otpTokenUsed(otp.id, caller.organizationId))) throw failedPrecondition('this verification token has already been used')
      const lifetime = Number(input.expirationSeconds ?? DEFAULT_SESSION_SECONDS)
      // The token is of a code just proven (it lives minutes at most): the login is the verification.
      const at = now()
      // A Latchkey extension: the login of a key the user already has (the client signature proves
      // it is held) re-verifies that key instead of failing as a duplicate. The embedded wallet
      // confirms it is the user this way before an export past the fresh-verification window, and
      // keeps its key whether or not the code is then typed. The key keeps its expiry.
      const held = await db.apiKeyByPublicKey(input.publicKey)
      if (held && held.user_id === otp.user_id && held.organization_id === caller.organizationId && held.expires_at !== null) {
        if (input.invalidateExisting)
          for (const key of await db.apiKeysOfUser(otp.user_id))
            if (key.credential_type === 'CREDENTIAL_TYPE_OTP_AUTH_KEY_P256' && key.id !== held.id) await db.deleteApiKey(key.id)
        await db.setApiKeyVerifiedAt(held.id, at)
        return { session: otpSession(context, otp.user_id, input.publicKey, Math.min(at + lifetime * 1000, held.expires_at)) }
      }
      if (input.invalidateExisting) await invalidateKeys(db, otp.user_id, 'CREDENTIAL_TYPE_OTP_AUTH_KEY_P256')
      await insertApiKey(
        db,
        otp.user_id,
        caller.organizationId,
        { apiKeyName: `otp login ${new Date(at).toISOString()}`, publicKey: input.publicKey, expirationSeconds: String(lifetime) },
        at,
        { credentialType: 'CREDENTIAL_TYPE_OTP_AUTH_KEY_P256', verifiedAt: at },
      )
      return { session: otpSession(context, otp.user_id, input.publicKey, at + lifetime * 1000) }
    },
  },
}

/** The session JWT of an otp_login: read-write, for `publicKey` of `userId`, until `expiresAt` (unix ms). */
function otpSession(context: ActivityContext, userId: string, publicKey: string, expiresAt: number): string {
  return sessionJwt(
    {
      exp: Math.floor(expiresAt / 1000),
      public_key: publicKey,
      session_type: 'SESSION_TYPE_READ_WRITE',
      user_id: userId,
      organization_id: context.caller.organizationId,
      credential_type: 'CREDENTIAL_TYPE_OTP_AUTH_KEY_P256',
    },
    context.signerPrivateKey,
  )
}
