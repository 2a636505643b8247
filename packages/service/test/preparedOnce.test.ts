import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { afterAll, expect, test, vi } from 'vitest'
import { preparedOnce } from '../src/database/connection.js'

// SQLite's statements kept by text (src/database/connection.ts): what is kept, what is not, and a
// kept statement after another connection changed the table under it.

/** preparedOnce as better-sqlite3's own statements (Kysely types it as its narrower SqliteDatabase). */
const kept = (file: BetterSqlite3.Database) => preparedOnce(file) as unknown as { prepare(text: string): BetterSqlite3.Statement; close(): void }

const dir = await mkdtemp(join(tmpdir(), 'latchkey-prepared-once-'))
afterAll(() => rm(dir, { recursive: true, force: true }))

test('default: a data statement is prepared once, then the same statement is answered', () => {
  const file = new BetterSqlite3(':memory:')
  const prepare = vi.spyOn(file, 'prepare')
  const database = kept(file)
  database.prepare('create table t (a integer)').run()
  const first = database.prepare('insert into t (a) values (?)')
  first.run(1)
  const second = database.prepare('insert into t (a) values (?)')
  second.run(2)
  expect(second).toBe(first)
  expect(database.prepare('select a from t order by a').all()).toEqual([{ a: 1 }, { a: 2 }])
  expect(prepare.mock.calls.map(([text]) => text)).toEqual(['create table t (a integer)', 'insert into t (a) values (?)', 'select a from t order by a'])
  database.close()
})

test('behavior: transaction control and schema statements are prepared each time, never kept', () => {
  const file = new BetterSqlite3(':memory:')
  const prepare = vi.spyOn(file, 'prepare')
  const database = kept(file)
  database.prepare('create table t (a integer)').run()
  for (const text of ['create table u (a integer)', 'begin', 'commit', 'drop table t']) expect(database.prepare(text)).not.toBe(database.prepare(text))
  expect(prepare).toHaveBeenCalledTimes(9)
  database.close()
})

test('behavior: a statement still iterating is not shared: the same text is prepared afresh', () => {
  const database = kept(new BetterSqlite3(':memory:'))
  database.prepare('create table t (a integer)').run()
  database.prepare('insert into t (a) values (1), (2)').run()
  const streaming = database.prepare('select a from t order by a')
  const rows = streaming.iterate()
  expect(rows.next().value).toEqual({ a: 1 })
  const meanwhile = database.prepare('select a from t order by a')
  expect(meanwhile).not.toBe(streaming)
  expect(meanwhile.all()).toEqual([{ a: 1 }, { a: 2 }])
  expect(rows.next().value).toEqual({ a: 2 })
  rows.return?.()
  expect(database.prepare('select a from t order by a')).toBe(streaming)
  database.close()
})

test('behavior: a kept statement answers the table as another connection migrated it', () => {
  const path = join(dir, 'migrated.db')
  const database = kept(new BetterSqlite3(path))
  database.prepare('create table t (a integer)').run()
  database.prepare('insert into t (a) values (1)').run()
  expect(database.prepare('select * from t').all()).toEqual([{ a: 1 }])
  const other = new BetterSqlite3(path)
  other.exec('alter table t add column b integer default 7')
  other.close()
  expect(database.prepare('select * from t').all()).toEqual([{ a: 1, b: 7 }])
  database.close()
})
