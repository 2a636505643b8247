import { randomUUID } from 'node:crypto'
import type { Caller } from '../context.js'
import type { Db } from '../db.js'
import { alreadyExists, failedPrecondition, notFound, permissionDenied } from '../errors.js'
import { rootUserIds } from '../organizations/quorum.js'
import type { ActivityRow } from '../storage/tables.js'
import { type Approval, approvableByPolicy, conditionScope, consensusScope, policyDenied } from './authorize.js'
import { decide } from './engine.js'
import { ROOT_QUORUM_ONLY } from './kinds.js'

// Votes on an activity waiting for consensus (ACTIVITY_STATUS_CONSENSUS_NEEDED), as Turnkey counts
// them. The submitter's own submission is the first approval. The activity runs once either
//   - a quorum of root users approved it (root users bypass policies), or
//   - its policies, evaluated with every approver so far in `approvers` (and the credentials they
//     voted with in `credentials`), allow it;
// it is rejected once neither can happen any more, whoever else approves. A vote that would make
// an EFFECT_DENY policy apply is refused as a submission would be, and writes nothing.

export type VoteSelection = 'VOTE_SELECTION_APPROVED' | 'VOTE_SELECTION_REJECTED'

/** What a vote did: `run` when the activity now has its consensus (the caller runs it, once). */
export type VoteOutcome = { target: ActivityRow; run: boolean }

/**
 * Counts `caller`'s vote on the activity `fingerprint` names, inside `trx` (the activity's row lock
 * is taken first, so votes on one activity count one at a time on every instance). `params` are
 * the activity's parameters, for its policies' conditions.
 *
 * Who may vote: the organization's own users; root users always, others when the activity is one
 * policies may grant and some policy could still allow it with their approval (Turnkey: users
 * "included in consensus" may approve without a permission of their own).
 *
 * @example
 * const { target, run } = await db.transaction((trx) => castVote(trx, { caller, fingerprint, selection, params: intentOf, now }))
 */
export async function castVote(
  trx: Db,
  vote: { caller: Caller; fingerprint: string; selection: VoteSelection; params: (target: ActivityRow) => unknown; now: number },
): Promise<VoteOutcome> {
  const { caller, fingerprint, selection, now } = vote
  const found = await trx.activityByFingerprint(fingerprint)
  if (!found || found.organization_id !== caller.organizationId)
    throw notFound(`no activity with fingerprint ${fingerprint} in organization ${caller.organizationId}`)
  await trx.lockActivity(found.id)
  const target = (await trx.activity(found.id, caller.organizationId))!
  if (caller.homeOrganizationId !== caller.organizationId) throw permissionDenied('only the organization’s own users vote on its activities')
  if (target.status !== 'ACTIVITY_STATUS_CONSENSUS_NEEDED') throw failedPrecondition(`activity ${target.id} is ${target.status}, not waiting for consensus`)
  const votes = await trx.votes(target.id)
  if (votes.some((cast) => cast.user_id === caller.userId)) throw alreadyExists('you have already voted on this activity')

  const organization = (await trx.organization(caller.organizationId))!
  const roots = await rootUserIds(trx, organization.id)
  const threshold = organization.root_quorum_threshold
  // Root quorum activities are never granted by a policy: only root votes decide them.
  const policies = ROOT_QUORUM_ONLY.has(target.type) ? [] : await trx.policies(organization.id)
  const condition = policies.length ? await conditionScope(trx, organization.id, target.type, vote.params(target)) : {}
  const isRoot = roots.includes(caller.userId)
  if (!isRoot && !(policies.length && (await approvableByPolicy(trx, policies, organization.id, condition))))
    throw permissionDenied('only root users vote on activities that need the root quorum')

  const cast = [...votes.map((row) => ({ userId: row.user_id, credential: row.credential, selection: row.selection })), { ...caller, selection }]
  const approvals: Approval[] = cast.filter((row) => row.selection === 'VOTE_SELECTION_APPROVED')
  const rejecters = new Set(cast.filter((row) => row.selection === 'VOTE_SELECTION_REJECTED').map((row) => row.userId))
  let run = false
  if (selection === 'VOTE_SELECTION_APPROVED') {
    if (approvals.filter((approval) => roots.includes(approval.userId)).length >= threshold) run = true
    else if (policies.length) {
      const decision = decide(policies, { consensus: await consensusScope(trx, organization.id, approvals), condition })
      if (decision.outcome === 'explicit deny') throw policyDenied(decision)
      run = decision.outcome === 'allow'
    }
  }
  await trx.insertVote({ id: randomUUID(), activity_id: target.id, user_id: caller.userId, selection, created_at: now, credential: caller.credential ?? null })
  if (selection === 'VOTE_SELECTION_REJECTED') {
    const rootsLeft = roots.filter((root) => !rejecters.has(root)).length
    const reachable = rootsLeft >= threshold || (policies.length > 0 && (await approvableByPolicy(trx, policies, organization.id, condition, rejecters)))
    if (!reachable) await trx.settleWaitingActivity(target.id, 'ACTIVITY_STATUS_REJECTED', null, null, now)
  }
  return { target, run }
}
