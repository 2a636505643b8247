import { createHash, createHmac } from 'node:crypto'
import { appendFile } from 'node:fs/promises'
import { CompiledQuery, type Kysely } from 'kysely'
import { DEVELOPMENT_AUDIT_KEY } from '../audit.js'
import { currentRequestId, type Logger } from '../logger.js'
import type { GroupCommit } from './connection.js'
import type { DatabaseDialect, Migration } from './open.js'

// The audit trail the kms and the backend append to: one row per event, each row's hash taken over
// the previous row's hash and the event, so that changing, removing or reordering a row breaks the
// chain from there on and `verifyAuditTrail` names the first row that no longer fits.

/** What became of the action: done, refused (with a reason), waiting for approvals, or failed unexpectedly. */
export type AuditOutcome = 'completed' | 'refused' | 'consensus_needed' | 'failed'

/** An event as a service records it; `ip` and `email` are kept only as keyed hashes. */
export type AuditEventInput = {
  /** What was asked, e.g. `ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2` or `POST /auth/email/verify`. */
  action: string
  outcome: AuditOutcome
  /** Why it was refused or failed: the error's code and message. */
  reason?: string | null | undefined
  /** The organization and user who asked, when known. */
  actorOrganization?: string | null | undefined
  actorUser?: string | null | undefined
  /** What they asked with: an API key's public key, a passkey's credential id, a session's kind. */
  credential?: string | null | undefined
  /** What it was about: ids by kind (`organization`, `user`, `wallet`, …). */
  target?: Readonly<Record<string, string>> | null | undefined
  /** The request's id (as logged and echoed in `x-request-id`). Default: the one the logger's context carries. */
  requestId?: string | null | undefined
  /** The client's address and the email the request is about: stored as HMAC-SHA-256 under the audit key. */
  ip?: string | null | undefined
  email?: string | null | undefined
}

/** An event as stored: its place in the chain, its fields, and its link and hash. */
export type AuditEventRow = {
  seq: number
  /** Unix ms. */
  at: number
  actor_organization: string | null
  actor_user: string | null
  credential: string | null
  action: string
  /** JSON object, keys sorted. */
  target: string | null
  outcome: string
  reason: string | null
  request_id: string | null
  ip_hash: string | null
  email_hash: string | null
  /** The previous row's hash (64 zeros for the first row). */
  prev_hash: string
  /** SHA-256 (hex) over `prev_hash`, a newline and the canonical serialisation of the other fields. */
  hash: string
}

/** The link of the first row. */
export const GENESIS_HASH = '0'.repeat(64)

/** The table of `service`'s audit trail: `<service>_audit_events`, like `<service>_migrations`, so the kms and the backend may share a database. */
export const auditTable = (service: string) => `${service}_audit_events`

// biome-ignore lint/suspicious/noExplicitAny: the audit table is not part of the services' schema types.
type AnyDb = Kysely<any>

/**
 * The migration that creates `service`'s audit table, for the service's own migration list.
 *
 * @example
 * export const MIGRATIONS = [...earlier, auditMigration('0005_audit_events', 'kms')]
 */
export function auditMigration(name: string, service: string): Migration {
  return {
    name,
    // A new table that code before it never reads.
    expand: true,
    async up(db) {
      const table = auditTable(service)
      await db.schema
        .createTable(table)
        .ifNotExists()
        .addColumn('seq', 'bigint', (column) => column.primaryKey())
        .addColumn('at', 'bigint', (column) => column.notNull())
        .addColumn('actor_organization', 'text')
        .addColumn('actor_user', 'text')
        .addColumn('credential', 'text')
        .addColumn('action', 'text', (column) => column.notNull())
        .addColumn('target', 'text')
        .addColumn('outcome', 'text', (column) => column.notNull())
        .addColumn('reason', 'text')
        .addColumn('request_id', 'text')
        .addColumn('ip_hash', 'text')
        .addColumn('email_hash', 'text')
        .addColumn('prev_hash', 'text', (column) => column.notNull())
        .addColumn('hash', 'text', (column) => column.notNull())
        .execute()
    },
  }
}

/**
 * HMAC-SHA-256 (hex) of `value` under the audit key, with what it is (`ip`, `email`) in the
 * message: the same address gives the same hash in every event (so an operator can search for
 * one), and no one without the key can test guesses against it. Emails are lowercased first.
 *
 * @example
 * keyedHash(auditKey, 'email', 'Ada@Example.com') === keyedHash(auditKey, 'email', 'ada@example.com') // true
 */
