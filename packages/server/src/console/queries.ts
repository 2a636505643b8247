import { type Kysely, sql } from 'kysely'
import { globalKey } from '../paymaster/schema.js'
import type { ServerSchema, Store } from '../store.js'

// The operator console's reads of the backend's own tables (console/routes.ts): users by email or
// address, and the sponsorship budgets by day. Read-only, each one page by a keyset cursor.

/** A user as the console lists them: one sub-organization and what the backend recorded of it. */
export type ConsoleUser = {
  organizationId: string
  userId: string
  address: string
  /** The email an email or OAuth sign-in proved, else null. */
  email: string | null
  /** What a passkey sign-up said the email was, never proven (security review H2). */
  unverifiedEmail: string | null
  createdAt: number
}

/** `text` as a LIKE pattern matching itself (`\` is the escape character). */
const literal = (text: string) => text.replace(/[\\%_]/g, (character) => `\\${character}`)

/**
 * The users whose email (proven or not) contains `query`, or whose address starts with it (a
 * query starting `0x`), case-insensitive; every user for an empty query. Ordered by
 * sub-organization id, `limit` after the sub-organization `after`.
 */
export async function searchUsers(store: Store, input: { query: string; limit: number; after?: string | undefined }): Promise<ConsoleUser[]> {
  const db = store.database.db as Kysely<ServerSchema>
  const query = input.query.toLowerCase()
  const match =
    query === ''
      ? sql`1 = 1`
      : query.startsWith('0x')
        ? sql`lower(address) like ${`${literal(query)}%`} escape '\\'`
        : sql`lower(coalesce(email, '')) like ${`%${literal(query)}%`} escape '\\'`
  const after = input.after === undefined ? sql`1 = 1` : sql`organization_id > ${input.after}`
  const found = await sql<{ organization_id: string }>`
    select organization_id from (
      select organization_id, email, address from accounts
      union all
      select organization_id, unverified_email as email, address from passkey_accounts
    ) known
    where ${match} and ${after}
    group by organization_id
    order by organization_id
    limit ${input.limit}`.execute(db)
  return usersOf(
    store,
    found.rows.map((row) => row.organization_id),
  )
}

/** The users of these sub-organizations, in the order given (an unknown one left out). */
export async function usersOf(store: Store, organizationIds: readonly string[]): Promise<ConsoleUser[]> {
  if (!organizationIds.length) return []
  const db = store.database.db as Kysely<ServerSchema>
  const emailRows = await db.selectFrom('accounts').selectAll().where('organization_id', 'in', organizationIds).execute()
  const passkeyRows = await db.selectFrom('passkey_accounts').selectAll().where('organization_id', 'in', organizationIds).execute()
  return organizationIds.flatMap((organizationId) => {
    const email = emailRows.find((row) => row.organization_id === organizationId)
    const passkeys = passkeyRows.filter((row) => row.organization_id === organizationId)
    const first = email ?? passkeys[0]
    if (!first) return []
    const created = [email, ...passkeys].flatMap((row) => (row ? [Number(row.created_at)] : []))
    return [
      {
        organizationId,
        userId: first.user_id,
        address: first.address,
        email: email?.email ?? null,
        unverifiedEmail: passkeys.find((row) => row.unverified_email !== null)?.unverified_email ?? null,
        createdAt: Math.min(...created),
      },
    ]
  })
}

/** One chain's sponsorships on one UTC day, in wei (decimal text). */
export type BudgetDay = {
  chainId: number
  day: string
  /** What the day's budget has taken: settled operations' actual cost and live reservations' maximum. */
  spent: string
  /** The part of `spent` still reserved (operations signed and not yet settled or released). */
  reserved: string
  /** Reservations by status. */
  operations: { reserved: number; settled: number; released: number }
}

const DAY_OF_KEY = sql<string>`substr(key, length(key) - 9)`

/**
 * The chains' daily budgets, newest day first (by budget key within a day), `limit` after the
 * (day, chain) `after`; `day` and `chainId` narrow them.
 */
export async function budgetDays(
  store: Store,
  input: { limit: number; day?: string | undefined; chainId?: number | undefined; after?: { day: string; chainId: number } | undefined },
): Promise<BudgetDay[]> {
  const db = store.database.db as Kysely<ServerSchema>
  const prefix = input.chainId === undefined ? 'global:%' : `global:${input.chainId}:%`
  const rows = await db
    .selectFrom('paymaster_budgets')
    .select(['key', 'spent', DAY_OF_KEY.as('day')])
    .where('key', 'like', prefix)
    .$if(input.day !== undefined, (query) => query.where(DAY_OF_KEY, '=', input.day!))
    .$if(input.after !== undefined, (query) =>
      query.where((where) =>
        where.or([
          where(DAY_OF_KEY, '<', input.after!.day),
          where.and([where(DAY_OF_KEY, '=', input.after!.day), where('key', '>', globalKey(input.after!.chainId, input.after!.day))]),
        ]),
      ),
    )
    .orderBy(DAY_OF_KEY, 'desc')
    .orderBy('key')
    .limit(input.limit)
    .execute()
  const days = rows.map((row) => ({ chainId: Number(row.key.split(':')[1]), day: row.day, spent: row.spent }))
  if (!days.length) return []
  const reservations = await db
    .selectFrom('paymaster_reservations')
    .select(['chain_id', 'day', 'status', 'amount'])
    .where('day', 'in', [...new Set(days.map((row) => row.day))])
    .where('chain_id', 'in', [...new Set(days.map((row) => row.chainId))])
    .execute()
  return days.map((row) => {
    const mine = reservations.filter((reservation) => Number(reservation.chain_id) === row.chainId && reservation.day === row.day)
    const count = (status: string) => mine.filter((reservation) => reservation.status === status).length
    const reserved = mine.filter((reservation) => reservation.status === 'reserved').reduce((sum, reservation) => sum + BigInt(reservation.amount), 0n)
    return { ...row, reserved: reserved.toString(), operations: { reserved: count('reserved'), settled: count('settled'), released: count('released') } }
  })
}
