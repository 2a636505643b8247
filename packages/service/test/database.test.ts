import BetterSqlite3 from 'better-sqlite3'
import { CompiledQuery, type Kysely, sql } from 'kysely'
import pg from 'pg'
import { afterEach, describe, expect, test } from 'vitest'
import {
  type Database,
  DatabaseError,
  databaseTarget,
  type Migration,
  MigrationError,
  migrationStatus,
  openDatabase,
  RetriesExhaustedError,
  runMigrations,
  SerializationFailureError,
  UniqueViolationError,
} from '../src/database.js'
import { freshDatabaseUrl, testEngine } from './testDatabase.js'

// The shared database module on the engine of this run (SQLite files by default, PostgreSQL in
// `npm run test:server-postgres`): migrations, typed errors, and transactions that run again
// when another writer got there first.

type Schema = { counters: { name: string; value: number; updated_at: number } }

const counters: Migration = {
  name: '0001_counters',
  up: async (db) => {
    await db.schema
      .createTable('counters')
      .addColumn('name', 'text', (column) => column.primaryKey())
      .addColumn('value', 'integer', (column) => column.notNull())
      .addColumn('updated_at', 'bigint', (column) => column.notNull())
      .execute()
  },
}

const opened: Database<unknown>[] = []
afterEach(async () => {
  for (const database of opened.splice(0)) await database.close()
})

async function open(
  url: string,
  migrations: readonly Migration[] = [counters],
  extra: { maxAttempts?: number; busyTimeoutMs?: number; poolSize?: number; onIdleError?: (error: Error) => void } = {},
) {
  const attempts: number[] = []
  const database = await openDatabase<Schema>({ url, service: 'demo', migrations, onRetry: ({ attempt }) => attempts.push(attempt), ...extra })
  opened.push(database as Database<unknown>)
  return { database, retries: attempts }
}

/** A write committed by another client of the same database, as another instance would make it. */
async function writeElsewhere(url: string, statement: string) {
  if (testEngine === 'sqlite') {
    const other = new BetterSqlite3(url)
    try {
      other.exec(statement)
    } finally {
      other.close()
    }
    return
  }
  const other = new pg.Client({ connectionString: url })
  await other.connect()
  try {
    await other.query(statement)
  } finally {
    await other.end()
  }
}

const appliedMigrations = async (db: Kysely<Schema>) =>
  (await sql<{ name: string }>`select name from demo_migrations order by name`.execute(db)).rows.map((row) => row.name)

