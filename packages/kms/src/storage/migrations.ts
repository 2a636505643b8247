import { auditMigration, type Migration } from '@latchkey/service/database'
import { type Kysely, sql } from 'kysely'

type Dialect = 'sqlite' | 'postgres'

// The kms's versioned migrations, each written for both engines: bigint unix-ms columns and an
// identity `rowid` on PostgreSQL (insertion order, which SQLite keeps in its implicit rowid).
// A migration never changes once released; a new layout is a new migration.

type Statements = { sqlite: readonly string[]; postgres: readonly string[] }

/** A table in both dialects: `{ms}` is the unix-ms column type, `{rowid}` PostgreSQL's identity column. */
function table(name: string, columns: string): Statements {
  const body = (ms: string, rowid: string) => `create table if not exists ${name} (${columns.replaceAll('{ms}', ms).replaceAll('{rowid}', rowid)})`
  return { sqlite: [body('integer', '')], postgres: [body('bigint', ', rowid bigint generated always as identity')] }
}
const both = (statement: string): Statements => ({ sqlite: [statement], postgres: [statement] })
const join = (...parts: Statements[]): Statements => ({ sqlite: parts.flatMap((part) => part.sqlite), postgres: parts.flatMap((part) => part.postgres) })

/** The layout the kms had before versioned migrations, so databases it created carry on where they are. */
const INITIAL = join(
  table(
    'organizations',
    'id text primary key, name text not null, parent_id text references organizations (id), root_quorum_threshold integer not null default 1, created_at {ms} not null{rowid}',
  ),
  table(
    'users',
    'id text primary key, organization_id text not null references organizations (id), name text not null, email text, created_at {ms} not null{rowid}',
  ),
  table(
    'api_keys',
    'id text primary key, user_id text not null references users (id), organization_id text not null references organizations (id), name text not null, public_key text not null unique, curve text not null, credential_type text not null, expires_at {ms}, created_at {ms} not null{rowid}',
  ),
  table(
    'wallets',
    'id text primary key, organization_id text not null references organizations (id), name text not null, sealed_mnemonic text not null, created_at {ms} not null, exported integer not null default 0, imported integer not null default 0{rowid}, unique (organization_id, name)',
  ),
  table(
    'wallet_accounts',
    'id text primary key, wallet_id text not null references wallets (id), organization_id text not null references organizations (id), curve text not null, path_format text not null, path text not null, address_format text not null, address text not null, public_key text not null, created_at {ms} not null{rowid}, unique (wallet_id, path)',
  ),
  table(
    'authenticators',
    'id text primary key, user_id text not null references users (id), organization_id text not null references organizations (id), name text not null, credential_id text not null unique, public_key text not null, counter {ms} not null, transports text not null, aaguid text not null, attestation_type text not null, created_at {ms} not null{rowid}',
  ),
  table(
    'import_targets',
    'user_id text primary key references users (id), organization_id text not null, sealed_private_key text not null, created_at {ms} not null{rowid}',
  ),
  table(
    'otps',
    'id text primary key, organization_id text not null, user_id text not null, code_hash text not null, expires_at {ms} not null, attempts integer not null default 0, used integer not null default 0, created_at {ms} not null{rowid}',
  ),
  table(
    'mailbox',
    'id text primary key, to_address text not null, subject text not null, text text not null, html text not null, created_at {ms} not null{rowid}',
  ),
  table(
    'activities',
    'id text primary key, organization_id text not null, fingerprint text not null unique, type text not null, status text not null, intent text not null, result text, failure text, created_at {ms} not null, updated_at {ms} not null{rowid}',
  ),
  table(
    'votes',
    'id text primary key, activity_id text not null references activities (id), user_id text not null, selection text not null, created_at {ms} not null{rowid}, unique (activity_id, user_id)',
  ),
  table(
    'private_keys',
    'id text primary key, organization_id text not null references organizations (id), name text not null, curve text not null, public_key text not null, sealed_private_key text not null, created_at {ms} not null, exported integer not null default 0, imported integer not null default 0{rowid}, unique (organization_id, name)',
  ),
  table(
    'private_key_addresses',
    'private_key_id text not null references private_keys (id) on delete cascade, organization_id text not null, format text not null, address text not null{rowid}, primary key (private_key_id, format)',
  ),
  table(
    'tags',
    'id text primary key, organization_id text not null references organizations (id), name text not null, type text not null, created_at {ms} not null, updated_at {ms} not null{rowid}, unique (organization_id, type, name)',
  ),
  table('tag_members', 'tag_id text not null references tags (id) on delete cascade, member_id text not null{rowid}, primary key (tag_id, member_id)'),
  both('create index if not exists tag_members_member on tag_members (member_id)'),
  table(
    'policies',
    'id text primary key, organization_id text not null references organizations (id), name text not null, effect text not null, condition text not null, consensus text not null, notes text not null, time text, created_at {ms} not null, updated_at {ms} not null{rowid}',
  ),
  table(
    'invitations',
    'id text primary key, organization_id text not null references organizations (id), receiver_user_name text not null, receiver_email text not null, receiver_user_tags text not null, access_type text not null, sender_user_id text not null, status text not null, created_at {ms} not null, updated_at {ms} not null{rowid}',
  ),
  table(
    'oauth_providers',
    'id text primary key, user_id text not null references users (id), organization_id text not null references organizations (id), name text not null, issuer text not null, audience text not null, subject text not null, created_at {ms} not null{rowid}, unique (organization_id, issuer, audience, subject)',
  ),
  table(
    'organization_features',
    'organization_id text not null references organizations (id), name text not null, value text not null{rowid}, primary key (organization_id, name)',
  ),
  // Empty for an organization until its users change: then every user it had is a root user.
  table(
    'root_quorum_members',
    'organization_id text not null references organizations (id), user_id text not null references users (id){rowid}, primary key (organization_id, user_id)',
  ),
)

