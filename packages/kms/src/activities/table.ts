import type { ActivityContext, Caller } from '../context.js'
import type { Db } from '../db.js'
import { failedPrecondition, notFound } from '../errors.js'
import type { ActivityRow, UserRow } from '../storage/tables.js'

// What a resource folder hands to the service: its activities (by the exact `type` the clients
// send) and its queries (by path). Each folder's `activities.ts` and `queries.ts` export them;
// resources.ts joins them, refusing a name defined twice.

/** An activity type this service executes: its path, the intent key it is echoed under and the result key the clients read. */
export type Activity = {
  op: string
  intentKey: string
  resultKey: string
  /**
   * The activity writes nothing but its own row (signing): it runs outside a transaction, and its
   * row is the one statement that commits it. A resubmission runs it again and answers the first
   * row (the fingerprint's unique constraint), so it must give the same result for the same bytes.
   */
  readOnly?: true
  /**
   * What of its result the activity's row keeps (get_activity, a resubmission): default all of it.
   * An activity that hands out a secret once (a TOTP secret, recovery codes) answers it only to
   * the request that ran it.
   */
  storedResult?: (result: Record<string, unknown>) => Record<string, unknown>
  run(params: unknown, context: ActivityContext): Promise<Record<string, unknown>> | Record<string, unknown>
}
/** Activities by the exact `type` the clients send. */
export type ActivityTable = Readonly<Record<string, Activity>>

/** A read: the request body (already authenticated) and who asks, to the response body. */
export type Query = (body: Record<string, unknown>, caller: Caller) => Promise<unknown>
/** Queries by their path (`POST /public/v1/query/{op}`). */
export type QueryTable = Readonly<Record<string, Query>>
/** What queries read with. */
export type QueryContext = {
  db: Db
  /** An activity row as the clients see it (envelope.ts), `canApprove` and `canReject` for `caller`. */
  envelope: (row: ActivityRow, caller: Caller) => Promise<unknown>
  signerPrivateKey: string
  /** Verifies the OIDC tokens a query is given (list_suborgs by OIDC_TOKEN). */
  oidc: ActivityContext['oidc']
  now: () => number
}

/**
 * The union of tables whose names must not overlap: a name given twice is a programming error,
 * thrown when the service's module loads (a spread would let the later one win silently).
 *
 * @example
 * const ACTIVITIES = joinTables([USER_ACTIVITIES, WALLET_ACTIVITIES])
 */
export function joinTables<entry>(tables: readonly Readonly<Record<string, entry>>[]): Readonly<Record<string, entry>> {
  const joined: Record<string, entry> = {}
  for (const table of tables)
    for (const [name, entry] of Object.entries(table)) {
      if (Object.hasOwn(joined, name)) throw new Error(`${name} is defined twice`)
      joined[name] = entry
    }
  return Object.freeze(joined)
}

/** A user of the organization the request names. */
export async function userIn(context: Pick<ActivityContext, 'db' | 'caller'>, userId: string): Promise<UserRow> {
  const user = await context.db.user(userId, context.caller.organizationId)
  if (!user) throw notFound(`user ${userId} not found in organization ${context.caller.organizationId}`)
  return user
}

/** A row the caller's organization holds, or NotFound naming it. */
export function found<row>(row: row | undefined, what: string, id: string, caller: Caller): row {
  if (!row) throw notFound(`${what} ${id} not found in organization ${caller.organizationId}`)
  return row
}

/** Refuses to drop keys that were never exported, unless the request says so (`deleteWithoutExport`). */
export function refuseUnexported(what: readonly { exported: number; label: string }[], deleteWithoutExport: boolean | undefined) {
  const unexported = what.filter((item) => item.exported !== 1)
  if (unexported.length && !deleteWithoutExport)
    throw failedPrecondition(
      `${unexported.map((item) => item.label).join(', ')} ${unexported.length === 1 ? 'has' : 'have'} not been exported: export first, or set deleteWithoutExport`,
    )
}