export function keyedHash(key: Uint8Array, kind: 'ip' | 'email', value: string): string {
  const normalised = kind === 'email' ? value.trim().toLowerCase() : value.trim()
  return createHmac('sha256', key).update(`${kind}\n${normalised}`).digest('hex')
}

/** The fields a row's hash covers, in a fixed order: a JSON array, so the serialisation is canonical. */
function canonical(row: Omit<AuditEventRow, 'prev_hash' | 'hash'>): string {
  return JSON.stringify([
    row.seq,
    row.at,
    row.actor_organization,
    row.actor_user,
    row.credential,
    row.action,
    row.target,
    row.outcome,
    row.reason,
    row.request_id,
    row.ip_hash,
    row.email_hash,
  ])
}

/**
 * A row's hash: SHA-256 over the previous hash, a newline and the row's canonical serialisation.
 *
 * @example
 * const hash = auditHash(GENESIS_HASH, row)
 */
export function auditHash(prevHash: string, row: Omit<AuditEventRow, 'prev_hash' | 'hash'>): string {
  return createHash('sha256')
    .update(`${prevHash}\n${canonical(row)}`)
    .digest('hex')
}

/** A target's ids as stored: a JSON object with its keys sorted, so equal targets serialise alike. */
function targetText(target: AuditEventInput['target']): string | null {
  if (!target) return null
  const entries = Object.entries(target).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return entries.length ? JSON.stringify(Object.fromEntries(entries)) : null
}

/** Where a service's audit trail lives: its database's engine, and how the append runs its statements there. */
export type AuditStorage = {
  dialect: DatabaseDialect
  /** SQLite: runs `work` in one transaction, when `groupCommit` cannot. */
  transaction<result>(work: (trx: AnyDb) => Promise<result>): Promise<result>
  /**
   * PostgreSQL: runs `work` with statements on one pooled connection, outside any transaction:
   * the append begins and ends its own (read committed; the advisory lock orders the appends).
   */
  connection<result>(work: (connection: AnyDb) => Promise<result>): Promise<result>
  /** SQLite's group commit (ImmediateStatements): tried first; when it answers `undefined` (or is not there yet), `transaction` runs. */
  groupCommit?: GroupCommit | undefined
}

export type AuditTrailOptions = {
  /** Names the table (`<service>_audit_events`) and the PostgreSQL lock. */
  service: string
  storage: AuditStorage
  /** 32 bytes: the key of the keyed hashes of IPs and emails. Default: the fixed development key (production settings refuse it). */
  key?: Uint8Array | undefined
  /** Also append each event, once committed, as a JSON line to this file. */
  logFile?: string | undefined
  /** Clock in unix ms. */
  now?: (() => number) | undefined
  /** Where events that could not be stored or mirrored are reported. Default: the console. */
  logger?: Logger | undefined
  /** Told when events could not be stored or mirrored, instead of the logger. */
  onError?: ((error: Error, events: readonly AuditEventRow[] | readonly AuditEventInput[]) => void) | undefined
}

const COMMIT = CompiledQuery.raw('commit', [])
const ROLLBACK = CompiledQuery.raw('rollback', [])

/** Events one append transaction takes at most; more wait for the next. */
const MAX_BATCH = 200

/** A row's columns in the order the append's insert lists them. */
const AUDIT_COLUMNS = [
  'seq',
  'at',
  'actor_organization',
  'actor_user',
  'credential',
  'action',
  'target',
  'outcome',
  'reason',
  'request_id',
  'ip_hash',
  'email_hash',
  'prev_hash',
  'hash',
] as const satisfies readonly (keyof AuditEventRow)[]

/**
 * The append's statements as text, written once per trail: the chain head's read, and the insert
 * of `count` rows (by count, made on first use: at most MAX_BATCH texts). Every value is a
 * parameter (`?` on SQLite, `$n` on PostgreSQL); only the table name, a fixed `<service>_audit_events`,
 * is in the text. Building them per append with Kysely's builders cost more than SQLite's own work
 * on the rows (issue 31).
 */