/** Columns added after the first layout, on databases that predate them. */
const LATE_COLUMNS: readonly [table: string, column: string, type: string][] = [
  ['activities', 'submitted_by', 'text'],
  ['activities', 'submitted_from', 'text'],
  ['wallet_accounts', 'sealed_private_key', 'text'],
  ['users', 'phone_number', 'text'],
  ['users', 'updated_at', '{ms}'],
]

// biome-ignore lint/suspicious/noExplicitAny: a migration runs before the schema type it creates exists.
async function run(db: Kysely<any>, dialect: Dialect, statements: Statements) {
  for (const statement of statements[dialect]) await sql.raw(statement).execute(db)
}

/**
 * Adds a column unless the table has it: a database whose migration records were lost runs every
 * migration again (SQLite has no `add column if not exists`).
 */
// biome-ignore lint/suspicious/noExplicitAny: a migration runs before the schema type it creates exists.
async function addColumn(db: Kysely<any>, dialect: Dialect, name: string, column: string, type: string) {
  const columnType = type.replace('{ms}', dialect === 'postgres' ? 'bigint' : 'integer')
  if (dialect === 'postgres') await sql.raw(`alter table ${name} add column if not exists ${column} ${columnType}`).execute(db)
  else {
    const { rows } = await sql<{ name: string }>`select name from pragma_table_info(${name})`.execute(db)
    if (!rows.some((row) => row.name === column)) await sql.raw(`alter table ${name} add column ${column} ${columnType}`).execute(db)
  }
}

/**
 * The kms's migrations, oldest first, applied by @latchkey/service/database when the kms opens its
 * database and recorded in `kms_migrations` (its own table: the backend's may share the database).
 */
