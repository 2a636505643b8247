import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, test } from 'vitest'
import { freshDatabaseUrl } from '../../service/test/testDatabase.js'
import { openStore, StoreConflictError } from '../src/index.js'

// The store's layouts: a server.db written before passkeys (layout 1), before SIWE (layout 2) or
// before migrations (layout 3) opens with its rows kept; then the rules the routes rely on, on the
// engine of the run.

const directories: string[] = []
const databasePath = () => {
  const directory = mkdtempSync(join(tmpdir(), 'latchkey-server-store-'))
  directories.push(directory)
  return join(directory, 'server.db')
}
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true })
})

/** The tables as the first release of the email sign-in wrote them. */
function writeLayout1(path: string) {
  const db = new Database(path)
  db.exec(`
    create table accounts (email text primary key, organization_id text not null, user_id text not null, address text not null, created_at integer not null);
    create table pending_codes (otp_id text primary key, email text not null, organization_id text not null, created_at integer not null);
    create table sessions (
      id text primary key, email text not null, organization_id text not null, user_id text not null, address text not null,
      kind text not null, expires_at integer not null, created_at integer not null);
    insert into accounts values ('a@example.test', 'org-a', 'user-a', '0xa', 1);
    insert into pending_codes values ('otp-a', 'a@example.test', 'org-a', 2);
    insert into sessions values ('session-a', 'a@example.test', 'org-a', 'user-a', '0xa', 'email', 9999999999999, 3);
  `)
  db.close()
}

