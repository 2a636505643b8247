import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AuditEventRow } from '@latchkey/service/database'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startCli } from '../../service/test/cliProcess.js'
import { createKms, generateApiKeyPair } from '../src/index.js'
import { connect, type TestDatabase, testDatabase } from './database.js'
import { startKms } from './harness.js'

// The kms's audit trail: one event per submission, refusals included (the one row a refusal
// leaves), mirrored to --audit-log-file, and `latchkey-kms audit verify` naming the first altered row.

const directory = () => mkdtemp(join(tmpdir(), 'latchkey-kms-audit-'))
const readLog = async (path: string) =>
  (await readFile(path, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as AuditEventRow)

/** Posts `body` to `path`, stamped by `keys` over `stampedText` (the body itself unless a forgery is wanted). */
async function post(
  url: string,
  path: string,
  keys: ReturnType<typeof generateApiKeyPair>,
  body: object,
  options: { stampedText?: string; requestId?: string } = {},
) {
  const text = JSON.stringify(body)
  const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(keys).stamp(options.stampedText ?? text)
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    body: text,
    headers: { [stampHeaderName]: stampHeaderValue, ...(options.requestId ? { 'x-request-id': options.requestId } : {}) },
  })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

describe('audit trail', () => {
  let logFile: string
  let started: Awaited<ReturnType<typeof startKms>>
  beforeAll(async () => {
    logFile = join(await directory(), 'audit.jsonl')
    started = await startKms({ auditLogFile: logFile })
  })
  afterAll(() => started.kms.stop())

  test('behavior: each submission is one event: completed, refused by the activity, refused by its stamp; a refusal leaves only its event', async () => {
    const { kms, subOrganization, timestampMs, parentKey, parent } = started
    const sub = await subOrganization()
    const sign = (signWith: string) => ({
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: timestampMs(),
      organizationId: sub.organizationId,
      parameters: { signWith, payload: `0x19${'11'.repeat(32)}`, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
    })
    const signed = await post(kms.url, '/public/v1/submit/sign_raw_payload', sub.keys, sign(sub.address), { requestId: 'audit-signed' })
    expect(signed.status).toBe(200)
    const unknown = `0x${'ab'.repeat(20)}`
    const refused = await post(kms.url, '/public/v1/submit/sign_raw_payload', sub.keys, sign(unknown))
    expect(refused.status).toBe(404)
    const forged = await post(
      kms.url,
      '/public/v1/submit/create_wallet',
      parentKey,
      { type: 'ACTIVITY_TYPE_CREATE_WALLET', organizationId: parent.organizationId },
      { stampedText: '{}' },
    )
    expect(forged.status).toBe(401)

    const events = await readLog(logFile)
    expect(events.map((event) => event.seq)).toEqual([1, 2, 3, 4])
    const activityId = (signed.body['activity'] as { id: string }).id
    expect(events.map(({ seq, prev_hash, hash, at, ...fields }) => fields)).toEqual([
      {
        action: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
        outcome: 'completed',
        reason: null,
        actor_organization: parent.organizationId,
        actor_user: parent.userId,
        credential: parentKey.apiPublicKey,
        target: expect.stringMatching(new RegExp(`^\\{"activity":"[0-9a-f-]{36}","organization":"${parent.organizationId}"\\}$`)),
        request_id: expect.any(String),
        ip_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        email_hash: null,
      },
      {
        action: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
        outcome: 'completed',
        reason: null,
        actor_organization: sub.organizationId,
        actor_user: sub.userId,
        credential: sub.keys.apiPublicKey,
        target: JSON.stringify({ activity: activityId, organization: sub.organizationId, signWith: sub.address }),
        request_id: 'audit-signed',
        ip_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        email_hash: null,
      },
      {
        action: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
        outcome: 'refused',
        reason: `5 ${(refused.body as { message: string }).message}`,
        actor_organization: sub.organizationId,
        actor_user: sub.userId,
        credential: sub.keys.apiPublicKey,
        target: JSON.stringify({ organization: sub.organizationId, signWith: unknown }),
        request_id: expect.any(String),
        ip_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        email_hash: null,
      },
      {
        action: 'ACTIVITY_TYPE_CREATE_WALLET',
        outcome: 'refused',
        reason: `16 ${(forged.body as { message: string }).message}`,
        actor_organization: null,
        actor_user: null,
        credential: parentKey.apiPublicKey,
        target: JSON.stringify({ organization: parent.organizationId }),
        request_id: expect.any(String),
        ip_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        email_hash: null,
      },
    ])
    expect(events[3]!.ip_hash).toBe(events[0]!.ip_hash)
    expect(await kms.verifyAudit()).toEqual({ intact: true, count: 4, headHash: events[3]!.hash })
    // The refused signing stored no activity: the sub-organization has only the completed one.
    const activities = await sub.client.getActivities({ organizationId: sub.organizationId })
    expect(activities.activities.map((activity) => activity.id)).toEqual([activityId])
  })
})

describe('latchkey-kms audit verify', () => {
  const cli = 'packages/kms/src/cli.ts'
  const storeArgs = (database: TestDatabase): { args: string[]; env: Record<string, string> } =>
    'databaseUrl' in database ? { args: [], env: { DATABASE_URL: database.databaseUrl } } : { args: ['--db', database.databasePath], env: {} }
  async function verify(database: TestDatabase) {
    const store = storeArgs(database)
    const run = startCli(cli, ['audit', 'verify', ...store.args], store.env)
    const { code } = await run.exited
    return { code, stdout: run.stdout(), stderr: run.stderr() }
  }

  test('error: names the first row altered in the database; an intact trail prints its count', async () => {
    const database = await testDatabase(join(await directory(), 'kms.db'))
    const kms = createKms(database)
    await kms.start()
    const keys = generateApiKeyPair()
    await kms.createParentOrganization({ name: 'App', userName: 'backend', publicKey: keys.apiPublicKey })
    const stranger = generateApiKeyPair()
    for (let index = 0; index < 3; index++)
      expect(
        (await post(kms.url, '/public/v1/submit/create_wallet', stranger, { type: 'ACTIVITY_TYPE_CREATE_WALLET', organizationId: `org ${index}` })).status,
      ).toBe(401)
    await kms.stop()

    const intact = await verify(database)
    expect([intact.code, intact.stderr]).toEqual([0, ''])
    expect(JSON.parse(intact.stdout)).toEqual({ intact: true, count: 3, headHash: expect.stringMatching(/^[0-9a-f]{64}$/) })

    const connection = connect(database)
    try {
      await sql`update kms_audit_events set reason = ${'16 nothing to see'} where seq = 2`.execute(connection.kysely)
    } finally {
      await connection.close()
    }
    const altered = await verify(database)
    expect([altered.code, altered.stdout]).toEqual([1, ''])
    expect(altered.stderr).toMatch(
      /^latchkey-kms: the audit trail is altered at row 2: its hash [0-9a-f]{64} does not match its contents \([0-9a-f]{64}\) \(1 rows before it are intact\)\n$/,
    )
  }, 120_000)

  test('error: refuses to run without a store', async () => {
    const run = startCli(cli, ['audit', 'verify'], {})
    expect((await run.exited).code).toBe(2)
    expect(run.stderr()).toBe(
      "latchkey-kms: audit verify reads the kms's store: set --db / LATCHKEY_KMS_DB or DATABASE_URL or --database-url-file / DATABASE_URL_FILE, as the kms has them\n",
    )
  })
})
