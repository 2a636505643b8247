import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import type { ActivityTable } from '../activities/table.js'
import type { ActivityContext } from '../context.js'
import { invalid, notFound } from '../errors.js'
import { ids, parse } from '../params.js'
import type { PolicyRow } from '../storage/tables.js'
import { policyExpressionProblem } from './engine.js'

// Policies are stored as the clients wrote them and evaluated on every activity (authorize.ts). An
// expression that does not parse, or names a keyword or field its field lacks, is refused here.

const effect = z.enum(['EFFECT_ALLOW', 'EFFECT_DENY'])
const expression = z.string().max(4096)
const policyParams = z.object({
  policyName: z.string().min(1).max(256),
  effect,
  condition: expression.optional(),
  consensus: expression.optional(),
  notes: z.string().max(4096).default(''),
  time: z.string().optional(),
})
/** create_policies' parameters, built once (a zod schema compiles its parser on first use). */
const createPoliciesParams = z.object({ policies: z.array(policyParams).min(1).max(100) })

/**
 * Refuses a condition or consensus the engine could never evaluate, as Turnkey does (code 3), and
 * a `time` window: Turnkey's time-based policies are Early Access, refused unless a feature flag
 * is on, and this engine does not evaluate them, so stored and ignored they would widen an ALLOW
 * beyond its window.
 */
function checkExpressions(expressions: { condition?: string | undefined; consensus?: string | undefined; time?: string | undefined }) {
  for (const field of ['condition', 'consensus'] as const) {
    const problem = policyExpressionProblem(field, expressions[field] ?? '')
    if (problem) throw invalid(problem)
  }
  if (expressions.time?.trim()) throw invalid('invalid policy time: time-based policies (the `time` field) are not supported by this service')
}

async function insertPolicies(context: ActivityContext, policies: readonly z.infer<typeof policyParams>[]) {
  for (const policy of policies) checkExpressions(policy)
  const at = context.now()
  const rows: PolicyRow[] = policies.map((policy) => ({
    id: randomUUID(),
    organization_id: context.caller.organizationId,
    name: policy.policyName,
    effect: policy.effect,
    condition: policy.condition ?? '',
    consensus: policy.consensus ?? '',
    notes: policy.notes,
    time: policy.time ?? null,
    created_at: at,
    updated_at: at,
  }))
  await context.db.transaction(async () => {
    for (const row of rows) await context.db.insertPolicy(row)
  })
  return rows.map((row) => row.id)
}

async function policyOf(context: ActivityContext, policyId: string) {
  const policy = await context.db.policy(policyId, context.caller.organizationId)
  if (!policy) throw notFound(`policy ${policyId} not found in organization ${context.caller.organizationId}`)
  return policy
}

async function deletePolicies(context: ActivityContext, policyIds: readonly string[]) {
  for (const policyId of policyIds) await policyOf(context, policyId)
  await context.db.transaction(async () => {
    for (const policyId of policyIds) await context.db.deletePolicy(policyId)
  })
}

export const POLICY_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_CREATE_POLICIES: {
    op: 'create_policies',
    intentKey: 'createPoliciesIntent',
    resultKey: 'createPoliciesResult',
    async run(params, context) {
      const input = parse(createPoliciesParams, params)
      return { policyIds: await insertPolicies(context, input.policies) }
    },
  },
  ACTIVITY_TYPE_CREATE_POLICY_V3: {
    op: 'create_policy',
    intentKey: 'createPolicyIntentV3',
    resultKey: 'createPolicyResult',
    async run(params, context) {
      return { policyId: (await insertPolicies(context, [parse(policyParams, params)]))[0]! }
    },
  },
  ACTIVITY_TYPE_UPDATE_POLICY_V2: {
    op: 'update_policy',
    intentKey: 'updatePolicyIntentV2',
    resultKey: 'updatePolicyResultV2',
    async run(params, context) {
      const input = parse(
        z.object({
          policyId: z.string().min(1),
          policyName: z.string().min(1).max(256).optional(),
          policyEffect: effect.optional(),
          policyCondition: expression.optional(),
          policyConsensus: expression.optional(),
          policyNotes: z.string().max(4096).optional(),
          time: z.string().optional(),
        }),
        params,
      )
      checkExpressions({ condition: input.policyCondition, consensus: input.policyConsensus, time: input.time })
      const policy = await policyOf(context, input.policyId)
      await context.db.transaction(
        async () =>
          await context.db.updatePolicy({
            ...policy,
            name: input.policyName ?? policy.name,
            effect: input.policyEffect ?? policy.effect,
            condition: input.policyCondition ?? policy.condition,
            consensus: input.policyConsensus ?? policy.consensus,
            notes: input.policyNotes ?? policy.notes,
            time: input.time ?? policy.time,
            updated_at: context.now(),
          }),
      )
      return { policyId: policy.id }
    },
  },
  ACTIVITY_TYPE_DELETE_POLICY: {
    op: 'delete_policy',
    intentKey: 'deletePolicyIntent',
    resultKey: 'deletePolicyResult',
    async run(params, context) {
      const { policyId } = parse(z.object({ policyId: z.string().min(1) }), params)
      await deletePolicies(context, [policyId])
      return { policyId }
    },
  },
  ACTIVITY_TYPE_DELETE_POLICIES: {
    op: 'delete_policies',
    intentKey: 'deletePoliciesIntent',
    resultKey: 'deletePoliciesResult',
    async run(params, context) {
      const { policyIds } = parse(z.object({ policyIds: ids('policy') }), params)
      await deletePolicies(context, policyIds)
      return { policyIds }
    },
  },
}
