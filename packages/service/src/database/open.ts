import { type Kysely, sql, type Transaction } from 'kysely'
import type { Metrics } from '../metrics.js'
import { backoffMs, connect, delay, type ImmediateStatements } from './connection.js'
import { MigrationError, RetriesExhaustedError, SerializationFailureError, typedDatabaseError } from './errors.js'
import { migrateWithRetries } from './migrations.js'

/** The engine behind a database: SQLite (better-sqlite3, one file or memory) or PostgreSQL (a `pg` pool). */
export type DatabaseDialect = 'sqlite' | 'postgres'

/**
 * One step of a service's schema, applied once per database and recorded by name. Write it with
 * Kysely's schema builder so one migration serves both engines; `dialect` is there for the rare
 * statement that differs. Migrations are only ever appended. A database that has applied a name
 * this code does not know was migrated by a newer version: opening it is refused, unless every
 * such step was an `expand` one (see UPGRADE.md).
 */
export type Migration = {
  /** Unique and stable, e.g. `0001_accounts`. */
  name: string
  /**
   * The step only adds what the code before it never reads (a table, a nullable column, an
   * index), so an instance of the previous release keeps running on the database during a
   * rolling upgrade. Without it the step is a contraction: code that does not know it refuses
   * the database.
   */
  expand?: true | undefined
  // biome-ignore lint/suspicious/noExplicitAny: a migration runs before the schema type it creates exists.
  up: (db: Kysely<any>, dialect: DatabaseDialect) => Promise<void>
}

/**
 * `read committed` (PostgreSQL's default) suits work whose writes are single conditional
 * statements; `serializable` suits work that reads, decides and writes. SQLite transactions are
 * always serializable.
 */
export type IsolationLevel = 'serializable' | 'read committed'

export type OpenDatabaseOptions = {
  /**
   * Where the data lives: a `postgres://` or `postgresql://` URL (a connection pool), or a SQLite
   * file path; default `:memory:` (SQLite in memory, gone when closed).
   */
  url?: string | undefined
  /** Names the migrations table (`<service>_migrations`) and the PostgreSQL advisory lock: lowercase letters, digits, `_`. */
  service: string
  /** The service's schema, oldest first; those not yet applied run when the database opens. */
  migrations: readonly Migration[]
  /** Connections in the PostgreSQL pool. Default 10. */
  poolSize?: number | undefined
  /** How long SQLite waits for another process's lock before a statement fails with SQLITE_BUSY. Default 5000 ms. */
  busyTimeoutMs?: number | undefined
  /** Attempts of a transaction that keeps meeting serialization failures, the first included. Default 8. */
  maxAttempts?: number | undefined
  /** Told before a transaction runs again after a serialization failure (for logs and metrics). */
  onRetry?: ((event: { attempt: number; error: SerializationFailureError }) => void) | undefined
  /** Told of an error on a PostgreSQL connection, idle or held between statements (the pool drops it and opens another; a holder's next statement fails). Default: ignored. */
  onIdleError?: ((error: Error) => void) | undefined
  /** Counts transactions by outcome, retries by error code, and waits for a pool connection. Default: nothing counted. */
  metrics?: Metrics | undefined
}

/** A service's database: the Kysely instance for single statements, and transactions that retry. */
export type Database<Schema> = {
  readonly dialect: DatabaseDialect
  /** Where the data is, without credentials: `postgres 127.0.0.1:5432/latchkey`, `sqlite /srv/server.db`, `sqlite :memory:`. */
  readonly description: string
  /** For single statements, each atomic on its own. Errors arrive typed (UniqueViolationError, SerializationFailureError). */
  readonly db: Kysely<Schema>
  /**
   * Runs `work` in one transaction and commits; on a serialization failure or deadlock (40001,
   * 40P01, SQLITE_BUSY) runs it again after a short jittered backoff, up to `maxAttempts`, then
   * throws RetriesExhaustedError. `work` may run more than once, so it must only touch the
   * database through `trx` (and never `db`, which on SQLite would wait for this very transaction).
   * Default isolation: serializable, so that read-decide-write work is correct with any number
   * of instances without each caller proving it safe under weaker isolation.
   */
  transaction<result>(work: (trx: Transaction<Schema>) => Promise<result>, options?: { isolation?: IsolationLevel | undefined }): Promise<result>
  /**
   * SQLite's statements run at once, outside Kysely (connection.ts says when they answer
   * `undefined`, and the caller takes `db` or `transaction` instead); undefined on PostgreSQL and
   * with traces on. Transactions here are counted as `transaction`'s are.
   */
  readonly immediate: ImmediateStatements | undefined
  /** Throws unless the database answers a query (readiness). */
  ping(): Promise<void>
  /** Ends the pool or closes the file. */
  close(): Promise<void>
}

