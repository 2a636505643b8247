import { found, type QueryContext, type QueryTable } from '../activities/table.js'
import { requiredString } from '../params.js'
import { policyView } from '../views.js'
import { evaluationsView } from './evaluations.js'

// Policies: an organization's policies.

/** The policies queries. */
export function policyQueries({ db }: QueryContext): QueryTable {
  return {
    async get_policy(body, caller) {
      const policyId = requiredString(body, 'policyId')
      return { policy: policyView(found(await db.policy(policyId, caller.organizationId), 'policy', policyId, caller)) }
    },
    async list_policies(_, caller) {
      return { policies: (await db.policies(caller.organizationId)).map(policyView) }
    },
    async get_policy_evaluations(body, caller) {
      const activityId = requiredString(body, 'activityId')
      return { policyEvaluations: evaluationsView(found(await db.activity(activityId, caller.organizationId), 'activity', activityId, caller)) }
    },
  }
}
