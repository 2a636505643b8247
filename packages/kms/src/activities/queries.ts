import { z } from 'zod'
import { invalid, permissionDenied } from '../errors.js'
import { listOf } from '../lists.js'
import { page, pagination } from '../pagination.js'
import { parse, requiredString } from '../params.js'
import { mapSeries } from '../sequence.js'
import { found, type QueryContext, type QueryTable } from './table.js'

// Activities: one activity, and an organization's activities page by page.

/** How long a completed activity waits before list_suborganization_activities lists it: longer than any commit takes. */
export const ACTIVITY_SETTLE_MS = 2_000

/** The activities queries. */
export function activityQueries({ db, envelope, now }: QueryContext): QueryTable {
  return {
    async get_activity(body, caller) {
      const activityId = requiredString(body, 'activityId')
      return { activity: await envelope(found(await db.activity(activityId, caller.organizationId), 'activity', activityId, caller), caller) }
    },
    /**
     * A Latchkey extension for an app's backend: the completed activities of its sub-organizations
     * of the types asked, oldest first, after `afterCursor` (`<completed ms>:<activity id>`, the
     * `cursor` of the previous page). Activities completed in the last `ACTIVITY_SETTLE_MS` wait for
     * a later page: one that commits a moment after a later one is not passed over. With
     * `startAtNewest` it lists none and answers the cursor after the newest settled one (null when
     * there is none): where a follower that starts now begins, so the past is not sent as news.
     * Only a user of the parent organization, in it, reads it.
     */
    async list_suborganization_activities(body, caller) {
      const input = parse(
        z.object({
          filterByType: z.array(z.string().min(1).max(128)).min(1).max(32),
          afterCursor: z
            .string()
            .regex(/^\d{1,16}:[\w-]{1,64}$/, 'must be the cursor of a previous page')
            .optional(),
          limit: z.number().int().min(1).max(100).optional(),
          startAtNewest: z.boolean().optional(),
        }),
        body,
      )
      if (caller.homeOrganizationId !== caller.organizationId || (await db.organization(caller.organizationId))?.parent_id !== null)
        throw permissionDenied('the activities of sub-organizations are read by a user of their parent organization, in it')
      if (input.startAtNewest) {
        if (input.afterCursor !== undefined) throw invalid('invalid parameters: startAtNewest: takes no afterCursor')
        const newest = await db.newestCompletedSubOrganizationActivity(caller.organizationId, input.filterByType, now() - ACTIVITY_SETTLE_MS)
        return { activities: [], cursor: newest ? `${newest.updated_at}:${newest.id}` : null }
      }
      const [at, id] =
        input.afterCursor === undefined
          ? [0, '']
          : [Number(input.afterCursor.slice(0, input.afterCursor.indexOf(':'))), input.afterCursor.slice(input.afterCursor.indexOf(':') + 1)]
      if (!Number.isSafeInteger(at)) throw invalid('invalid parameters: afterCursor: must be the cursor of a previous page')
      const rows = await db.completedSubOrganizationActivities(
        caller.organizationId,
        input.filterByType,
        { at, id },
        now() - ACTIVITY_SETTLE_MS,
        input.limit ?? 100,
      )
      const last = rows.at(-1)
      return {
        activities: rows.map((row) => ({
          activityId: row.id,
          organizationId: row.organization_id,
          type: row.type,
          userId: row.submitted_by ?? '',
          completedAt: String(row.updated_at),
          intent: JSON.parse(row.intent) as unknown,
          result: row.result === null ? null : (JSON.parse(row.result) as unknown),
        })),
        cursor: last ? `${last.updated_at}:${last.id}` : (input.afterCursor ?? null),
      }
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
