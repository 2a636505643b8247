import Database from 'better-sqlite3'
import { memoryIndex, type NewMessage, type RelayStore } from './store.js'

/** How long a write waits for others to share its commit, and how many may share one. */
const COMMIT_WINDOW_MS = 2
const MAX_BATCH = 1000
/** Acks of messages that expire within the same span share a row, kept until the last of them expires. */
const ACK_ROW_SPAN_MS = 3_600_000
/** Layout of the file; older files are migrated when opened. */
const SCHEMA_VERSION = 3

/**
 * A store in a SQLite file (better-sqlite3): messages and acknowledgements survive a relay
 * restart, even a `kill -9`.
 *
 * The file is an append-only log: rows carry no secondary index, so a commit writes a few pages at
 * the end of the file instead of one page per index per message (random topic and message ids
 * would scatter them). What the relay looks up (messages by topic, ids, acks) is held in memory
 * and rebuilt from the file when it opens; expired rows are deleted by `prune`. Acks, as many as
 * messages, are written a row per commit and expiry hour (`message-id client-id expiry` lines), not
 * a row each: a row outlives the earliest of its acks' messages by at most that hour. A publish is
 * answered only after the commit that holds it.
 *
 * @example
 * const relay = createRelay({ port: 5555, store: sqliteStore('.latchkey/relay.db') })
 */
export function sqliteStore(path: string): RelayStore {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  // Commits reach the WAL file with write() at once and are synced at checkpoints: a killed relay
  // (even kill -9) loses nothing; only a power cut could take the last moments' messages.
  db.pragma('synchronous = NORMAL')
  migrate(db)

  const insertMessage = db.prepare('insert into messages (id, topic, message, tag, published_at, expires_at, publisher) values (?, ?, ?, ?, ?, ?, ?)')
  const insertAcks = db.prepare('insert into acks (expires_at, entries) values (?, ?)')
  const deleteMessages = db.prepare('delete from messages where expires_at <= ?')
  const deleteAcks = db.prepare('delete from acks where expires_at <= ?')
  const selectOne = db.prepare('select 1')

  const index = memoryIndex()
  type Row = { id: string; topic: string; message: string; tag: number; published_at: number; expires_at: number; publisher: string }
  for (const row of db.prepare('select * from messages order by seq').iterate() as IterableIterator<Row>)
    index.add({
      id: row.id,
      topic: row.topic,
      message: row.message,
      tag: row.tag,
      publishedAt: row.published_at,
      expiresAt: row.expires_at,
      publisher: row.publisher,
    })
  for (const row of db.prepare('select entries from acks').iterate() as IterableIterator<{ entries: string }>)
    for (const entry of row.entries.split('\n')) {
      const [messageId = '', clientId = '', expiresAt] = entry.split(' ')
      // An ack whose message is gone (its row lives until the last of its messages expires) is
      // dropped, also when the same message was published again since: that copy expires later.
      if (index.expiryOf(messageId) === Number(expiresAt)) index.ack(clientId, messageId)
    }

  // Writes that arrive within COMMIT_WINDOW_MS commit together in one transaction: a commit per
  // message is what limits SQLite, not the inserts. Every writer of a batch waits on the same
  // promise, which settles with the commit, so a relay that answers a publish has stored it.
  let messages: NewMessage[] = []
  let acks: [messageId: string, clientId: string, expiresAt: number][] = []
  let batch: { promise: Promise<void>; resolve(): void; reject(error: unknown): void } | undefined
  let timer: NodeJS.Timeout | undefined
  const commit = db.transaction((pendingMessages: readonly NewMessage[], pendingAcks: typeof acks) => {
    for (const m of pendingMessages) insertMessage.run(m.id, m.topic, m.message, m.tag, m.publishedAt, m.expiresAt, m.publisher)
    const rows = new Map<number, { expiresAt: number; entries: string[] }>()
    for (const [messageId, clientId, expiresAt] of pendingAcks) {
      const span = Math.floor(expiresAt / ACK_ROW_SPAN_MS)
      const row = rows.get(span) ?? { expiresAt, entries: [] }
      row.expiresAt = Math.max(row.expiresAt, expiresAt)
      row.entries.push(`${messageId} ${clientId} ${expiresAt}`)
      rows.set(span, row)
    }
    for (const row of rows.values()) insertAcks.run(row.expiresAt, row.entries.join('\n'))
  })
  const flush = () => {
    clearTimeout(timer)
    timer = undefined
    const [pendingMessages, pendingAcks, settle] = [messages, acks, batch]
    messages = []
    acks = []
    batch = undefined
    if (!settle) return
    try {
      commit(pendingMessages, pendingAcks)
      settle.resolve()
    } catch (error) {
      // Nothing of the batch is stored: its messages may be published again.
      for (const m of pendingMessages) index.remove(m)
      settle.reject(error)
    }
  }
  /** The commit that will hold what was just queued. */
  const committed = (): Promise<void> => {
    if (!batch) {
      let resolve!: () => void
      let reject!: (error: unknown) => void
      const promise = new Promise<void>((yes, no) => ((resolve = yes), (reject = no)))
      batch = { promise, resolve, reject }
      timer = setTimeout(flush, COMMIT_WINDOW_MS)
    }
    const { promise } = batch
    if (messages.length + acks.length >= MAX_BATCH) flush()
    return promise
  }

  const done = Promise.resolve()
  return {
    add(m) {
      const stored = index.add(m)
      // The copy held may still wait for its commit; answer once it is stored.
      if (!stored) return batch ? batch.promise.then(() => undefined) : Promise.resolve(undefined)
      messages.push(m)
      return committed().then(() => stored)
    },
    async list(topic, now) {
      return index.list(topic, now)
    },
    // Every ack of a commit is answered with that commit's promise, and an ack with nothing to
    // write with the pending commit's, which holds any earlier ack of the same client: the relay
    // follows one promise per commit, not one per ack.
    ack(clientId, messageId) {
      const expiresAt = index.expiryOf(messageId)
      if (expiresAt === undefined || index.isAcked(clientId, messageId)) return batch?.promise ?? done
      index.ack(clientId, messageId)
      acks.push([messageId, clientId, expiresAt])
      return committed()
    },
    async isAcked(clientId, messageId) {
      return index.isAcked(clientId, messageId)
    },
    async prune(now) {
      index.prune(now)
      flush()
      // Unindexed, so a scan: it runs once a minute and touches only expired rows' pages.
      db.transaction(() => {
        deleteAcks.run(now)
        deleteMessages.run(now)
      })()
    },
    async ping() {
      selectOne.get()
    },
    async close() {
      flush()
      index.clear()
      db.close()
    },
  }
}