function appendStatements(dialect: DatabaseDialect, table: string) {
  const quoted = `"${table.replaceAll('"', '""')}"`
  const head = `select "seq", "hash" from ${quoted} order by "seq" desc limit 1`
  // PostgreSQL: the transaction, its lock and the head's read in one round trip (a text of three
  // statements, sent without parameters). Read committed takes a snapshot per statement, so the
  // head is read after the lock is held: it is the last append's, whichever instance made it.
  // The lock's key is the text every release has locked, so that old and new instances of a
  // rolling upgrade still append one after another.
  const lockedHead = `start transaction isolation level read committed; select pg_advisory_xact_lock(hashtext('latchkey:${table.replaceAll("'", "''")}')); ${head}`
  const columns = AUDIT_COLUMNS.map((column) => `"${column}"`).join(', ')
  const inserts = new Map<number, string>()
  const insertText = (count: number) => {
    let text = inserts.get(count)
    if (text === undefined) {
      let parameter = 0
      const placeholder = () => (dialect === 'postgres' ? `$${++parameter}` : '?')
      const tuples = Array.from({ length: count }, () => `(${AUDIT_COLUMNS.map(placeholder).join(', ')})`)
      text = `insert into ${quoted} (${columns}) values ${tuples.join(', ')}`
      inserts.set(count, text)
    }
    return text
  }
  return {
    head: CompiledQuery.raw(head, []) as CompiledQuery<Pick<AuditEventRow, 'seq' | 'hash'>>,
    lockedHead: CompiledQuery.raw(lockedHead, []) as CompiledQuery<Pick<AuditEventRow, 'seq' | 'hash'>>,
    insert: (rows: readonly AuditEventRow[]) =>
      CompiledQuery.raw(
        insertText(rows.length),
        rows.flatMap((row) => AUDIT_COLUMNS.map((column) => row[column])),
      ),
  }
}

/**
 * A service's audit trail. `record` resolves once the event is committed: events recorded while
 * an append runs go together in the next one (one transaction, one multi-row insert), so a busy
 * instance pays one lock and one read of the chain head per batch, not per event. On PostgreSQL
 * the append takes a transaction-scoped advisory lock first, so the instances sharing the database
 * append one after another and the chain stays one line without gaps or forks.
 *
 * @example
 * const audit = createAuditTrail({ service: 'kms', storage, key })
 * await audit.record({ action: 'ACTIVITY_TYPE_CREATE_WALLET', outcome: 'completed', actorUser: userId })
 */
