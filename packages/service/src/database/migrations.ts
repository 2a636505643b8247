import { type Kysely, sql } from 'kysely'
import { backoffMs, connect, delay } from './connection.js'
import { MigrationError, SerializationFailureError } from './errors.js'
import type { DatabaseDialect, Migration } from './open.js'

// A service's migrations: applying them (on open, or by `<bin> migrate up`), what a database has
// applied (`<bin> migrate status`), and the rule that lets the release before run on a database
// the next one expanded: each applied step records the oldest step its readers must know.

/** One applied step as the migrations table records it. */
export type AppliedMigration = { name: string; appliedAt: number; readableBy: string | null }

/** What a database has applied, measured against what this code knows. */
export type MigrationStatus = {
  /** Where it is, without credentials. */
  database: string
  applied: AppliedMigration[]
  /** Known here, not yet applied: `migrate up` runs these, in this order. */
  pending: string[]
  /** Applied by a newer release, unknown here. */
  newer: string[]
  /** Whether this code may run on the database: every newer step was an expansion that leaves it readable. */
  compatible: boolean
  /** Why it may not, when it may not. */
  problem?: string | undefined
}

/**
 * For each step, the oldest step code must know to run on a database that applied it: an
 * expansion keeps the requirement of the step before it, a contraction raises it to itself.
 */
export function readersOf(migrations: readonly Migration[]): Map<string, string> {
  const readers = new Map<string, string>()
  let required = migrations[0]?.name
  for (const migration of migrations) {
    if (!migration.expand || required === undefined) required = migration.name
    readers.set(migration.name, required)
  }
  return readers
}

/** Why code knowing `known` may not run on a database with `applied`, or undefined when it may. */
function newerProblem(service: string, applied: readonly AppliedMigration[], known: ReadonlySet<string>): string | undefined {
  const blocking = applied.filter((row) => !known.has(row.name) && (row.readableBy === null || !known.has(row.readableBy)))
  if (!blocking.length) return undefined
  return `The database has migration ${blocking.map((row) => row.name).join(', ')} of a newer version of ${service}; run that version or a newer one`
}

const tableOf = (service: string) => `${service}_migrations`

/** Creates the migrations table, or adds the `readable_by` column to one made before it existed. */
// biome-ignore lint/suspicious/noExplicitAny: the migrations table is not part of the service's schema type.
async function ensureTable(trx: Kysely<any>, dialect: DatabaseDialect, table: string) {
  await trx.schema
    .createTable(table)
    .ifNotExists()
    .addColumn('name', 'text', (column) => column.primaryKey())
    .addColumn('applied_at', 'bigint', (column) => column.notNull())
    .addColumn('readable_by', 'text')
    .execute()
  const column =
    dialect === 'postgres'
      ? await sql`select 1 from information_schema.columns where table_schema = current_schema() and table_name = ${table} and column_name = 'readable_by'`.execute(
          trx,
        )
      : await sql`select 1 from pragma_table_info(${table}) where name = 'readable_by'`.execute(trx)
  if (!column.rows.length) await trx.schema.alterTable(table).addColumn('readable_by', 'text').execute()
}

// biome-ignore lint/suspicious/noExplicitAny: as above.
async function appliedIn(trx: Kysely<any>, table: string): Promise<AppliedMigration[]> {
  const rows: { name: string; applied_at: number; readable_by: string | null }[] = await trx
    .selectFrom(table)
    .select(['name', 'applied_at', 'readable_by'])
    .orderBy('name')
    .execute()
  return rows.map((row) => ({ name: row.name, appliedAt: Number(row.applied_at), readableBy: row.readable_by }))
}

/**
 * Applies the migrations not yet recorded, all in one transaction on one connection, and answers
 * their names; with `dryRun` it runs them and rolls back. PostgreSQL: read committed, so that
 * after the advisory lock is granted the next statement sees what an instance that held it
 * before committed. SQLite: `begin immediate` takes the write lock first.
 */
