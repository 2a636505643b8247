import { randomUUID } from 'node:crypto'
import { generateSecret, generateURI, verifySync } from 'otplib'
import { z } from 'zod'
import { type ActivityTable, found, userIn } from '../activities/table.js'
import { exportBundle } from '../bundles.js'
import type { ActivityContext } from '../context.js'
import { alreadyExists, failedPrecondition, GrpcCode, invalid, notFound, permissionDenied } from '../errors.js'
import { parse, targetPublicKey } from '../params.js'
import { keepingWrites } from '../refusal.js'
import { open, seal } from '../secrets.js'
import type { MfaFactorRow } from '../storage/tables.js'
import { openCodeBundle } from './codeKey.js'
import {
  ACTIVE,
  factorLocked,
  factorRecord,
  MFA_LOCK_SECONDS,
  MFA_MAX_FAILURES,
  mfaRefusal,
  newRecoveryCodes,
  PASSKEY_FACTOR,
  PENDING,
  recoveryCodeHash,
  TOTP,
  TOTP_FACTOR,
} from './factors.js'

// Second factors, a Latchkey extension of the Turnkey API (Turnkey has none). A user enrols a TOTP
// secret the kms makes (create_totp_factor; it counts once a first code is verified) or marks a
// passkey of theirs as a factor (create_passkey_factor, stamped by that passkey). verify_mfa_factor
// records on the session's API key that its holder verified one; the kms's rule (mfa/enforce.ts)
// reads that. Only the user themselves, in their own organization, runs these: a backend's key
// would otherwise learn a TOTP secret or mark a factor verified.

/** The caller must be `userId` in their own organization. */
function refuseOthers(context: ActivityContext, userId: string) {
  const { caller } = context
  if (caller.userId !== userId || caller.homeOrganizationId !== caller.organizationId)
    throw permissionDenied('second factors are enrolled, verified and removed by their user only')
}

/** A factor of the caller, found by id. */
async function ownFactor(context: ActivityContext, factorId: string): Promise<MfaFactorRow> {
  const factor = found(await context.db.mfaFactor(factorId, context.caller.organizationId), 'mfa factor', factorId, context.caller)
  refuseOthers(context, factor.user_id)
  return factor
}

/** The passkey that stamped the request, when it is `authenticatorId`; refused otherwise. */
async function refuseOtherStamp(context: ActivityContext, authenticatorId: string, what: string) {
  const { caller, db } = context
  const stamped = caller.apiKeyId === undefined && caller.credential ? await db.authenticatorByCredential(caller.credential) : undefined
  if (stamped?.id !== authenticatorId) throw permissionDenied(`${what} must be stamped by that passkey (X-Stamp-Webauthn)`)
}

/** The first factor's completion: ten recovery codes, stored as hashes; none when the user already holds some. */
async function issueRecoveryCodes(context: ActivityContext, userId: string): Promise<string[]> {
  const { db, caller, now } = context
  if ((await db.unusedRecoveryCodeCount(userId)) > 0) return []
  const codes = newRecoveryCodes()
  await db.replaceRecoveryCodes(
    userId,
    caller.organizationId,
    codes.map((code) => recoveryCodeHash(userId, code)),
    now(),
  )
  return codes
}

/** Stamps the verification on the session key that stamped the request (a passkey stamp names it in `apiKeyPublicKey`). */
async function recordVerification(context: ActivityContext, apiKeyId: string | undefined): Promise<number | undefined> {
  if (apiKeyId === undefined) return undefined
  const at = context.now()
  await context.db.setMfaVerifiedAt(apiKeyId, at)
  return at
}

/**
 * `value` (JSON) encrypted to `target` as an export bundle (bundles.ts: HPKE to the key, signed by
 * the kms's signer, naming the organization), for a frame to open and show: the page that relays
 * the answer never reads it. Without a target, `value` as it is.
 */
