import { copyFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'

/**
 * `latchkey-kms backup`: SQLite's online backup API (through better-sqlite3, the kms's driver)
 * copies the store page by page into `to`, starting over when another connection writes, so the
 * copy is one consistent state while the kms keeps writing (WAL included).
 *
 * @example
 * await backupSqlite('/var/lib/latchkey/kms.db', '/backups/kms-2026-11-28.db')
 */
export async function backupSqlite(from: string, to: string) {
  const source = new BetterSqlite3(from, { fileMustExist: true, readonly: true })
  try {
    const { totalPages } = await source.backup(to)
    return { backup: to, pages: totalPages }
  } finally {
    source.close()
  }
}

/** A copy of `file` to open and migrate without touching the backup itself. */
export async function scratchCopy(file: string) {
  const directory = await mkdtemp(join(tmpdir(), 'latchkey-verify-backup-'))
  const copy = join(directory, 'kms.db')
  await copyFile(file, copy)
  return copy
}

export const removeScratch = (copy: string) => rm(join(copy, '..'), { recursive: true, force: true })
