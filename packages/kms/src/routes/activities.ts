import { createHash } from 'node:crypto'
import { type Context, Hono } from 'hono'
import { newActivityId } from '../activities/id.js'
import type { OidcVerifier } from '../auth/oidc.js'
import type { ActivityContext, Caller } from '../context.js'
import { type Db, isUniqueViolation } from '../db.js'
import { activityView } from '../envelope.js'
import { alreadyExists, GrpcCode, invalid, KmsError } from '../errors.js'
import { chargeGrant, recordCharge } from '../grants/enforce.js'
import { grantRefusal } from '../grants/rule.js'
import type { AuditedActivity } from '../http/audit.js'
import { type Authenticated, type SignerStamp, WEBAUTHN_VOTE_SCHEME } from '../http/authenticate.js'
import type { StageProfile } from '../http/stages.js'
import type { Mailer } from '../mail.js'
import { type MfaSettings, requireMfa } from '../mfa/enforce.js'
import { enqueueMail, type Outbox } from '../outbox.js'
import { own } from '../own.js'
import { authorize } from '../policies/authorize.js'
import { castVote, submittedParameters, type VoteStamp, voteRow } from '../policies/consensus.js'
import type { PolicyDecision } from '../policies/engine.js'
import { withEvaluation } from '../policies/evaluations.js'
import { requireFreshVerification } from '../policies/freshVerification.js'
import { refuseUnreadableSigning } from '../policies/readableSigning.js'
import { keepsWrites } from '../refusal.js'
import { ACTIVITIES } from '../resources.js'
import type { SealingKey } from '../secrets.js'
import type { ActivityRow } from '../storage/tables.js'
import type { WebauthnConfig } from '../webauthn.js'

/** How far an activity's timestampMs may lie from the service's clock. */
export const TIMESTAMP_WINDOW_MS = { past: 10 * 60_000, future: 5 * 60_000 } as const

/**
 * Activities that check no rule over an organization's other rows (signing, sign-in credentials,
 * wallets and sub-organizations, whose names and keys unique constraints guard): they run side by
 * side. Every other activity takes its organization's lock first, so its checks hold until it commits.
 */
const UNLOCKED_OPS = new Set([
  'sign_raw_payload',
  'sign_raw_payloads',
  'sign_transaction',
  'create_sub_organization',
  'create_read_write_session',
  'stamp_login',
  'email_auth',
  'init_otp_auth',
  'otp_auth',
  'init_otp',
  'verify_otp',
  'otp_login',
  'init_user_email_recovery',
  'create_wallet',
  'create_wallet_accounts',
  'export_wallet',
  'export_wallet_account',
])

/** The stamp a vote lists: the signer's, over the request's exact body. */
function voteStamp(stamp: SignerStamp | undefined, raw: Uint8Array): VoteStamp | undefined {
  return stamp && { ...stamp, message: new TextDecoder().decode(raw) }
}

export type ActivityRoutesOptions = {
  db: Db
  outbox: Outbox
  masterKey: SealingKey
  signerPrivateKey: string
  webauthn: WebauthnConfig
  oidc: OidcVerifier
  /** The longest lifetime, in seconds, an activity may give a credential. */
  maxCredentialSeconds: number
  /** How long a credential from an email code counts as a fresh verification (policies/freshVerification.ts). */
  freshVerificationSeconds: number
  /** The actions that need a second factor, and its grace window (mfa/enforce.ts). */
  mfa: MfaSettings
  /** The addresses a sub-organization's EIP-7702 authorizations may delegate to, lowercase (policies/readableSigning.ts). */
  eip7702Delegates: ReadonlySet<string>
  now: () => number
  /** Laps the profile's clock (http/stages.ts), when one is given. */
  stages?: StageProfile | undefined
}

/**
 * `POST /public/v1/submit/{op}`: each activity runs once. Its row (with the fingerprint of the
 * exact body) and everything it writes commit in one transaction; a refusal writes nothing; the
 * same bytes submitted again, or at the same time (here or on another instance on the same
 * database), answer the first submission's activity. Mail goes out after the commit (outbox.ts).
 *
 * @example
 * app.route('/public/v1/submit', activityRoutes({ db, outbox, masterKey, signerPrivateKey, webauthn, oidc, maxCredentialSeconds, freshVerificationSeconds, mfa, eip7702Delegates, now }))
 */