/** Brings a file of any earlier layout to SCHEMA_VERSION, keeping its messages and acks. */
function migrate(db: Database.Database) {
  const version = db.pragma('user_version', { simple: true }) as number
  if (version === SCHEMA_VERSION) return
  db.transaction(() => {
    const existing = new Set((db.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[]).map((row) => row.name))
    if (existing.has('messages')) db.exec('alter table messages rename to messages_old')
    if (existing.has('acks')) db.exec('alter table acks rename to acks_old')
    db.exec(`
      create table messages (
        seq integer primary key autoincrement,
        id text not null,
        topic text not null,
        message text not null,
        tag integer not null,
        published_at integer not null,
        expires_at integer not null,
        publisher text not null
      );
      create table acks (
        seq integer primary key,
        expires_at integer not null,
        entries text not null
      );
    `)
    // Version 1 indexed everything (unique ids, topics, expiry; acks keyed by client and message);
    // version 2 had no indexes and a row per ack. Both have the message columns of today and acks
    // with message_id and client_id.
    if (existing.has('messages')) {
      db.exec(`insert into messages (id, topic, message, tag, published_at, expires_at, publisher)
        select id, topic, message, tag, published_at, expires_at, publisher from messages_old order by seq`)
      db.exec('drop table messages_old')
    }
    if (existing.has('acks')) {
      db.exec(`insert into acks (expires_at, entries)
        select max(m.expires_at), group_concat(a.message_id || ' ' || a.client_id || ' ' || m.expires_at, char(10))
        from acks_old a join messages m on m.id = a.message_id group by m.expires_at / ${ACK_ROW_SPAN_MS}`)
      db.exec('drop table acks_old')
    }
    db.pragma(`user_version = ${SCHEMA_VERSION}`)
  })()
}