async function sealedFor<value>(context: ActivityContext, target: string | undefined, value: value): Promise<{ bundle: string } | { value: value }> {
  if (target === undefined) return { value }
  const bundle = await exportBundle({
    signerPrivateKey: context.signerPrivateKey,
    organizationId: context.caller.organizationId,
    targetPublicKey: target,
    plaintext: new TextEncoder().encode(JSON.stringify(value)),
  })
  return { bundle }
}

const SECRET_RESULTS = new Set(['secret', 'otpauthUri', 'recoveryCodes', 'secretBundle', 'recoveryCodesBundle'])
/** What a result keeps in the activity's stored row: a secret or a recovery code is answered once, never stored. */
const withoutSecrets = (result: Record<string, unknown>) => Object.fromEntries(Object.entries(result).filter(([key]) => !SECRET_RESULTS.has(key)))

const code = z.string().regex(/^\d{6}$/, 'must be the 6-digit code')

export const MFA_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR: {
    op: 'create_totp_factor',
    intentKey: 'createTotpFactorIntent',
    resultKey: 'createTotpFactorResult',
    storedResult: withoutSecrets,
    async run(params, context) {
      const input = parse(
        z.object({
          userId: z.string().min(1),
          factorName: z.string().min(1).max(128).optional(),
          issuer: z.string().min(1).max(64).optional(),
          /** A frame's key: the secret and URI come sealed to it (`secretBundle`), not in clear. */
          targetPublicKey: targetPublicKey.optional(),
        }),
        params,
      )
      refuseOthers(context, input.userId)
      const { db, caller, masterKey, now } = context
      const user = await userIn(context, input.userId)
      const factors = await db.mfaFactorsOfUser(user.id)
      if (factors.some((factor) => factor.type === TOTP_FACTOR && factor.status === ACTIVE))
        throw alreadyExists('a TOTP factor is already enrolled: remove it first (delete_mfa_factor)')
      // One enrolment at a time: a secret shown earlier and never confirmed stops counting.
      await db.deletePendingMfaFactors(user.id, TOTP_FACTOR)
      const factorId = randomUUID()
      const secret = generateSecret()
      await db.insertMfaFactor({
        id: factorId,
        organization_id: caller.organizationId,
        user_id: user.id,
        type: TOTP_FACTOR,
        name: input.factorName ?? 'Authenticator app',
        status: PENDING,
        sealed_secret: seal(masterKey, factorRecord(factorId), secret),
        authenticator_id: null,
        failures: 0,
        locked_until: null,
        last_time_step: null,
        created_at: now(),
      })
      const otpauthUri = generateURI({
        issuer: input.issuer ?? 'Latchkey',
        label: user.email ?? user.name,
        secret,
        algorithm: TOTP.algorithm,
        digits: TOTP.digits,
        period: TOTP.period,
      })
      const sealed = await sealedFor(context, input.targetPublicKey, { secret, otpauthUri })
      return 'bundle' in sealed ? { factorId, secretBundle: sealed.bundle } : { factorId, secret, otpauthUri }
    },
  },
  ACTIVITY_TYPE_LATCHKEY_CREATE_PASSKEY_FACTOR: {
    op: 'create_passkey_factor',
    intentKey: 'createPasskeyFactorIntent',
    resultKey: 'createPasskeyFactorResult',
    storedResult: withoutSecrets,
    async run(params, context) {
      const input = parse(
        z.object({
          userId: z.string().min(1),
          authenticatorId: z.string().min(1),
          factorName: z.string().min(1).max(128).optional(),
          targetPublicKey: targetPublicKey.optional(),
        }),
        params,
      )
      refuseOthers(context, input.userId)
      const { db, caller, now } = context
      const authenticator = await db.authenticator(input.authenticatorId, caller.organizationId)
      if (!authenticator || authenticator.user_id !== input.userId)
        throw notFound(`authenticator ${input.authenticatorId} not found for user ${input.userId} in organization ${caller.organizationId}`)
      await refuseOtherStamp(context, authenticator.id, 'create_passkey_factor')
      if ((await db.mfaFactorsOfUser(input.userId)).some((factor) => factor.authenticator_id === authenticator.id))
        throw alreadyExists(`authenticator ${authenticator.id} is already a second factor`)
      const factorId = randomUUID()
      await db.insertMfaFactor({
        id: factorId,
        organization_id: caller.organizationId,
        user_id: input.userId,
        type: PASSKEY_FACTOR,
        name: input.factorName ?? authenticator.name,
        status: ACTIVE,
        sealed_secret: null,
        authenticator_id: authenticator.id,
        failures: 0,
        locked_until: null,
        last_time_step: null,
        created_at: now(),
      })
      const sealed = await sealedFor(context, input.targetPublicKey, await issueRecoveryCodes(context, input.userId))
      return 'bundle' in sealed ? { factorId, recoveryCodesBundle: sealed.bundle } : { factorId, recoveryCodes: sealed.value }
    },
  },
  ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR: {
    op: 'verify_mfa_factor',
    intentKey: 'verifyMfaFactorIntent',
    resultKey: 'verifyMfaFactorResult',
    storedResult: withoutSecrets,
    async run(params, context) {
      const input = parse(
        z
          .object({
            factorId: z.string().min(1).optional(),
            code: code.optional(),
            recoveryCode: z.string().min(1).max(32).optional(),
            /** The code or the recovery code sealed to the kms's code key (mfa/codeKey.ts), as a frame sends it. */
            encryptedCodeBundle: z.string().min(1).max(4096).optional(),
            apiKeyPublicKey: z.string().min(1).optional(),
            /** A frame's key: recovery codes handed out come sealed to it (`recoveryCodesBundle`), not in clear. */
            targetPublicKey: targetPublicKey.optional(),
          })
          .refine(
            (value) => [value.code, value.recoveryCode, value.encryptedCodeBundle].filter((each) => each !== undefined).length <= 1,
            'give one of code, recoveryCode and encryptedCodeBundle',
          ),
        params,
      )
      const { db, caller, masterKey, now } = context
      if (input.encryptedCodeBundle !== undefined) {
        // Opened before anything is read or counted: a bundle for another request changes nothing.
        const opened = await openCodeBundle(input.encryptedCodeBundle, context, input.factorId)
        if ('code' in opened) input.code = opened.code
        else input.recoveryCode = opened.recoveryCode
      }
      if (input.recoveryCode !== undefined) {
        // The substitute for a lost or locked factor: spent once, and it unlocks every factor.
        if (caller.apiKeyId === undefined || caller.homeOrganizationId !== caller.organizationId)
          throw invalid('a recovery code verifies the API key of its user that stamps the request')
        if ((await db.activeMfaFactorCount(caller.userId)) === 0) throw failedPrecondition('no second factor is enrolled')
        if (!(await db.spendRecoveryCode(caller.userId, recoveryCodeHash(caller.userId, input.recoveryCode), now())))
          throw mfaRefusal(GrpcCode.permissionDenied, 'MFA_RECOVERY_CODE_REFUSED', 'recovery code refused: it is not one of yours, or it was used already')
        await db.unlockMfaFactors(caller.userId)
        const mfaVerifiedAt = await recordVerification(context, caller.apiKeyId)
        return { mfaVerifiedAt: String(mfaVerifiedAt), recoveryCodesLeft: await db.unusedRecoveryCodeCount(caller.userId) }
      }
      if (input.factorId === undefined) throw invalid('invalid parameters: factorId: required, unless a recoveryCode is given')
      const factor = await ownFactor(context, input.factorId)
      if (factor.type === PASSKEY_FACTOR) {
        // The passkey's assertion is this request's stamp; the session key it vouches for is named.
        if (input.code !== undefined) throw invalid('a passkey factor is verified by its stamp, not a code')
        await refuseOtherStamp(context, factor.authenticator_id!, 'verify_mfa_factor of a passkey factor')
        let apiKeyId: string | undefined
        if (input.apiKeyPublicKey !== undefined) {
          const key = await db.apiKeyByPublicKey(input.apiKeyPublicKey)
          if (!key || key.user_id !== factor.user_id || key.organization_id !== caller.organizationId)
            throw notFound(`api key ${input.apiKeyPublicKey} not found for user ${factor.user_id}`)
          apiKeyId = key.id
        }
        await db.unlockMfaFactors(factor.user_id)
        const mfaVerifiedAt = await recordVerification(context, apiKeyId)
        return { factorId: factor.id, ...(mfaVerifiedAt === undefined ? {} : { mfaVerifiedAt: String(mfaVerifiedAt) }) }
      }
      if (input.code === undefined) throw invalid('invalid parameters: code: required for a TOTP factor')
      if (input.apiKeyPublicKey !== undefined)
        throw invalid('apiKeyPublicKey names a session only for a passkey factor: a code verifies the key that stamps it')
      // Counted before compared, in one conditional statement: five judged, then locked.
      const at = now()
      const reserved = await db.reserveMfaAttempt(factor.id, at, MFA_MAX_FAILURES, MFA_LOCK_SECONDS * 1000)
      if (!reserved) throw factorLocked((await db.mfaFactor(factor.id, caller.organizationId))?.locked_until ?? at)
      const secret = open(masterKey, factorRecord(factor.id), factor.sealed_secret!)
      const verified = verifySync({
        secret,
        token: input.code,
        algorithm: TOTP.algorithm,
        digits: TOTP.digits,
        period: TOTP.period,
        epoch: Math.floor(at / 1000),
        epochTolerance: TOTP.toleranceSeconds,
        // A code is accepted once: a step at or before the last one accepted is refused.
        ...(factor.last_time_step === null ? {} : { afterTimeStep: factor.last_time_step }),
      })
      if (!verified.valid) {
        const left = MFA_MAX_FAILURES - reserved.failures
        throw keepingWrites(
          left > 0
            ? mfaRefusal(
                GrpcCode.invalidArgument,
                'MFA_INVALID_CODE',
                `invalid code: ${left} attempt${left === 1 ? '' : 's'} left before the factor locks for 15 minutes`,
              )
            : mfaRefusal(
                GrpcCode.invalidArgument,
                'MFA_INVALID_CODE',
                `invalid code: the factor is locked until ${new Date(reserved.locked_until!).toISOString()}`,
              ),
        )
      }
      await db.acceptMfaCode(factor.id, 'timeStep' in verified ? verified.timeStep : Math.floor(at / 1000 / TOTP.period))
      const recoveryCodes = factor.status === PENDING ? await issueRecoveryCodes(context, factor.user_id) : undefined
      const mfaVerifiedAt = await recordVerification(context, caller.apiKeyId)
      const sealed = recoveryCodes === undefined ? undefined : await sealedFor(context, input.targetPublicKey, recoveryCodes)
      return {
        factorId: factor.id,
        // The first code of a TOTP enrolment: the factor counts from now (the backend's mfa.enrolled reads it).
        ...(factor.status === PENDING ? { enrolled: true } : {}),
        ...(mfaVerifiedAt === undefined ? {} : { mfaVerifiedAt: String(mfaVerifiedAt) }),
        ...(sealed === undefined ? {} : 'bundle' in sealed ? { recoveryCodesBundle: sealed.bundle } : { recoveryCodes: sealed.value }),
      }
    },
  },
  ACTIVITY_TYPE_LATCHKEY_DELETE_MFA_FACTOR: {
    op: 'delete_mfa_factor',
    intentKey: 'deleteMfaFactorIntent',
    resultKey: 'deleteMfaFactorResult',
    async run(params, context) {
      // The kms's rule (mfa/enforce.ts) has already asked for a factor verified within the grace window.
      const { factorId } = parse(z.object({ factorId: z.string().min(1) }), params)
      const factor = await ownFactor(context, factorId)
      await context.db.deleteMfaFactor(factor.id)
      // The last factor gone: its recovery codes go too; a new first factor issues new ones.
      if ((await context.db.activeMfaFactorCount(factor.user_id)) === 0) await context.db.deleteRecoveryCodes(factor.user_id)
      return { factorId }
    },
  },
}