export function activityRoutes(options: ActivityRoutesOptions) {
  const { db, outbox, now, stages } = options
  const app = new Hono<{ Variables: Authenticated & AuditedActivity }>()

  /** Answers with `activity`, and tells the audit trail (http/audit.ts) which activity and status it was. */
  const reply = <activity extends { id: string; status: string }>(c: Context<{ Variables: Authenticated & AuditedActivity }>, activity: activity) => {
    c.set('audited', { id: activity.id, status: activity.status })
    return c.json({ activity })
  }

  /**
   * What an activity runs with: `trx`, the transaction's statements; mail goes to its outbox
   * (`mailed` says whether any did, so the outbox is asked only then).
   */
  function activityContext(caller: Caller, trx: Db, activityId: string): ActivityContext & { mailed(): boolean } {
    let mailed = false
    const mailer: Mailer = {
      send: (mail) => {
        mailed = true
        return enqueueMail(trx, options.masterKey, mail, activityId, now())
      },
    }
    return {
      db: trx,
      webauthn: options.webauthn,
      oidc: options.oidc,
      mailer,
      masterKey: options.masterKey,
      signerPrivateKey: options.signerPrivateKey,
      maxCredentialSeconds: options.maxCredentialSeconds,
      now,
      caller,
      mailed: () => mailed,
    }
  }

  /**
   * A stored activity answers a resubmission of its bytes only to its submitter, or to a caller
   * the permission model lets run it now; anyone else gets that refusal, not its result (the
   * look-up must not skip the authorization).
   */
  async function answerableTwin(twin: ActivityRow, caller: Caller): Promise<ActivityRow> {
    if (twin.submitted_by === caller.userId && twin.submitted_from === caller.homeOrganizationId) return twin
    const organization = (await db.organization(caller.organizationId))!
    await authorize(db, { caller, organization, type: twin.type, params: submittedParameters(twin) })
    return twin
  }

  /** After a failed transaction: the activity a twin submission committed meanwhile, if any (and the caller may have it). */
  async function twinOf(fingerprint: string, error: unknown, caller: Caller): Promise<ActivityRow> {
    const twin = await db.activityByFingerprint(fingerprint)
    if (twin) return await answerableTwin(twin, caller)
    // A write that raced another one to a unique name or key, and lost.
    if (isUniqueViolation(error)) throw alreadyExists('already exists: a concurrent request created it first')
    throw error
  }

  /**
   * approve_activity and reject_activity: a vote on an activity waiting for consensus
   * (policies/consensus.ts counts it). Once it has its consensus it runs as its submitter; once it
   * can no longer have it, it is rejected. The answer is the target activity, as the clients expect.
   */
  for (const [op, type, selection] of [
    ['approve_activity', 'ACTIVITY_TYPE_APPROVE_ACTIVITY', 'VOTE_SELECTION_APPROVED'],
    ['reject_activity', 'ACTIVITY_TYPE_REJECT_ACTIVITY', 'VOTE_SELECTION_REJECTED'],
  ] as const)
    app.post(`/${op}`, async (c) => {
      const { body, caller, raw } = c.var
      if (body['type'] !== type) throw invalid(`unsupported activity type ${String(body['type'])} for /public/v1/submit/${op}`)
      const fingerprint = (body['parameters'] as { fingerprint?: unknown } | undefined)?.fingerprint
      if (typeof fingerprint !== 'string') throw invalid('parameters.fingerprint is required')
      const stamp = voteStamp(c.var.stamp, raw)
      const { target, run } = await db.transaction((trx) => castVote(trx, { caller, fingerprint, selection, stamp, now: now() }))
      if (run) await runApproved(target)
      return reply(c, await activityView(db, (await db.activity(target.id, caller.organizationId))!, { caller, now: now() }))
    })

  /** Runs an approved activity as its submitter, once: the run and its settlement commit together. */
  async function runApproved(target: ActivityRow) {
    const kind = own(ACTIVITIES, target.type)!
    const intent = JSON.parse(target.intent) as Record<string, unknown>
    const submitter: Caller = { userId: target.submitted_by!, homeOrganizationId: target.submitted_from!, organizationId: target.organization_id }
    try {
      await db.transaction(async (trx) => {
        // Claimed first: a second approval racing this one finds it settled and runs nothing.
        if (!(await trx.settleWaitingActivity(target.id, 'ACTIVITY_STATUS_COMPLETED', null, null, now()))) return
        const result = await kind.run(intent[kind.intentKey], activityContext(submitter, trx, target.id))
        const kept = kind.storedResult ? kind.storedResult(result) : result
        await trx.settleActivity(target.id, 'ACTIVITY_STATUS_COMPLETED', JSON.stringify({ [kind.resultKey]: kept }), null, now())
      })
    } catch (error) {
      // It was accepted when submitted; what fails now is reported on the activity itself.
      const failure = error instanceof KmsError ? error.toJSON() : { code: GrpcCode.internal, message: 'internal error', details: [] }
      await db.settleWaitingActivity(target.id, 'ACTIVITY_STATUS_FAILED', null, JSON.stringify(failure), now())
    }
    await outbox.sendFor(target.id)
  }

  app.post('/:op', async (c) => {
    const { body, raw, caller } = c.var
    const viewer = { caller, now: now() }
    const op = c.req.param('op')
    const type = body['type']
    const kind = typeof type === 'string' ? own(ACTIVITIES, type) : undefined
    if (!kind || kind.op !== op) throw invalid(`unsupported activity type ${String(type)} for /public/v1/submit/${op}`)
    const time = Number(body['timestampMs'])
    if (typeof body['timestampMs'] !== 'string' || !Number.isSafeInteger(time)) throw invalid('timestampMs must be milliseconds since the epoch, as a string')
    if (time < now() - TIMESTAMP_WINDOW_MS.past || time > now() + TIMESTAMP_WINDOW_MS.future)
      throw invalid(
        `timestampMs is outside the accepted window (${TIMESTAMP_WINDOW_MS.past / 60_000} minutes back, ${TIMESTAMP_WINDOW_MS.future / 60_000} ahead)`,
      )

    // The kms's own rules for sub-organizations, whatever their policies say: refused before
    // anything is read for the activity or written (only the audit trail records the refusal).
    const { organization } = c.var
    if (organization.parent_id !== null) refuseUnreadableSigning(type as string, body['parameters'], options.eip7702Delegates)
    await requireFreshVerification(db, {
      caller,
      organization,
      type: type as string,
      params: body['parameters'],
      passkey: c.var.stamp?.scheme === WEBAUTHN_VOTE_SCHEME,
      freshSeconds: options.freshVerificationSeconds,
      now: now(),
    })
    await requireMfa(db, {
      caller,
      organization,
      type: type as string,
      params: body['parameters'],
      passkey: c.var.stamp?.scheme === WEBAUTHN_VOTE_SCHEME,
      settings: options.mfa,
      now: now(),
    })
    stages?.lap('authorization')

    const at = now()
    const fingerprint = `sha256:${createHash('sha256').update(raw).digest('hex')}`
    const row: ActivityRow = {
      id: newActivityId(at),
      organization_id: caller.organizationId,
      fingerprint,
      type: type as string,
      status: 'ACTIVITY_STATUS_COMPLETED',
      intent: JSON.stringify({ [kind.intentKey]: body['parameters'] }),
      result: null,
      failure: null,
      created_at: at,
      updated_at: at,
      submitted_by: caller.userId,
      submitted_from: caller.homeOrganizationId,
      policy_evaluations: null,
    }
    const evaluationsOf = (authorized: { decision?: PolicyDecision }, voteId: string) =>
      authorized.decision ? withEvaluation(null, authorized.decision, voteId, at) : null
    const answer = (stored: ActivityRow, result: Record<string, unknown>) =>
      // Answered from the row just stored, not read back and parsed again.
      activityView(db, stored, viewer, { intent: { [kind.intentKey]: body['parameters'] }, result: { [kind.resultKey]: result } })
    // An activity that writes only its row (signing) needs no transaction: the permission check and
    // its reads, then the insert, which a twin submission (the fingerprint's unique constraint)
    // loses to the first. One that must wait for approvals takes the transaction below.
    // A grant's signature is charged to its ledger in the transaction below, never in this one.
    if (kind.readOnly && !caller.grantKeyId) {
      const context = activityContext(caller, db, row.id)
      let done: { stored: ActivityRow; result: Record<string, unknown> } | undefined
      try {
        const authorizing = {
          caller,
          organization: c.var.organization,
          rootUserIds: c.var.rootUserIds,
          apiKey: c.var.apiKey,
          approver: c.var.approver,
          type: type as string,
          params: body['parameters'],
        }
        stages?.lap('activity')
        const authorized = await authorize(db, authorizing)
        stages?.lap('authorization')
        if (authorized.verdict === 'run') {
          const result = await kind.run(body['parameters'], {
            ...context,
            mailer: { send: () => Promise.reject(new Error('a read-only activity sends no mail')) },
            signingKey: authorized.signingKey,
          })
          stages?.lap('signature')
          done = { stored: { ...row, result: JSON.stringify({ [kind.resultKey]: result }), policy_evaluations: evaluationsOf(authorized, '') }, result }
          await db.insertActivity(done.stored)
          stages?.lap('activity')
        }
      } catch (error) {
        // A resubmission answers the first submission's activity, whatever its second run did.
        return reply(c, await activityView(db, await twinOf(fingerprint, error, caller), viewer))
      }
      if (done) {
        const answered = reply(c, await answer(done.stored, done.result))
        stages?.lap('serialisation')
        return answered
      }
    }

    // The same body bytes name the same activity: a resubmission returns it, it does not run twice.
    const existing = await db.activityByFingerprint(fingerprint)
    if (existing) return reply(c, await activityView(db, await answerableTwin(existing, caller), viewer))

    let outcome: { stored: ActivityRow; result?: Record<string, unknown>; mailed: boolean } | { refused: KmsError }
    try {
      outcome = await db.transaction(async (trx) => {
        if (!UNLOCKED_OPS.has(op)) await trx.lockOrganization(caller.organizationId)
        // Turnkey's permission model (policies/authorize.ts): refused here, before anything is written;
        // a root user's activity in an organization that needs more approvals waits for them.
        const organization = (await trx.organization(caller.organizationId))!
        const authorized = await authorize(trx, { caller, organization, type: type as string, params: body['parameters'] })
        // A grant signs within its rule or not at all: nothing waits for approvals that would run it unchecked.
        if (authorized.verdict === 'consensus' && caller.grantKeyId)
          throw grantRefusal(GrpcCode.permissionDenied, 'GRANT_ACTIVITY_NOT_ALLOWED', 'A grant signs without approvals: this organization needs more')
        if (authorized.verdict === 'consensus') {
          const submitted = voteRow(row.id, caller, 'VOTE_SELECTION_APPROVED', voteStamp(c.var.stamp, raw), at)
          const waiting = { ...row, status: 'ACTIVITY_STATUS_CONSENSUS_NEEDED', policy_evaluations: evaluationsOf(authorized, submitted.id) }
          await trx.insertActivity(waiting)
          await trx.insertVote(submitted)
          return { stored: waiting, mailed: false }
        }
        // A grant's key: its rule and what it already signed decide, under the grant's row lock.
        const charge = caller.grantKeyId ? await chargeGrant(trx, caller.grantKeyId, type as string, body['parameters'], at) : undefined
        const context = activityContext(caller, trx, row.id)
        let result: Record<string, unknown>
        try {
          result = await kind.run(body['parameters'], context)
        } catch (error) {
          // A refusal that still counts (a wrong OTP guess) commits its writes, without an activity.
          if (keepsWrites(error)) return { refused: error }
          throw error
        }
        const kept = kind.storedResult ? kind.storedResult(result) : result
        const stored = { ...row, result: JSON.stringify({ [kind.resultKey]: kept }), policy_evaluations: evaluationsOf(authorized, '') }
        await trx.insertActivity(stored)
        if (charge) await recordCharge(trx, charge, row.id, at)
        return { stored, result, mailed: context.mailed() }
      })
    } catch (error) {
      return reply(c, await activityView(db, await twinOf(fingerprint, error, caller), viewer))
    }
    if ('refused' in outcome) throw outcome.refused
    if (outcome.mailed) await outbox.sendFor(outcome.stored.id)
    const { stored, result } = outcome
    if (!result) return reply(c, await activityView(db, stored, viewer))
    return reply(c, await answer(stored, result))
  })

  return app
}