export const KMS_MIGRATIONS: readonly Migration[] = [
  {
    name: '0001_initial',
    async up(db, dialect) {
      await run(db, dialect, INITIAL)
      for (const [name, column, type] of LATE_COLUMNS) await addColumn(db, dialect, name, column, type)
    },
  },
  {
    name: '0002_lookups_and_outbox',
    async up(db, dialect) {
      await run(
        db,
        dialect,
        join(
          // Addresses and emails are compared as lower(x) = lower(?) on both engines, served by these.
          both('drop index if exists wallet_accounts_address'),
          both('drop index if exists wallet_accounts_address_nocase'),
          both('drop index if exists private_key_addresses_address'),
          both('create index if not exists wallet_accounts_address_lower on wallet_accounts (organization_id, lower(address))'),
          both('create index if not exists private_key_addresses_address_lower on private_key_addresses (organization_id, lower(address))'),
          both('create index if not exists users_email_lower on users (organization_id, lower(email))'),
          both('create index if not exists organizations_parent on organizations (parent_id)'),
          both('create index if not exists wallets_organization on wallets (organization_id)'),
          both('create index if not exists activities_organization on activities (organization_id, created_at)'),
          // Mail after commit: written in the activity's transaction, sent once it committed.
          table(
            'outbox',
            'id text primary key, activity_id text, to_address text not null, sealed_mail text not null, status text not null, attempts integer not null default 0, next_attempt_at {ms} not null, last_error text, created_at {ms} not null, expires_at {ms} not null{rowid}',
          ),
          both('create index if not exists outbox_due on outbox (status, next_attempt_at)'),
          both('create index if not exists outbox_activity on outbox (activity_id)'),
        ),
      )
    },
  },
  {
    // A policy's consensus reads the credentials its approvers voted with (`credentials`).
    name: '0003_vote_credentials',
    async up(db, dialect) {
      await addColumn(db, dialect, 'votes', 'credential', 'text')
    },
  },
  {
    // A vote lists the stamp it was cast with (v1Vote's message, publicKey, signature and scheme);
    // an activity keeps the policy engine's evaluations of it (get_policy_evaluations).
    name: '0004_vote_stamps_and_evaluations',
    async up(db, dialect) {
      for (const column of ['message', 'public_key', 'signature', 'scheme']) await addColumn(db, dialect, 'votes', column, 'text')
      await addColumn(db, dialect, 'activities', 'policy_evaluations', 'text')
    },
  },
  // The hash-chained audit trail (@latchkey/service/database's audit.ts): kms_audit_events.
  auditMigration('0005_audit_events', 'kms'),
  {
    // Rate limits per API key and per organization, one fixed window per subject, shared by every
    // instance on the database (http/rateLimit.ts).
    name: '0006_rate_limits',
    // A new table that code before it never reads.
    expand: true,
    async up(db, dialect) {
      await run(
        db,
        dialect,
        join(
          table('rate_limits', 'subject text primary key, window_started_at {ms} not null, count integer not null'),
          both('create index if not exists rate_limits_window on rate_limits (window_started_at)'),
        ),
      )
    },
  },
  {
    // ERC-7715 grants (grants/): a dedicated API key's rule, and the ledger of what it signed, read
    // as a rolling window. Deleting the key (revoke_grant, delete_api_keys) takes its rule and ledger.
    // Not an expansion: code before it would let a grant's key sign anything.
    name: '0007_grants',
    async up(db, dialect) {
      await run(
        db,
        dialect,
        join(
          table(
            'grants',
            'id text primary key, organization_id text not null references organizations (id), user_id text not null references users (id), api_key_id text not null unique references api_keys (id) on delete cascade, chain_id integer not null, account text not null, rule text not null, expires_at {ms} not null, created_at {ms} not null{rowid}',
          ),
          both('create index if not exists grants_organization on grants (organization_id, created_at)'),
          table(
            'grant_spends',
            'grant_id text not null references grants (id) on delete cascade, asset text not null, amount text not null, activity_id text not null, signed_at {ms} not null{rowid}',
          ),
          both('create index if not exists grant_spends_window on grant_spends (grant_id, asset, signed_at)'),
        ),
      )
    },
  },
  {
    // Not an expansion: code before it would redeem these codes through otp_auth in clear.
    // A code of init_otp (V3) arrives encrypted to a target key of its own, kept sealed in its row;
    // codes of init_otp_auth have none.
    name: '0008_otp_targets',
    async up(db, dialect) {
      await addColumn(db, dialect, 'otps', 'sealed_target_key', 'text')
    },
  },
  {
    // Not an expansion: code before it cannot open rows sealed by a data key (v2:).
    // The key hierarchy (keyring/): data keys that seal the rows, each wrapped by a KEK named by id.
    name: '0009_data_keys',
    async up(db, dialect) {
      await run(db, dialect, table('data_keys', 'id text primary key, kek_id text not null, wrapped text not null, created_at {ms} not null{rowid}'))
    },
  },
  {
    // When the user last proved themselves on the way to an API key (policies/freshVerification.ts).
    // It could be an expansion: code before it ignores the column and registers keys with null, which
    // only withholds freshness, never grants it. It is left a contraction so that releases with and
    // without the inheritance never serve one database together: whether a key registered after an
    // email sign-in may export would depend on which instance registered it.
    name: '0010_api_key_verified_at',
    async up(db, dialect) {
      await addColumn(db, dialect, 'api_keys', 'verified_at', '{ms}')
    },
  },
  {
    // A grant ends with the session that made it (grants/activities.ts): a grant's key names the
    // API key whose stamp created it, and deleting that key deletes it, its rule and its ledger (on
    // delete cascade, in the deleting statement: delete_api_keys, a sign-out, a user's deletion).
    // Keys from before it have none and are left as they are: they end with their grant's expiry,
    // revoke_grant or delete_api_keys of the key itself.
    // Not an expansion: code before it would make grants that outlive their session.
    name: '0011_grant_key_creators',
    async up(db, dialect) {
      await addColumn(db, dialect, 'api_keys', 'created_by_api_key_id', 'text references api_keys (id) on delete cascade')
      await run(db, dialect, both('create index if not exists api_keys_created_by on api_keys (created_by_api_key_id)'))
    },
  },
  {
    // A code of init_otp (V3) to an address no user of a top-level organization has yet: a sign-up
    // proves its email before its sub-organization exists (the backend's passkey sign-up, security
    // review H2). Its row names no user (user_id '') but the address. Not an expansion: code before
    // it would read such a row as a user's code.
    name: '0012_otp_contacts',
    async up(db, dialect) {
      await addColumn(db, dialect, 'otps', 'contact', 'text')
      await run(db, dialect, both('create index if not exists otps_contact on otps (contact)'))
    },
  },
  {
    // Second factors (mfa/): a user's TOTP secrets (sealed) and passkeys marked as factors, with
    // their wrong-code count and lock; the user's one-time recovery codes (as hashes); and when
    // the holder of an API key last verified a factor. Deleting the passkey, the API key or the
    // user takes their rows. Not an expansion: code before it would not ask for the factor.
    name: '0013_mfa',
    async up(db, dialect) {
      await run(
        db,
        dialect,
        join(
          table(
            'mfa_factors',
            'id text primary key, organization_id text not null references organizations (id), user_id text not null references users (id), type text not null, name text not null, status text not null, sealed_secret text, authenticator_id text unique references authenticators (id) on delete cascade, failures integer not null default 0, locked_until {ms}, last_time_step {ms}, created_at {ms} not null{rowid}',
          ),
          both('create index if not exists mfa_factors_user on mfa_factors (user_id)'),
          table(
            'mfa_recovery_codes',
            'code_hash text primary key, user_id text not null references users (id), organization_id text not null references organizations (id), used_at {ms}, created_at {ms} not null{rowid}',
          ),
          both('create index if not exists mfa_recovery_codes_user on mfa_recovery_codes (user_id)'),
          table('mfa_verifications', 'api_key_id text primary key references api_keys (id) on delete cascade, verified_at {ms} not null{rowid}'),
        ),
      )
    },
  },
  {
    // An organization's policies, read in their order (created_at, then insertion) by every
    // authorization: without it each signature scanned every organization's policies, and sorted
    // them (issue 31; in SQLite an index's entries end with the rowid, so no sort is left either).
    name: '0014_policies_by_organization',
    // An index that code before it does not need and does not mind.
    expand: true,
    async up(db, dialect) {
      await run(db, dialect, both('create index if not exists policies_organization on policies (organization_id, created_at)'))
    },
  },
]
