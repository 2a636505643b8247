import Database from 'better-sqlite3'

/** A person who signed in by email: their sub-organization, user and first wallet address. */
export type AccountRow = { email: string; organization_id: string; user_id: string; address: string; created_at: number }
/** A code sent and not yet redeemed: which sub-organization it belongs to. */
export type PendingCodeRow = { otp_id: string; email: string; organization_id: string; created_at: number }
/** A signed-in browser. */
export type SessionRow = { id: string; email: string; organization_id: string; user_id: string; address: string; kind: string; expires_at: number; created_at: number }

/**
 * The backend's own tables (better-sqlite3): accounts by email, codes in flight, sessions.
 *
 * @example
 * const store = openStore(':memory:')
 */
export function openStore(path: string) {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.exec(`
    create table if not exists accounts (
      email text primary key, organization_id text not null, user_id text not null, address text not null, created_at integer not null);
    create table if not exists pending_codes (
      otp_id text primary key, email text not null, organization_id text not null, created_at integer not null);
    create table if not exists sessions (
      id text primary key, email text not null, organization_id text not null, user_id text not null, address text not null,
      kind text not null, expires_at integer not null, created_at integer not null);
  `)
  const statements = {
    account: db.prepare('select * from accounts where email = ?'),
    insertAccount: db.prepare('insert into accounts (email, organization_id, user_id, address, created_at) values (?, ?, ?, ?, ?)'),
    pendingCode: db.prepare('select * from pending_codes where otp_id = ?'),
    // The same request within one millisecond is the same kms activity, so the same otpId.
    insertPendingCode: db.prepare('insert or ignore into pending_codes (otp_id, email, organization_id, created_at) values (?, ?, ?, ?)'),
    deletePendingCode: db.prepare('delete from pending_codes where otp_id = ?'),
    prunePendingCodes: db.prepare('delete from pending_codes where created_at < ?'),
    session: db.prepare('select * from sessions where id = ?'),
    insertSession: db.prepare('insert into sessions (id, email, organization_id, user_id, address, kind, expires_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?)'),
    deleteSession: db.prepare('delete from sessions where id = ?'),
    pruneSessions: db.prepare('delete from sessions where expires_at <= ?'),
  }
  return {
    account: (email: string) => statements.account.get(email) as AccountRow | undefined,
    insertAccount: (row: AccountRow) => void statements.insertAccount.run(row.email, row.organization_id, row.user_id, row.address, row.created_at),
    pendingCode: (otpId: string) => statements.pendingCode.get(otpId) as PendingCodeRow | undefined,
    insertPendingCode: (row: PendingCodeRow) => void statements.insertPendingCode.run(row.otp_id, row.email, row.organization_id, row.created_at),
    deletePendingCode: (otpId: string) => void statements.deletePendingCode.run(otpId),
    session: (id: string) => statements.session.get(id) as SessionRow | undefined,
    insertSession: (row: SessionRow) =>
      void statements.insertSession.run(row.id, row.email, row.organization_id, row.user_id, row.address, row.kind, row.expires_at, row.created_at),
    deleteSession: (id: string) => void statements.deleteSession.run(id),
    /** Drops sessions that have expired and codes older than `codesBefore`. */
    prune(now: number, codesBefore: number) {
      statements.pruneSessions.run(now)
      statements.prunePendingCodes.run(codesBefore)
    },
    close: () => db.close(),
  }
}

export type Store = ReturnType<typeof openStore>
