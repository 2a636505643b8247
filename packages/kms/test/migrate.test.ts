import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { startCli } from '../../service/test/cliProcess.js'
import { createKms } from '../src/index.js'
import { KMS_MIGRATIONS } from '../src/storage/migrations.js'
import { type TestDatabase, testDatabase } from './database.js'

// `latchkey-kms migrate status|up [--dry-run]` on the run's engine (SQLite, or PostgreSQL in the
// kms's PostgreSQL run), as an operator runs them before a rollout.

const cli = 'packages/kms/src/cli.ts'
const names = KMS_MIGRATIONS.map((migration) => migration.name)
const storeArgs = (database: TestDatabase): { args: string[]; env: Record<string, string> } =>
  'databaseUrl' in database ? { args: [], env: { DATABASE_URL: database.databaseUrl } } : { args: ['--db', database.databasePath], env: {} }

async function migrate(database: TestDatabase, ...args: string[]) {
  const store = storeArgs(database)
  const run = startCli(cli, ['migrate', ...args, ...store.args], store.env)
  const { code } = await run.exited
  return { code, output: code === 0 ? JSON.parse(run.stdout()) : undefined, stderr: run.stderr() }
}

const stopped: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const stop of stopped) await stop()
})

describe('latchkey-kms migrate', () => {
  test('behavior: status changes nothing; up --dry-run runs every step and keeps none; up applies them; the kms then starts on it', async () => {
    const database = await testDatabase(join(await mkdtemp(join(tmpdir(), 'latchkey-kms-migrate-')), 'kms.db'))
    expect(await migrate(database, 'status')).toMatchObject({ code: 0, output: { applied: [], pending: names, newer: [], compatible: true } })
    expect(await migrate(database, 'up', '--dry-run')).toMatchObject({ code: 0, output: { ran: names, dryRun: true } })
    expect((await migrate(database, 'status')).output.pending).toEqual(names)
    expect(await migrate(database, 'up')).toMatchObject({ code: 0, output: { ran: names, dryRun: false } })
    const status = await migrate(database, 'status')
    expect(status.output).toMatchObject({ pending: [], compatible: true })
    expect(status.output.applied.map((row: { name: string }) => row.name)).toEqual(names)
    expect(await migrate(database, 'up')).toMatchObject({ code: 0, output: { ran: [] } })

    const kms = createKms(database)
    stopped.push(() => kms.stop())
    await kms.start()
    expect((await fetch(`${kms.url}/readyz`)).status).toBe(200)
  }, 120_000)

  test('error: refuses to run without a store (an in-memory database would be made and dropped)', async () => {
    const run = startCli(cli, ['migrate', 'status'], {})
    expect((await run.exited).code).toBe(2)
    expect(run.stderr()).toBe(
      "latchkey-kms: migrate status works on the kms's database: set --db / LATCHKEY_KMS_DB or DATABASE_URL or --database-url-file / DATABASE_URL_FILE, as the service has it\n",
    )
  })
})
