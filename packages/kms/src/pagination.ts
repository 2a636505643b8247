import { z } from 'zod'
import { invalid } from './errors.js'

// List queries' `paginationOptions`, as the clients send them.

/** The `paginationOptions` of a list query. */
export const pagination = z
  .object({
    limit: z
      .string()
      .regex(/^\d+$/)
      .refine((limit) => Number(limit) >= 1 && Number(limit) <= 100, 'limit must be between 1 and 100')
      .optional(),
    before: z.string().optional(),
    after: z.string().optional(),
  })
  .optional()

/**
 * One page of `items` (in the order given): `limit` of them (default 10), after or before the
 * item whose id is the cursor.
 */
export function page<item>(items: readonly item[], idOf: (item: item) => string, options: z.infer<typeof pagination>): item[] {
  const limit = Number(options?.limit ?? 10)
  const at = (cursor: string) => {
    const index = items.findIndex((item) => idOf(item) === cursor)
    if (index < 0) throw invalid(`unknown pagination cursor ${cursor}`)
    return index
  }
  if (options?.after) return items.slice(at(options.after) + 1, at(options.after) + 1 + limit)
  if (options?.before) {
    const end = at(options.before)
    return items.slice(Math.max(0, end - limit), end)
  }
  return items.slice(0, limit)
}
