import { z } from 'zod'
import { listOf } from '../lists.js'
import { page, pagination } from '../pagination.js'
import { parse, requiredString } from '../params.js'
import { mapSeries } from '../sequence.js'
import { found, type QueryContext, type QueryTable } from './table.js'

// Activities: one activity, and an organization's activities page by page.

/** The activities queries. */
export function activityQueries({ db, envelope }: QueryContext): QueryTable {
  return {
    async get_activity(body, caller) {
      const activityId = requiredString(body, 'activityId')
      return { activity: await envelope(found(await db.activity(activityId, caller.organizationId), 'activity', activityId, caller), caller) }
    },
    async list_activities(body, caller) {
      const input = parse(
        z.object({
          filterByStatus: listOf(z.string(), 'statuses').optional(),
          filterByType: listOf(z.string(), 'types').optional(),
          paginationOptions: pagination,
        }),
        body,
      )
      const statuses = input.filterByStatus?.length ? new Set(input.filterByStatus) : undefined
      const types = input.filterByType?.length ? new Set(input.filterByType) : undefined
      const rows = (await db.activities(caller.organizationId)).filter((row) => (!statuses || statuses.has(row.status)) && (!types || types.has(row.type)))
      return {
        activities: await mapSeries(
          page(rows, (row) => row.id, input.paginationOptions),
          (row) => envelope(row, caller),
        ),
      }
    },
  }
}