export function createAuditTrail(options: AuditTrailOptions) {
  const { storage } = options
  const key = options.key ?? DEVELOPMENT_AUDIT_KEY
  if (key.length !== 32) throw new Error('the audit key must be 32 bytes')
  // An append that fails does not fail the request that caused it: the request's own writes are
  // committed by then (and a refusal wrote nothing), so answering it 500 would not undo them, only
  // hide that they happened. The events are logged whole (as an operator's alert rule matches
  // "audit events not stored") and counted (`failures`), so the gap is seen and can be filled.
  let failures = 0
  const onError =
    options.onError ??
    ((error: Error, events: readonly unknown[]) =>
      options.logger
        ? options.logger.error({ err: error, events }, `audit events not stored: ${error.message}`)
        : console.error(`audit events not stored: ${error.message}`, events))
  const table = auditTable(options.service)
  const now = options.now ?? Date.now
  type Pending = { event: Omit<AuditEventRow, 'seq' | 'prev_hash' | 'hash'>; done: () => void }
  let queue: Pending[] = []
  let flushing: Promise<void> | undefined
  const statements = appendStatements(storage.dialect, table)

  /** The batch's rows, chained onto the head as read in the append's transaction. */
  function chained(batch: readonly Pending[], head: Pick<AuditEventRow, 'seq' | 'hash'> | undefined): AuditEventRow[] {
    let seq = head?.seq ?? 0
    let prevHash = head?.hash ?? GENESIS_HASH
    return batch.map(({ event }) => {
      seq += 1
      const fields = { seq, ...event }
      const row: AuditEventRow = { ...fields, prev_hash: prevHash, hash: auditHash(prevHash, fields) }
      prevHash = row.hash
      return row
    })
  }

  async function append(batch: readonly Pending[]): Promise<AuditEventRow[]> {
    // SQLite: the head's read and the insert together, committed with the other writes of this turn, when the connection is free.
    const done = await storage.groupCommit?.((run) => {
      const rows = chained(batch, run(statements.head).rows[0])
      run(statements.insert(rows))
      return rows
    })
    if (done) return done.value
    // PostgreSQL: three round trips (begin, lock and head; the insert; commit), not five.
    if (storage.dialect === 'postgres')
      return storage.connection(async (connection) => {
        try {
          const rows = chained(batch, (await connection.executeQuery(statements.lockedHead)).rows[0])
          await connection.executeQuery(statements.insert(rows))
          await connection.executeQuery(COMMIT)
          return rows
        } catch (error) {
          // Ends the transaction (and the lock) before the connection goes back to the pool. On a
          // broken connection it fails too, and the pool drops that connection: the append's own
          // error is the one to report.
          await connection.executeQuery(ROLLBACK).catch(() => undefined)
          throw error
        }
      })
    return storage.transaction(async (trx) => {
      const rows = chained(batch, (await trx.executeQuery(statements.head)).rows[0])
      await trx.executeQuery(statements.insert(rows))
      return rows
    })
  }

  async function flush() {
    while (queue.length) {
      const batch = queue.slice(0, MAX_BATCH)
      queue = queue.slice(MAX_BATCH)
      try {
        const rows = await append(batch)
        if (options.logFile) await appendFile(options.logFile, rows.map((row) => `${JSON.stringify(row)}\n`).join(''))
      } catch (error) {
        failures += batch.length
        onError(
          error as Error,
          batch.map((pending) => pending.event as AuditEventRow),
        )
      }
      for (const pending of batch) pending.done()
    }
    flushing = undefined
  }

  return {
    /** The table the events go to. */
    table,
    /**
     * Appends one event; resolves once it is committed (and mirrored to the log file), never
     * rejects: a failure goes to `onError`.
     */
    record(input: AuditEventInput): Promise<void> {
      const event = {
        at: now(),
        actor_organization: input.actorOrganization ?? null,
        actor_user: input.actorUser ?? null,
        credential: input.credential ?? null,
        action: input.action,
        target: targetText(input.target),
        outcome: input.outcome,
        reason: input.reason ?? null,
        request_id: input.requestId ?? currentRequestId() ?? null,
        ip_hash: input.ip ? keyedHash(key, 'ip', input.ip) : null,
        email_hash: input.email ? keyedHash(key, 'email', input.email) : null,
      }
      return new Promise<void>((resolve) => {
        queue.push({ event, done: resolve })
        flushing ??= flush()
      })
    },
    /** Resolves once every event recorded so far is stored (before the database closes). */
    settled: async () => {
      while (flushing) await flushing
    },
    /** Events that could not be stored (or mirrored to the log file) since the trail was created: a non-zero count wants an operator. */
    failures: () => failures,
    /** The keyed hash of an email, to look one person's events up. */
    emailHash: (email: string) => keyedHash(key, 'email', email),
  }
}

export type AuditTrail = ReturnType<typeof createAuditTrail>

/** `verifyAuditTrail`'s answer: the chain is whole, or the first row that does not fit and why. */
export type AuditVerification = { intact: true; count: number; headHash: string } | { intact: false; count: number; seq: number; problem: string }

/** Rows read per query while verifying. */
const VERIFY_PAGE = 1000

/**
 * Walks `service`'s audit chain from the first row and answers the first row whose sequence
 * number, link (`prev_hash`) or hash does not match: a row changed, removed or inserted. `count`
 * is the number of rows checked and found sound before it.
 *
 * @example
 * const verdict = await verifyAuditTrail(db, 'kms')
 * if (!verdict.intact) console.error(`row ${verdict.seq}: ${verdict.problem}`)
 */
export async function verifyAuditTrail(db: AnyDb, service: string): Promise<AuditVerification> {
  const table = auditTable(service)
  let expected = 1
  let prevHash = GENESIS_HASH
  for (;;) {
    const rows = (await db.selectFrom(table).selectAll().where('seq', '>=', expected).orderBy('seq').limit(VERIFY_PAGE).execute()) as AuditEventRow[]
    for (const row of rows) {
      const count = expected - 1
      if (row.seq !== expected)
        return { intact: false, count, seq: row.seq, problem: `expected row ${expected} next: rows ${expected} to ${row.seq - 1} are missing` }
      if (row.prev_hash !== prevHash)
        return { intact: false, count, seq: row.seq, problem: `its prev_hash ${row.prev_hash} is not the hash of row ${row.seq - 1} (${prevHash})` }
      const { prev_hash: _link, hash: _hash, ...fields } = row
      const computed = auditHash(row.prev_hash, fields)
      if (row.hash !== computed) return { intact: false, count, seq: row.seq, problem: `its hash ${row.hash} does not match its contents (${computed})` }
      prevHash = row.hash
      expected += 1
    }
    if (rows.length < VERIFY_PAGE) return { intact: true, count: expected - 1, headHash: prevHash }
  }
}
