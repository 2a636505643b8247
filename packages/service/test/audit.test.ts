import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import { pino } from 'pino'
import { afterAll, afterEach, expect, test } from 'vitest'
import {
  type AuditEventRow,
  type AuditStorage,
  auditMigration,
  createAuditTrail,
  type Database,
  GENESIS_HASH,
  keyedHash,
  openDatabase,
  verifyAuditTrail,
} from '../src/database.js'
import { freshDatabaseUrl, testEngine } from './testDatabase.js'

// The shared audit chain on the engine of this run (SQLite by default, PostgreSQL in
// `npm run test:server-postgres`): appends, the keyed hashes, verify naming the first altered row.

const key = new Uint8Array(32).fill(7)
const opened: Database<unknown>[] = []
afterEach(async () => {
  for (const database of opened.splice(0)) await database.close()
})
const directory = mkdtempSync(join(tmpdir(), 'latchkey-audit-'))
afterAll(() => rmSync(directory, { recursive: true, force: true }))

async function open(url: string) {
  const database = await openDatabase<unknown>({ url, service: 'demo', migrations: [auditMigration('0001_audit_events', 'demo')] })
  opened.push(database)
  const storage: AuditStorage = {
    dialect: database.dialect,
    transaction: (work) => database.transaction(work, { isolation: 'read committed' }),
    connection: (work) => database.db.connection().execute(work),
  }
  return { database, storage }
}

