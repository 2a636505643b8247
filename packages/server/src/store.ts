import Database from 'better-sqlite3'

/** A person who signed in by email: their sub-organization, user and first wallet address. */
export type AccountRow = { email: string; organization_id: string; user_id: string; address: string; created_at: number }
/** A person who signed up with a passkey: the credential, their sub-organization, user and first address. */
export type PasskeyAccountRow = {
  credential_id: string
  organization_id: string
  user_id: string
  address: string
  email: string | null
  passkey_identifier: string | null
  created_at: number
}
/** What the backend knows of a sub-organization, however its user signed up. */
export type KnownAccount = { organization_id: string; user_id: string; address: string; email: string | null }
/** A code sent and not yet redeemed: which sub-organization it belongs to. */
export type PendingCodeRow = { otp_id: string; email: string; organization_id: string; created_at: number }
/** How a browser signed in: an embedded-wallet sign-in, or Sign-In with Ethereum. */
export type SessionKind = 'email' | 'passkey' | 'recovery' | 'oauth' | 'siwe'
/** The kind of wallet that signed a SIWE message, as the browser reports it. */
export type WalletKind = 'injected' | 'walletConnect' | 'embedded'
/**
 * A signed-in browser. `email` is null for an account that signed up with a passkey alone;
 * `organization_id` and `user_id` are null for a SIWE session of a wallet this backend did not
 * create; `chain_id` and `wallet_kind` are set for SIWE sessions only.
 */
export type SessionRow = {
  id: string
  email: string | null
  organization_id: string | null
  user_id: string | null
  address: string
  kind: SessionKind
  chain_id: number | null
  wallet_kind: WalletKind | null
  expires_at: number
  created_at: number
}
/** A SIWE nonce: issued to the browser holding the pre-session cookie `holder`, spent once. */
export type NonceRow = { nonce: string; holder: string; expires_at: number; used_at: number | null }

/**
 * The layout this code writes (`pragma user_version`); layouts 1 (user_version 0) and 2 are
 * migrated on open.
 */
export const STORE_LAYOUT = 3

const SESSIONS_TABLE = `
  create table sessions (
    id text primary key, email text, organization_id text, user_id text, address text not null,
    kind text not null, chain_id integer, wallet_kind text, expires_at integer not null, created_at integer not null)`

/** Thrown when a row would break a uniqueness rule (an email or a credential registered twice). */
export class StoreConflictError extends Error {
  override name = 'StoreConflictError'
}

/**
 * The backend's own tables (better-sqlite3): accounts by email, passkey accounts by credential,
 * codes in flight, session JWTs already used, SIWE nonces, sessions.
 *
 * @example
 * const store = openStore(':memory:')
 */
