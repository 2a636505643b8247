import Database from 'better-sqlite3'
import { fieldsBytes, INTEGER_BYTES, messageJsonBytes, writeFields, writeInteger, writeMessageJson } from './bytes.js'
import { JSON_SAFE } from './schemas.js'
import { type LocalStoreOptions, memoryIndex, type NewMessage, type RelayStore } from './store.js'

/** How long a write waits for others to share its commit, and how many may share one. */
const COMMIT_WINDOW_MS = 2
const MAX_BATCH = 1000
/**
 * Messages, and acks, of one commit whose messages expire within the same span share a row, kept
 * until the last of them expires: a row outlives the earliest of its messages by at most that span.
 */
const ROW_SPAN_MS = 3_600_000
/** Layout of the file; older files are migrated when opened. */
const SCHEMA_VERSION = 4

/**
 * A store in a SQLite file (better-sqlite3): messages and acknowledgements survive a relay
 * restart, even a `kill -9`.
 *
 * The file is an append-only log: rows carry no secondary index, so a commit writes a few pages at
 * the end of the file instead of one page per index per message (random topic and message ids
 * would scatter them). What the relay looks up (messages by topic, ids, acks) is held in memory
 * and rebuilt from the file when it opens; expired rows are deleted by `prune`. Messages and acks
 * are written a row per commit and expiry hour, a line per item (messages `id topic tag
 * published-at expiry publisher "message"`, acks `message-id client-id expiry`), not a row each:
 * one insert per commit costs far less than one per message. A publish is answered only after
 * the commit that holds it.
 *
 * @example
 * const relay = createRelay({ port: 5555, store: sqliteStore('.latchkey/relay.db') })
 */
