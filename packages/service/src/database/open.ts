import BetterSqlite3 from 'better-sqlite3'
import { type Dialect, type Driver, Kysely, PostgresDialect, SqliteDialect, sql, type Transaction } from 'kysely'
import pg from 'pg'
import { DatabaseError, MigrationError, RetriesExhaustedError, SerializationFailureError, typedDatabaseError } from './errors.js'

/** The engine behind a database: SQLite (better-sqlite3, one file or memory) or PostgreSQL (a `pg` pool). */
export type DatabaseDialect = 'sqlite' | 'postgres'

/**
 * One step of a service's schema, applied once per database and recorded by name. Write it with
 * Kysely's schema builder so one migration serves both engines; `dialect` is there for the rare
 * statement that differs. Migrations are only ever appended: a database that has applied a name
 * this code does not know was migrated by a newer version, and opening it is refused.
 */
export type Migration = {
  /** Unique and stable, e.g. `0001_accounts`. */
  name: string
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
  /** Told of an error on an idle PostgreSQL connection (the pool drops it and opens another). Default: ignored. */
  onIdleError?: ((error: Error) => void) | undefined
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
  /** Throws unless the database answers a query (readiness). */
  ping(): Promise<void>
  /** Ends the pool or closes the file. */
  close(): Promise<void>
}

const POSTGRES_URL = /^postgres(?:ql)?:\/\//i
const ANY_URL = /^[a-z][a-z\d+.-]*:\/\//i
const SERVICE_NAME = /^[a-z][a-z\d_]{0,40}$/

/**
 * Whether a database setting names PostgreSQL or SQLite, and a description of it without
 * credentials. Throws DatabaseError `unsupported_url` for another kind of URL.
 *
 * @example
 * databaseTarget('postgres://app:secret@db:5432/latchkey') // { dialect: 'postgres', description: 'postgres db:5432/latchkey' }
 */
export function databaseTarget(url: string | undefined): { dialect: DatabaseDialect; description: string } {
  const target = url ?? ':memory:'
  if (POSTGRES_URL.test(target)) {
    const parsed = new URL(target)
    return { dialect: 'postgres', description: `postgres ${parsed.host}${parsed.pathname}` }
  }
  if (ANY_URL.test(target))
    throw new DatabaseError(
      'unsupported_url',
      `Only postgres:// and postgresql:// URLs or a SQLite file path are supported, got a ${target.split(':')[0]}: URL`,
    )
  return { dialect: 'sqlite', description: `sqlite ${target}` }
}

/** PostgreSQL's bigint arrives as a string by default; our bigints are unix-ms times and counters, well inside 2^53. */
const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === pg.types.builtins.INT8 && format !== 'binary') {
      return (value: string) => {
        const number = Number(value)
        if (!Number.isSafeInteger(number)) throw new RangeError(`bigint ${value} does not fit a JavaScript number`)
        return number
      }
    }
    return pg.types.getTypeParser(oid, format as 'text')
  }) as typeof pg.types.getTypeParser,
}

/** Gives every statement's engine error its typed class, wherever the statement ran. */
function withTypedErrors(dialect: Dialect): Dialect {
  const patched = new WeakSet<object>()
  return {
    createAdapter: () => dialect.createAdapter(),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createDriver(): Driver {
      const driver = dialect.createDriver()
      // Delegation, not a prototype: the drivers keep their state in private fields.
      return {
        init: () => driver.init(),
        async acquireConnection() {
          const connection = await driver.acquireConnection()
          // The driver's own methods (begin, commit, release) get this same object back, so it is
          // patched in place rather than wrapped.
          if (!patched.has(connection)) {
            const execute = connection.executeQuery.bind(connection)
            connection.executeQuery = async (query) => {
              try {
                return await execute(query)
              } catch (error) {
                throw typedDatabaseError(error)
              }
            }
            patched.add(connection)
          }
          return connection
        },
        beginTransaction: (connection, settings) => driver.beginTransaction(connection, settings),
        commitTransaction: (connection) => driver.commitTransaction(connection),
        rollbackTransaction: (connection) => driver.rollbackTransaction(connection),
        releaseConnection: (connection) => driver.releaseConnection(connection),
        destroy: () => driver.destroy(),
        ...(driver.savepoint ? { savepoint: driver.savepoint.bind(driver) } : {}),
        ...(driver.rollbackToSavepoint ? { rollbackToSavepoint: driver.rollbackToSavepoint.bind(driver) } : {}),
        ...(driver.releaseSavepoint ? { releaseSavepoint: driver.releaseSavepoint.bind(driver) } : {}),
      }
    },
  }
}

