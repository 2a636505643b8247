import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads'
import type { SqlDatabase } from './sqlDatabase.js'

/** How long the service waits for one answer before giving up on the connection. */
export const POSTGRES_ANSWER_TIMEOUT_MS = 60_000

type Request = { type: 'connect' } | { type: 'query'; name: string; sql: string; parameters: unknown[] } | { type: 'exec'; sql: string } | { type: 'close' }
type Answer = { rows: Record<string, unknown>[] } | { error: { message: string; code?: string; detail?: string } }

/** A PostgreSQL error, with its SQLSTATE `code` (e.g. 23505, a unique violation). */
export class PostgresError extends Error {
  override name = 'PostgresError'
  readonly code: string | undefined
  readonly detail: string | undefined
  constructor(error: { message: string; code?: string | undefined; detail?: string | undefined }) {
    super(error.message)
    this.code = error.code
    this.detail = error.detail
  }
}

/**
 * A PostgreSQL database behind the same synchronous interface as SQLite: one connection, held by a
 * worker thread, and each statement waited for with Atomics.wait. Callers keep their synchronous
 * transactions, and no other statement of this service can run inside one; the price is that the
 * service thread blocks for each round trip, as it does for each SQLite statement.
 *
 * @example
 * const db = openPostgres('postgres://latchkey@db.internal/kms')
 * @internal
 */
export function openPostgres(url: string): SqlDatabase {
  const signal = new Int32Array(new SharedArrayBuffer(4))
  const { port1: port, port2 } = new MessageChannel()
  const worker = new Worker(new URL('./postgresWorker.js', import.meta.url), { workerData: { url, port: port2, signal }, transferList: [port2] })
  // An instance never stopped must not keep the process alive.
  worker.unref()
  let open = true
  let statements = 0
  let depth = 0

  function call(request: Request) {
    if (!open) throw new PostgresError({ message: 'the PostgreSQL connection is closed' })
    Atomics.store(signal, 0, 0)
    port.postMessage(request)
    if (Atomics.wait(signal, 0, 0, POSTGRES_ANSWER_TIMEOUT_MS) === 'timed-out') {
      open = false
      void worker.terminate()
      throw new PostgresError({ message: `PostgreSQL did not answer within ${POSTGRES_ANSWER_TIMEOUT_MS / 1000} s` })
    }
    const answer = receiveMessageOnPort(port)?.message as Answer | undefined
    if (!answer) throw new PostgresError({ message: 'the PostgreSQL worker answered nothing' })
    if ('error' in answer) throw new PostgresError(answer.error)
    return answer.rows
  }
  const exec = (sql: string) => void call({ type: 'exec', sql })

  try {
    call({ type: 'connect' })
  } catch (error) {
    open = false
    void worker.terminate()
    throw error
  }
  return {
    dialect: 'postgres',
    prepare(sqliteSql) {
      // Named, so the server parses each statement once per connection.
      const statement = { name: `latchkey_${++statements}`, sql: toPostgres(sqliteSql) }
      const query = (parameters: unknown[]) => call({ type: 'query', ...statement, parameters })
      return {
        get: (...parameters) => query(parameters)[0],
        all: (...parameters) => query(parameters),
        run: (...parameters) => void query(parameters),
      }
    },
    exec,
    transaction(work) {
      // Serializable, as SQLite's transactions are: a transaction that read what another instance
      // changed meanwhile fails rather than commit on a stale read.
      const savepoint = depth === 0 ? undefined : `latchkey_${depth}`
      exec(savepoint ? `savepoint ${savepoint}` : 'begin isolation level serializable')
      depth++
      let result: ReturnType<typeof work>
      try {
        result = work()
        if (result instanceof Promise) throw new TypeError('Transaction function cannot return a promise')
      } catch (error) {
        depth--
        exec(savepoint ? `rollback to savepoint ${savepoint}; release savepoint ${savepoint}` : 'rollback')
        throw error
      }
      depth--
      exec(savepoint ? `release savepoint ${savepoint}` : 'commit')
      return result
    },
    close() {
      if (!open) return
      try {
        call({ type: 'close' })
      } finally {
        open = false
        void worker.terminate()
      }
    },
  }
}

/**
 * A statement in the SQLite dialect db.ts uses, as PostgreSQL reads it: numbered placeholders,
 * `insert or ignore` as `on conflict do nothing`, and `x = ? collate nocase` as
 * `lower(x) = lower(?)` (the lower() indexes of postgresSchema.ts serve it).
 *
 * @example
 * toPostgres('select * from wallets where id = ? and organization_id = ?')
 * // 'select * from wallets where id = $1 and organization_id = $2'
 */
export function toPostgres(sql: string) {
  let placeholder = 0
  return sql
    .replace(/^insert or ignore into (.*)$/is, 'insert into $1 on conflict do nothing')
    .replace(/([\w.]+) = \? collate nocase/gi, 'lower($1) = lower(?)')
    .replace(/\?/g, () => `$${++placeholder}`)
}
