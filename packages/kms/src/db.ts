import { adminStatements, createSqliteAdminSchema } from './adminDb.js'
import { openPostgres } from './storage/postgres.js'
import { createPostgresSchema } from './storage/postgresSchema.js'
import { isPostgresUrl, type SqlDatabase } from './storage/sqlDatabase.js'
import { openSqlite } from './storage/sqlite.js'

export type OrganizationRow = { id: string; name: string; parent_id: string | null; root_quorum_threshold: number; created_at: number }
export type UserRow = { id: string; organization_id: string; name: string; email: string | null; created_at: number }
export type ApiKeyRow = {
  id: string
  user_id: string
  organization_id: string
  name: string
  public_key: string
  curve: string
  credential_type: string
  /** Unix ms; null: never. */
  expires_at: number | null
  created_at: number
}
export type WalletRow = { id: string; organization_id: string; name: string; sealed_mnemonic: string; created_at: number; exported: number; imported: number }
export type WalletAccountRow = {
  id: string
  wallet_id: string
  organization_id: string
  curve: string
  path_format: string
  path: string
  address_format: string
  address: string
  public_key: string
  created_at: number
  /**
   * The account's private key, sealed under the master key with `accountKeyRecord(id)` as
   * associated data, so signing opens 32 bytes instead of deriving from the mnemonic. Null for
   * accounts stored before keys were kept: the first signing derives and seals it.
   */
  sealed_private_key: string | null
}
/** A passkey: its credential id and COSE public key (base64url), as registered. */
export type AuthenticatorRow = {
  id: string
  user_id: string
  organization_id: string
  name: string
  credential_id: string
  public_key: string
  counter: number
  /** JSON array of AUTHENTICATOR_TRANSPORT_* values. */
  transports: string
  aaguid: string
  attestation_type: string
  created_at: number
}
/** The key an import bundle is encrypted to, per user, sealed at rest. */
export type ImportTargetRow = { user_id: string; organization_id: string; sealed_private_key: string; created_at: number }
export type OtpRow = {
  id: string
  organization_id: string
  user_id: string
  code_hash: string
  expires_at: number
  attempts: number
  used: number
  created_at: number
}
export type MailRow = { id: string; to_address: string; subject: string; text: string; html: string; created_at: number }
export type ActivityRow = {
  id: string
  organization_id: string
  fingerprint: string
  type: string
  status: string
  intent: string
  result: string | null
  failure: string | null
  created_at: number
  updated_at: number
  /** Who submitted it, and from which organization: an activity waiting for consensus runs as them. */
  submitted_by: string | null
  submitted_from: string | null
}
export type VoteRow = { id: string; activity_id: string; user_id: string; selection: string; created_at: number }

/**
 * The service's tables in one SQLite file (better-sqlite3), or in PostgreSQL when `location` is a
 * postgres:// URL (storage/postgres.ts). Key material is stored sealed (secrets.ts); this module
 * only moves rows.
 *
 * @example
 * const db = openDatabase(':memory:')
 * const shared = openDatabase('postgres://latchkey@db.internal/kms')
 */
export function openDatabase(location: string) {
  const db: SqlDatabase = isPostgresUrl(location) ? openPostgres(location) : openSqlite(location)
  try {
    if (db.dialect === 'postgres') createPostgresSchema(db)
    else createSqliteSchema(db)
    return statementsOf(db)
  } catch (error) {
    db.close()
    throw error
  }
}