export function sqliteStore(path: string, options: LocalStoreOptions = {}): RelayStore {
  const db = new Database(path)
  // A commit's messages are one row of some hundred KB: with 64 KiB pages it takes a few pages
  // (WAL frames, one write each, and as many again at the checkpoint) instead of a hundred or so;
  // about a third less CPU per commit. Takes effect on a new file only (before WAL mode is set);
  // older files keep their page size.
  db.pragma('page_size = 65536')
  db.pragma('journal_mode = WAL')
  // Commits reach the WAL file with write() at once and are synced at checkpoints: a killed relay
  // (even kill -9) loses nothing; only a power cut could take the last moments' messages.
  db.pragma('synchronous = NORMAL')
  migrate(db)

  const insertMessages = db.prepare(INSERT_MESSAGES)
  const insertAcks = db.prepare(INSERT_ACKS)
  const deleteMessages = db.prepare('delete from messages where expires_at <= ?')
  const deleteAcks = db.prepare('delete from acks where expires_at <= ?')
  const selectOne = db.prepare('select 1')

  const index = memoryIndex(options.quotas)
  // A message pruned from memory stays in its row until the row's last message expires; published
  // again, it is in a later row too. The latest copy of an id is the one that counts.
  const read: NewMessage[] = []
  const latest = new Map<string, number>()
  for (const row of db.prepare('select entries from messages order by seq').iterate() as IterableIterator<{ entries: string }>)
    for (const line of row.entries.split('\n')) {
      const message = readMessageLine(line)
      latest.set(message.id, read.length)
      read.push(message)
    }
  for (const [position, message] of read.entries()) if (latest.get(message.id) === position) index.add(message, undefined, true)
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
  // Flat, three items an ack (message id, client id, expiry): no array per ack.
  let acks: (string | number)[] = []
  let batch: { promise: Promise<void>; resolve(): void; reject(error: unknown): void } | undefined
  let timer: NodeJS.Timeout | undefined
  const commit = db.transaction((pendingMessages: readonly NewMessage[], pendingAcks: typeof acks) => {
    const messageRows = new Rows()
    for (const m of pendingMessages) messageRows.message(m)
    messageRows.write(insertMessages)
    const ackRows = new Rows()
    for (let at = 0; at < pendingAcks.length; at += 3) ackRows.ack(pendingAcks[at] as string, pendingAcks[at + 1] as string, pendingAcks[at + 2] as number)
    ackRows.write(insertAcks)
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
    if (messages.length + acks.length / 3 >= MAX_BATCH) flush()
    return promise
  }

  const done = Promise.resolve()
  function addToBatch(m: NewMessage) {
    const added = index.add(m)
    // The copy held may still wait for its commit; answer once it is stored.
    if (!added) return { added, committed: batch?.promise ?? done }
    // The copy held, not the one handed in: that one is garbage at once instead of outliving a
    // collection while it waits for the commit.
    messages.push(added)
    return { added, committed: committed() }
  }
  return {
    add(m) {
      let taken: ReturnType<typeof addToBatch>
      try {
        taken = addToBatch(m)
      } catch (error) {
        // A message past a storage quota: refused, nothing held.
        return Promise.reject(error)
      }
      return taken.committed.then(() => taken.added)
    },
    addToBatch,
    checkQuota: (messages) => index.checkQuota(messages),
    async list(topic, now) {
      return index.list(topic, now)
    },
    // Every ack of a commit is answered with that commit's promise, and an ack with nothing to
    // write with the pending commit's, which holds any earlier ack of the same client: the relay
    // follows one promise per commit, not one per ack.
    ack(clientId, messageId, _expiresAt, _now, held) {
      const expiresAt = index.ack(clientId, messageId, held)
      if (expiresAt === undefined) return batch?.promise ?? done
      acks.push(messageId, clientId, expiresAt)
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

/** Rows are built as UTF-8 bytes and stored as text: SQLite takes the bytes as they are. */
const INSERT_MESSAGES = 'insert into messages (expires_at, entries) values (?, cast(? as text))'
const INSERT_ACKS = 'insert into acks (expires_at, entries) values (?, cast(? as text))'

/**
 * The lines of one commit, a row per expiry span: most commits' messages (and acks) expire within
 * one span, so a commit is one insert of each kind. A row is kept until its last line expires.
 * Lines are written as UTF-8 straight into the row's buffer, outside the JS heap, field by field: a
 * commit of a thousand messages would otherwise make a thousand line strings and their join, all
 * garbage once inserted.
 */
class Rows {
  #spans = new Map<number, { expiresAt: number; bytes: Buffer; at: number }>()
  /** A message's line: `id topic tag published-at expiry publisher "message"`. */
  message(m: NewMessage) {
    const { message } = m
    const jsonSafe = m.jsonSafe ?? JSON_SAFE.test(message)
    const fields = [m.id, m.topic, m.tag, m.publishedAt, m.expiresAt, m.publisher]
    const row = this.#line(m.expiresAt, fieldsBytes(fields) + messageJsonBytes(message, jsonSafe))
    row.at = writeMessageJson(row.bytes, writeFields(row.bytes, row.at, fields), message, jsonSafe)
  }
  /** An ack's line: `message-id client-id expiry`. */
  ack(messageId: string, clientId: string, expiresAt: number) {
    const row = this.#line(expiresAt, messageId.length + clientId.length + INTEGER_BYTES + 2)
    const at = writeFields(row.bytes, row.at, [messageId, clientId])
    row.at = writeInteger(row.bytes, at, expiresAt)
  }
  /** The row of the line's span, with room for `most` more bytes after the newline before it. */
  #line(expiresAt: number, most: number) {
    const span = Math.floor(expiresAt / ROW_SPAN_MS)
    let row = this.#spans.get(span)
    if (!row) this.#spans.set(span, (row = { expiresAt, bytes: Buffer.allocUnsafe(Math.max(64 * 1024, most)), at: 0 }))
    else {
      if (expiresAt > row.expiresAt) row.expiresAt = expiresAt
      if (row.at + 1 + most > row.bytes.length) {
        const grown = Buffer.allocUnsafe(Math.max(2 * row.bytes.length, row.at + 1 + most))
        row.bytes.copy(grown, 0, 0, row.at)
        row.bytes = grown
      }
      row.bytes[row.at++] = 10 // the newline between lines
    }
    return row
  }
  write(insert: Database.Statement<[number, Uint8Array]>) {
    for (const row of this.#spans.values()) insert.run(row.expiresAt, row.bytes.subarray(0, row.at))
  }
}

/** A message from its line, `id topic tag published-at expiry publisher "message"`: ids, topics and client ids hold no space. */
function readMessageLine(line: string): NewMessage {
  const at = [0, 0, 0, 0, 0, 0]
  for (let field = 0, from = 0; field < 6; field++) from = at[field] = line.indexOf(' ', from) + 1
  return {
    id: line.slice(0, at[0]! - 1),
    topic: line.slice(at[0], at[1]! - 1),
    tag: Number(line.slice(at[1], at[2]! - 1)),
    publishedAt: Number(line.slice(at[2], at[3]! - 1)),
    expiresAt: Number(line.slice(at[3], at[4]! - 1)),
    publisher: line.slice(at[4], at[5]! - 1),
    message: JSON.parse(line.slice(at[5])) as string,
  }
}

/** Brings a file of any earlier layout to SCHEMA_VERSION, keeping its messages and acks. */
function migrate(db: Database.Database) {
  const version = db.pragma('user_version', { simple: true }) as number
  if (version === SCHEMA_VERSION) return
  db.transaction(() => {
    const existing = new Set((db.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[]).map((row) => row.name))
    // Versions 1 to 3 kept a row per message (version 1 indexed everything); version 3 has the
    // acks of today, versions 1 and 2 a row per ack with message_id and client_id.
    const oldMessages = existing.has('messages')
    const oldAcks = existing.has('acks') && version < 3
    if (oldMessages) db.exec('alter table messages rename to messages_old')
    if (oldAcks) db.exec('alter table acks rename to acks_old')
    db.exec(`
      create table messages (
        seq integer primary key,
        expires_at integer not null,
        entries text not null
      );
      create table if not exists acks (
        seq integer primary key,
        expires_at integer not null,
        entries text not null
      );
    `)
    if (oldMessages) {
      type Row = { id: string; topic: string; message: string; tag: number; published_at: number; expires_at: number; publisher: string }
      const insert = db.prepare<[number, Uint8Array]>(INSERT_MESSAGES)
      let rows = new Rows()
      let count = 0
      for (const m of db.prepare('select * from messages_old order by seq').iterate() as IterableIterator<Row>) {
        rows.message({ ...m, publishedAt: m.published_at, expiresAt: m.expires_at })
        if (++count % MAX_BATCH === 0) {
          rows.write(insert)
          rows = new Rows()
        }
      }
      rows.write(insert)
    }
    if (oldAcks) {
      db.exec(`insert into acks (expires_at, entries)
        select max(m.expires_at), group_concat(a.message_id || ' ' || a.client_id || ' ' || m.expires_at, char(10))
        from acks_old a join messages_old m on m.id = a.message_id group by m.expires_at / ${ROW_SPAN_MS}`)
      db.exec('drop table acks_old')
    }
    if (oldMessages) db.exec('drop table messages_old')
    db.pragma(`user_version = ${SCHEMA_VERSION}`)
  })()
}
