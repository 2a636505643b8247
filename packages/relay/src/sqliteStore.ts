import Database from 'better-sqlite3'
import type { RelayStore, StoredMessage } from './store.js'

/**
 * A store in a SQLite file (better-sqlite3): messages and acknowledgements survive a relay
 * restart. Writes are single statements or transactions, so a crash never leaves half a message.
 *
 * @example
 * const relay = createRelay({ port: 5555, store: sqliteStore('.latchkey/relay.db') })
 */
export function sqliteStore(path: string): RelayStore {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.exec(`
    create table if not exists messages (
      seq integer primary key autoincrement,
      id text not null unique,
      topic text not null,
      message text not null,
      tag integer not null,
      published_at integer not null,
      expires_at integer not null,
      publisher text not null
    );
    create index if not exists messages_topic on messages (topic, seq);
    create index if not exists messages_expiry on messages (expires_at);
    create table if not exists acks (
      client_id text not null,
      message_id text not null,
      primary key (client_id, message_id)
    ) without rowid;
  `)
  const insert = db.prepare(
    'insert or ignore into messages (id, topic, message, tag, published_at, expires_at, publisher) values (?, ?, ?, ?, ?, ?, ?)',
  )
  const select = db.prepare('select * from messages where topic = ? and expires_at > ? order by seq')
  const insertAck = db.prepare('insert or ignore into acks (client_id, message_id) values (?, ?)')
  const selectAck = db.prepare('select 1 from acks where client_id = ? and message_id = ?')
  const prune = db.transaction((now: number) => {
    db.prepare('delete from acks where message_id in (select id from messages where expires_at <= ?)').run(now)
    db.prepare('delete from messages where expires_at <= ?').run(now)
  })
  type Row = { id: string; topic: string; message: string; tag: number; published_at: number; expires_at: number; publisher: string }
  return {
    async add(m) {
      return insert.run(m.id, m.topic, m.message, m.tag, m.publishedAt, m.expiresAt, m.publisher).changes === 1
    },
    async list(topic, now) {
      return (select.all(topic, now) as Row[]).map(
        (row): StoredMessage => ({
          id: row.id,
          topic: row.topic,
          message: row.message,
          tag: row.tag,
          publishedAt: row.published_at,
          expiresAt: row.expires_at,
          publisher: row.publisher,
        }),
      )
    },
    async ack(clientId, messageId) {
      insertAck.run(clientId, messageId)
    },
    async isAcked(clientId, messageId) {
      return selectAck.get(clientId, messageId) !== undefined
    },
    async prune(now) {
      prune(now)
    },
    async close() {
      db.close()
    },
  }
}