describe('openDatabase', () => {
  test('default: migrations apply once and are recorded; opening again applies only the new ones', async () => {
    const url = await freshDatabaseUrl()
    const first = await open(url)
    expect(first.database.dialect).toBe(testEngine)
    await first.database.db.insertInto('counters').values({ name: 'a', value: 1, updated_at: 1_700_000_000_000 }).execute()
    await first.database.close()
    opened.length = 0

    const labels: Migration = {
      name: '0002_labels',
      up: async (db) => {
        await db.schema.alterTable('counters').addColumn('label', 'text').execute()
      },
    }
    const second = await open(url, [counters, labels])
    expect(await appliedMigrations(second.database.db)).toEqual(['0001_counters', '0002_labels'])
    // bigint columns read back as numbers on both engines.
    expect(await second.database.db.selectFrom('counters').selectAll().execute()).toEqual([{ name: 'a', value: 1, updated_at: 1_700_000_000_000, label: null }])
  })

  test('behavior: instances starting together apply each migration exactly once', async () => {
    const url = await freshDatabaseUrl()
    let runs = 0
    const counted: Migration = {
      name: '0001_counters',
      up: async (db, dialect) => {
        runs++
        await counters.up(db, dialect)
      },
    }
    // SQLite in one process: a busy wait would block the very thread holding the lock, so the
    // losers fail fast and run the migration step again instead.
    await Promise.all([1, 2, 3, 4].map(() => open(url, [counted], { busyTimeoutMs: 0 })))
    expect(runs).toBe(1)
    expect(await appliedMigrations(opened[0]!.db as Kysely<Schema>)).toEqual(['0001_counters'])
  })

  test('error: a database migrated by a newer version is refused, and the failed open leaves it as it was', async () => {
    const url = await freshDatabaseUrl()
    const newer: Migration = { name: '0002_newer', up: async () => undefined }
    await (await open(url, [counters, newer])).database.close()
    opened.length = 0
    await expect(open(url, [counters])).rejects.toThrowError(
      new MigrationError('The database has migration 0002_newer of a newer version of demo; run that version or a newer one'),
    )
    const again = await open(url, [counters, newer])
    expect(await appliedMigrations(again.database.db)).toEqual(['0001_counters', '0002_newer'])
  })

  test('error: a failing migration applies nothing, not even the migrations before it', async () => {
    const url = await freshDatabaseUrl()
    const broken: Migration = {
      name: '0002_broken',
      up: async () => {
        throw new Error('no such thing')
      },
    }
    const failure = await open(url, [counters, broken]).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(MigrationError)
    expect((failure as Error).message).toBe('Migration 0002_broken of demo failed: no such thing')
    const fixed = await open(url, [counters])
    expect(await appliedMigrations(fixed.database.db)).toEqual(['0001_counters'])
    expect(await fixed.database.db.selectFrom('counters').selectAll().execute()).toEqual([])
  })

  test('error: a migration listed twice, a bad service name, another kind of URL', async () => {
    await expect(openDatabase({ service: 'demo', migrations: [counters, counters] })).rejects.toThrowError(
      new MigrationError('Migration 0001_counters is listed twice'),
    )
    await expect(openDatabase({ service: 'Demo; drop', migrations: [] })).rejects.toThrowError(
      new MigrationError('The service name "Demo; drop" must be lowercase letters, digits and _'),
    )
    const refused = await openDatabase({ url: 'mysql://root@db/app', service: 'demo', migrations: [] }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(DatabaseError)
    expect(refused).toMatchObject({
      code: 'unsupported_url',
      message: 'Only postgres:// and postgresql:// URLs or a SQLite file path are supported, got a mysql: URL',
    })
  })
})

describe('upgrades: expand, then contract', () => {
  const labels: Migration = {
    name: '0002_labels',
    expand: true,
    up: async (db) => {
      await db.schema.alterTable('counters').addColumn('label', 'text').execute()
    },
  }
  const dropLabels: Migration = {
    name: '0003_drop_labels',
    up: async (db) => {
      await db.schema.alterTable('counters').dropColumn('label').execute()
    },
  }

  test('behavior: the release before runs on a database the next one only expanded, and writes beside it', async () => {
    const url = await freshDatabaseUrl()
    const next = await open(url, [counters, labels])
    const previous = await open(url, [counters])
    await previous.database.db.insertInto('counters').values({ name: 'old', value: 1, updated_at: 1 }).execute()
    await next.database.db
      .insertInto('counters')
      .values({ name: 'new', value: 2, updated_at: 2, label: 'x' } as never)
      .execute()
    expect(await previous.database.db.selectFrom('counters').select(['name', 'value']).orderBy('name').execute()).toEqual([
      { name: 'new', value: 2 },
      { name: 'old', value: 1 },
    ])
    expect(await migrationStatus({ url, service: 'demo', migrations: [counters] })).toMatchObject({
      pending: [],
      newer: ['0002_labels'],
      compatible: true,
    })
  })

  test('error: a contraction, or an expansion after it, is refused by code that does not know the contraction', async () => {
    const url = await freshDatabaseUrl()
    const later: Migration = { name: '0004_later', expand: true, up: async () => undefined }
    await (await open(url, [counters, labels, dropLabels, later])).database.close()
    opened.length = 0
    const message = 'The database has migration 0003_drop_labels, 0004_later of a newer version of demo; run that version or a newer one'
    await expect(open(url, [counters, labels])).rejects.toThrowError(new MigrationError(message))
    expect(await migrationStatus({ url, service: 'demo', migrations: [counters, labels] })).toMatchObject({
      newer: ['0003_drop_labels', '0004_later'],
      compatible: false,
      problem: message,
    })
    // Code that knows the contraction runs beside the newest, which only expanded after it.
    await expect(open(url, [counters, labels, dropLabels])).resolves.toBeDefined()
  })

  test('behavior: status changes nothing; up --dry-run runs the pending steps and rolls them back; up applies them', async () => {
    const url = await freshDatabaseUrl()
    expect(await migrationStatus({ url, service: 'demo', migrations: [counters, labels] })).toEqual({
      database: expect.stringMatching(/^(sqlite|postgres) /),
      applied: [],
      pending: ['0001_counters', '0002_labels'],
      newer: [],
      compatible: true,
    })
    expect(await runMigrations({ url, service: 'demo', migrations: [counters, labels], dryRun: true })).toMatchObject({
      ran: ['0001_counters', '0002_labels'],
      dryRun: true,
    })
    expect((await migrationStatus({ url, service: 'demo', migrations: [counters, labels] })).pending).toEqual(['0001_counters', '0002_labels'])
    expect(await runMigrations({ url, service: 'demo', migrations: [counters, labels] })).toMatchObject({
      ran: ['0001_counters', '0002_labels'],
      dryRun: false,
    })
    const status = await migrationStatus({ url, service: 'demo', migrations: [counters, labels] })
    expect(status.applied.map((row) => [row.name, row.readableBy])).toEqual([
      ['0001_counters', '0001_counters'],
      ['0002_labels', '0001_counters'],
    ])
    expect(status.pending).toEqual([])
  })

  test('error: a dry run of a failing step names it and leaves the database as it was', async () => {
    const url = await freshDatabaseUrl()
    await runMigrations({ url, service: 'demo', migrations: [counters] })
    const failure = await runMigrations({ url, service: 'demo', migrations: [counters, dropLabels], dryRun: true }).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(MigrationError)
    expect((failure as Error).message).toMatch(/^Migration 0003_drop_labels of demo failed: /)
    expect((await migrationStatus({ url, service: 'demo', migrations: [counters, dropLabels] })).pending).toEqual(['0003_drop_labels'])
  })

  test('behavior: a migrations table made before readable_by existed gains the column; its rows count as contractions', async () => {
    const url = await freshDatabaseUrl()
    await writeElsewhere(url, 'create table demo_migrations (name text primary key, applied_at bigint not null)')
    await writeElsewhere(url, 'create table counters (name text primary key, value integer not null, updated_at bigint not null)')
    await writeElsewhere(url, "insert into demo_migrations (name, applied_at) values ('0001_counters', 1)")
    expect((await migrationStatus({ url, service: 'demo', migrations: [counters] })).applied).toEqual([
      { name: '0001_counters', appliedAt: 1, readableBy: null },
    ])
    await open(url, [counters, labels])
    expect((await migrationStatus({ url, service: 'demo', migrations: [counters, labels] })).applied).toEqual([
      { name: '0001_counters', appliedAt: 1, readableBy: null },
      { name: '0002_labels', appliedAt: expect.any(Number), readableBy: '0001_counters' },
    ])
  })
})

describe('databaseTarget', () => {
  test('default: the engine and a description without credentials', () => {
    expect(databaseTarget('postgresql://app:secret@db.internal:6432/latchkey?sslmode=require')).toEqual({
      dialect: 'postgres',
      description: 'postgres db.internal:6432/latchkey',
    })
    expect(databaseTarget('/srv/server.db')).toEqual({ dialect: 'sqlite', description: 'sqlite /srv/server.db' })
    expect(databaseTarget(undefined)).toEqual({ dialect: 'sqlite', description: 'sqlite :memory:' })
  })
})

describe('errors', () => {
  test('error: a duplicate key is a UniqueViolationError, in a transaction or not, and the transaction wrote nothing', async () => {
    const { database } = await open(await freshDatabaseUrl())
    await database.db.insertInto('counters').values({ name: 'a', value: 1, updated_at: 1 }).execute()
    await expect(database.db.insertInto('counters').values({ name: 'a', value: 2, updated_at: 2 }).execute()).rejects.toBeInstanceOf(UniqueViolationError)
    await expect(
      database.transaction(async (trx) => {
        await trx.insertInto('counters').values({ name: 'b', value: 1, updated_at: 1 }).execute()
        await trx.insertInto('counters').values({ name: 'a', value: 3, updated_at: 3 }).execute()
      }),
    ).rejects.toBeInstanceOf(UniqueViolationError)
    expect(await database.db.selectFrom('counters').select(['name', 'value']).execute()).toEqual([{ name: 'a', value: 1 }])
  })
})

describe('transaction', () => {
  test('behavior: work that read a row another writer then changed runs again, and commits once on fresh data', async () => {
    const url = await freshDatabaseUrl()
    const { database, retries } = await open(url)
    await database.db.insertInto('counters').values({ name: 'a', value: 1, updated_at: 1 }).execute()
    let runs = 0
    const result = await database.transaction(async (trx) => {
      runs++
      const { value } = await trx.selectFrom('counters').select('value').where('name', '=', 'a').executeTakeFirstOrThrow()
      // Another instance commits between this transaction's read and its write, once.
      if (runs === 1) await writeElsewhere(url, `update counters set value = value + 10 where name = 'a'`)
      await trx
        .updateTable('counters')
        .set({ value: value + 1 })
        .where('name', '=', 'a')
        .execute()
      return value + 1
    })
    expect({ runs, retries, result }).toEqual({ runs: 2, retries: [1], result: 12 })
    expect(await database.db.selectFrom('counters').select('value').where('name', '=', 'a').executeTakeFirst()).toEqual({ value: 12 })
  })

  test('error: conflicts on every attempt end in RetriesExhaustedError after maxAttempts, having written nothing', async () => {
    const url = await freshDatabaseUrl()
    const { database, retries } = await open(url, [counters], { maxAttempts: 3 })
    await database.db.insertInto('counters').values({ name: 'a', value: 1, updated_at: 1 }).execute()
    let runs = 0
    const failure = await database
      .transaction(async (trx) => {
        runs++
        await trx.selectFrom('counters').select('value').where('name', '=', 'a').executeTakeFirstOrThrow()
        await writeElsewhere(url, `update counters set updated_at = updated_at + 1 where name = 'a'`)
        await trx.updateTable('counters').set({ value: 100 }).where('name', '=', 'a').execute()
      })
      .catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(RetriesExhaustedError)
    expect((failure as RetriesExhaustedError).attempts).toBe(3)
    expect((failure as RetriesExhaustedError).cause).toBeInstanceOf(SerializationFailureError)
    expect({ runs, retries }).toEqual({ runs: 3, retries: [1, 2] })
    expect(await database.db.selectFrom('counters').select(['value', 'updated_at']).execute()).toEqual([{ value: 1, updated_at: 4 }])
  })

  test('behavior: a table another instance migrated under a running one is read in its new shape, in a transaction or not', async () => {
    const url = await freshDatabaseUrl()
    // One connection, so the statement read before the change is the one PostgreSQL keeps prepared.
    const { database, retries } = await open(url, [counters], { poolSize: 1 })
    await database.db.insertInto('counters').values({ name: 'a', value: 1, updated_at: 1 }).execute()
    const read = () => database.db.selectFrom('counters').selectAll().execute()
    expect(await read()).toEqual([{ name: 'a', value: 1, updated_at: 1 }])
    await writeElsewhere(url, `alter table counters add column note text not null default 'x'`)
    expect(await read()).toEqual([{ name: 'a', value: 1, updated_at: 1, note: 'x' }])
    await writeElsewhere(url, `alter table counters add column other text not null default 'y'`)
    let runs = 0
    const inside = await database.transaction(async (trx) => {
      runs++
      return await trx.selectFrom('counters').selectAll().execute()
    })
    expect(inside).toEqual([{ name: 'a', value: 1, updated_at: 1, note: 'x', other: 'y' }])
    // PostgreSQL refused the stale prepared statement and aborted the transaction, which ran again; SQLite prepares anew each time.
    expect({ runs, retries }).toEqual(testEngine === 'postgres' ? { runs: 2, retries: [1] } : { runs: 1, retries: [] })
  })

  test('behavior: an error of the work itself rolls back and is not retried', async () => {
    const { database, retries } = await open(await freshDatabaseUrl())
    await expect(
      database.transaction(async (trx) => {
        await trx.insertInto('counters').values({ name: 'a', value: 1, updated_at: 1 }).execute()
        throw new Error('changed my mind')
      }),
    ).rejects.toThrowError('changed my mind')
    expect(retries).toEqual([])
    expect(await database.db.selectFrom('counters').selectAll().execute()).toEqual([])
    await database.ping()
  })

  if (testEngine === 'postgres')
    test('error: a connection the server ends while a transaction holds it fails that transaction, not the process; the next one commits', async () => {
      const url = await freshDatabaseUrl()
      let reported!: (error: Error) => void
      const dropped = new Promise<Error>((resolve) => (reported = resolve))
      const { database } = await open(url, [counters], { poolSize: 1, onIdleError: (error) => reported(error) })
      const failure = await database
        .transaction(async (trx) => {
          await trx.insertInto('counters').values({ name: 'a', value: 1, updated_at: 1 }).execute()
          const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)
          // A restart or failover, while the transaction waits on work of its own.
          await writeElsewhere(url, `select pg_terminate_backend(${rows[0]!.pid})`)
          await dropped
          await trx.insertInto('counters').values({ name: 'b', value: 2, updated_at: 1 }).execute()
        })
        .catch((error: unknown) => error)
      expect(failure).toBeInstanceOf(Error)
      expect((await dropped).message).toMatch(/terminating connection/)
      // The pool dropped the dead connection: the same single-connection pool serves the next transaction.
      await database.transaction(async (trx) => {
        await trx.insertInto('counters').values({ name: 'c', value: 3, updated_at: 1 }).execute()
      })
      expect(await database.db.selectFrom('counters').select('name').execute()).toEqual([{ name: 'c' }])
    })
})

