import type { SqlDatabase } from './sqlDatabase.js'

/**
 * Creates the service's tables in PostgreSQL, as db.ts and adminDb.ts create them in SQLite: the
 * same columns, keys and unique constraints, with bigint for unix-ms timestamps and lower()
 * indexes where SQLite compares `collate nocase`. Every table has an identity column `rowid`, so
 * statements that order by SQLite's rowid read the same here. Key material is stored exactly as in
 * SQLite: sealed text (secrets.ts). Change both places together.
 *
 * Idempotent, and safe when several instances start at once (an advisory lock serialises them).
 *
 * @internal
 */
export function createPostgresSchema(db: SqlDatabase) {
  db.transaction(() => {
    db.exec(`select pg_advisory_xact_lock(hashtext('latchkey kms schema'))`)
    db.exec(`
      create table if not exists organizations (
        id text primary key, name text not null, parent_id text references organizations (id),
        root_quorum_threshold integer not null default 1, created_at bigint not null, rowid bigint generated always as identity);
      create table if not exists users (
        id text primary key, organization_id text not null references organizations (id), name text not null,
        email text, created_at bigint not null, rowid bigint generated always as identity);
      create table if not exists api_keys (
        id text primary key, user_id text not null references users (id), organization_id text not null references organizations (id),
        name text not null, public_key text not null unique, curve text not null, credential_type text not null,
        expires_at bigint, created_at bigint not null, rowid bigint generated always as identity);
      create table if not exists wallets (
        id text primary key, organization_id text not null references organizations (id), name text not null,
        sealed_mnemonic text not null, created_at bigint not null, exported integer not null default 0, imported integer not null default 0,
        rowid bigint generated always as identity, unique (organization_id, name));
      create table if not exists wallet_accounts (
        id text primary key, wallet_id text not null references wallets (id), organization_id text not null references organizations (id),
        curve text not null, path_format text not null, path text not null, address_format text not null, address text not null,
        public_key text not null, created_at bigint not null, rowid bigint generated always as identity, unique (wallet_id, path));
      -- Addresses are looked up in any letter case (signWith may be checksummed or not).
      create index if not exists wallet_accounts_address_lower on wallet_accounts (organization_id, lower(address));
      create table if not exists authenticators (
        id text primary key, user_id text not null references users (id), organization_id text not null references organizations (id),
        name text not null, credential_id text not null unique, public_key text not null, counter bigint not null,
        transports text not null, aaguid text not null, attestation_type text not null, created_at bigint not null,
        rowid bigint generated always as identity);
      create table if not exists import_targets (
        user_id text primary key references users (id), organization_id text not null, sealed_private_key text not null, created_at bigint not null,
        rowid bigint generated always as identity);
      create table if not exists otps (
        id text primary key, organization_id text not null, user_id text not null, code_hash text not null,
        expires_at bigint not null, attempts integer not null default 0, used integer not null default 0, created_at bigint not null,
        rowid bigint generated always as identity);
      create table if not exists mailbox (
        id text primary key, to_address text not null, subject text not null, text text not null, html text not null, created_at bigint not null,
        rowid bigint generated always as identity);
      create table if not exists activities (
        id text primary key, organization_id text not null, fingerprint text not null unique, type text not null,
        status text not null, intent text not null, result text, failure text, created_at bigint not null, updated_at bigint not null,
        rowid bigint generated always as identity);
      create table if not exists votes (
        id text primary key, activity_id text not null references activities (id), user_id text not null, selection text not null,
        created_at bigint not null, rowid bigint generated always as identity, unique (activity_id, user_id));

      create table if not exists private_keys (
        id text primary key, organization_id text not null references organizations (id), name text not null, curve text not null,
        public_key text not null, sealed_private_key text not null, created_at bigint not null,
        exported integer not null default 0, imported integer not null default 0, rowid bigint generated always as identity,
        unique (organization_id, name));
      create table if not exists private_key_addresses (
        private_key_id text not null references private_keys (id) on delete cascade, organization_id text not null,
        format text not null, address text not null, rowid bigint generated always as identity, primary key (private_key_id, format));
      -- signWith names a private key by address in any letter case, as it does wallet accounts.
      create index if not exists private_key_addresses_address_lower on private_key_addresses (organization_id, lower(address));
      create table if not exists tags (
        id text primary key, organization_id text not null references organizations (id), name text not null, type text not null,
        created_at bigint not null, updated_at bigint not null, rowid bigint generated always as identity, unique (organization_id, type, name));
      create table if not exists tag_members (
        tag_id text not null references tags (id) on delete cascade, member_id text not null, rowid bigint generated always as identity,
        primary key (tag_id, member_id));
      create index if not exists tag_members_member on tag_members (member_id);
      create table if not exists policies (
        id text primary key, organization_id text not null references organizations (id), name text not null, effect text not null,
        condition text not null, consensus text not null, notes text not null, time text, created_at bigint not null, updated_at bigint not null,
        rowid bigint generated always as identity);
      create table if not exists invitations (
        id text primary key, organization_id text not null references organizations (id), receiver_user_name text not null,
        receiver_email text not null, receiver_user_tags text not null, access_type text not null, sender_user_id text not null,
        status text not null, created_at bigint not null, updated_at bigint not null, rowid bigint generated always as identity);
      create table if not exists oauth_providers (
        id text primary key, user_id text not null references users (id), organization_id text not null references organizations (id),
        name text not null, issuer text not null, audience text not null, subject text not null, created_at bigint not null,
        rowid bigint generated always as identity, unique (organization_id, issuer, audience, subject));
      create table if not exists organization_features (
        organization_id text not null references organizations (id), name text not null, value text not null,
        rowid bigint generated always as identity, primary key (organization_id, name));
      -- Empty for an organization until its users change: then every user it had is a root user.
      create table if not exists root_quorum_members (
        organization_id text not null references organizations (id), user_id text not null references users (id),
        rowid bigint generated always as identity, primary key (organization_id, user_id));

      -- Columns added after the first layout (db.ts and adminDb.ts add them to older SQLite files).
      alter table activities add column if not exists submitted_by text;
      alter table activities add column if not exists submitted_from text;
      alter table wallet_accounts add column if not exists sealed_private_key text;
      alter table users add column if not exists phone_number text;
      alter table users add column if not exists updated_at bigint;
    `)
  })
}