/** The tables in SQLite; storage/postgresSchema.ts has them in PostgreSQL (change both). */
function createSqliteSchema(db: SqlDatabase) {
  db.exec(`
    create table if not exists organizations (
      id text primary key, name text not null, parent_id text references organizations (id),
      root_quorum_threshold integer not null default 1, created_at integer not null);
    create table if not exists users (
      id text primary key, organization_id text not null references organizations (id), name text not null,
      email text, created_at integer not null);
    create table if not exists api_keys (
      id text primary key, user_id text not null references users (id), organization_id text not null references organizations (id),
      name text not null, public_key text not null unique, curve text not null, credential_type text not null,
      expires_at integer, created_at integer not null);
    create table if not exists wallets (
      id text primary key, organization_id text not null references organizations (id), name text not null,
      sealed_mnemonic text not null, created_at integer not null, exported integer not null default 0, imported integer not null default 0,
      unique (organization_id, name));
    create table if not exists wallet_accounts (
      id text primary key, wallet_id text not null references wallets (id), organization_id text not null references organizations (id),
      curve text not null, path_format text not null, path text not null, address_format text not null, address text not null,
      public_key text not null, created_at integer not null, sealed_private_key text, unique (wallet_id, path));
    drop index if exists wallet_accounts_address;
    -- Addresses are looked up in any letter case (signWith may be checksummed or not).
    create index if not exists wallet_accounts_address_nocase on wallet_accounts (organization_id, address collate nocase);
    create table if not exists authenticators (
      id text primary key, user_id text not null references users (id), organization_id text not null references organizations (id),
      name text not null, credential_id text not null unique, public_key text not null, counter integer not null,
      transports text not null, aaguid text not null, attestation_type text not null, created_at integer not null);
    create table if not exists import_targets (
      user_id text primary key references users (id), organization_id text not null, sealed_private_key text not null, created_at integer not null);
    create table if not exists otps (
      id text primary key, organization_id text not null, user_id text not null, code_hash text not null,
      expires_at integer not null, attempts integer not null default 0, used integer not null default 0, created_at integer not null);
    create table if not exists mailbox (
      id text primary key, to_address text not null, subject text not null, text text not null, html text not null, created_at integer not null);
    create table if not exists activities (
      id text primary key, organization_id text not null, fingerprint text not null unique, type text not null,
      status text not null, intent text not null, result text, failure text, created_at integer not null, updated_at integer not null,
      submitted_by text, submitted_from text);
    create table if not exists votes (
      id text primary key, activity_id text not null references activities (id), user_id text not null, selection text not null,
      created_at integer not null, unique (activity_id, user_id));
  `)
  // Columns added after the first layout.
  const activityColumns = new Set((db.prepare('pragma table_info(activities)').all() as { name: string }[]).map((column) => column.name))
  if (!activityColumns.has('submitted_by'))
    db.exec('alter table activities add column submitted_by text; alter table activities add column submitted_from text')
  const accountColumns = new Set((db.prepare('pragma table_info(wallet_accounts)').all() as { name: string }[]).map((column) => column.name))
  if (!accountColumns.has('sealed_private_key')) db.exec('alter table wallet_accounts add column sealed_private_key text')
  createSqliteAdminSchema(db)
}

