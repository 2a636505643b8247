import { describe, expect, test } from 'vitest'
import { startCli } from '../../service/test/cliProcess.js'
import { freshDatabaseUrl } from '../../service/test/testDatabase.js'
import { openStore, SERVER_MIGRATIONS } from '../src/index.js'

// `latchkey-server migrate status|up [--dry-run]` on the run's engine (SQLite, or PostgreSQL in
// the backend's PostgreSQL run), as an operator runs them before a rollout.

const cli = 'packages/server/src/cli.ts'
const names = SERVER_MIGRATIONS.map((migration) => migration.name)

async function migrate(url: string, ...args: string[]) {
  const store = url.includes('://') ? { args: [], env: { DATABASE_URL: url } } : { args: ['--db', url], env: {} }
  const run = startCli(cli, ['migrate', ...args, ...store.args], store.env)
  const { code } = await run.exited
  return { code, output: code === 0 ? JSON.parse(run.stdout()) : undefined, stderr: run.stderr() }
}

describe('latchkey-server migrate', () => {
  test('behavior: status changes nothing; up --dry-run runs every step and keeps none; up applies them; the store then opens on it', async () => {
    const url = await freshDatabaseUrl()
    expect(await migrate(url, 'status')).toMatchObject({ code: 0, output: { applied: [], pending: names, newer: [], compatible: true } })
    expect(await migrate(url, 'up', '--dry-run')).toMatchObject({ code: 0, output: { ran: names, dryRun: true } })
    expect((await migrate(url, 'status')).output.pending).toEqual(names)
    expect(await migrate(url, 'up')).toMatchObject({ code: 0, output: { ran: names, dryRun: false } })
    expect((await migrate(url, 'status')).output).toMatchObject({ pending: [], compatible: true })
    const store = await openStore(url)
    await store.close()
    expect((await migrate(url, 'up')).output.ran).toEqual([])
  }, 120_000)

  test('error: refuses to run without a store, or with two', async () => {
    const none = startCli(cli, ['migrate', 'up'], {})
    expect((await none.exited).code).toBe(2)
    expect(none.stderr()).toBe(
      "latchkey-server: migrate up works on the server's database: set --db / LATCHKEY_SERVER_DB or DATABASE_URL or --database-url-file / DATABASE_URL_FILE, as the service has it\n",
    )
    const both = startCli(cli, ['migrate', 'status', '--db', 'x.db'], { DATABASE_URL: 'postgres://server@db/server' })
    expect((await both.exited).code).toBe(2)
    expect(both.stderr()).toBe('latchkey-server: give --db / LATCHKEY_SERVER_DB or DATABASE_URL or --database-url-file / DATABASE_URL_FILE, not both\n')
  })
})
