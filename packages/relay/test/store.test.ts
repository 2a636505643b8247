import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, test } from 'vitest'
import { memoryStore, type RelayStore, type StoredMessage, sqliteStore } from '../src/index.js'

type NewMessage = Omit<StoredMessage, 'seq'>

import { freshRedisStore } from './redis.js'

// One suite, every store: what the relay relies on must hold for each back-end.
const stores: [string, () => Promise<RelayStore>][] = [
  ['memory', async () => memoryStore()],
  ['sqlite', async () => sqliteStore(join(await mkdtemp(join(tmpdir(), 'latchkey-relay-')), 'relay.db'))],
  ['redis', freshRedisStore],
]

const message = (id: string, topic: string, expiresAt: number, publisher = 'did:key:a'): NewMessage => ({
  id,
  topic,
  message: `m-${id}`,
  tag: 1,
  publishedAt: 1,
  expiresAt,
  publisher,
})

for (const [name, open] of stores)
  describe(`${name} store`, () => {
    test('default: keeps messages per topic in publish order', async () => {
      const store = await open()
      await store.add(message('b', 't1', 100))
      await store.add(message('a', 't1', 100))
      await store.add(message('c', 't2', 100))
      expect((await store.list('t1', 0)).map((m) => m.id)).toEqual(['b', 'a'])
      expect(await store.list('t2', 0)).toEqual([{ ...message('c', 't2', 100), seq: expect.any(Number) }])
      await store.close()
    })

    test('behavior: each message gets a larger seq than the one before, on any topic', async () => {
      const store = await open()
      const seqs = await Promise.all([store.add(message('a', 't1', 100)), store.add(message('b', 't2', 100)), store.add(message('c', 't1', 100))])
      const [a, b, c] = seqs.map((stored) => stored!.seq)
      expect(a! < b! && b! < c!).toBe(true)
      expect((await store.list('t1', 0)).map((m) => m.seq)).toEqual([a, c])
      await store.close()
    })

    test('behavior: the same message id is stored once', async () => {
      const store = await open()
      expect(await store.add(message('a', 't', 100))).toMatchObject(message('a', 't', 100))
      expect(await store.add(message('a', 't', 100))).toBeUndefined()
      expect(await store.list('t', 0)).toHaveLength(1)
      await store.close()
    })

    test('behavior: a duplicate is answered only once the first copy is stored', async () => {
      const store = await open()
      const answered: string[] = []
      const first = store.add(message('a', 't', 100)).then((added) => answered.push(`first ${added !== undefined}`))
      const second = store.add(message('a', 't', 100)).then((added) => answered.push(`second ${added !== undefined}`))
      await Promise.all([first, second])
      expect(answered).toEqual(['first true', 'second false'])
      await store.close()
    })

    test('behavior: expired messages are not listed and prune drops them with their acks', async () => {
      const store = await open()
      await store.add(message('old', 't', 10))
      await store.add(message('new', 't', 1000))
      await store.ack('c', 'old')
      expect((await store.list('t', 10)).map((m) => m.id)).toEqual(['new'])
      await store.prune(10)
      expect(await store.isAcked('c', 'old')).toBe(false)
      expect(await store.add(message('old', 't', 2000))).toBeDefined()
      await store.close()
    })

    test('behavior: acks are per client', async () => {
      const store = await open()
      await store.add(message('a', 't', 100))
      await store.ack('alice', 'a')
      await store.ack('alice', 'a')
      expect([await store.isAcked('alice', 'a'), await store.isAcked('bob', 'a')]).toEqual([true, false])
      await store.close()
    })

    test('behavior: an ack for a message that is not stored is dropped', async () => {
      const store = await open()
      await store.ack('alice', 'gone')
      await store.add(message('gone', 't', 100))
      expect(await store.isAcked('alice', 'gone')).toBe(false)
      await store.close()
    })

    test('behavior: an ack given the message the store answered is kept like one by id; one of another store, or dropped since, counts by id', async () => {
      const [store, other] = [await open(), await open()]
      const held = (await store.add(message('a', 't', 100)))!
      const foreign = (await other.add(message('a', 't', 100)))!
      await store.ack('alice', 'a', 100, 0, held)
      await store.ack('bob', 'a', 100, 0, foreign)
      expect([await store.isAcked('alice', 'a'), await store.isAcked('bob', 'a'), await other.isAcked('bob', 'a')]).toEqual([true, true, false])
      // Pruned and published again: an ack given the old copy goes to the message held now, as by id.
      await store.prune(100)
      const again = (await store.add(message('a', 't', 200)))!
      await store.ack('carol', 'a', 100, 0, held)
      expect([await store.isAcked('carol', 'a'), await store.isAcked('alice', 'a')]).toEqual([true, false])
      expect((await store.list('t', 0)).map((m) => m.seq)).toEqual([again.seq])
      await store.close()
      await other.close()
    })
  })