describe('openStore', () => {
  test('behavior: layout 1 migrates: rows kept, sessions may have no email, passkey accounts join', async () => {
    const path = databasePath()
    writeLayout1(path)
    const store = await openStore(path)
    try {
      expect(await store.account('a@example.test')).toEqual({
        email: 'a@example.test',
        organization_id: 'org-a',
        user_id: 'user-a',
        address: '0xa',
        created_at: 1,
      })
      expect(await store.pendingCode('otp-a')).toEqual({ otp_id: 'otp-a', email: 'a@example.test', organization_id: 'org-a', created_at: 2 })
      expect(await store.session('session-a')).toMatchObject({ email: 'a@example.test', kind: 'email' })
      await store.insertSession({
        id: 'session-b',
        email: null,
        organization_id: 'org-b',
        user_id: 'user-b',
        address: '0xb',
        kind: 'passkey',
        chain_id: null,
        wallet_kind: null,
        session_public_key: null,
        expires_at: 5,
        created_at: 4,
      })
      expect(await store.session('session-b')).toMatchObject({ email: null, kind: 'passkey' })
      await store.insertPasskeyAccount({
        credential_id: 'cred-b',
        organization_id: 'org-b',
        user_id: 'user-b',
        address: '0xb',
        unverified_email: null,
        passkey_identifier: 'laptop',
        created_at: 4,
      })
      expect(await store.accountByOrganization('org-b')).toEqual({ organization_id: 'org-b', user_id: 'user-b', address: '0xb', email: null })
      expect(await store.accountByOrganization('org-a')).toEqual({ organization_id: 'org-a', user_id: 'user-a', address: '0xa', email: 'a@example.test' })
      // The email account of the old file is its user's login (backfilled); the new passkey account is one too.
      const logins = async (organizationId: string) =>
        (await store.loginsOf(organizationId)).map(({ kind, subject, user_id, address, label, kms_id, created_at }) => ({
          kind,
          subject,
          user_id,
          address,
          label,
          kms_id,
          created_at,
        }))
      expect(await logins('org-a')).toEqual([
        { kind: 'email', subject: 'a@example.test', user_id: 'user-a', address: '0xa', label: 'a@example.test', kms_id: null, created_at: 1 },
      ])
      expect(await logins('org-b')).toEqual([
        { kind: 'passkey', subject: 'cred-b', user_id: 'user-b', address: '0xb', label: 'laptop', kms_id: null, created_at: 4 },
      ])
    } finally {
      await store.close()
    }
    const db = new Database(path)
    expect(db.prepare('select name from server_migrations order by name').pluck().all()).toEqual([
      '0001_accounts_sessions_nonces',
      '0002_refresh_tokens',
      '0003_oauth_nonces',
      '0004_rate_limits',
      '0005_audit_events',
      '0006_passkey_email_unverified',
      '0007_session_public_key',
      '0008_webhooks',
      '0009_paymaster',
      '0010_logins',
      '0011_kms_event_cursor',
      '0012_unproven_email_logins',
    ])
    db.close()
    // Opening again changes nothing.
    const again = await openStore(path)
    expect(await again.session('session-b')).toMatchObject({ email: null })
    await again.close()
  })

  test('behavior: layout 2 migrates: rows kept, sessions may have no organization and carry a chain and wallet kind, nonces join', async () => {
    const path = databasePath()
    const db = new Database(path)
    db.exec(`
      create table accounts (email text primary key, organization_id text not null, user_id text not null, address text not null, created_at integer not null);
      create table passkey_accounts (
        credential_id text primary key, organization_id text not null, user_id text not null, address text not null,
        email text, passkey_identifier text, created_at integer not null);
      create table spent_session_tokens (digest text primary key, expires_at integer not null);
      create table pending_codes (otp_id text primary key, email text not null, organization_id text not null, created_at integer not null);
      create table sessions (
        id text primary key, email text, organization_id text not null, user_id text not null, address text not null,
        kind text not null, expires_at integer not null, created_at integer not null);
      insert into accounts values ('a@example.test', 'org-a', 'user-a', '0xAbC0000000000000000000000000000000000001', 1);
      insert into passkey_accounts values ('cred-p', 'org-p', 'user-p', '0xp', 'p@example.test', null, 2);
      insert into sessions values ('session-a', null, 'org-a', 'user-a', '0xa', 'passkey', 9999999999999, 3);
    `)
    db.pragma('user_version = 2')
    db.close()
    const store = await openStore(path)
    try {
      expect(await store.session('session-a')).toEqual({
        id: 'session-a',
        email: null,
        organization_id: 'org-a',
        user_id: 'user-a',
        address: '0xa',
        kind: 'passkey',
        chain_id: null,
        wallet_kind: null,
        session_public_key: null,
        expires_at: 9999999999999,
        created_at: 3,
      })
      const siwe = {
        id: 'session-b',
        email: null,
        organization_id: null,
        user_id: null,
        address: '0xb',
        kind: 'siwe',
        chain_id: 31337,
        wallet_kind: 'injected',
        session_public_key: null,
        expires_at: 5,
        created_at: 4,
      } as const
      await store.insertSession(siwe)
      expect(await store.session('session-b')).toEqual(siwe)
      expect(await store.accountByAddress('0xabc0000000000000000000000000000000000001')).toEqual({
        organization_id: 'org-a',
        user_id: 'user-a',
        address: '0xAbC0000000000000000000000000000000000001',
        email: 'a@example.test',
      })
      // A passkey sign-up's email was never verified: after 0005 it is kept as such and names no account.
      expect(await store.passkeyAccount('cred-p')).toMatchObject({ organization_id: 'org-p', unverified_email: 'p@example.test' })
      expect(await store.account('p@example.test')).toBeUndefined()
      expect(await store.accountByOrganization('org-p')).toEqual({ organization_id: 'org-p', user_id: 'user-p', address: '0xp', email: null })
      await store.insertNonce({ nonce: 'n1', holder: 'h', expires_at: 10 })
      expect(await store.spendNonce('n1', 'other', 5)).toBe(false)
      expect(await store.spendNonce('n1', 'h', 10)).toBe(false)
      expect(await store.spendNonce('n1', 'h', 5)).toBe(true)
      expect(await store.spendNonce('n1', 'h', 6)).toBe(false)
      expect(await store.nonce('n1')).toEqual({ nonce: 'n1', holder: 'h', expires_at: 10, used_at: 5 })
      await store.pruneNonces(10)
      expect(await store.nonce('n1')).toBeUndefined()
    } finally {
      await store.close()
    }
  })

  test('behavior: a passkey account’s unverified email names no account and is not unique; credentials are unique', async () => {
    const store = await openStore(await freshDatabaseUrl({ memory: true }))
    try {
      const row = {
        credential_id: 'cred',
        organization_id: 'org',
        user_id: 'user',
        address: '0x1',
        unverified_email: 'p@example.test',
        passkey_identifier: null,
        created_at: 1,
      }
      await store.insertPasskeyAccount(row)
      expect(await store.account('p@example.test')).toBeUndefined()
      expect(await store.accountByOrganization('org')).toEqual({ organization_id: 'org', user_id: 'user', address: '0x1', email: null })
      expect(await store.accountByAddress('0x1')).toEqual({ organization_id: 'org', user_id: 'user', address: '0x1', email: null })
      await expect(store.insertPasskeyAccount({ ...row, unverified_email: null })).rejects.toBeInstanceOf(StoreConflictError)
      // Whoever typed an email first does not block its owner's own passkey sign-up.
      await store.insertPasskeyAccount({ ...row, credential_id: 'other', organization_id: 'org-2' })
      await store.insertPasskeyAccount({ ...row, credential_id: 'a', unverified_email: null })
      await store.insertPasskeyAccount({ ...row, credential_id: 'b', unverified_email: null })
      expect(await store.passkeyAccount('b')).toMatchObject({ unverified_email: null })
    } finally {
      await store.close()
    }
  })

  test('behavior: an email account recorded twice (two instances signing the same email up) keeps the first', async () => {
    const store = await openStore(await freshDatabaseUrl({ memory: true }))
    try {
      const first = { email: 'a@example.test', organization_id: 'org-1', user_id: 'user-1', address: '0x1', created_at: 1 }
      expect(await store.insertAccount(first)).toEqual(first)
      expect(await store.insertAccount({ ...first, organization_id: 'org-2', user_id: 'user-2', address: '0x2', created_at: 2 })).toEqual(first)
    } finally {
      await store.close()
    }
  })

  test('behavior: a refresh token rotates once; a second use ends its session; signing out ends them all', async () => {
    const store = await openStore(await freshDatabaseUrl({ memory: true }))
    try {
      const session = {
        id: 's',
        email: null,
        organization_id: null,
        user_id: null,
        address: '0xb',
        kind: 'siwe',
        chain_id: 1,
        wallet_kind: 'injected',
        session_public_key: null,
        expires_at: 1000,
        created_at: 1,
      } as const
      await store.insertSession(session)
      await store.insertRefreshToken({ digest: 'r1', session_id: 's', expires_at: 1000, created_at: 1 })
      expect(await store.rotateRefreshToken('r1', { digest: 'r2', created_at: 2 }, 2)).toEqual(session)
      expect(await store.rotateRefreshToken('unknown', { digest: 'r3', created_at: 3 }, 3)).toBeUndefined()
      expect(await store.rotateRefreshToken('r2', { digest: 'r3', created_at: 3 }, 3)).toEqual(session)
      // r1 again: replayed, so the session ends, and r3 with it.
      expect(await store.rotateRefreshToken('r1', { digest: 'r4', created_at: 4 }, 4)).toBeUndefined()
      expect(await store.session('s')).toBeUndefined()
      expect(await store.rotateRefreshToken('r3', { digest: 'r5', created_at: 5 }, 5)).toBeUndefined()

      await store.insertSession({ ...session, id: 't' })
      await store.insertRefreshToken({ digest: 't1', session_id: 't', expires_at: 1000, created_at: 1 })
      await store.deleteSession('t')
      expect(await store.rotateRefreshToken('t1', { digest: 't2', created_at: 2 }, 2)).toBeUndefined()
      // Expired ones are refused and pruned.
      await store.insertSession({ ...session, id: 'u' })
      await store.insertRefreshToken({ digest: 'u1', session_id: 'u', expires_at: 1000, created_at: 1 })
      expect(await store.rotateRefreshToken('u1', { digest: 'u2', created_at: 1000 }, 1000)).toBeUndefined()
      await store.prune(1000, 0)
      expect(await store.session('u')).toBeUndefined()
    } finally {
      await store.close()
    }
  })

  test('behavior: an OAuth nonce is spent once across two stores on one database, and is free again only after it expired', async () => {
    const url = await freshDatabaseUrl()
    const [first, second] = [await openStore(url), await openStore(url)]
    try {
      expect(await first.spendOAuthNonce('n', 1000, 1)).toBe(true)
      expect(await second.spendOAuthNonce('n', 1000, 2)).toBe(false)
      expect(await first.spendOAuthNonce('n', 1000, 999)).toBe(false)
      // At its expiry it is dropped; its token is refused for being expired by then.
      expect(await second.spendOAuthNonce('n', 2000, 1000)).toBe(true)
      // Two at once: exactly one wins.
      expect((await Promise.all([first.spendOAuthNonce('m', 1000, 1), second.spendOAuthNonce('m', 1000, 1)])).sort()).toEqual([false, true])
    } finally {
      await Promise.all([first.close(), second.close()])
    }
  })

  test('error: a layout newer than this server is refused', async () => {
    const path = databasePath()
    const db = new Database(path)
    db.pragma('user_version = 4')
    db.close()
    await expect(openStore(path)).rejects.toThrowError(
      "Migration 0001_accounts_sessions_nonces of server failed: the file has store layout 4, newer than this server's",
    )
  })
})
