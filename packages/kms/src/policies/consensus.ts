import { randomUUID } from 'node:crypto'
import type { Caller } from '../context.js'
import type { Db } from '../db.js'
import { alreadyExists, failedPrecondition, type KmsError, notFound, permissionDenied } from '../errors.js'
import { rootUserIds } from '../organizations/quorum.js'
import type { ActivityRow, VoteRow } from '../storage/tables.js'
import { type Approval, approvableByPolicy, conditionScopes, consensusScope, policyDenied } from './authorize.js'
import { decideEach, type Policy, type PolicyDecision } from './engine.js'
import type { Scope } from './evaluate.js'
import { withEvaluation } from './evaluations.js'
import { ROOT_QUORUM_ONLY, sessionForAnotherRoot } from './kinds.js'

// Votes on an activity waiting for consensus (ACTIVITY_STATUS_CONSENSUS_NEEDED), as Turnkey counts
// them. The submitter's own submission is the first approval. The activity runs once either
//   - a quorum of root users approved it (root users bypass policies), or
//   - its policies, evaluated with every approver so far in `approvers` (and the credentials they
//     voted with in `credentials`), allow it;
// it is rejected once neither can happen any more, whoever else approves. A vote that would make
// an EFFECT_DENY policy apply is refused as a submission would be, and writes nothing.
//
// Votes lapse (docs.turnkey.com, "Activities": activities do not expire, approvals do): the first
// vote opens a 24-hour window; if the activity has not reached consensus when it closes, every
// vote cast in it stops counting, the activity keeps waiting, and its voters (the submitter too)
// may vote again (their new vote replaces the lapsed one). The first vote after that opens the
// next window.

export type VoteSelection = 'VOTE_SELECTION_APPROVED' | 'VOTE_SELECTION_REJECTED'

/** How long a window of votes stays open: Turnkey's approvals expire 24 hours after the first vote. */
export const APPROVAL_WINDOW_MS = 24 * 60 * 60_000

/** The stamp a vote was cast with, as the activity lists it (`v1Vote`'s message, publicKey, signature and scheme). */
export type VoteStamp = { message: string; publicKey: string; signature: string; scheme: string }

/**
 * The votes of an activity's latest window, oldest first: a vote cast once the window before it
 * had closed opened it, and the votes before that one lapsed.
 *
 * @example
 * windowVotes(await db.votes(activity.id)) // the votes that decided a settled activity
 */
export function windowVotes<row extends Pick<VoteRow, 'created_at'>>(votes: readonly row[]): row[] {
  let opened = 0
  for (let index = 1; index < votes.length; index++) if (votes[index]!.created_at >= votes[opened]!.created_at + APPROVAL_WINDOW_MS) opened = index
  return votes.slice(opened)
}

/**
 * The votes that count at `now` on an activity still waiting: its latest window's, or none once
 * that window has closed.
 *
 * @example
 * countingVotes(await db.votes(activity.id), now()).some((vote) => vote.user_id === userId) // voted, and it still counts
 */
export function countingVotes<row extends Pick<VoteRow, 'created_at'>>(votes: readonly row[], now: number): row[] {
  const open = windowVotes(votes)
  return open.length && now < open[0]!.created_at + APPROVAL_WINDOW_MS ? open : []
}

/** What a vote did: `run` when the activity now has its consensus (the caller runs it, once). */
export type VoteOutcome = { target: ActivityRow; run: boolean }

/** The parameters a stored activity was submitted with: its intent holds them under its one intent key. */
export function submittedParameters(target: Pick<ActivityRow, 'intent'>): unknown {
  return Object.values(JSON.parse(target.intent) as Record<string, unknown>)[0]
}

/** Everything a vote is counted with, once the caller may cast it. */
type Ballot = {
  counting: VoteRow[]
  roots: string[]
  threshold: number
  organizationId: string
  policies: Policy[]
  conditions: Scope[]
}

/**
 * Whether `caller` may vote on `target` at `now`: the organization's own users; root users
 * always, others when the activity is one policies may grant and some policy could still allow it
 * with their approval (Turnkey: users "included in consensus" may approve without a permission of
 * their own); never twice within a window. The refusal, or what the vote is counted with.
 */
async function ballot(db: Db, caller: Caller, target: ActivityRow, now: number): Promise<Ballot | { refused: KmsError }> {
  if (caller.homeOrganizationId !== caller.organizationId) return { refused: permissionDenied('only the organization’s own users vote on its activities') }
  if (target.status !== 'ACTIVITY_STATUS_CONSENSUS_NEEDED')
    return { refused: failedPrecondition(`activity ${target.id} is ${target.status}, not waiting for consensus`) }
  const counting = countingVotes(await db.votes(target.id), now)
  if (counting.some((cast) => cast.user_id === caller.userId)) return { refused: alreadyExists('you have already voted on this activity') }
  const organization = (await db.organization(target.organization_id))!
  const roots = await rootUserIds(db, organization.id)
  // Root quorum activities (and another root user's session) are never granted by a policy: only root votes decide them.
  const rootOnly =
    ROOT_QUORUM_ONLY.has(target.type) || sessionForAnotherRoot(target.type, submittedParameters(target), target.submitted_by ?? '', roots) !== undefined
  const policies = rootOnly ? [] : await db.policies(organization.id)
  const conditions = policies.length ? await conditionScopes(db, organization.id, target.type, submittedParameters(target)) : [{}]
  if (!roots.includes(caller.userId) && !(policies.length && (await approvableByPolicy(db, policies, organization.id, conditions))))
    return { refused: permissionDenied('only root users vote on activities that need the root quorum') }
  return { counting, roots, threshold: organization.root_quorum_threshold, organizationId: organization.id, policies, conditions }
}