test('behavior: the sqlite store keeps messages and acks across a restart', async () => {
  const path = join(await mkdtemp(join(tmpdir(), 'latchkey-relay-')), 'relay.db')
  const first = sqliteStore(path)
  await first.add(message('a', 't', 100))
  await first.ack('alice', 'a')
  await first.close()
  const second = sqliteStore(path)
  expect(await second.list('t', 0)).toEqual([{ ...message('a', 't', 100), seq: 1 }])
  expect(await second.isAcked('alice', 'a')).toBe(true)
  await second.close()
})

test('behavior: the sqlite store keeps any message text exactly, in rows SQLite reads as text', async () => {
  const path = join(await mkdtemp(join(tmpdir(), 'latchkey-relay-')), 'relay.db')
  const first = sqliteStore(path)
  const texts = ['plain base64+/=', 'quote " backslash \\ newline \n tab \t nul \u0000', 'é€😀 and a lone \ud800', 'x'.repeat(200_000)]
  // One commit, two expiry hours: two rows, each with lines of both kinds of message.
  const added = texts.flatMap((text, index) => [
    { ...message(`a${index}`, 't', 100), message: text },
    { ...message(`b${index}`, 't', 3_600_000 * 5), message: text },
  ])
  await Promise.all(added.map((m) => first.add(m)))
  await first.close()
  const raw = new Database(path, { readonly: true })
  expect(raw.prepare('select typeof(entries) as type from messages').all()).toEqual([{ type: 'text' }, { type: 'text' }])
  raw.close()
  const second = sqliteStore(path)
  const kept = new Map((await second.list('t', 0)).map((m) => [m.id, m.message]))
  expect(kept).toEqual(new Map(added.map((m) => [m.id, m.message])))
  await second.close()
})

test('behavior: a file in the first layout (indexed tables) is migrated with its messages and acks', async () => {
  const path = join(await mkdtemp(join(tmpdir(), 'latchkey-relay-')), 'relay.db')
  const old = new Database(path)
  old.exec(`
    create table messages (seq integer primary key autoincrement, id text not null unique, topic text not null, message text not null,
      tag integer not null, published_at integer not null, expires_at integer not null, publisher text not null);
    create index messages_topic on messages (topic, seq);
    create table acks (client_id text not null, message_id text not null, primary key (client_id, message_id)) without rowid;
    insert into messages (id, topic, message, tag, published_at, expires_at, publisher) values ('b', 't', 'm-b', 1, 1, 100, 'did:key:a'), ('a', 't', 'm-a', 1, 1, 100, 'did:key:a');
    insert into acks values ('alice', 'a');
  `)
  old.close()
  const store = sqliteStore(path)
  expect((await store.list('t', 0)).map((m) => m.id)).toEqual(['b', 'a'])
  expect([await store.isAcked('alice', 'a'), await store.isAcked('alice', 'b')]).toEqual([true, false])
  expect(await store.add(message('c', 't', 100))).toMatchObject({ id: 'c', seq: 3 })
  await store.close()
  const reopened = sqliteStore(path)
  expect((await reopened.list('t', 0)).map((m) => m.id)).toEqual(['b', 'a', 'c'])
  await reopened.close()
})