const SERVICE_NAME = /^[a-z][a-z\d_]{0,40}$/

/**
 * Opens a service's database and applies its pending migrations: SQLite (better-sqlite3, WAL) for
 * a file path or memory, a `pg` pool for a `postgres://` URL. On PostgreSQL several instances may
 * start at once: the migrations run under an advisory lock in one transaction, so exactly one
 * applies them and the others find them applied.
 *
 * @example
 * const database = await openDatabase<Schema>({ url: process.env.DATABASE_URL, service: 'server', migrations })
 * const row = await database.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst()
 * await database.transaction(async (trx) => {
 *   await trx.deleteFrom('sessions').where('id', '=', id).execute()
 * })
 */
export async function openDatabase<Schema>(options: OpenDatabaseOptions): Promise<Database<Schema>> {
  if (!SERVICE_NAME.test(options.service))
    throw new MigrationError(`The service name ${JSON.stringify(options.service)} must be lowercase letters, digits and _`)
  const names = new Set<string>()
  for (const migration of options.migrations) {
    if (names.has(migration.name)) throw new MigrationError(`Migration ${migration.name} is listed twice`)
    names.add(migration.name)
  }
  const { dialect, description, db, immediate } = connect<Schema>(options)
  const maxAttempts = options.maxAttempts ?? 8
  try {
    await migrateWithRetries(db as unknown as Kysely<unknown>, dialect, options.service, options.migrations, maxAttempts)
  } catch (error) {
    await db.destroy()
    throw error
  }
  const counted = options.metrics?.database
  return {
    dialect,
    description,
    db,
    immediate: immediate && {
      run: immediate.run,
      transaction(work) {
        try {
          const done = immediate.transaction(work)
          if (done) counted?.transactions.inc({ outcome: 'committed' })
          return done
        } catch (error) {
          counted?.transactions.inc({ outcome: 'failed' })
          throw error
        }
      },
      // Each work counted as the transaction it would have been alone.
      groupCommit: (work) =>
        immediate.groupCommit(work).then(
          (done) => {
            if (done) counted?.transactions.inc({ outcome: 'committed' })
            return done
          },
          (error: unknown) => {
            counted?.transactions.inc({ outcome: 'failed' })
            throw error
          },
        ),
    },
    async transaction(work, transactionOptions) {
      const isolation = transactionOptions?.isolation ?? 'serializable'
      for (let attempt = 1; ; attempt++) {
        try {
          const result = await db.transaction().setIsolationLevel(isolation).execute(work)
          counted?.transactions.inc({ outcome: 'committed' })
          return result
        } catch (error) {
          const typed = typedDatabaseError(error)
          if (!(typed instanceof SerializationFailureError)) {
            counted?.transactions.inc({ outcome: 'failed' })
            throw typed
          }
          if (attempt >= maxAttempts) {
            counted?.transactions.inc({ outcome: 'retries_exhausted' })
            throw new RetriesExhaustedError(attempt, { cause: typed })
          }
          counted?.retries.inc({ code: retryCode(typed) })
          options.onRetry?.({ attempt, error: typed })
          await delay(backoffMs(attempt))
        }
      }
    },
    async ping() {
      await sql`select 1`.execute(db)
    },
    close: () => db.destroy(),
  }
}

/** The engine's code of a serialization failure, from a fixed list (a label value), else `other`. */
function retryCode(error: SerializationFailureError): string {
  const code = (error.cause as { code?: unknown } | undefined)?.code
  return code === '40001' || code === '40P01' || code === '0A000' || code === 'SQLITE_BUSY' ? code : 'other'
}
