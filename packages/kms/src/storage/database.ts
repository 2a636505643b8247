import Database from 'better-sqlite3'
import {
  Kysely,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  PostgresDialect,
  type QueryResult,
  type RootOperationNode,
  SqliteDialect,
  sql,
  type Transaction,
  type UnknownRow,
} from 'kysely'
import pg from 'pg'
import type { Tables } from './tables.js'

/** Whether `location` names a PostgreSQL database (a postgres:// or postgresql:// URL) rather than a SQLite file. */
export const isPostgresUrl = (location: string) => /^postgres(ql)?:\/\//i.test(location)

export type Dialect = 'sqlite' | 'postgres'

/** The kms's connection: Kysely over a `pg` pool or one better-sqlite3 connection. */
export type Storage = { kysely: Kysely<Tables>; dialect: Dialect; close(): Promise<void> }

/** Connections a kms keeps to PostgreSQL. */
export const POSTGRES_POOL_SIZE = 16

const INT8 = 20

/**
 * PostgreSQL tables carry an identity column `rowid` for insertion order (SQLite's implicit
 * rowid); rows come back without it, as they do from SQLite.
 */
const hideRowid: KyselyPlugin = {
  transformQuery: (args: PluginTransformQueryArgs): RootOperationNode => args.node,
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    for (const row of args.result.rows) delete row['rowid']
    return args.result
  },
}

/**
 * Opens the kms's database: PostgreSQL for a postgres:// URL (a pool; bigint columns read as
 * numbers, as SQLite returns them), else a SQLite file or `:memory:` (WAL, foreign keys on).
 * Migrations are `migrate`'s; nothing here blocks the event loop on PostgreSQL.
 *
 * @example
 * const storage = openStorage('postgres://latchkey@db.internal/kms')
 */
export function openStorage(location: string): Storage {
  if (isPostgresUrl(location)) {
    const pool = new pg.Pool({
      connectionString: location,
      max: POSTGRES_POOL_SIZE,
      connectionTimeoutMillis: 10_000,
      types: { getTypeParser: ((oid: number, format?: 'text' | 'binary') => (oid === INT8 ? Number : pg.types.getTypeParser(oid, format))) as never },
    })
    // An idle connection the server drops must not end the process; the next query reconnects.
    pool.on('error', () => {})
    const kysely = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }), plugins: [hideRowid] })
    return { kysely, dialect: 'postgres', close: () => kysely.destroy() }
  }
  const sqlite = new Database(location)
  sqlite.pragma('journal_mode = WAL')
  // Each commit reaches the WAL with write() at once; syncs happen at checkpoints. A killed process
  // loses nothing; only a power cut could take the last moments' activities.
  sqlite.pragma('synchronous = NORMAL')
  sqlite.pragma('foreign_keys = ON')
  const kysely = new Kysely<Tables>({ dialect: new SqliteDialect({ database: sqlite }) })
  return { kysely, dialect: 'sqlite', close: () => kysely.destroy() }
}

/** SQLSTATEs after which a transaction is run again: a serialization failure and a deadlock. */
const RETRIED = new Set(['40001', '40P01'])
const MAX_ATTEMPTS = 8

/** Whether `error` is PostgreSQL's unique violation (23505) or SQLite's. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

/** What a transaction's statements run on: the transaction (PostgreSQL) or the connection that holds it (SQLite). */
export type TransactionExecutor = Kysely<Tables> | Transaction<Tables>

/**
 * Runs `work` in one transaction and returns what it returns; a serialization failure (40001) or
 * a deadlock (40P01) rolls it back and runs it again (up to 8 times, with a short random backoff),
 * so `work` must have no effect outside the transaction. Read committed on PostgreSQL: the kms
 * keeps its rules with unique constraints, conditional updates and row locks (`lockOrganization`),
 * not with predicate locks that make unrelated writers abort each other. On SQLite the
 * transaction takes the write lock when it begins (`begin immediate`), so two processes on one
 * file wait for each other instead of failing to upgrade a read lock.
 *
 * @example
 * const id = await transaction(storage, async (trx) => { await trx.insertInto('users').values(row).execute(); return row.id })
 */
export async function transaction<result>(storage: Storage, work: (trx: TransactionExecutor) => Promise<result>): Promise<result> {
  for (let attempt = 1; ; attempt++) {
    try {
      if (storage.dialect === 'postgres') return await storage.kysely.transaction().execute(work)
      return await storage.kysely.connection().execute(async (connection) => {
        await sql`begin immediate`.execute(connection)
        try {
          const result = await work(connection)
          await sql`commit`.execute(connection)
          return result
        } catch (error) {
          await sql`rollback`.execute(connection)
          throw error
        }
      })
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code
      if (typeof code !== 'string' || !RETRIED.has(code) || attempt >= MAX_ATTEMPTS) throw error
      // Apart, so the transactions that collided do not collide again at once.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt))
    }
  }
}