/** Distinct statement texts a process prepares by name; past this, statements go unnamed (parsed each time). */
const MAX_NAMED_STATEMENTS = 2000
/** Statements worth keeping prepared: plain data statements, not transaction control or schema changes. */
const DATA_STATEMENT = /^\s*(select|insert|update|delete|with)\b/i
const TRANSACTION_START = /^\s*(begin|start transaction)\b/i
const TRANSACTION_END = /^\s*(commit|rollback)\b/i
/** PostgreSQL's answer to a prepared statement whose tables changed shape since it was prepared (a migration by a newer instance). */
const CACHED_PLAN_CHANGED = '0A000'

/**
 * A `pg` pool whose clients run each data statement as a named prepared statement: PostgreSQL
 * parses and plans a statement text once per connection, then only binds and executes it (an
 * unnamed statement is parsed and planned on every call; for the services' short indexed
 * statements that was most of the database's CPU). Names come from the text, the same on every
 * connection; `pg` remembers per connection which it has prepared.
 *
 * When a newer instance migrates a table under a running one, PostgreSQL refuses the old prepared
 * statement (0A000, "cached plan must not change result type"): the text then gets a new name, so
 * it is prepared again on each connection, and the statement runs again, or, inside a
 * transaction (which the refusal aborted), the transaction does, as after a serialization failure.
 */