function statementsOf(db: SqlDatabase) {
  const statements = {
    insertOrganization: db.prepare('insert into organizations (id, name, parent_id, root_quorum_threshold, created_at) values (?, ?, ?, ?, ?)'),
    organization: db.prepare('select * from organizations where id = ?'),
    insertUser: db.prepare('insert into users (id, organization_id, name, email, created_at) values (?, ?, ?, ?, ?)'),
    user: db.prepare('select * from users where id = ? and organization_id = ?'),
    users: db.prepare('select * from users where organization_id = ? order by created_at, id'),
    insertAuthenticator: db.prepare(
      'insert into authenticators (id, user_id, organization_id, name, credential_id, public_key, counter, transports, aaguid, attestation_type, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    upsertImportTarget: db.prepare(
      'insert into import_targets (user_id, organization_id, sealed_private_key, created_at) values (?, ?, ?, ?) on conflict (user_id) do update set sealed_private_key = excluded.sealed_private_key, created_at = excluded.created_at',
    ),
    importTarget: db.prepare('select * from import_targets where user_id = ? and organization_id = ?'),
    deleteImportTarget: db.prepare('delete from import_targets where user_id = ?'),
    markImported: db.prepare('update wallets set imported = 1 where id = ?'),
    authenticatorByCredential: db.prepare('select * from authenticators where credential_id = ?'),
    authenticatorsOfUser: db.prepare('select * from authenticators where user_id = ? order by created_at, id'),
    authenticatorCounter: db.prepare('update authenticators set counter = ? where id = ?'),
    userByEmail: db.prepare('select * from users where organization_id = ? and lower(email) = lower(?)'),
    insertOtp: db.prepare('insert into otps (id, organization_id, user_id, code_hash, expires_at, created_at) values (?, ?, ?, ?, ?, ?)'),
    otp: db.prepare('select * from otps where id = ? and organization_id = ?'),
    otpAttempt: db.prepare('update otps set attempts = attempts + 1 where id = ?'),
    otpUsed: db.prepare('update otps set used = 1 where id = ?'),
    insertMail: db.prepare('insert into mailbox (id, to_address, subject, text, html, created_at) values (?, ?, ?, ?, ?, ?)'),
    mailbox: db.prepare('select * from mailbox order by created_at desc, rowid desc limit 200'),
    insertApiKey: db.prepare(
      'insert into api_keys (id, user_id, organization_id, name, public_key, curve, credential_type, expires_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    apiKeyByPublicKey: db.prepare('select * from api_keys where public_key = ?'),
    apiKeysOfUser: db.prepare('select * from api_keys where user_id = ? order by created_at, id'),
    insertWallet: db.prepare('insert into wallets (id, organization_id, name, sealed_mnemonic, created_at) values (?, ?, ?, ?, ?)'),
    wallet: db.prepare('select * from wallets where id = ? and organization_id = ?'),
    wallets: db.prepare('select * from wallets where organization_id = ? order by created_at, id'),
    markExported: db.prepare('update wallets set exported = 1 where id = ?'),
    insertAccount: db.prepare(
      'insert into wallet_accounts (id, wallet_id, organization_id, curve, path_format, path, address_format, address, public_key, created_at, sealed_private_key) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    sealAccountKey: db.prepare('update wallet_accounts set sealed_private_key = ? where id = ? and sealed_private_key is null'),
    accountsOfWallet: db.prepare('select * from wallet_accounts where wallet_id = ? order by created_at, rowid'),
    accountsOfOrganization: db.prepare('select * from wallet_accounts where organization_id = ? order by created_at, rowid'),
    accountByAddress: db.prepare('select * from wallet_accounts where organization_id = ? and address = ? collate nocase'),
    insertActivity: db.prepare(
      'insert into activities (id, organization_id, fingerprint, type, status, intent, result, failure, created_at, updated_at, submitted_by, submitted_from) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    settleActivity: db.prepare('update activities set status = ?, result = ?, failure = ?, updated_at = ? where id = ?'),
    insertVote: db.prepare('insert into votes (id, activity_id, user_id, selection, created_at) values (?, ?, ?, ?, ?)'),
    votes: db.prepare('select * from votes where activity_id = ? order by created_at, rowid'),
    activity: db.prepare('select * from activities where id = ? and organization_id = ?'),
    activityByFingerprint: db.prepare('select * from activities where fingerprint = ?'),
    ping: db.prepare('select 1 as ok'),
  }
  return {
    transaction: <result>(work: () => result): result => db.transaction(work),
    insertOrganization: (row: OrganizationRow) =>
      void statements.insertOrganization.run(row.id, row.name, row.parent_id, row.root_quorum_threshold, row.created_at),
    organization: (id: string) => statements.organization.get(id) as OrganizationRow | undefined,
    insertUser: (row: UserRow) => void statements.insertUser.run(row.id, row.organization_id, row.name, row.email, row.created_at),
    user: (id: string, organizationId: string) => statements.user.get(id, organizationId) as UserRow | undefined,
    users: (organizationId: string) => statements.users.all(organizationId) as UserRow[],
    insertAuthenticator: (row: AuthenticatorRow) =>
      void statements.insertAuthenticator.run(
        row.id,
        row.user_id,
        row.organization_id,
        row.name,
        row.credential_id,
        row.public_key,
        row.counter,
        row.transports,
        row.aaguid,
        row.attestation_type,
        row.created_at,
      ),
    upsertImportTarget: (row: ImportTargetRow) =>
      void statements.upsertImportTarget.run(row.user_id, row.organization_id, row.sealed_private_key, row.created_at),
    importTarget: (userId: string, organizationId: string) => statements.importTarget.get(userId, organizationId) as ImportTargetRow | undefined,
    deleteImportTarget: (userId: string) => void statements.deleteImportTarget.run(userId),
    markImported: (walletId: string) => void statements.markImported.run(walletId),
    authenticatorByCredential: (credentialId: string) => statements.authenticatorByCredential.get(credentialId) as AuthenticatorRow | undefined,
    authenticatorsOfUser: (userId: string) => statements.authenticatorsOfUser.all(userId) as AuthenticatorRow[],
    setAuthenticatorCounter: (id: string, counter: number) => void statements.authenticatorCounter.run(counter, id),
    userByEmail: (organizationId: string, email: string) => statements.userByEmail.get(organizationId, email) as UserRow | undefined,
    insertOtp: (row: Omit<OtpRow, 'attempts' | 'used'>) =>
      void statements.insertOtp.run(row.id, row.organization_id, row.user_id, row.code_hash, row.expires_at, row.created_at),
    otp: (id: string, organizationId: string) => statements.otp.get(id, organizationId) as OtpRow | undefined,
    otpAttempt: (id: string) => void statements.otpAttempt.run(id),
    otpUsed: (id: string) => void statements.otpUsed.run(id),
    insertMail: (row: MailRow) => void statements.insertMail.run(row.id, row.to_address, row.subject, row.text, row.html, row.created_at),
    mailbox: () => statements.mailbox.all() as MailRow[],
    insertApiKey: (row: ApiKeyRow) =>
      void statements.insertApiKey.run(
        row.id,
        row.user_id,
        row.organization_id,
        row.name,
        row.public_key,
        row.curve,
        row.credential_type,
        row.expires_at,
        row.created_at,
      ),
    apiKeyByPublicKey: (publicKey: string) => statements.apiKeyByPublicKey.get(publicKey) as ApiKeyRow | undefined,
    apiKeysOfUser: (userId: string) => statements.apiKeysOfUser.all(userId) as ApiKeyRow[],
    insertWallet: (row: WalletRow) => void statements.insertWallet.run(row.id, row.organization_id, row.name, row.sealed_mnemonic, row.created_at),
    wallet: (id: string, organizationId: string) => statements.wallet.get(id, organizationId) as WalletRow | undefined,
    wallets: (organizationId: string) => statements.wallets.all(organizationId) as WalletRow[],
    markExported: (walletId: string) => void statements.markExported.run(walletId),
    insertAccount: (row: WalletAccountRow) =>
      void statements.insertAccount.run(
        row.id,
        row.wallet_id,
        row.organization_id,
        row.curve,
        row.path_format,
        row.path,
        row.address_format,
        row.address,
        row.public_key,
        row.created_at,
        row.sealed_private_key,
      ),
    /** Keeps an older account's key sealed beside it, once derived; a key already there stays. */
    sealAccountKey: (accountId: string, sealedPrivateKey: string) => void statements.sealAccountKey.run(sealedPrivateKey, accountId),
    accountsOfWallet: (walletId: string) => statements.accountsOfWallet.all(walletId) as WalletAccountRow[],
    accountsOfOrganization: (organizationId: string) => statements.accountsOfOrganization.all(organizationId) as WalletAccountRow[],
    accountByAddress: (organizationId: string, address: string) => statements.accountByAddress.get(organizationId, address) as WalletAccountRow | undefined,
    insertActivity: (row: ActivityRow) =>
      void statements.insertActivity.run(
        row.id,
        row.organization_id,
        row.fingerprint,
        row.type,
        row.status,
        row.intent,
        row.result,
        row.failure,
        row.created_at,
        row.updated_at,
        row.submitted_by,
        row.submitted_from,
      ),
    settleActivity: (id: string, status: string, result: string | null, failure: string | null, at: number) =>
      void statements.settleActivity.run(status, result, failure, at, id),
    insertVote: (row: VoteRow) => void statements.insertVote.run(row.id, row.activity_id, row.user_id, row.selection, row.created_at),
    votes: (activityId: string) => statements.votes.all(activityId) as VoteRow[],
    activity: (id: string, organizationId: string) => statements.activity.get(id, organizationId) as ActivityRow | undefined,
    activityByFingerprint: (fingerprint: string) => statements.activityByFingerprint.get(fingerprint) as ActivityRow | undefined,
    /** Throws unless the database answers a query: the kms's `GET /readyz`. */
    ping: () => void statements.ping.get(),
    close: () => db.close(),
    // Private keys, tags, policies, invitations, OAuth providers, features (adminDb.ts).
    ...adminStatements(db),
  }
}

export type Db = ReturnType<typeof openDatabase>
