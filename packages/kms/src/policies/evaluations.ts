import { randomUUID } from 'node:crypto'
import type { ActivityRow } from '../storage/tables.js'
import { timestamp } from '../views.js'
import type { PolicyDecision } from './engine.js'

// The policy engine's decisions on an activity, kept on its row (`policy_evaluations`) and read by
// get_policy_evaluations: one per decision, the submission's and then each approval's that the
// policies decided, with the vote it was made for.

type Evaluation = { id: string; voteId: string; policyEvaluations: PolicyDecision['evaluations']; createdAt: number }

/**
 * `stored` (an activity's `policy_evaluations`) with one more decision, made for the vote `voteId`
 * (empty for a submission that ran at once, which casts no vote) at `at`.
 *
 * @example
 * row.policy_evaluations = withEvaluation(null, decision, '', now())
 */
export function withEvaluation(stored: string | null, decision: PolicyDecision, voteId: string, at: number): string {
  const evaluations = stored ? (JSON.parse(stored) as Evaluation[]) : []
  evaluations.push({ id: randomUUID(), voteId, policyEvaluations: decision.evaluations, createdAt: at })
  return JSON.stringify(evaluations)
}

/**
 * An activity's evaluations as `v1GetPolicyEvaluationsResponse` lists them, oldest first.
 *
 * @example
 * return { policyEvaluations: evaluationsView(activity) }
 */
export function evaluationsView(row: Pick<ActivityRow, 'id' | 'organization_id' | 'policy_evaluations'>) {
  const evaluations = row.policy_evaluations ? (JSON.parse(row.policy_evaluations) as Evaluation[]) : []
  return evaluations.map((evaluation) => ({
    id: evaluation.id,
    activityId: row.id,
    organizationId: row.organization_id,
    voteId: evaluation.voteId,
    policyEvaluations: evaluation.policyEvaluations,
    createdAt: timestamp(evaluation.createdAt),
  }))
}
