import type { Metrics } from '@latchkey/service'
import {
  type Database,
  databaseTarget,
  type GroupCommit,
  type Migration,
  openDatabase as openServiceDatabase,
  UniqueViolationError,
} from '@latchkey/service/database'
import type {
  CompiledQuery,
  Kysely,
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RawBuilder,
  RootOperationNode,
  Transaction,
  UnknownRow,
} from 'kysely'
import { sql } from 'kysely'
import type { Tables } from './tables.js'

/** Whether `location` names a PostgreSQL database (a postgres:// or postgresql:// URL) rather than a SQLite file. */
export const isPostgresUrl = (location: string) => /^postgres(ql)?:\/\//i.test(location)

/** Connections a kms keeps to PostgreSQL. */
export const POSTGRES_POOL_SIZE = 16

/** Whether `error` is a unique violation (PostgreSQL's 23505 or SQLite's), as @latchkey/service/database types it. */
export const isUniqueViolation = (error: unknown): boolean => error instanceof UniqueViolationError

/**
 * PostgreSQL tables carry an identity column `rowid` for insertion order (SQLite's implicit
 * rowid); rows come back without it, as they do from SQLite. On SQLite no row has it (`select *`
 * leaves the implicit rowid out), so its statements skip the plugin (one step less each).
 */
const hideRowid: KyselyPlugin = {
  transformQuery: (args: PluginTransformQueryArgs): RootOperationNode => args.node,
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    for (const row of args.result.rows) delete row['rowid']
    return args.result
  },
}

/** What a statement runs on: the database, or the transaction it belongs to. */
export type Executor = Kysely<Tables> | Transaction<Tables>

/** The kms's database, opening: statements wait for it (and its migrations) before they run. */
export type Storage = {
  readonly dialect: 'sqlite' | 'postgres'
  /** The database for single statements, once open and migrated. */
  executor(): Promise<Executor>
  /**
   * Runs `work` in one transaction, retried whole on a serialization failure or deadlock (so it
   * must touch nothing but `trx`). Read committed on PostgreSQL: the kms keeps its rules with
   * unique constraints, conditional updates and row locks (`lockOrganization`), not with
   * predicate locks under which unrelated writers abort each other.
   */
  transaction<result>(work: (trx: Executor) => Promise<result>): Promise<result>
  /**
   * One statement run at once on SQLite, outside any transaction (ImmediateStatements.run), once
   * the database is open; undefined when it cannot be (PostgreSQL, opening, a transaction open,
   * traces on): the caller then runs it through `executor()`.
   */
  runNow<row>(query: RawBuilder<row> | CompiledQuery<row>): QueryResult<row> | undefined
  /** SQLite's group commit (@latchkey/service/database's ImmediateStatements.groupCommit) once open; undefined on PostgreSQL, while opening, with traces on. */
  groupCommit: GroupCommit
  ping(): Promise<void>
  close(): Promise<void>
}

/**
 * Opens the kms's database through @latchkey/service/database (the module the backend shares):
 * PostgreSQL for a postgres:// URL (a pool; nothing blocks the event loop), else a SQLite file or
 * `:memory:`; the `kms` migrations applied first, under PostgreSQL's advisory lock when several
 * instances start at once. Returns at once; the first statement waits for the opening.
 *
 * @example
 * const storage = openStorage('postgres://latchkey@db.internal/kms', KMS_MIGRATIONS)
 * await storage.ping()
 */
export function openStorage(location: string, migrations: readonly Migration[], metrics?: Metrics | undefined): Storage {
  const { dialect } = databaseTarget(location)
  const opening: Promise<Database<Tables>> = openServiceDatabase<Tables>({
    url: location,
    service: 'kms',
    migrations,
    poolSize: POSTGRES_POOL_SIZE,
    metrics,
  }).then(async (database) => {
    if (database.dialect === 'sqlite') {
      // Per connection, and SQLite has the one: cascades as declared; commits reach the WAL at once, syncs at checkpoints.
      await sql`pragma foreign_keys = on`.execute(database.db)
      await sql`pragma synchronous = normal`.execute(database.db)
    }
    return database
  })
  // Awaited by the first statement; a failed opening fails every statement with its error (so it
  // is not an unhandled rejection here). Once open, SQLite's statements can run at once (runNow).
  let open: Database<Tables> | undefined
  opening.then(
    (database) => {
      open = database
    },
    () => {},
  )
  let plain: Promise<Executor> | undefined
  return {
    dialect,
    executor: () => {
      plain ??= opening.then((database) => (dialect === 'postgres' ? database.db.withPlugin(hideRowid) : database.db))
      return plain
    },
    async transaction(work) {
      const database = await opening
      return database.transaction((trx) => work(dialect === 'postgres' ? trx.withPlugin(hideRowid) : trx), { isolation: 'read committed' })
    },
    runNow(query) {
      const immediate = open?.immediate
      if (!immediate) return undefined
      return immediate.run('compile' in query ? query.compile(open!.db) : query)
    },
    groupCommit: (work) => open?.immediate?.groupCommit(work),
    ping: async () => (await opening).ping(),
    async close() {
      const database = await opening.catch(() => undefined)
      await database?.close()
    },
  }
}
