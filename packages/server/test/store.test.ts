import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, test } from 'vitest'
import { openStore, STORE_LAYOUT } from '../src/index.js'

// The store's layouts: a server.db written before passkeys (layout 1) or before SIWE (layout 2)
// opens with its rows kept.

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
  test('behavior: layout 1 migrates: rows kept, sessions may have no email, passkey accounts join', () => {
    const path = databasePath()
    writeLayout1(path)
    const store = openStore(path)
    try {
      expect(store.account('a@example.test')).toEqual({ email: 'a@example.test', organization_id: 'org-a', user_id: 'user-a', address: '0xa', created_at: 1 })
      expect(store.pendingCode('otp-a')).toEqual({ otp_id: 'otp-a', email: 'a@example.test', organization_id: 'org-a', created_at: 2 })
      expect(store.session('session-a')).toMatchObject({ email: 'a@example.test', kind: 'email' })
      store.insertSession({
        id: 'session-b',
        email: null,
        organization_id: 'org-b',
        user_id: 'user-b',
        address: '0xb',
        kind: 'passkey',
        chain_id: null,
        wallet_kind: null,
        expires_at: 5,
        created_at: 4,
      })
      expect(store.session('session-b')).toMatchObject({ email: null, kind: 'passkey' })
      store.insertPasskeyAccount({
        credential_id: 'cred-b',
        organization_id: 'org-b',
        user_id: 'user-b',
        address: '0xb',
        email: null,
        passkey_identifier: 'laptop',
        created_at: 4,
      })
      expect(store.accountByOrganization('org-b')).toEqual({ organization_id: 'org-b', user_id: 'user-b', address: '0xb', email: null })
      expect(store.accountByOrganization('org-a')).toEqual({ organization_id: 'org-a', user_id: 'user-a', address: '0xa', email: 'a@example.test' })
    } finally {
      store.close()
    }
    const db = new Database(path)
    expect(db.pragma('user_version', { simple: true })).toBe(STORE_LAYOUT)
    db.close()
    // Opening again changes nothing.
    const again = openStore(path)
    expect(again.session('session-b')).toMatchObject({ email: null })
    again.close()
  })

  test('behavior: layout 2 migrates: rows kept, sessions may have no organization and carry a chain and wallet kind, nonces join', () => {
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
      insert into sessions values ('session-a', null, 'org-a', 'user-a', '0xa', 'passkey', 9999999999999, 3);
    `)
    db.pragma('user_version = 2')
    db.close()
    const store = openStore(path)
    try {
      expect(store.session('session-a')).toEqual({
        id: 'session-a',
        email: null,
        organization_id: 'org-a',
        user_id: 'user-a',
        address: '0xa',
        kind: 'passkey',
        chain_id: null,
        wallet_kind: null,
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
        expires_at: 5,
        created_at: 4,
      } as const
      store.insertSession(siwe)
      expect(store.session('session-b')).toEqual(siwe)
      expect(store.accountByAddress('0xabc0000000000000000000000000000000000001')).toEqual({
        organization_id: 'org-a',
        user_id: 'user-a',
        address: '0xAbC0000000000000000000000000000000000001',
        email: 'a@example.test',
      })
      store.insertNonce({ nonce: 'n1', holder: 'h', expires_at: 10 })
      expect(store.spendNonce('n1', 'other', 5)).toBe(false)
      expect(store.spendNonce('n1', 'h', 10)).toBe(false)
      expect(store.spendNonce('n1', 'h', 5)).toBe(true)
      expect(store.spendNonce('n1', 'h', 6)).toBe(false)
      expect(store.nonce('n1')).toEqual({ nonce: 'n1', holder: 'h', expires_at: 10, used_at: 5 })
      store.pruneNonces(10)
      expect(store.nonce('n1')).toBeUndefined()
    } finally {
      store.close()
    }
  })

  test('behavior: a passkey account with an email is found by that email; emails and credentials are unique', () => {
    const store = openStore(':memory:')
    try {
      const row = {
        credential_id: 'cred',
        organization_id: 'org',
        user_id: 'user',
        address: '0x1',
        email: 'p@example.test',
        passkey_identifier: null,
        created_at: 1,
      }
      store.insertPasskeyAccount(row)
      expect(store.account('p@example.test')).toEqual({ email: 'p@example.test', organization_id: 'org', user_id: 'user', address: '0x1', created_at: 1 })
      expect(() => store.insertPasskeyAccount({ ...row, credential_id: 'other' })).toThrow(/UNIQUE constraint failed: passkey_accounts\.email/)
      expect(() => store.insertPasskeyAccount({ ...row, email: null })).toThrow(/UNIQUE constraint failed: passkey_accounts\.credential_id/)
      expect(() => store.insertPasskeyAccount({ ...row, email: null })).toThrow(expect.objectContaining({ name: 'StoreConflictError' }))
      // Accounts without an email do not collide with each other.
      store.insertPasskeyAccount({ ...row, credential_id: 'a', email: null })
      store.insertPasskeyAccount({ ...row, credential_id: 'b', email: null })
    } finally {
      store.close()
    }
  })

  test('error: a layout newer than this server is refused', () => {
    const path = databasePath()
    const db = new Database(path)
    db.pragma(`user_version = ${STORE_LAYOUT + 1}`)
    db.close()
    expect(() => openStore(path)).toThrow(`${path} has store layout ${STORE_LAYOUT + 1}, newer than this server's (${STORE_LAYOUT})`)
  })
})
