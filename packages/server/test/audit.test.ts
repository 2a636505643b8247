import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DEVELOPMENT_AUDIT_KEY } from '@latchkey/service'
import { type AuditEventRow, keyedHash } from '@latchkey/service/database'
import { sql } from 'kysely'
import { describe, expect, test } from 'vitest'
import { startCli } from '../../service/test/cliProcess.js'
import { freshDatabaseUrl } from '../../service/test/testDatabase.js'
import { createServerAudit, verifyServerAudit } from '../src/audit.js'
import { createServerApp, openStore } from '../src/index.js'
import { createDelegatedAccess } from '../src/internal/delegated.js'
import { revokeSessions } from '../src/revoke.js'
import { generateApiKeyPair, newEmail, origin, useBackend } from './backend.js'

// The backend's audit trail: each POST /auth/* outcome (refusals included) with keyed hashes of
// the IP and the email, `latchkey-server audit verify`, and `sessions revoke` against a real kms.

const { t, post, signedInByEmail, signedUpWithPasskey, stampLogin, withKey, withPasskey, session } = useBackend()

const events = async () => (await sql<AuditEventRow>`select * from server_audit_events order by seq`.execute(t.store.database.db)).rows

describe('audit trail', () => {
  test('behavior: an email sign-in, a refused code and a sign-out are events with the actor and keyed hashes, no email or IP in clear', async () => {
    const email = newEmail()
    const account = await signedInByEmail(email)
    const wrong = await post(
      '/auth/email/verify',
      {
        otpId: 'no-such-code',
        encryptedOtpBundle: '{}',
        clientSignature: {
          publicKey: generateApiKeyPair().apiPublicKey,
          scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256',
          message: '{}',
          signature: '0'.repeat(128),
        },
      },
      { 'x-test-ip': '198.51.100.9' },
    )
    expect(wrong.status).toBe(400)
    expect((await post('/auth/signout', {}, { cookie: account.cookie })).status).toBe(204)

    const rows = await events()
    const emailHash = keyedHash(DEVELOPMENT_AUDIT_KEY, 'email', email)
    const ipHash = keyedHash(DEVELOPMENT_AUDIT_KEY, 'ip', '127.0.0.1')
    expect(rows.map(({ seq, prev_hash, hash, at, request_id, ...fields }) => fields)).toEqual([
      {
        action: 'POST /auth/email/start',
        outcome: 'completed',
        reason: null,
        actor_organization: null,
        actor_user: null,
        credential: null,
        target: null,
        ip_hash: ipHash,
        email_hash: emailHash,
      },
      {
        action: 'POST /auth/email/verify',
        outcome: 'completed',
        reason: null,
        actor_organization: account.organizationId,
        actor_user: account.userId,
        credential: 'session email',
        target: JSON.stringify({ address: account.address, organization: account.organizationId, user: account.userId }),
        ip_hash: ipHash,
        email_hash: emailHash,
      },
      {
        action: 'POST /auth/email/verify',
        outcome: 'refused',
        reason: '400 unknown_code: This code was not sent, or has been used; ask for a new one',
        actor_organization: null,
        actor_user: null,
        credential: null,
        target: null,
        ip_hash: keyedHash(DEVELOPMENT_AUDIT_KEY, 'ip', '198.51.100.9'),
        email_hash: null,
      },
      {
        action: 'POST /auth/signout',
        outcome: 'completed',
        reason: null,
        actor_organization: account.organizationId,
        actor_user: account.userId,
        credential: 'session email',
        target: JSON.stringify({ address: account.address, organization: account.organizationId, user: account.userId }),
        ip_hash: ipHash,
        email_hash: emailHash,
      },
    ])
    expect(JSON.stringify(rows)).not.toContain(email)
    expect(JSON.stringify(rows)).not.toMatch(/127\.0\.0\.1|198\.51\.100\.9/)
    expect(await verifyServerAudit(t.store)).toEqual({ intact: true, count: 4, headHash: rows[3]!.hash })
  })

  test('behavior: --audit-log-file (auditLogFile) holds the same events as the table', async () => {
    const logFile = join(await mkdtemp(join(tmpdir(), 'latchkey-server-audit-')), 'audit.jsonl')
    t.app = createServerApp({ ...t.options, audit: createServerAudit(t.store, { logFile }) })
    await signedUpWithPasskey()
    expect((await post('/auth/token', {})).status).toBe(401)
    const lines = (await readFile(logFile, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as AuditEventRow)
    expect(lines).toEqual(await events())
    expect(lines.map((line) => [line.action, line.outcome, line.reason])).toEqual([
      ['POST /auth/passkey/signup', 'completed', null],
      ['POST /auth/token', 'refused', '401 signed_out: Not signed in'],
    ])
  })
})

describe('sessions revoke', () => {
  test('behavior: ends the sessions, refresh tokens and kms session keys of one account, and no one else’s', async () => {
    const account = await signedUpWithPasskey()
    const other = await signedUpWithPasskey()
    const tokens = (await (await post('/auth/token', {}, { cookie: account.cookie })).json()) as { refreshToken: string }
    // A second key of the user (another browser's session, signed in with the passkey).
    await stampLogin(withPasskey(account.authenticator), generateApiKeyPair().apiPublicKey, account.organizationId)
    const before = await t.backend.getApiKeys({ organizationId: account.organizationId, userId: account.userId })
    expect(before.apiKeys).toHaveLength(2)

    const delegated = createDelegatedAccess({ kms: t.backend, kmsUrl: t.kms.url, delegationSecret: t.backendKey.apiPrivateKey, now: () => ++t.clock })
    const result = await revokeSessions(
      { organization: account.organizationId },
      { store: t.store, delegated, audit: createServerAudit(t.store), now: () => ++t.clock },
    )
    expect(result).toEqual({
      sessions: 1,
      refreshTokens: 1,
      apiKeys: [{ organizationId: account.organizationId, userId: account.userId, apiKeyIds: before.apiKeys.map((key) => key.apiKeyId) }],
    })
    expect(await (await session(account.cookie)).json()).toBeNull()
    const refreshed = await post('/auth/token/refresh', { refreshToken: tokens.refreshToken })
    expect(refreshed.status).toBe(401)
    await expect(withKey(account.sessionKey).getWhoami({ organizationId: account.organizationId })).rejects.toThrow(
      'could not find public key in organization or its parent organization',
    )
    expect((await t.backend.getApiKeys({ organizationId: account.organizationId, userId: account.userId })).apiKeys).toEqual([])
    // The other account is untouched.
    expect(await (await session(other.cookie)).json()).toMatchObject({ organizationId: other.organizationId })
    expect((await withKey(other.sessionKey).getWhoami({ organizationId: other.organizationId })).userId).toBe(other.userId)
    const last = (await events()).find((event) => event.action === 'sessions revoke')!
    expect([last.action, last.outcome, last.reason, last.target]).toEqual([
      'sessions revoke',
      'completed',
      '1 sessions, 1 refresh tokens, 2 session keys',
      JSON.stringify({ address: account.address, organization: account.organizationId, user: account.userId }),
    ])
  })
})

describe('latchkey-server audit verify', () => {
  const cli = 'packages/server/src/cli.ts'
  const storeArgs = (url: string): { args: string[]; env: Record<string, string> } =>
    url.includes('://') ? { args: [], env: { DATABASE_URL: url } } : { args: ['--db', url], env: {} }
  async function verify(url: string) {
    const store = storeArgs(url)
    const run = startCli(cli, ['audit', 'verify', ...store.args], store.env)
    const { code } = await run.exited
    return { code, stdout: run.stdout(), stderr: run.stderr() }
  }

  test('error: names the first row altered in the database; an intact trail prints its count', async () => {
    const url = await freshDatabaseUrl()
    const store = await openStore(url)
    const app = createServerApp({ ...t.options, store })
    for (let index = 0; index < 3; index++)
      expect((await app.request('/auth/signout', { method: 'POST', headers: { origin, 'content-type': 'application/json' } })).status).toBe(204)
    await store.close()
    const intact = await verify(url)
    expect([intact.code, intact.stderr]).toEqual([0, ''])
    expect(JSON.parse(intact.stdout)).toEqual({ intact: true, count: 3, headHash: expect.stringMatching(/^[0-9a-f]{64}$/) })

    const again = await openStore(url)
    await sql`update server_audit_events set action = ${'POST /auth/nothing'} where seq = 3`.execute(again.database.db)
    await again.close()
    const altered = await verify(url)
    expect([altered.code, altered.stdout]).toEqual([1, ''])
    expect(altered.stderr).toMatch(
      /^latchkey-server: the audit trail is altered at row 3: its hash [0-9a-f]{64} does not match its contents \([0-9a-f]{64}\) \(2 rows before it are intact\)\n$/,
    )
  }, 120_000)
})
