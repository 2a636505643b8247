import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { inject } from 'vitest'
import { openStorage, type Storage } from '../src/storage/database.js'

// The one place the kms suite picks its storage: SQLite by default, PostgreSQL when
// LATCHKEY_KMS_TEST_DATABASE=postgres (vitest.postgres.config.ts sets it and starts the server).

export const testBackend: 'sqlite' | 'postgres' = process.env.LATCHKEY_KMS_TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite'

/** Storage options of createKms. */
export type TestDatabase = { databasePath: string } | { databaseUrl: string }

/**
 * Storage options for one fresh kms: SQLite at `sqlitePath` (default in memory), or a new, empty
 * PostgreSQL database of its own. Pass the same options again to restart on the same data.
 */
export async function testDatabase(sqlitePath = ':memory:'): Promise<TestDatabase> {
  if (testBackend === 'sqlite') return { databasePath: sqlitePath }
  const server = new URL(inject('postgresUrl'))
  const name = `kms_${randomUUID().replaceAll('-', '')}`
  const admin = new pg.Client({ connectionString: server.href })
  await admin.connect()
  try {
    await admin.query(`create database ${name}`)
  } finally {
    await admin.end()
  }
  server.pathname = `/${name}`
  return { databaseUrl: server.href }
}

/** A second connection to a kms's database (Kysely), for what no API does: reading and damaging rows. */
export function connect(database: TestDatabase): Storage {
  return openStorage('databaseUrl' in database ? database.databaseUrl : database.databasePath)
}