function namedStatementPool(pool: pg.Pool) {
  const names = new Map<string, string>()
  let counter = 0
  const nameOf = (text: string) => {
    let name = names.get(text)
    if (name === undefined && counter < MAX_NAMED_STATEMENTS && DATA_STATEMENT.test(text)) {
      name = `latchkey_${counter++}`
      names.set(text, name)
    }
    return name
  }
  const patched = new WeakSet<pg.PoolClient>()
  return {
    async connect() {
      const client = await pool.connect()
      if (!patched.has(client)) {
        const query = client.query.bind(client) as (config: pg.QueryConfig) => Promise<pg.QueryResult>
        let inTransaction = false
        const run = async (text: string, values: unknown[]): Promise<pg.QueryResult> => {
          const name = nameOf(text)
          try {
            return await query(name === undefined ? { text, values } : { name, text, values })
          } catch (error) {
            if (name === undefined || (error as { code?: unknown }).code !== CACHED_PLAN_CHANGED) throw error
            if (names.get(text) === name) names.delete(text)
            if (inTransaction) throw new SerializationFailureError((error as Error).message, { cause: error })
            return await run(text, values)
          }
        }
        // Kysely calls query(text, values); anything else (a cursor) passes through untouched.
        client.query = ((text: unknown, values?: unknown) => {
          if (typeof text !== 'string' || !Array.isArray(values)) return (query as (...args: unknown[]) => unknown)(text, values)
          if (TRANSACTION_START.test(text)) inTransaction = true
          else if (TRANSACTION_END.test(text)) inTransaction = false
          return run(text, values)
        }) as typeof client.query
        patched.add(client)
      }
      return client
    },
    end: () => pool.end(),
  }
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Jittered exponential backoff: up to 5, 10, 20 … ms, capped at 250 ms, so colliding instances spread out. */
const backoffMs = (attempt: number) => Math.random() * Math.min(250, 5 * 2 ** (attempt - 1))

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
  const { dialect, description } = databaseTarget(options.url)
  let engine: Dialect
  if (dialect === 'postgres') {
    const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 10, types: pgTypes })
    // An idle connection that drops (a database restart) must not crash the process.
    pool.on('error', (error) => options.onIdleError?.(error))
    engine = new PostgresDialect({ pool: namedStatementPool(pool) })
  } else {
    const file = new BetterSqlite3(options.url ?? ':memory:', { timeout: options.busyTimeoutMs ?? 5000 })
    if (file.name !== ':memory:') file.pragma('journal_mode = WAL')
    engine = new SqliteDialect({ database: file })
  }
  const db = new Kysely<Schema>({ dialect: withTypedErrors(engine) })
  const maxAttempts = options.maxAttempts ?? 8
  try {
    // Another SQLite process may hold the write lock past the busy timeout: start over, as a transaction would.
    for (let attempt = 1; ; attempt++) {
      try {
        await migrate(db as unknown as Kysely<unknown>, dialect, options.service, options.migrations)
        break
      } catch (error) {
        if (!(error instanceof SerializationFailureError) || attempt >= maxAttempts) throw error
        await delay(backoffMs(attempt))
      }
    }
  } catch (error) {
    await db.destroy()
    throw error
  }
  return {
    dialect,
    description,
    db,
    async transaction(work, transactionOptions) {
      const isolation = transactionOptions?.isolation ?? 'serializable'
      for (let attempt = 1; ; attempt++) {
        try {
          return await db.transaction().setIsolationLevel(isolation).execute(work)
        } catch (error) {
          const typed = typedDatabaseError(error)
          if (!(typed instanceof SerializationFailureError)) throw typed
          if (attempt >= maxAttempts) throw new RetriesExhaustedError(attempt, { cause: typed })
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

/**
 * Applies the migrations not yet recorded, all in one transaction on one connection. PostgreSQL:
 * read committed, so that after the advisory lock is granted the next statement sees what an
 * instance that held it before committed. SQLite: `begin immediate` takes the write lock first.
 */
async function migrate(db: Kysely<unknown>, dialect: DatabaseDialect, service: string, migrations: readonly Migration[]) {
  const table = `${service}_migrations`
  await db.connection().execute(async (connection) => {
    // biome-ignore lint/suspicious/noExplicitAny: the migrations table is not part of the service's schema type.
    const trx = connection as Kysely<any>
    await sql.raw(dialect === 'postgres' ? 'begin isolation level read committed' : 'begin immediate').execute(trx)
    try {
      if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${`latchkey:${table}`}))`.execute(trx)
      await trx.schema
        .createTable(table)
        .ifNotExists()
        .addColumn('name', 'text', (column) => column.primaryKey())
        .addColumn('applied_at', 'bigint', (column) => column.notNull())
        .execute()
      const applied = new Set((await trx.selectFrom(table).select('name').execute()).map((row: { name: string }) => row.name))
      const known = new Set(migrations.map((migration) => migration.name))
      const unknown = [...applied].filter((name) => !known.has(name))
      if (unknown.length)
        throw new MigrationError(`The database has migration ${unknown.join(', ')} of a newer version of ${service}; run that version or a newer one`)
      for (const migration of migrations) {
        if (applied.has(migration.name)) continue
        try {
          await migration.up(trx, dialect)
        } catch (error) {
          throw new MigrationError(`Migration ${migration.name} of ${service} failed: ${(error as Error).message}`, { cause: error })
        }
        await trx.insertInto(table).values({ name: migration.name, applied_at: Date.now() }).execute()
      }
      await sql.raw('commit').execute(trx)
    } catch (error) {
      await sql
        .raw('rollback')
        .execute(trx)
        .catch(() => undefined)
      throw error
    }
  })
}