test('behavior: a file in the second layout (a row per ack) is migrated with its messages and acks', async () => {
  const path = join(await mkdtemp(join(tmpdir(), 'latchkey-relay-')), 'relay.db')
  const old = new Database(path)
  old.exec(`
    create table messages (seq integer primary key autoincrement, id text not null, topic text not null, message text not null,
      tag integer not null, published_at integer not null, expires_at integer not null, publisher text not null);
    create table acks (message_id text not null, client_id text not null, expires_at integer not null);
    insert into messages (id, topic, message, tag, published_at, expires_at, publisher) values ('a', 't', 'm-a', 1, 1, 100, 'did:key:a'), ('b', 't', 'm-b', 1, 1, 100, 'did:key:a');
    insert into acks values ('a', 'alice', 100), ('b', 'alice', 100), ('b', 'bob', 100);
    pragma user_version = 2;
  `)
  old.close()
  const store = sqliteStore(path)
  expect((await store.list('t', 0)).map((m) => m.id)).toEqual(['a', 'b'])
  expect([await store.isAcked('alice', 'a'), await store.isAcked('alice', 'b'), await store.isAcked('bob', 'a'), await store.isAcked('bob', 'b')]).toEqual([
    true,
    true,
    false,
    true,
  ])
  await store.close()
})

test('behavior: a file in the third layout (a row per message) is migrated with its messages and acks', async () => {
  const path = join(await mkdtemp(join(tmpdir(), 'latchkey-relay-')), 'relay.db')
  const old = new Database(path)
  old.exec(`
    create table messages (seq integer primary key autoincrement, id text not null, topic text not null, message text not null,
      tag integer not null, published_at integer not null, expires_at integer not null, publisher text not null);
    create table acks (seq integer primary key, expires_at integer not null, entries text not null);
    insert into messages (id, topic, message, tag, published_at, expires_at, publisher) values
      ('a', 't', 'm-a', 1, 1, 100, 'did:key:a'), ('b', 'u', 'line one' || char(10) || 'two "quoted"', 1108, 1, 200, 'did:key:a');
    insert into acks (expires_at, entries) values (200, 'a alice 100' || char(10) || 'b bob 200');
    pragma user_version = 3;
  `)
  old.close()
  const store = sqliteStore(path)
  expect(await store.list('u', 0)).toEqual([{ ...message('b', 'u', 200), message: 'line one\ntwo "quoted"', tag: 1108, seq: 2 }])
  expect([await store.isAcked('alice', 'a'), await store.isAcked('bob', 'b'), await store.isAcked('bob', 'a')]).toEqual([true, true, false])
  await store.close()
  const migrated = new Database(path)
  expect(migrated.pragma('user_version', { simple: true })).toBe(4)
  // One row holds both messages: they expire within the same hour.
  expect(migrated.prepare('select count(*) as rows from messages').get()).toEqual({ rows: 1 })
  migrated.close()
})

test('behavior: the sqlite store forgets, across a restart, acks of messages pruned and published again', async () => {
  const path = join(await mkdtemp(join(tmpdir(), 'latchkey-relay-')), 'relay.db')
  const first = sqliteStore(path)
  await first.add(message('short', 't', 10))
  await first.add(message('long', 't', 1000))
  // Both acks share a row, which stays until 'long' expires.
  await Promise.all([first.ack('alice', 'short'), first.ack('alice', 'long')])
  await first.prune(10)
  await first.add(message('short', 't', 2000))
  await first.close()
  const second = sqliteStore(path)
  expect((await second.list('t', 10)).map((m) => m.id)).toEqual(['long', 'short'])
  expect([await second.isAcked('alice', 'long'), await second.isAcked('alice', 'short')]).toEqual([true, false])
  await second.close()
})
