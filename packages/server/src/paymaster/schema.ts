import type { Database, Migration } from '@latchkey/service/database'
import type { Kysely, Transaction } from 'kysely'

/**
 * What a sender's and a chain's sponsorships have taken on one UTC day, in wei (decimal text: a
 * day's global budget can pass 2^63). Keys: `user:<chainId>:<sender>:<day>`, `global:<chainId>:<day>`.
 */
export type PaymasterBudgetRow = { key: string; spent: string }
/**
 * One signed sponsorship per (chain, sender, nonce): `reserved` (its maximum cost counts against
 * the day's budgets), then `settled` (the EntryPoint's `actualGasCost` counts instead) or
 * `released` (its window passed with no operation: nothing counts).
 */
export type PaymasterReservationRow = {
  chain_id: number
  sender: string
  nonce: string
  day: string
  amount: string
  valid_until: number
  paymaster: string
  status: 'reserved' | 'settled' | 'released'
  actual: string | null
  created_at: number
  updated_at: number
}
/** The last block whose `UserOperationEvent` logs settlement has read, per chain. */
export type PaymasterCursorRow = { chain_id: number; block: string }

export type PaymasterSchema = {
  paymaster_budgets: PaymasterBudgetRow
  paymaster_reservations: PaymasterReservationRow
  paymaster_cursors: PaymasterCursorRow
}

/** The paymaster's tables. An expansion: a release before it has no paymaster and never reads them. */
export const paymasterMigration: Migration = {
  name: '0009_paymaster',
  expand: true,
  async up(db) {
    await db.schema
      .createTable('paymaster_budgets')
      .addColumn('key', 'text', (column) => column.primaryKey())
      .addColumn('spent', 'text', (column) => column.notNull())
      .execute()
    await db.schema
      .createTable('paymaster_reservations')
      .addColumn('chain_id', 'integer', (column) => column.notNull())
      .addColumn('sender', 'text', (column) => column.notNull())
      .addColumn('nonce', 'text', (column) => column.notNull())
      .addColumn('day', 'text', (column) => column.notNull())
      .addColumn('amount', 'text', (column) => column.notNull())
      .addColumn('valid_until', 'bigint', (column) => column.notNull())
      .addColumn('paymaster', 'text', (column) => column.notNull())
      .addColumn('status', 'text', (column) => column.notNull())
      .addColumn('actual', 'text')
      .addColumn('created_at', 'bigint', (column) => column.notNull())
      .addColumn('updated_at', 'bigint', (column) => column.notNull())
      .addPrimaryKeyConstraint('paymaster_reservations_pk', ['chain_id', 'sender', 'nonce'])
      .execute()
    await db.schema.createIndex('paymaster_reservations_by_status').on('paymaster_reservations').columns(['status', 'chain_id', 'valid_until']).execute()
    await db.schema
      .createTable('paymaster_cursors')
      .addColumn('chain_id', 'integer', (column) => column.primaryKey())
      .addColumn('block', 'text', (column) => column.notNull())
      .execute()
  },
}

// biome-ignore lint/suspicious/noExplicitAny: the store's schema includes this one; callers pass it as is.
type Trx = Transaction<any> | Kysely<any>

export const userKey = (chainId: number, sender: string, day: string) => `user:${chainId}:${sender.toLowerCase()}:${day}`
export const globalKey = (chainId: number, day: string) => `global:${chainId}:${day}`
/** The UTC day of a unix ms time, `YYYY-MM-DD`. */
export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/**
 * Locks a budget row for the rest of the transaction (creating it at 0 first) and answers what it
 * has spent. On PostgreSQL `select … for update` makes every other transaction that locks the same
 * row wait for this one's commit, so read-add-write cannot lose an update. Callers lock a sender's
 * row before the chain's global one, always in that order (no deadlock). SQLite runs one write
 * transaction at a time.
 */
async function lockBudget(trx: Trx, dialect: 'sqlite' | 'postgres', key: string): Promise<bigint> {
  await trx
    .insertInto('paymaster_budgets')
    .values({ key, spent: '0' })
    .onConflict((conflict) => conflict.column('key').doNothing())
    .execute()
  const row = await trx
    .selectFrom('paymaster_budgets')
    .select('spent')
    .where('key', '=', key)
    .$if(dialect === 'postgres', (query) => query.forUpdate())
    .executeTakeFirstOrThrow()
  return BigInt(row.spent)
}

const setSpent = (trx: Trx, key: string, spent: bigint) =>
  trx.updateTable('paymaster_budgets').set({ spent: spent.toString() }).where('key', '=', key).execute()

export type ReserveInput = {
  chainId: number
  sender: string
  nonce: bigint
  day: string
  amount: bigint
  validUntil: number
  paymaster: string
  perUser: bigint
  global: bigint
  at: number
}

/**
 * Reserves `amount` wei for one operation against the sender's and the chain's budgets of `day`,
 * in one transaction: `true` when both have room (a live reservation of the same nonce is
 * replaced, so only the difference counts), `false` with nothing written otherwise.
 */