describe('immediate statements (SQLite)', () => {
  const insert = (name: string) => CompiledQuery.raw('insert into counters (name, value, updated_at) values (?, 1, 1)', [name])
  const names = async (database: Database<Schema>) => (await database.db.selectFrom('counters').select('name').orderBy('name').execute()).map((row) => row.name)

  test('default: none on PostgreSQL; on SQLite a statement runs at once and a transaction commits', async () => {
    const { database } = await open(await freshDatabaseUrl())
    if (testEngine === 'postgres') {
      expect(database.immediate).toBeUndefined()
      return
    }
    expect(database.immediate!.run(insert('a'))).toMatchObject({ numAffectedRows: 1n })
    expect(database.immediate!.run(CompiledQuery.raw('select name from counters', []))).toEqual({ rows: [{ name: 'a' }] })
    expect(database.immediate!.transaction((run) => run(insert('b')).numAffectedRows)).toEqual({ value: 1n })
    expect(await names(database)).toEqual(['a', 'b'])
  })

  // SQLite's alone: PostgreSQL has no immediate statements (the test above checks).
  if (testEngine === 'sqlite') {
    /** A transaction that has written 'inside' and waits between its statements; `resume()` makes it throw, rolled back. */
    async function waitingTransaction(database: Database<Schema>) {
      let resume!: () => void
      const waiting = new Promise<void>((resolve) => {
        resume = resolve
      })
      let inserted!: () => void
      const insertedInside = new Promise<void>((resolve) => {
        inserted = resolve
      })
      const rolledBack = database.transaction(async (trx) => {
        await trx.executeQuery(insert('inside'))
        inserted()
        await waiting
        throw new Error('changed my mind')
      })
      await insertedInside
      return { resume, rolledBack }
    }

    test('behavior: while a transaction waits between its statements nothing runs at once, so nothing joins it or is rolled back with it', async () => {
      const { database } = await open(await freshDatabaseUrl())
      const { resume, rolledBack } = await waitingTransaction(database)
      expect(database.immediate!.run(insert('outside'))).toBeUndefined()
      expect(database.immediate!.transaction((run) => run(insert('outside')))).toBeUndefined()
      // Kysely's path waits for the transaction, then writes on its own.
      const outside = database.db.executeQuery(insert('outside'))
      resume()
      await expect(rolledBack).rejects.toThrowError('changed my mind')
      await outside
      expect(await names(database)).toEqual(['outside'])
      expect(database.immediate!.run(insert('after'))).toMatchObject({ numAffectedRows: 1n })
    })

    test('error: a failing statement rolls the transaction back and arrives typed; a busy database answers undefined, having written nothing', async () => {
      const url = await freshDatabaseUrl()
      const { database } = await open(url, [counters], { busyTimeoutMs: 20 })
      database.immediate!.run(insert('a'))
      expect(() => database.immediate!.run(insert('a'))).toThrowError(UniqueViolationError)
      expect(() =>
        database.immediate!.transaction((run) => {
          run(insert('b'))
          run(insert('a'))
        }),
      ).toThrowError(UniqueViolationError)
      expect(await names(database)).toEqual(['a'])
      // Another process holds the write lock past the busy timeout.
      const other = new BetterSqlite3(url)
      try {
        other.exec('begin immediate')
        expect(database.immediate!.transaction((run) => run(insert('c')))).toBeUndefined()
        other.exec('rollback')
      } finally {
        other.close()
      }
      expect(await names(database)).toEqual(['a'])
    })

    test('behavior: the works of one turn commit together, each atomic on its own: one that throws is undone alone', async () => {
      const { database } = await open(await freshDatabaseUrl())
      const works = Array.from({ length: 40 }, (_, index) =>
        database.immediate!.groupCommit((run) => {
          run(insert(`n${String(index).padStart(2, '0')}`))
          // Work 7 writes, then fails: its own row goes; work 9 repeats work 3's name, a unique violation.
          if (index === 7) throw new Error('work 7 changed its mind')
          if (index === 9) run(insert('n03'))
          return index
        }),
      )
      // Nothing is run, or seen by a reader, before the turn's callbacks are done.
      expect(await names(database)).toEqual([])
      const outcomes = await Promise.allSettled(works)
      expect(outcomes[7]).toMatchObject({ status: 'rejected', reason: { message: 'work 7 changed its mind' } })
      expect(outcomes[9]).toMatchObject({ status: 'rejected', reason: expect.any(UniqueViolationError) })
      expect(outcomes.filter((outcome) => outcome.status === 'fulfilled').map((outcome) => outcome.value)).toEqual(
        Array.from({ length: 40 }, (_, index) => index)
          .filter((index) => index !== 7 && index !== 9)
          .map((value) => ({ value })),
      )
      expect(await names(database)).toEqual(
        Array.from({ length: 40 }, (_, index) => `n${String(index).padStart(2, '0')}`).filter((name) => name !== 'n07' && name !== 'n09'),
      )
      // Alone in its turn, a work that throws is undone with its transaction; a unique violation arrives typed.
      await expect(
        database.immediate!.groupCommit((run) => {
          run(insert('lone'))
          throw new Error('the lone work changed its mind')
        }),
      ).rejects.toThrowError('the lone work changed its mind')
      await expect(database.immediate!.groupCommit((run) => run(insert('n00')))).rejects.toThrowError(UniqueViolationError)
      expect(await names(database)).not.toContain('lone')
    })

    test('error: when the commit fails, every work of the group rejects and none is written', async () => {
      const url = await freshDatabaseUrl()
      const children: Migration = {
        name: '0002_children',
        up: async (db) => {
          await sql`create table children (name text primary key, parent text not null references counters (name) deferrable initially deferred)`.execute(db)
        },
      }
      const { database } = await open(url, [counters, children])
      await sql`pragma foreign_keys = on`.execute(database.db)
      const fine = database.immediate!.groupCommit((run) => run(insert('fine')))
      // Checked at the commit: a child whose parent does not exist.
      const orphan = database.immediate!.groupCommit((run) => run(CompiledQuery.raw('insert into children (name, parent) values (?, ?)', ['c', 'missing'])))
      await expect(fine).rejects.toThrowError(/FOREIGN KEY/)
      await expect(orphan).rejects.toThrowError(/FOREIGN KEY/)
      expect(await names(database)).toEqual([])
      expect(await database.immediate!.groupCommit((run) => run(insert('after')).numAffectedRows)).toEqual({ value: 1n })
    })

    test('behavior: a group that meets an open transaction or a busy file runs nothing and answers undefined', async () => {
      const url = await freshDatabaseUrl()
      const { database } = await open(url, [counters], { busyTimeoutMs: 20 })
      const { resume, rolledBack } = await waitingTransaction(database)
      expect(await database.immediate!.groupCommit((run) => run(insert('outside')))).toBeUndefined()
      resume()
      await expect(rolledBack).rejects.toThrowError('changed my mind')
      // Another process holds the write lock past the busy timeout.
      const other = new BetterSqlite3(url)
      try {
        other.exec('begin immediate')
        expect(await database.immediate!.groupCommit((run) => run(insert('busy')))).toBeUndefined()
        other.exec('rollback')
      } finally {
        other.close()
      }
      expect(await names(database)).toEqual([])
    })
  }
})