export async function migrate(
  db: Kysely<unknown>,
  dialect: DatabaseDialect,
  service: string,
  migrations: readonly Migration[],
  options: { dryRun?: boolean | undefined } = {},
): Promise<string[]> {
  const table = tableOf(service)
  const readers = readersOf(migrations)
  return db.connection().execute(async (connection) => {
    // biome-ignore lint/suspicious/noExplicitAny: the migrations table is not part of the service's schema type.
    const trx = connection as Kysely<any>
    await sql.raw(dialect === 'postgres' ? 'begin isolation level read committed' : 'begin immediate').execute(trx)
    try {
      if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${`latchkey:${table}`}))`.execute(trx)
      await ensureTable(trx, dialect, table)
      const applied = await appliedIn(trx, table)
      const problem = newerProblem(service, applied, new Set(migrations.map((migration) => migration.name)))
      if (problem) throw new MigrationError(problem)
      const done = new Set(applied.map((row) => row.name))
      const ran: string[] = []
      for (const migration of migrations) {
        if (done.has(migration.name)) continue
        try {
          await migration.up(trx, dialect)
        } catch (error) {
          throw new MigrationError(`Migration ${migration.name} of ${service} failed: ${(error as Error).message}`, { cause: error })
        }
        await trx
          .insertInto(table)
          .values({ name: migration.name, applied_at: Date.now(), readable_by: readers.get(migration.name) })
          .execute()
        ran.push(migration.name)
      }
      await sql.raw(options.dryRun ? 'rollback' : 'commit').execute(trx)
      return ran
    } catch (error) {
      await sql
        .raw('rollback')
        .execute(trx)
        .catch(() => undefined)
      throw error
    }
  })
}

/** {@link migrate}, started over when another SQLite process held the write lock past the busy timeout (as a transaction would be). */
export async function migrateWithRetries(
  db: Kysely<unknown>,
  dialect: DatabaseDialect,
  service: string,
  migrations: readonly Migration[],
  maxAttempts: number,
  options: { dryRun?: boolean | undefined } = {},
): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrate(db, dialect, service, migrations, options)
    } catch (error) {
      if (!(error instanceof SerializationFailureError) || attempt >= maxAttempts) throw error
      await delay(backoffMs(attempt))
    }
  }
}

export type MigrationTarget = {
  /** As {@link OpenDatabaseOptions}: a `postgres://` URL or a SQLite file path. */
  url: string
  service: string
  migrations: readonly Migration[]
}

/**
 * What the database at `url` has applied, what this code would apply, and whether this code may
 * run on it. Changes nothing (a database without a migrations table has applied nothing).
 *
 * @example
 * const status = await migrationStatus({ url: process.env.DATABASE_URL, service: 'kms', migrations: KMS_MIGRATIONS })
 */
export async function migrationStatus(target: MigrationTarget): Promise<MigrationStatus> {
  const { db, dialect, description } = connect<unknown>({ url: target.url, poolSize: 1 })
  try {
    const table = tableOf(target.service)
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    const any = db as Kysely<any>
    const exists =
      dialect === 'postgres'
        ? await sql`select 1 from information_schema.tables where table_schema = current_schema() and table_name = ${table}`.execute(any)
        : await sql`select 1 from sqlite_master where type = 'table' and name = ${table}`.execute(any)
    let applied: AppliedMigration[] = []
    if (exists.rows.length) {
      const hasReaders =
        dialect === 'postgres'
          ? await sql`select 1 from information_schema.columns where table_schema = current_schema() and table_name = ${table} and column_name = 'readable_by'`.execute(
              any,
            )
          : await sql`select 1 from pragma_table_info(${table}) where name = 'readable_by'`.execute(any)
      applied = hasReaders.rows.length
        ? await appliedIn(any, table)
        : (await any.selectFrom(table).select(['name', 'applied_at']).orderBy('name').execute()).map((row: { name: string; applied_at: number }) => ({
            name: row.name,
            appliedAt: Number(row.applied_at),
            readableBy: null,
          }))
    }
    const known = new Set(target.migrations.map((migration) => migration.name))
    const done = new Set(applied.map((row) => row.name))
    const problem = newerProblem(target.service, applied, known)
    return {
      database: description,
      applied,
      pending: target.migrations.filter((migration) => !done.has(migration.name)).map((migration) => migration.name),
      newer: applied.filter((row) => !known.has(row.name)).map((row) => row.name),
      compatible: problem === undefined,
      ...(problem ? { problem } : {}),
    }
  } finally {
    await db.destroy()
  }
}

/**
 * Applies the pending migrations to the database at `url` (as opening it would), or with
 * `dryRun` runs them in a transaction that is rolled back: what would run, and proof that it runs.
 *
 * @example
 * const { ran } = await runMigrations({ url, service: 'server', migrations: SERVER_MIGRATIONS, dryRun: true })
 */
export async function runMigrations(target: MigrationTarget & { dryRun?: boolean | undefined }): Promise<{ database: string; ran: string[]; dryRun: boolean }> {
  const { db, dialect, description } = connect<unknown>({ url: target.url, poolSize: 1 })
  try {
    const ran = await migrateWithRetries(db, dialect, target.service, target.migrations, 8, { dryRun: target.dryRun })
    return { database: description, ran, dryRun: target.dryRun === true }
  } finally {
    await db.destroy()
  }
}