test('default: events chain from the genesis hash, verify counts them, the log file mirrors them', async () => {
  const { database, storage } = await open(await freshDatabaseUrl())
  const logFile = join(directory, 'default.jsonl')
  const audit = createAuditTrail({ service: 'demo', storage, key, logFile, now: () => 1_700_000_000_000 })
  await audit.record({
    action: 'POST /auth/email/start',
    outcome: 'completed',
    email: 'Ada@Example.com',
    ip: '203.0.113.7',
    target: { user: 'u1', organization: 'o1' },
  })
  await Promise.all([
    audit.record({ action: 'ACTIVITY_TYPE_CREATE_WALLET', outcome: 'refused', reason: '7 permission denied', actorUser: 'u1' }),
    audit.record({ action: 'ACTIVITY_TYPE_CREATE_WALLET', outcome: 'completed', actorUser: 'u1' }),
  ])
  const rows = (await sql<AuditEventRow>`select * from demo_audit_events order by seq`.execute(database.db)).rows
  expect(rows.map((row) => [row.seq, row.outcome])).toEqual([
    [1, 'completed'],
    [2, 'refused'],
    [3, 'completed'],
  ])
  expect(rows[0]).toMatchObject({
    prev_hash: GENESIS_HASH,
    target: '{"organization":"o1","user":"u1"}',
    email_hash: keyedHash(key, 'email', 'ada@example.com'),
    ip_hash: keyedHash(key, 'ip', '203.0.113.7'),
  })
  // No email or address in clear anywhere in the row.
  expect(JSON.stringify(rows)).not.toMatch(/example\.com|203\.0\.113\.7/i)
  expect(rows[1]!.prev_hash).toBe(rows[0]!.hash)
  expect(await verifyAuditTrail(database.db, 'demo')).toEqual({ intact: true, count: 3, headHash: rows[2]!.hash })
  const lines = readFileSync(logFile, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
  expect(lines).toEqual(rows)
})

test('behavior: the keyed hash depends on the key and on what is hashed, not on an email’s case', () => {
  expect(keyedHash(key, 'email', ' Ada@Example.com')).toBe(keyedHash(key, 'email', 'ada@example.com'))
  expect(keyedHash(key, 'email', 'ada@example.com')).not.toBe(keyedHash(new Uint8Array(32).fill(8), 'email', 'ada@example.com'))
  expect(keyedHash(key, 'ip', '10.0.0.1')).not.toBe(keyedHash(key, 'email', '10.0.0.1'))
  expect(keyedHash(key, 'ip', '10.0.0.1')).toMatch(/^[0-9a-f]{64}$/)
})

test('error: verify names the first row whose contents, link or sequence was altered', async () => {
  const { database, storage } = await open(await freshDatabaseUrl())
  const audit = createAuditTrail({ service: 'demo', storage, key })
  for (let index = 0; index < 5; index++) await audit.record({ action: `action ${index}`, outcome: 'completed' })
  const db = database.db
  await sql`update demo_audit_events set outcome = 'refused' where seq = 3`.execute(db)
  const changed = await verifyAuditTrail(db, 'demo')
  expect(changed).toMatchObject({ intact: false, count: 2, seq: 3 })
  expect(changed.intact === false && changed.problem).toMatch(/^its hash [0-9a-f]{64} does not match its contents \([0-9a-f]{64}\)$/)
  await sql`update demo_audit_events set outcome = 'completed' where seq = 3`.execute(db)
  await sql`update demo_audit_events set prev_hash = ${GENESIS_HASH} where seq = 2`.execute(db)
  expect(await verifyAuditTrail(db, 'demo')).toMatchObject({
    intact: false,
    count: 1,
    seq: 2,
    problem: expect.stringMatching(/^its prev_hash 0{64} is not the hash of row 1 /),
  })
  const first = (await sql<{ hash: string }>`select hash from demo_audit_events where seq = 1`.execute(db)).rows[0]!
  await sql`update demo_audit_events set prev_hash = ${first.hash} where seq = 2`.execute(db)
  await sql`delete from demo_audit_events where seq = 4`.execute(db)
  expect(await verifyAuditTrail(db, 'demo')).toEqual({ intact: false, count: 3, seq: 5, problem: 'expected row 4 next: rows 4 to 4 are missing' })
})

test('behavior: two instances appending at once on one database keep one chain without gaps', async () => {
  const url = await freshDatabaseUrl()
  // SQLite serves one instance (a second connection's lock wait would block this process's event loop).
  const instances = testEngine === 'postgres' ? [await open(url), await open(url)] : [await open(url)]
  const trails = instances.map(({ storage }) => createAuditTrail({ service: 'demo', storage, key }))
  await Promise.all(Array.from({ length: 40 }, (_, index) => trails[index % trails.length]!.record({ action: `refusal ${index}`, outcome: 'refused' })))
  const verdict = await verifyAuditTrail(instances[0]!.database.db, 'demo')
  expect(verdict).toMatchObject({ intact: true, count: 40 })
})

if (testEngine === 'postgres')
  test("behavior: appends waiting for another instance's lock each read the chain's head once they hold it", async () => {
    const url = await freshDatabaseUrl()
    const instances = [await open(url), await open(url)]
    const trails = instances.map(({ storage }) => createAuditTrail({ service: 'demo', storage, key }))
    // A third party holds the appends' lock, as an instance mid-append would.
    const holder = new pg.Client({ connectionString: url })
    await holder.connect()
    try {
      await holder.query('begin')
      await holder.query(`select pg_advisory_xact_lock(hashtext('latchkey:demo_audit_events'))`)
      const recorded = trails.map((trail, index) => trail.record({ action: `waited ${index}`, outcome: 'completed' }))
      const waiting = async () =>
        Number((await holder.query(`select count(*) as count from pg_locks where locktype = 'advisory' and not granted`)).rows[0].count)
      // Both appends have begun and wait for the lock (what PostgreSQL reports, polled).
      for (let polls = 0; (await waiting()) < 2; polls++) {
        if (polls > 500) throw new Error('the appends never waited for the lock')
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      await holder.query('commit')
      await Promise.all(recorded)
    } finally {
      await holder.end()
    }
    // The second to get the lock read the first's row as the head: one chain, no failed append.
    expect(trails.map((trail) => trail.failures())).toEqual([0, 0])
    expect(await verifyAuditTrail(instances[0]!.database.db, 'demo')).toMatchObject({ intact: true, count: 2 })
  })

test('error: an append that fails is logged with its events and counted, and the caller is answered regardless', async () => {
  const { database, storage } = await open(await freshDatabaseUrl())
  const lines: string[] = []
  const logger = pino({ level: 'error' }, { write: (line: string) => lines.push(line) })
  const audit = createAuditTrail({ service: 'demo', storage, key, logger })
  await sql`drop table demo_audit_events`.execute(database.db)
  await audit.record({ action: 'ACTIVITY_TYPE_CREATE_WALLET', outcome: 'completed', actorUser: 'user-1' })
  expect(audit.failures()).toBe(1)
  const logged = JSON.parse(lines[0]!) as { msg: string; events: { action: string; actor_user: string }[] }
  expect(logged.msg).toMatch(/^audit events not stored: /)
  expect(logged.events.map((event) => [event.action, event.actor_user])).toEqual([['ACTIVITY_TYPE_CREATE_WALLET', 'user-1']])
})
