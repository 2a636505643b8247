import type { QueryContext, QueryTable } from '../activities/table.js'
import { userIn } from '../activities/table.js'
import { permissionDenied } from '../errors.js'
import { requiredString } from '../params.js'
import type { MfaFactorRow } from '../storage/tables.js'
import { timestamp } from '../views.js'
import { ACTIVE, PASSKEY_FACTOR } from './factors.js'

// Second factors, read (a Latchkey extension, as the activities are): which factors a user has,
// whether each is verified (enrolled) and whether one is locked. Never a secret: no TOTP secret,
// no recovery code, no count of failures.

/** A factor as list_mfa_factors answers it; `lockedUntil` only while it is locked. */
export function mfaFactorView(row: MfaFactorRow, now: number) {
  return {
    factorId: row.id,
    type: row.type === PASSKEY_FACTOR ? ('passkey' as const) : ('totp' as const),
    name: row.name,
    createdAt: timestamp(row.created_at),
    verified: row.status === ACTIVE,
    ...(row.locked_until !== null && row.locked_until > now ? { lockedUntil: timestamp(row.locked_until) } : {}),
  }
}

/** The second-factor queries. */
export function mfaQueries({ db, now }: QueryContext): QueryTable {
  return {
    /**
     * `{organizationId, userId}` → `{factors}`, oldest first: read by the user themselves or by a
     * user of the parent organization (an app's backend); another user of the sub-organization is
     * refused, and a stranger is refused by authentication as for every query.
     */
    async list_mfa_factors(body, caller) {
      const userId = requiredString(body, 'userId')
      const own = caller.userId === userId && caller.homeOrganizationId === caller.organizationId
      const parent = caller.homeOrganizationId !== caller.organizationId
      if (!own && !parent) throw permissionDenied("a user's second factors are read by that user or by the parent organization only")
      const user = await userIn({ db, caller }, userId)
      const at = now()
      const rows = (await db.mfaFactorsOfUser(user.id))
        .filter((row) => row.organization_id === caller.organizationId)
        .sort((a, b) => a.created_at - b.created_at || a.id.localeCompare(b.id))
      return { factors: rows.map((row) => mfaFactorView(row, at)) }
    },
  }
}