export function openStore(path: string) {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  const layout = db.pragma('user_version', { simple: true }) as number
  if (layout > STORE_LAYOUT) {
    db.close()
    throw new Error(`${path} has store layout ${layout}, newer than this server's (${STORE_LAYOUT})`)
  }
  db.transaction(() => {
    const hasSessions = db.prepare(`select 1 from sqlite_master where type = 'table' and name = 'sessions'`).get() !== undefined
    // Layout 1 required an email on every session (passkey accounts may have none), layout 2 an
    // organization (SIWE sessions of outside wallets have none) and had no chain or wallet kind.
    if (layout < 3 && hasSessions) {
      db.exec(`
        alter table sessions rename to sessions_before;
        ${SESSIONS_TABLE};
        insert into sessions (id, email, organization_id, user_id, address, kind, expires_at, created_at)
          select id, email, organization_id, user_id, address, kind, expires_at, created_at from sessions_before;
        drop table sessions_before;
      `)
    }
    db.exec(`
      create table if not exists accounts (
        email text primary key, organization_id text not null, user_id text not null, address text not null, created_at integer not null);
      create index if not exists accounts_by_organization on accounts (organization_id);
      create table if not exists passkey_accounts (
        credential_id text primary key, organization_id text not null, user_id text not null, address text not null,
        email text, passkey_identifier text, created_at integer not null);
      create unique index if not exists passkey_accounts_by_email on passkey_accounts (email) where email is not null;
      create index if not exists passkey_accounts_by_organization on passkey_accounts (organization_id);
      create index if not exists accounts_by_address on accounts (lower(address));
      create index if not exists passkey_accounts_by_address on passkey_accounts (lower(address));
      create table if not exists spent_session_tokens (digest text primary key, expires_at integer not null);
      create table if not exists pending_codes (
        otp_id text primary key, email text not null, organization_id text not null, created_at integer not null);
      ${SESSIONS_TABLE.replace('create table', 'create table if not exists')};
      create table if not exists siwe_nonces (
        nonce text primary key, holder text not null, expires_at integer not null, used_at integer);
      create index if not exists siwe_nonces_by_expiry on siwe_nonces (expires_at);
    `)
    db.pragma(`user_version = ${STORE_LAYOUT}`)
  })()

  const statements = {
    ping: db.prepare('select 1 as ok'),
    account: db.prepare('select * from accounts where email = ?'),
    passkeyAccountByEmail: db.prepare('select * from passkey_accounts where email = ?'),
    insertAccount: db.prepare('insert into accounts (email, organization_id, user_id, address, created_at) values (?, ?, ?, ?, ?)'),
    passkeyAccount: db.prepare('select * from passkey_accounts where credential_id = ?'),
    insertPasskeyAccount: db.prepare(
      'insert into passkey_accounts (credential_id, organization_id, user_id, address, email, passkey_identifier, created_at) values (?, ?, ?, ?, ?, ?, ?)',
    ),
    accountByOrganization: db.prepare(`
      select organization_id, user_id, address, email from accounts where organization_id = @organizationId
      union all
      select organization_id, user_id, address, email from passkey_accounts where organization_id = @organizationId
      limit 1`),
    pendingCode: db.prepare('select * from pending_codes where otp_id = ?'),
    // The same request within one millisecond is the same kms activity, so the same otpId.
    insertPendingCode: db.prepare('insert or ignore into pending_codes (otp_id, email, organization_id, created_at) values (?, ?, ?, ?)'),
    deletePendingCode: db.prepare('delete from pending_codes where otp_id = ?'),
    prunePendingCodes: db.prepare('delete from pending_codes where created_at < ?'),
    spendSessionToken: db.prepare('insert or ignore into spent_session_tokens (digest, expires_at) values (?, ?)'),
    sessionTokenSpent: db.prepare('select 1 from spent_session_tokens where digest = ?'),
    pruneSessionTokens: db.prepare('delete from spent_session_tokens where expires_at <= ?'),
    session: db.prepare('select * from sessions where id = ?'),
    insertSession: db.prepare(
      'insert into sessions (id, email, organization_id, user_id, address, kind, chain_id, wallet_kind, expires_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    deleteSession: db.prepare('delete from sessions where id = ?'),
    pruneSessions: db.prepare('delete from sessions where expires_at <= ?'),
    insertNonce: db.prepare('insert into siwe_nonces (nonce, holder, expires_at) values (?, ?, ?)'),
    nonce: db.prepare('select * from siwe_nonces where nonce = ?'),
    // One statement: of two requests racing with one nonce, exactly one spends it.
    spendNonce: db.prepare('update siwe_nonces set used_at = @at where nonce = @nonce and holder = @holder and used_at is null and expires_at > @at'),
    pruneNonces: db.prepare('delete from siwe_nonces where expires_at <= ?'),
    accountByAddress: db.prepare(`
      select organization_id, user_id, address, email from accounts where lower(address) = lower(@address)
      union all
      select organization_id, user_id, address, email from passkey_accounts where lower(address) = lower(@address)
      limit 1`),
  }
  return {
    /** The account whose root user has this email, whether it signed up by email or with a passkey. */
    account(email: string): AccountRow | undefined {
      const byEmail = statements.account.get(email) as AccountRow | undefined
      if (byEmail) return byEmail
      const passkey = statements.passkeyAccountByEmail.get(email) as PasskeyAccountRow | undefined
      return passkey
        ? { email, organization_id: passkey.organization_id, user_id: passkey.user_id, address: passkey.address, created_at: passkey.created_at }
        : undefined
    },
    insertAccount: (row: AccountRow) => void statements.insertAccount.run(row.email, row.organization_id, row.user_id, row.address, row.created_at),
    passkeyAccount: (credentialId: string) => statements.passkeyAccount.get(credentialId) as PasskeyAccountRow | undefined,
    /** Throws StoreConflictError when the credential or the email is already registered. */
    insertPasskeyAccount(row: PasskeyAccountRow) {
      try {
        statements.insertPasskeyAccount.run(row.credential_id, row.organization_id, row.user_id, row.address, row.email, row.passkey_identifier, row.created_at)
      } catch (error) {
        if ((error as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) throw new StoreConflictError((error as Error).message)
        throw error
      }
    },
    /** The account of a sub-organization, if this backend created it. */
    accountByOrganization: (organizationId: string) => statements.accountByOrganization.get({ organizationId }) as KnownAccount | undefined,
    pendingCode: (otpId: string) => statements.pendingCode.get(otpId) as PendingCodeRow | undefined,
    insertPendingCode: (row: PendingCodeRow) => void statements.insertPendingCode.run(row.otp_id, row.email, row.organization_id, row.created_at),
    deletePendingCode: (otpId: string) => void statements.deletePendingCode.run(otpId),
    /** Whether a session JWT (by the digest of its signed part) has signed a browser in already. */
    sessionTokenSpent: (digest: string) => statements.sessionTokenSpent.get(digest) !== undefined,
    /** Marks a session JWT used until it expires; false when it already was. */
    spendSessionToken: (digest: string, expiresAt: number) => statements.spendSessionToken.run(digest, expiresAt).changes === 1,
    session: (id: string) => statements.session.get(id) as SessionRow | undefined,
    insertSession: (row: SessionRow) =>
      void statements.insertSession.run(
        row.id,
        row.email,
        row.organization_id,
        row.user_id,
        row.address,
        row.kind,
        row.chain_id,
        row.wallet_kind,
        row.expires_at,
        row.created_at,
      ),
    deleteSession: (id: string) => void statements.deleteSession.run(id),
    /** The account of the embedded wallet at `address` (any case), if this backend created it. */
    accountByAddress: (address: string) => statements.accountByAddress.get({ address }) as KnownAccount | undefined,
    insertNonce: (row: Omit<NonceRow, 'used_at'>) => void statements.insertNonce.run(row.nonce, row.holder, row.expires_at),
    nonce: (nonce: string) => statements.nonce.get(nonce) as NonceRow | undefined,
    /** Marks the nonce used if it is `holder`'s, unused and unexpired at `at`; false otherwise. */
    spendNonce: (nonce: string, holder: string, at: number) => statements.spendNonce.run({ nonce, holder, at }).changes === 1,
    /** Drops SIWE nonces that have expired, used or not. */
    pruneNonces: (now: number) => void statements.pruneNonces.run(now),
    /** Drops sessions, spent session JWTs and SIWE nonces that have expired, and codes older than `codesBefore`. */
    prune(now: number, codesBefore: number) {
      statements.pruneSessions.run(now)
      statements.pruneSessionTokens.run(now)
      statements.pruneNonces.run(now)
      statements.prunePendingCodes.run(codesBefore)
    },
    /** Throws unless the database answers a query: the backend's `GET /readyz`. */
    ping: () => void statements.ping.get(),
    close: () => void db.close(),
  }
}

export type Store = ReturnType<typeof openStore>
