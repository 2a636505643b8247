import Database from 'better-sqlite3'
import type { SqlDatabase } from './sqlDatabase.js'

/**
 * A SQLite file (or `:memory:`) through better-sqlite3, the embedded default.
 *
 * @example
 * const db = openSqlite('.latchkey/kms.db')
 * @internal
 */
export function openSqlite(path: string): SqlDatabase {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  // Each commit reaches the WAL with write() at once; syncs happen at checkpoints. A killed process
  // loses nothing; only a power cut could take the last moments' activities.
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  return {
    dialect: 'sqlite',
    prepare: (sql) => db.prepare(sql),
    exec: (sql) => void db.exec(sql),
    transaction: (work) => db.transaction(work)(),
    close: () => db.close(),
  }
}
