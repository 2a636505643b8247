import { performance } from 'node:perf_hooks'
import BetterSqlite3 from 'better-sqlite3'
import {
  type CompiledQuery,
  type Dialect,
  type Driver,
  Kysely,
  type LogEvent,
  PostgresDialect,
  type QueryResult,
  type SqliteDatabase,
  SqliteDialect,
} from 'kysely'
import pg from 'pg'
import type { Metrics } from '../metrics.js'
import { recordSpan, tracingOn } from '../tracing.js'
import { DatabaseError, SerializationFailureError, typedDatabaseError } from './errors.js'
import type { DatabaseDialect, OpenDatabaseOptions } from './open.js'

// Reaching a database: which engine a setting names, a Kysely instance on it whose errors arrive
// typed, and PostgreSQL's prepared statements. Nothing here migrates (open.ts, migrations.ts).

const POSTGRES_URL = /^postgres(?:ql)?:\/\//i
const ANY_URL = /^[a-z][a-z\d+.-]*:\/\//i

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
function namedStatementPool(pool: pg.Pool, metrics: Metrics | undefined, onConnectionError: ((error: Error) => void) | undefined) {
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
      const client = metrics ? await timedConnect(pool, metrics) : await pool.connect()
      if (!patched.has(client)) {
        // A held connection whose server ends it between two statements (a restart, a failover,
        // pg_terminate_backend: a transaction waiting on the process's own work) emits 'error' with
        // no listener of the pool's, which would end the process. This listener, the connection's
        // own, hears it held or idle, once each: the holder's next statement rejects ("not
        // queryable"), and the pool drops the connection when it comes back (idle, at once).
        client.on('error', (error) => onConnectionError?.(error))
        const query = client.query.bind(client) as (config: pg.QueryConfig) => Promise<pg.QueryResult>
        let inTransaction = false
        const run = async (text: string, values: unknown[]): Promise<pg.QueryResult> => {
          const name = nameOf(text)
          try {
            const result = await query(name === undefined ? { text, values } : { name, text, values })
            // A text of several statements (sent without parameters) answers each one's result: Kysely gets the last one's.
            return Array.isArray(result) ? (result.at(-1) as pg.QueryResult) : result
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

/**
 * better-sqlite3's database as Kysely's SQLite driver uses it, but with each data statement's text
 * prepared once and reused (Kysely's driver prepares every statement it runs: for the services'
 * short indexed statements that was the largest share of the database's CPU). A statement still
 * mid-iteration (a stream) is not shared: the text is then prepared afresh. SQLite re-prepares a
 * kept statement by itself when the schema changed under it (another process migrating the file).
 * Nothing here holds data: only compiled statements, by text, as the PostgreSQL pool names them.
 */
export function preparedOnce(file: BetterSqlite3.Database): SqliteDatabase {
  const statements = new Map<string, BetterSqlite3.Statement>()
  return {
    close: () => file.close(),
    prepare(text: string) {
      const kept = statements.get(text)
      if (kept && !kept.busy) return kept
      const statement = file.prepare(text)
      if (!kept && statements.size < MAX_NAMED_STATEMENTS && DATA_STATEMENT.test(text)) statements.set(text, statement)
      return statement
    },
  }
}

/** Runs one compiled statement on SQLite's connection, as Kysely's SQLite driver does, its errors typed. */
export type RunStatement = <row>(query: CompiledQuery<row>) => QueryResult<row>

/**
 * Statements run at once on SQLite's one connection, without Kysely's asynchronous round (its
 * connection lock, a promise per step): better-sqlite3 runs every statement synchronously anyway,
 * so a statement that starts and ends in one call cannot interleave with anything. Each answers
 * `undefined` while a transaction is open on the connection (a Kysely transaction waiting between
 * its statements): the caller then takes Kysely's path, which waits for it, as before.
 */
export type ImmediateStatements = {
  /** One statement, atomic on its own; `undefined` while a transaction is open. */
  run<row>(query: CompiledQuery<row>): QueryResult<row> | undefined
  /**
   * `work`, synchronous, in one transaction (BEGIN IMMEDIATE: it takes the write lock first, so it
   * never fails midway for want of it). `undefined` while another transaction is open, or when the
   * database was busy (another process writing past the busy timeout): the caller then takes the
   * transaction that waits and retries. Any other error is thrown, typed, after the rollback.
   */
  transaction<result>(work: (run: RunStatement) => result): { value: result } | undefined
  /**
   * `work`, synchronous, committed together with every other `groupCommit` of this turn of the
   * event loop: one `begin immediate … commit` for all of them, run when the turn's callbacks are
   * done (`setImmediate`). Each work is atomic on its own (a savepoint): one that throws is rolled
   * back alone and rejects with its error, typed, while the others commit. Resolves once its writes
   * are committed; `undefined` (nothing run) when the connection was in a transaction or the file
   * busy, as `transaction` answers: the caller then takes the path that waits. When the commit
   * itself fails, every work of the group rejects with its error and nothing of theirs is written.
   *
   * Why: each commit writes its pages to the write-ahead log and takes the file's locks; under load
   * the requests of one turn share them.
   */
  groupCommit<result>(work: (run: RunStatement) => result): Promise<{ value: result } | undefined>
}

/**
 * A group commit as a store offers it to its callers: ImmediateStatements.groupCommit where the
 * store has one; `undefined`, with nothing run, where it has none (PostgreSQL, a database still
 * opening, traces on). The caller then takes its transaction that waits.
 */
export type GroupCommit = <result>(work: (run: RunStatement) => result) => Promise<{ value: result } | undefined> | undefined

type GroupOutcome = { value: unknown } | { error: unknown }
type GroupedWork = { work: (run: RunStatement) => unknown; settle: (outcome: GroupOutcome | undefined) => void }

function immediateStatements(file: BetterSqlite3.Database, statements: SqliteDatabase): ImmediateStatements {
  const run: RunStatement = <row>(query: CompiledQuery<row>): QueryResult<row> => {
    try {
      const statement = statements.prepare(query.sql)
      if (statement.reader) return { rows: statement.all(query.parameters as unknown[]) as row[] }
      const { changes, lastInsertRowid } = statement.run(query.parameters as unknown[])
      return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] }
    } catch (error) {
      throw typedDatabaseError(error)
    }
  }
  // Made once: better-sqlite3 prepares its begin, commit and rollback for it.
  const inTransaction = file.transaction((work: (run: RunStatement) => unknown) => work(run))
  const control = {
    begin: file.prepare('begin immediate'),
    commit: file.prepare('commit'),
    rollback: file.prepare('rollback'),
    savepoint: file.prepare('savepoint grouped'),
    release: file.prepare('release grouped'),
    undo: file.prepare('rollback to grouped'),
  }
  let group: GroupedWork[] = []
  /** One outcome per work of the group: its value, its error, or `undefined` when nothing ran. */
  function runGroup(works: readonly GroupedWork[]): (GroupOutcome | undefined)[] {
    if (file.inTransaction) return works.map(() => undefined)
    try {
      control.begin.run()
    } catch (error) {
      const typed = typedDatabaseError(error)
      const outcome = typed instanceof SerializationFailureError ? undefined : { error: typed }
      return works.map(() => outcome)
    }
    const outcomes: GroupOutcome[] = []
    // A work alone is the transaction: its error rolls the transaction back, with no savepoint needed.
    const alone = works.length === 1
    try {
      for (const { work } of works) {
        if (!alone) control.savepoint.run()
        try {
          outcomes.push({ value: work(run) })
          if (!alone) control.release.run()
        } catch (error) {
          // SQLite ends the whole transaction on some errors (a full disk, I/O): then nothing of the group stands.
          if (alone || !file.inTransaction) throw error
          control.undo.run()
          control.release.run()
          outcomes.push({ error: typedDatabaseError(error) })
        }
      }
      control.commit.run()
      return outcomes
    } catch (error) {
      if (file.inTransaction) control.rollback.run()
      const failed = { error: typedDatabaseError(error) }
      return works.map(() => failed)
    }
  }
  function commitGroup() {
    const works = group
    group = []
    const outcomes = runGroup(works)
    for (const [index, { settle }] of works.entries()) settle(outcomes[index])
  }
  return {
    run: (query) => (file.inTransaction ? undefined : run(query)),
    transaction<result>(work: (run: RunStatement) => result) {
      if (file.inTransaction) return undefined
      try {
        return { value: inTransaction.immediate(work) as result }
      } catch (error) {
        const typed = typedDatabaseError(error)
        if (typed instanceof SerializationFailureError) return undefined
        throw typed
      }
    },
    groupCommit<result>(work: (run: RunStatement) => result) {
      return new Promise<{ value: result } | undefined>((resolve, reject) => {
        if (group.length === 0) setImmediate(commitGroup)
        group.push({
          work,
          settle: (outcome) =>
            outcome === undefined ? resolve(undefined) : 'error' in outcome ? reject(outcome.error) : resolve(outcome as { value: result }),
        })
      })
    },
  }
}

/**
 * A Kysely instance on the database `options.url` names, its typed errors attached; nothing
 * migrated. On SQLite, with traces off, also its statements run at once (each statement a span
 * needs Kysely's log, so with traces on every statement takes Kysely's path).
 */
export function connect<Schema>(options: Pick<OpenDatabaseOptions, 'url' | 'poolSize' | 'busyTimeoutMs' | 'onIdleError' | 'metrics'>): {
  dialect: DatabaseDialect
  description: string
  db: Kysely<Schema>
  immediate: ImmediateStatements | undefined
} {
  const { dialect, description } = databaseTarget(options.url)
  let engine: Dialect
  let immediate: ImmediateStatements | undefined
  if (dialect === 'postgres') {
    const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 10, types: pgTypes })
    // The pool re-emits an idle connection's error, which would end the process unheard; each
    // connection's own listener (namedStatementPool) already reports it, held or idle.
    pool.on('error', () => undefined)
    engine = new PostgresDialect({ pool: namedStatementPool(pool, options.metrics, options.onIdleError) })
  } else {
    const file = new BetterSqlite3(options.url ?? ':memory:', { timeout: options.busyTimeoutMs ?? 5000 })
    if (file.name !== ':memory:') file.pragma('journal_mode = WAL')
    const statements = preparedOnce(file)
    engine = new SqliteDialect({ database: statements })
    if (!tracingOn()) immediate = immediateStatements(file, statements)
  }
  // With traces on, each statement becomes a span of the request that ran it; off, Kysely times nothing.
  const system = dialect === 'postgres' ? 'postgresql' : 'sqlite'
  const log = tracingOn()
    ? (event: LogEvent) =>
        recordSpan(`db ${event.query.sql.trimStart().split(/\s/, 1)[0]!.toLowerCase()}`, {
          startTime: Date.now() - event.queryDurationMillis,
          durationMs: event.queryDurationMillis,
          attributes: { 'db.system': system, 'db.query.text': event.query.sql.slice(0, 500) },
          failed: event.level === 'error',
        })
    : undefined
  return { dialect, description, db: new Kysely<Schema>({ dialect: withTypedErrors(engine), ...(log ? { log } : {}) }), immediate }
}

/** A pool connection, timed; a wait is counted when every connection was busy and the pool full. */
async function timedConnect(pool: pg.Pool, metrics: Metrics): Promise<pg.PoolClient> {
  if (pool.idleCount === 0 && pool.totalCount >= (pool.options.max ?? 10)) metrics.database.poolWaits.inc()
  const startedAt = performance.now()
  try {
    return await pool.connect()
  } finally {
    metrics.database.poolWaitSeconds.observe((performance.now() - startedAt) / 1000)
  }
}

export const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Jittered exponential backoff: up to 5, 10, 20 … ms, capped at 250 ms, so colliding instances spread out. */
export const backoffMs = (attempt: number) => Math.random() * Math.min(250, 5 * 2 ** (attempt - 1))