export async function reserve(database: Database<PaymasterSchema>, input: ReserveInput): Promise<boolean> {
  const sender = input.sender.toLowerCase()
  const nonce = input.nonce.toString()
  const overBudget = new Error('over budget')
  return database
    .transaction(
      async (trx) => {
        const user = userKey(input.chainId, sender, input.day)
        const global = globalKey(input.chainId, input.day)
        // The sender's row first: it also orders every request for this (chain, sender, nonce).
        const userSpent = await lockBudget(trx, database.dialect, user)
        const previous = await trx
          .selectFrom('paymaster_reservations')
          .selectAll()
          .where('chain_id', '=', input.chainId)
          .where('sender', '=', sender)
          .where('nonce', '=', nonce)
          .executeTakeFirst()
        // A live reservation of the same nonce, made on the same day, is what this one replaces.
        const replaced = previous?.status === 'reserved' && previous.day === input.day ? BigInt(previous.amount) : 0n
        const globalSpent = await lockBudget(trx, database.dialect, global)
        const nextUser = userSpent - replaced + input.amount
        const nextGlobal = globalSpent - replaced + input.amount
        // Thrown, not returned: the transaction rolls back the budget rows it created, so a refusal writes nothing.
        if (nextUser > input.perUser || nextGlobal > input.global) throw overBudget
        if (previous?.status === 'reserved' && previous.day !== input.day) await releaseIn(trx, database.dialect, previous, input.at)
        await setSpent(trx, user, nextUser)
        await setSpent(trx, global, nextGlobal)
        const row = {
          day: input.day,
          amount: input.amount.toString(),
          valid_until: input.validUntil,
          paymaster: input.paymaster.toLowerCase(),
          status: 'reserved' as const,
          actual: null,
          updated_at: input.at,
        }
        await trx
          .insertInto('paymaster_reservations')
          .values({ chain_id: input.chainId, sender, nonce, created_at: input.at, ...row })
          .onConflict((conflict) => conflict.columns(['chain_id', 'sender', 'nonce']).doUpdateSet(row))
          .execute()
        return true
      },
      { isolation: 'read committed' },
    )
    .catch((error: unknown) => {
      if (error === overBudget) return false
      throw error
    })
}

/** Gives a reservation's amount back to its day's budgets (its sender's row already locked by the caller, or locked here). */
async function releaseIn(trx: Trx, dialect: 'sqlite' | 'postgres', reservation: PaymasterReservationRow, at: number, actual?: bigint) {
  const user = userKey(reservation.chain_id, reservation.sender, reservation.day)
  const global = globalKey(reservation.chain_id, reservation.day)
  const userSpent = await lockBudget(trx, dialect, user)
  const globalSpent = await lockBudget(trx, dialect, global)
  const delta = (actual ?? 0n) - BigInt(reservation.amount)
  const floor = (value: bigint) => (value < 0n ? 0n : value)
  await setSpent(trx, user, floor(userSpent + delta))
  await setSpent(trx, global, floor(globalSpent + delta))
  await trx
    .updateTable('paymaster_reservations')
    .set({ status: actual === undefined ? 'released' : 'settled', actual: actual === undefined ? null : actual.toString(), updated_at: at })
    .where('chain_id', '=', reservation.chain_id)
    .where('sender', '=', reservation.sender)
    .where('nonce', '=', reservation.nonce)
    .execute()
}

/**
 * Ends one reservation: `actual` wei counts instead of its amount (`settled`), or, without
 * `actual`, nothing counts (`released`). Idempotent: a reservation already ended is left as it is
 * (another instance may have seen the same event); answers whether this call ended it.
 * `settled` runs in the same transaction once it did (the `sponsorship.spent` event's enqueue).
 */
export async function endReservation(
  database: Database<PaymasterSchema>,
  key: { chainId: number; sender: string; nonce: bigint },
  at: number,
  actual?: bigint,
  settled?: (trx: Transaction<PaymasterSchema>, reservation: PaymasterReservationRow) => Promise<unknown>,
): Promise<boolean> {
  const sender = key.sender.toLowerCase()
  const nonce = key.nonce.toString()
  return database.transaction(
    async (trx) => {
      const found = await trx
        .selectFrom('paymaster_reservations')
        .select('day')
        .where('chain_id', '=', key.chainId)
        .where('sender', '=', sender)
        .where('nonce', '=', nonce)
        .executeTakeFirst()
      if (!found) return false
      // The same lock order as `reserve`: the sender's row, then (in releaseIn) the global one.
      await lockBudget(trx, database.dialect, userKey(key.chainId, sender, found.day))
      const reservation = await trx
        .selectFrom('paymaster_reservations')
        .selectAll()
        .where('chain_id', '=', key.chainId)
        .where('sender', '=', sender)
        .where('nonce', '=', nonce)
        .executeTakeFirst()
      if (reservation?.status !== 'reserved') return false
      await releaseIn(trx, database.dialect, reservation, at, actual)
      if (actual !== undefined) await settled?.(trx, reservation)
      return true
    },
    { isolation: 'read committed' },
  )
}

/** The spent amounts of a sender's and a chain's budgets of `day`, in wei. */
export async function budgetsOf(db: Trx, chainId: number, sender: string, day: string) {
  const rows = await db
    .selectFrom('paymaster_budgets')
    .selectAll()
    .where('key', 'in', [userKey(chainId, sender, day), globalKey(chainId, day)])
    .execute()
  const spent = (key: string) => BigInt((rows as PaymasterBudgetRow[]).find((row) => row.key === key)?.spent ?? '0')
  return { user: spent(userKey(chainId, sender, day)), global: spent(globalKey(chainId, day)) }
}
