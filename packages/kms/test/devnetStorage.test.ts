import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort, startStack } from '@latchkey/devnet'
import { sql } from 'kysely'
import { expect, test } from 'vitest'
import { connect, testBackend, testDatabase } from './database.js'

// `npm start`'s kms keeps its data where the environment says: PostgreSQL when DATABASE_URL is
// set (the PostgreSQL run of this suite), else .latchkey/kms.db (the default run).

test(`behavior: the dev stack's kms stores its parent organization in ${testBackend === 'postgres' ? 'PostgreSQL via DATABASE_URL' : 'kms.db in the state directory'}`, async () => {
  const database = await testDatabase()
  const stateDir = mkdtempSync(join(tmpdir(), 'latchkey-devnet-storage-'))
  const stack = await startStack({
    relay: false,
    demo: false,
    stateDir,
    ports: { chainA: await getFreePort(), chainB: await getFreePort(), kms: await getFreePort(), frames: await getFreePort(), server: await getFreePort() },
    env: 'databaseUrl' in database ? { DATABASE_URL: database.databaseUrl } : {},
  })
  try {
    const { parentOrganizationId } = stack.kms!
    const inPostgres = 'databaseUrl' in database
    expect(existsSync(join(stateDir, 'kms.db'))).toBe(!inPostgres)
    const reader = connect(inPostgres ? database : { databasePath: join(stateDir, 'kms.db') })
    try {
      const { rows } = await sql`select id from organizations where id = ${parentOrganizationId}`.execute(reader.kysely)
      expect(rows).toEqual([{ id: parentOrganizationId }])
    } finally {
      await reader.close()
    }
  } finally {
    await stack.stop()
    rmSync(stateDir, { recursive: true, force: true })
  }
})