/** Whether `caller`'s approval, added to the counting ones, runs the activity (with the policies' decision, when they decided); or the policy denial it would trigger. */
async function approvalOf(db: Db, caller: Caller, counted: Ballot): Promise<{ run: boolean; decision?: PolicyDecision } | { refused: KmsError }> {
  const approvals: Approval[] = [
    ...counted.counting.filter((cast) => cast.selection === 'VOTE_SELECTION_APPROVED').map((cast) => ({ userId: cast.user_id, credential: cast.credential })),
    { userId: caller.userId, credential: caller.credential },
  ]
  if (approvals.filter((approval) => counted.roots.includes(approval.userId)).length >= counted.threshold) return { run: true }
  if (!counted.policies.length) return { run: false }
  const decision = decideEach(counted.policies, { consensus: await consensusScope(db, counted.organizationId, approvals), conditions: counted.conditions })
  if (decision.outcome === 'explicit deny') return { refused: policyDenied(decision) }
  return { run: decision.outcome === 'allow', decision }
}

/**
 * Counts `caller`'s vote on the activity `fingerprint` names, inside `trx` (the activity's row lock
 * is taken first, so votes on one activity count one at a time on every instance), with the stamp
 * it came with. A refused vote writes nothing.
 *
 * @example
 * const { target, run } = await db.transaction((trx) => castVote(trx, { caller, fingerprint, selection, stamp, now }))
 */
export async function castVote(
  trx: Db,
  vote: { caller: Caller; fingerprint: string; selection: VoteSelection; stamp: VoteStamp | undefined; now: number },
): Promise<VoteOutcome> {
  const { caller, fingerprint, selection, now } = vote
  const found = await trx.activityByFingerprint(fingerprint)
  if (!found || found.organization_id !== caller.organizationId)
    throw notFound(`no activity with fingerprint ${fingerprint} in organization ${caller.organizationId}`)
  await trx.lockActivity(found.id)
  const target = (await trx.activity(found.id, caller.organizationId))!
  const counted = await ballot(trx, caller, target, now)
  if ('refused' in counted) throw counted.refused

  let run = false
  const cast = voteRow(target.id, caller, selection, vote.stamp, now)
  if (selection === 'VOTE_SELECTION_APPROVED') {
    const approval = await approvalOf(trx, caller, counted)
    if ('refused' in approval) throw approval.refused
    run = approval.run
    if (approval.decision) await trx.setPolicyEvaluations(target.id, withEvaluation(target.policy_evaluations, approval.decision, cast.id, now))
  }
  // A vote of this user still on the activity has lapsed (a counting one was refused above): the new one takes its place.
  await trx.deleteVote(target.id, caller.userId)
  await trx.insertVote(cast)
  if (selection === 'VOTE_SELECTION_REJECTED') {
    const rejecters = new Set([caller.userId, ...counted.counting.filter((cast) => cast.selection === 'VOTE_SELECTION_REJECTED').map((cast) => cast.user_id)])
    const rootsLeft = counted.roots.filter((root) => !rejecters.has(root)).length
    const reachable =
      rootsLeft >= counted.threshold ||
      (counted.policies.length > 0 && (await approvableByPolicy(trx, counted.policies, counted.organizationId, counted.conditions, rejecters)))
    if (!reachable) await trx.settleWaitingActivity(target.id, 'ACTIVITY_STATUS_REJECTED', null, null, now)
  }
  return { target, run }
}

/**
 * A vote's row: who cast it, how, with which credential and stamp.
 *
 * @example
 * await trx.insertVote(voteRow(activity.id, caller, 'VOTE_SELECTION_APPROVED', stamp, now))
 */
export function voteRow(activityId: string, caller: Caller, selection: VoteSelection, stamp: VoteStamp | undefined, now: number): VoteRow {
  return {
    id: randomUUID(),
    activity_id: activityId,
    user_id: caller.userId,
    selection,
    created_at: now,
    credential: caller.credential ?? null,
    message: stamp?.message ?? null,
    public_key: stamp?.publicKey ?? null,
    signature: stamp?.signature ?? null,
    scheme: stamp?.scheme ?? null,
  }
}

/**
 * `canApprove` and `canReject` of an activity for `caller` at `now`: whether the vote would be
 * counted (an approval that would make a DENY policy apply cannot be given).
 *
 * @example
 * const { canApprove, canReject } = await voteStanding(db, caller, activity, now())
 */
export async function voteStanding(db: Db, caller: Caller, target: ActivityRow, now: number): Promise<{ canApprove: boolean; canReject: boolean }> {
  if (target.status !== 'ACTIVITY_STATUS_CONSENSUS_NEEDED' || target.organization_id !== caller.organizationId) return { canApprove: false, canReject: false }
  const counted = await ballot(db, caller, target, now)
  if ('refused' in counted) return { canApprove: false, canReject: false }
  return { canApprove: !('refused' in (await approvalOf(db, caller, counted))), canReject: true }
}
