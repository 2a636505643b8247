import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, inject } from 'vitest'

// Where the service and backend suites keep their data: SQLite by default, PostgreSQL when
// LATCHKEY_TEST_DATABASE=postgres (packages/server/test/vitest.postgres.config.ts sets it and
// starts the server). Used by the backend's tests too.

export const testEngine: 'sqlite' | 'postgres' = process.env.LATCHKEY_TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite'

let directory: string | undefined
afterAll(() => {
  if (directory) rmSync(directory, { recursive: true, force: true })
  directory = undefined
})

/**
 * A new, empty database for one test: a SQLite file in a temp directory (removed after the file's
 * tests), or a PostgreSQL database of its own. `memory` asks for SQLite in memory instead of a file.
 */
export async function freshDatabaseUrl(options: { memory?: boolean } = {}): Promise<string> {
  if (testEngine === 'sqlite') {
    if (options.memory) return ':memory:'
    directory ??= mkdtempSync(join(tmpdir(), 'latchkey-database-'))
    return join(directory, `${randomUUID()}.db`)
  }
  const server = new URL(inject('postgresUrl'))
  const name = `test_${randomUUID().replaceAll('-', '')}`
  const admin = new pg.Client({ connectionString: server.href })
  await admin.connect()
  try {
    await admin.query(`create database ${name}`)
  } finally {
    await admin.end()
  }
  server.pathname = `/${name}`
  return server.href
}
