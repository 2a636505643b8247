import { randomBytes } from 'node:crypto'
import type { Metrics } from '@latchkey/service'
import { auditMigration, type Database, type Migration, openDatabase, UniqueViolationError } from '@latchkey/service/database'
import { type Kysely, sql, type Transaction } from 'kysely'
import { type PaymasterSchema, paymasterMigration } from './paymaster/schema.js'
import { type NewWebhookEvent, sessionEvents } from './webhooks/events.js'
import { webhookOutbox } from './webhooks/outbox.js'
import { type WebhookSchema, webhooksMigration } from './webhooks/schema.js'

/** A person who signed in by email: their sub-organization, user and first wallet address. */
export type AccountRow = { email: string; organization_id: string; user_id: string; address: string; created_at: number }
/**
 * A person who signed up with a passkey: the credential, their sub-organization, user and first
 * address. `unverified_email` is what the sign-up said the email was: nobody proved it, so it names
 * no account (`account()` never answers it), is not the kms user's email and is in no session.
 */
export type PasskeyAccountRow = {
  credential_id: string
  organization_id: string
  user_id: string
  address: string
  unverified_email: string | null
  passkey_identifier: string | null
  created_at: number
}
/** What the backend knows of a sub-organization, however its user signed up. */
export type KnownAccount = { organization_id: string; user_id: string; address: string; email: string | null }
/** A code sent and not yet redeemed: which sub-organization it belongs to. */
export type PendingCodeRow = { otp_id: string; email: string; organization_id: string; created_at: number }
/** How a browser signed in: an embedded-wallet sign-in, or Sign-In with Ethereum. */
export type SessionKind = 'email' | 'passkey' | 'recovery' | 'oauth' | 'siwe' | 'guest'
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
  /**
   * The kms API key (compressed P-256) the sign-in registered for the browser, when the backend
   * knows it (email, OAuth, passkey sign-up, a stamp_login JWT): sign-out deletes it in the kms.
   */
  session_public_key: string | null
  expires_at: number
  created_at: number
}
/** A SIWE nonce: issued to the browser holding the pre-session cookie `holder`, spent once. */
export type NonceRow = { nonce: string; holder: string; expires_at: number; used_at: number | null }
/**
 * A refresh token of a session's JWTs, by the SHA-256 of the token (the token itself is never
 * stored). Each is used once: using it issues the next one (rotation).
 */
export type RefreshTokenRow = { digest: string; session_id: string; expires_at: number; used_at: number | null; created_at: number }
/** An OAuth ID token's nonce that signed a browser in: kept until the token expires, so no instance accepts it again. */
export type OAuthNonceRow = { nonce: string; expires_at: number }
/** A rate limit's fixed window for one key (`limit:subject`), shared by every instance on the database. */
export type RateLimitRow = { key: string; window_started_at: number; count: number }

/**
 * How a user signs in: `email` (the address, lower case), `passkey` (the credential id),
 * `oauth:<provider>` (the ID token's issuer and subject, `<iss> <sub>`), `wallet` (an external
 * wallet's checksummed address, proven by SIWE), `external` (the app's own id of a pregenerated
 * user, `POST /admin/users {externalId}`: it names the user to the app's backend and signs nobody in),
 * `guest` (a guest account, `POST /auth/guest`, by its sub-organization: its only credential is
 * the consent frame's key). `external` and `guest` are no way in: HIDDEN_LOGIN_KINDS.
 */
export type LoginKind = 'email' | 'passkey' | 'wallet' | 'external' | 'guest' | `oauth:${string}`
/** Login kinds that record a user without being a way in: not listed, counted or unlinked as logins. */
export const HIDDEN_LOGIN_KINDS: readonly LoginKind[] = ['external', 'guest']

/**
 * One login of a user (account linking, issue 28): unique on (kind, subject), so a login names one
 * user. `label` is what the user sees (the email, `Google · a@b.c`, the address, the passkey's
 * name); `kms_id` the kms's id of its credential (an authenticator or OAuth provider), if any.
 */
export type LoginRow = {
  id: string
  kind: LoginKind
  subject: string
  organization_id: string
  user_id: string
  /** The user's embedded wallet: the account stays known by its logins whichever sign-up row goes. */
  address: string
  label: string
  kms_id: string | null
  created_at: number
}

/** The backend's tables, as Kysely sees them. */
export type ServerSchema = WebhookSchema &
  PaymasterSchema & {
    /** The kms event follower's cursor (`<completed ms>:<activity id>`), one row named `activities`. */
    kms_event_cursor: { name: string; cursor: string }
    accounts: AccountRow
    passkey_accounts: PasskeyAccountRow
    pending_codes: PendingCodeRow
    spent_session_tokens: { digest: string; expires_at: number }
    sessions: SessionRow
    siwe_nonces: NonceRow
    refresh_tokens: RefreshTokenRow
    oauth_nonces: OAuthNonceRow
    rate_limits: RateLimitRow
    /**
     * `unproven_since`: when `POST /auth/email/start` wrote an email login whose code no sign-in
     * has proven yet (null once one has, and for every other login): until then a proven link of
     * the email takes it over (`linkLogin`), so whoever typed an address first cannot squat it.
     */
    logins: LoginRow & { unproven_since: number | null }
  }

/** Thrown when a row would break a uniqueness rule (an email or a credential registered twice). */
export class StoreConflictError extends Error {
  override name = 'StoreConflictError'
}

/** A login is taken already: by the user linking it (`self`) or by another user (`other`). */
export class LoginConflictError extends StoreConflictError {
  override name = 'LoginConflictError'
  constructor(readonly owner: 'self' | 'other') {
    super(`the login belongs to ${owner === 'self' ? 'this user' : 'another user'}`)
  }
}
/** The user has an email login already: one per user (the kms user has one email). */
export class EmailAlreadyLinkedError extends StoreConflictError {
  override name = 'EmailAlreadyLinkedError'
}
/** Unlinking would leave the user without a login. */
export class LastLoginError extends Error {
  override name = 'LastLoginError'
}
/** The user has no login of that id. */
export class UnknownLoginError extends Error {
  override name = 'UnknownLoginError'
}

/** What `account.linked` and `account.unlinked` say: the user and the login (never its kms id). */
const loginEventData = (row: LoginRow) => ({
  userId: row.user_id,
  organizationId: row.organization_id,
  address: row.address,
  login: { id: row.id, kind: row.kind, label: row.label },
})

/** A login's id as `GET /auth/user` shows it and `DELETE /auth/user/logins/:id` takes it. */
export const newLoginId = () => `lg_${randomBytes(12).toString('base64url')}`

/** The login row of an email account or a passkey account, as sign-ups write it (and the migration backfills). */
export const emailLogin = (row: Pick<AccountRow, 'email' | 'organization_id' | 'user_id' | 'address' | 'created_at'>): LoginRow => ({
  id: newLoginId(),
  kind: 'email',
  subject: row.email,
  organization_id: row.organization_id,
  user_id: row.user_id,
  address: row.address,
  label: row.email,
  kms_id: null,
  created_at: row.created_at,
})
export const passkeyLogin = (
  row: Pick<PasskeyAccountRow, 'credential_id' | 'organization_id' | 'user_id' | 'address' | 'passkey_identifier' | 'created_at'>,
): LoginRow => ({
  id: newLoginId(),
  kind: 'passkey',
  subject: row.credential_id,
  organization_id: row.organization_id,
  user_id: row.user_id,
  address: row.address,
  label: row.passkey_identifier ?? 'Passkey',
  kms_id: null,
  created_at: row.created_at,
})

// biome-ignore lint/suspicious/noExplicitAny: migrations run before the schema they create exists.
type AnyDb = Kysely<any>

const sessionsTable = (db: AnyDb, name: string) =>
  db.schema
    .createTable(name)
    .ifNotExists()
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('email', 'text')
    .addColumn('organization_id', 'text')
    .addColumn('user_id', 'text')
    .addColumn('address', 'text', (column) => column.notNull())
    .addColumn('kind', 'text', (column) => column.notNull())
    .addColumn('chain_id', 'bigint')
    .addColumn('wallet_kind', 'text')
    .addColumn('expires_at', 'bigint', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull())

/**
 * The backend's migrations, oldest first. The first one is the layout SQLite files of earlier
 * releases had (`pragma user_version` 3): such a file is brought to it with its rows kept.
 */
export const SERVER_MIGRATIONS: readonly Migration[] = [
  {
    name: '0001_accounts_sessions_nonces',
    async up(db, dialect) {
      if (dialect === 'sqlite') await upgradeSqliteLayout(db)
      const create = (name: string) => db.schema.createTable(name).ifNotExists()
      await create('accounts')
        .addColumn('email', 'text', (column) => column.primaryKey())
        .addColumn('organization_id', 'text', (column) => column.notNull())
        .addColumn('user_id', 'text', (column) => column.notNull())
        .addColumn('address', 'text', (column) => column.notNull())
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .execute()
      await create('passkey_accounts')
        .addColumn('credential_id', 'text', (column) => column.primaryKey())
        .addColumn('organization_id', 'text', (column) => column.notNull())
        .addColumn('user_id', 'text', (column) => column.notNull())
        .addColumn('address', 'text', (column) => column.notNull())
        .addColumn('email', 'text')
        .addColumn('passkey_identifier', 'text')
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .execute()
      await create('spent_session_tokens')
        .addColumn('digest', 'text', (column) => column.primaryKey())
        .addColumn('expires_at', 'bigint', (column) => column.notNull())
        .execute()
      await create('pending_codes')
        .addColumn('otp_id', 'text', (column) => column.primaryKey())
        .addColumn('email', 'text', (column) => column.notNull())
        .addColumn('organization_id', 'text', (column) => column.notNull())
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .execute()
      await sessionsTable(db, 'sessions').execute()
      await create('siwe_nonces')
        .addColumn('nonce', 'text', (column) => column.primaryKey())
        .addColumn('holder', 'text', (column) => column.notNull())
        .addColumn('expires_at', 'bigint', (column) => column.notNull())
        .addColumn('used_at', 'bigint')
        .execute()
      const index = (name: string) => db.schema.createIndex(name).ifNotExists()
      await index('accounts_by_organization').on('accounts').column('organization_id').execute()
      await index('passkey_accounts_by_email').unique().on('passkey_accounts').column('email').where('email', 'is not', null).execute()
      await index('passkey_accounts_by_organization').on('passkey_accounts').column('organization_id').execute()
      await index('accounts_by_address').on('accounts').expression(sql`lower(address)`).execute()
      await index('passkey_accounts_by_address').on('passkey_accounts').expression(sql`lower(address)`).execute()
      await index('siwe_nonces_by_expiry').on('siwe_nonces').column('expires_at').execute()
    },
  },
  {
    name: '0002_refresh_tokens',
    async up(db) {
      await db.schema
        .createTable('refresh_tokens')
        .addColumn('digest', 'text', (column) => column.primaryKey())
        .addColumn('session_id', 'text', (column) => column.notNull())
        .addColumn('expires_at', 'bigint', (column) => column.notNull())
        .addColumn('used_at', 'bigint')
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .execute()
      await db.schema.createIndex('refresh_tokens_by_session').on('refresh_tokens').column('session_id').execute()
    },
  },
  {
    // Before it, each instance kept the nonces in memory: a token used on one was good on another.
    name: '0003_oauth_nonces',
    async up(db) {
      await db.schema
        .createTable('oauth_nonces')
        .addColumn('nonce', 'text', (column) => column.primaryKey())
        .addColumn('expires_at', 'bigint', (column) => column.notNull())
        .execute()
      await db.schema.createIndex('oauth_nonces_by_expiry').on('oauth_nonces').column('expires_at').execute()
    },
  },
  {
    name: '0004_rate_limits',
    async up(db) {
      await db.schema
        .createTable('rate_limits')
        .addColumn('key', 'text', (column) => column.primaryKey())
        .addColumn('window_started_at', 'bigint', (column) => column.notNull())
        .addColumn('count', 'integer', (column) => column.notNull())
        .execute()
      await db.schema.createIndex('rate_limits_by_window').on('rate_limits').column('window_started_at').execute()
    },
  },
  // The hash-chained audit trail (@latchkey/service/database's audit.ts): server_audit_events.
  auditMigration('0005_audit_events', 'server'),
  {
    // A passkey sign-up's email was never verified (security review H2): it no longer names the
    // account, so it is not unique either (whoever typed an email first must not block its owner).
    name: '0006_passkey_email_unverified',
    async up(db) {
      await db.schema.dropIndex('passkey_accounts_by_email').ifExists().execute()
      await db.schema.alterTable('passkey_accounts').renameColumn('email', 'unverified_email').execute()
    },
  },
  {
    // Sign-out deletes the session's key in the kms (issue 25): the backend keeps which key that is.
    name: '0007_session_public_key',
    async up(db) {
      await db.schema.alterTable('sessions').addColumn('session_public_key', 'text').execute()
    },
  },
  // The webhook outbox (webhooks/): endpoints, events, their deliveries.
  webhooksMigration,
  // The paymaster's budgets, reservations and settlement cursors (paymaster/).
  paymasterMigration,
  {
    // One user, many logins (issue 28): every email and passkey account so far is one login of its user.
    name: '0010_logins',
    async up(db) {
      await db.schema
        .createTable('logins')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('kind', 'text', (column) => column.notNull())
        .addColumn('subject', 'text', (column) => column.notNull())
        .addColumn('organization_id', 'text', (column) => column.notNull())
        .addColumn('user_id', 'text', (column) => column.notNull())
        .addColumn('address', 'text', (column) => column.notNull())
        .addColumn('label', 'text', (column) => column.notNull())
        .addColumn('kms_id', 'text')
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .execute()
      await db.schema.createIndex('logins_by_subject').unique().on('logins').columns(['kind', 'subject']).execute()
      await db.schema.createIndex('logins_by_organization').on('logins').column('organization_id').execute()
      const insert = async (rows: LoginRow[]) => {
        for (let start = 0; start < rows.length; start += 500)
          await db
            .insertInto('logins')
            .values(rows.slice(start, start + 500))
            .execute()
      }
      const accounts = (await db.selectFrom('accounts').selectAll().execute()) as AccountRow[]
      await insert(accounts.map((row) => ({ ...emailLogin(row), created_at: Number(row.created_at) })))
      const passkeys = (await db.selectFrom('passkey_accounts').selectAll().execute()) as PasskeyAccountRow[]
      await insert(passkeys.map((row) => ({ ...passkeyLogin(row), created_at: Number(row.created_at) })))
    },
  },
  {
    // The kms's events (webhooks/kmsEvents.ts): where the backend is in the kms's trail of completed activities.
    name: '0011_kms_event_cursor',
    expand: true,
    async up(db) {
      await db.schema
        .createTable('kms_event_cursor')
        .addColumn('name', 'text', (column) => column.primaryKey())
        .addColumn('cursor', 'text', (column) => column.notNull())
        .execute()
    },
  },
  {
    // An email start's login stays unproven until a sign-in proves it (security review 2): null
    // means proven, so every row before, and every row an older release writes, is never taken over.
    name: '0012_unproven_email_logins',
    expand: true,
    async up(db) {
      await db.schema.alterTable('logins').addColumn('unproven_since', 'bigint').execute()
    },
  },
]

/** How long sent events are kept for `webhooks replay` (7 days). */
export const WEBHOOK_RETENTION_MS = 7 * 86_400_000

/**
 * A SQLite file of a release before migrations: layout 1 (user_version 0) required an email on
 * every session (passkey accounts may have none), layout 2 an organization (SIWE sessions of
 * outside wallets have none) and had no chain or wallet kind. A file newer than layout 3 is refused.
 */
async function upgradeSqliteLayout(db: AnyDb) {
  const layout = (await sql<{ user_version: number }>`pragma user_version`.execute(db)).rows[0]?.user_version ?? 0
  if (layout > 3) throw new Error(`the file has store layout ${layout}, newer than this server's`)
  const hasSessions = (await sql`select 1 from sqlite_master where type = 'table' and name = 'sessions'`.execute(db)).rows.length > 0
  if (layout < 3 && hasSessions) {
    await sql`alter table sessions rename to sessions_before`.execute(db)
    await sessionsTable(db, 'sessions').execute()
    await sql`insert into sessions (id, email, organization_id, user_id, address, kind, expires_at, created_at)
      select id, email, organization_id, user_id, address, kind, expires_at, created_at from sessions_before`.execute(db)
    await sql`drop table sessions_before`.execute(db)
  }
}

const changed = (result: { numInsertedOrUpdatedRows?: bigint | undefined } | { numUpdatedRows: bigint }) =>
  ('numUpdatedRows' in result ? result.numUpdatedRows : (result.numInsertedOrUpdatedRows ?? 0n)) > 0n

export type OpenStoreOptions = {
  /** Told before a transaction runs again after a serialization failure (for the log). */
  onRetry?: ((event: { attempt: number; error: Error }) => void) | undefined
  /** Counts transactions, retries and pool waits. Default: nothing counted. */
  metrics?: Metrics | undefined
}

/**
 * The backend's own tables: accounts by email, passkey accounts by credential, codes in flight,
 * session JWTs already used, SIWE nonces, sessions and their refresh tokens. On SQLite (a file
 * path, or memory by default) or PostgreSQL (a `postgres://` URL, shared by any number of
 * backend instances); every method is async and each write is one atomic statement or transaction.
 *
 * @example
 * const store = await openStore(process.env.DATABASE_URL ?? ':memory:')
 * const session = await store.session(id)
 */
export async function openStore(url = ':memory:', options: OpenStoreOptions = {}) {
  const database: Database<ServerSchema> = await openDatabase<ServerSchema>({
    url,
    service: 'server',
    migrations: SERVER_MIGRATIONS,
    onRetry: options.onRetry,
    metrics: options.metrics,
  })
  const { db } = database
  const webhooks = webhookOutbox(database)
  const queuedListeners = new Set<() => void>()
  const known = ['organization_id', 'user_id', 'address', 'email'] as const
  // A passkey account's email is unverified: it is no account's email.
  const knownPasskey = ['organization_id', 'user_id', 'address', sql<null>`null`.as('email')] as const
  const byLowerAddress = (address: string) => sql<boolean>`lower(address) = ${address.toLowerCase()}`
  /**
   * Ends, in `trx`, every session of a sub-organization's accounts but `keep` (a session id), with
   * their refresh tokens. Their kms keys are the caller's to delete (`deleteSessionKeys`), with
   * every key of the user that no session here knows.
   */
  const endSessionsOf = async (trx: Transaction<ServerSchema>, organizationId: string, keep?: string) => {
    // One condition, read by both deletes (SQLite and PostgreSQL allow a table in its own delete's subquery).
    const ended = trx
      .selectFrom('sessions')
      .select('id')
      .where('organization_id', '=', organizationId)
      .$if(keep !== undefined, (query) => query.where('id', '!=', keep!))
    await trx.deleteFrom('refresh_tokens').where('session_id', 'in', ended).execute()
    await trx.deleteFrom('sessions').where('id', 'in', ended).execute()
  }
  /** Ends every session of a sub-organization's accounts, with their refresh tokens, in one transaction ("sign out everywhere"). */
  const deleteSessionsOf = async (organizationId: string) => {
    await database.transaction((trx) => endSessionsOf(trx, organizationId), { isolation: 'read committed' })
  }
  /** Ends a session: the row and every refresh token of its JWTs, in one transaction. */
  const deleteSession = async (id: string) => {
    await database.transaction(
      async (trx) => {
        await trx.deleteFrom('refresh_tokens').where('session_id', '=', id).execute()
        await trx.deleteFrom('sessions').where('id', '=', id).execute()
      },
      { isolation: 'read committed' },
    )
  }

  /** Inserts a login unless its (kind, subject) is taken; true when this one was written. */
  const claimLogin = async (trx: Transaction<ServerSchema>, row: LoginRow & { unproven_since?: number | null }) =>
    changed(
      await trx
        .insertInto('logins')
        .values(row)
        .onConflict((conflict) => conflict.columns(['kind', 'subject']).doNothing())
        .executeTakeFirst(),
    )
  /**
   * Deletes, in `trx`, the email login of `row.subject` if another account holds it unproven, with
   * that account's row for the email and its codes in flight; answers it (without the flag), else
   * undefined. A proven login, or this user's own, is left for `claimLogin` to refuse.
   */
  const takeOverUnproven = async (trx: Transaction<ServerSchema>, row: LoginRow): Promise<LoginRow | undefined> => {
    const query = trx.selectFrom('logins').selectAll().where('kind', '=', 'email').where('subject', '=', row.subject)
    const held = await (database.dialect === 'postgres' ? query.forUpdate() : query).executeTakeFirst()
    if (!held || held.unproven_since === null || held.organization_id === row.organization_id) return undefined
    await trx.deleteFrom('logins').where('id', '=', held.id).execute()
    await trx.deleteFrom('accounts').where('email', '=', held.subject).where('organization_id', '=', held.organization_id).execute()
    await trx.deleteFrom('pending_codes').where('email', '=', held.subject).where('organization_id', '=', held.organization_id).execute()
    const { unproven_since: _, ...squatted } = held
    return squatted
  }
  const nudge = (queued: number) => {
    if (queued) for (const listener of queuedListeners) listener()
  }

  return {
    /** `sqlite` or `postgres`, and where the data is without credentials, for the start-up log. */
    dialect: database.dialect,
    description: database.description,
    /** The shared database, for routes of other features that keep tables of their own (their own migrations). */
    database,
    /**
     * The account of this email: one whose email the kms sends sign-in codes to (email sign-in) or an
     * OAuth provider verified. Never a passkey account, whose email nobody proved (security review H2).
     */
    account: (email: string): Promise<AccountRow | undefined> => db.selectFrom('accounts').selectAll().where('email', '=', email).executeTakeFirst(),
    /**
     * Records an email account unless one is already recorded for that email (another instance
     * may have created it a moment ago); answers the recorded one, the first to arrive. `unproven`:
     * nobody has proven the email yet (`POST /auth/email/start`): its login stays unproven until a
     * sign-in of the account (`proveEmailSignIn`, `insertSession`), and a proven link may take it
     * over until then (`linkLogin`).
     */
    async insertAccount(row: AccountRow, options: { unproven?: boolean } = {}): Promise<AccountRow> {
      await database.transaction(
        async (trx) => {
          const inserted = await trx
            .insertInto('accounts')
            .values(row)
            .onConflict((conflict) => conflict.column('email').doNothing())
            .executeTakeFirst()
          if (changed(inserted)) await claimLogin(trx, { ...emailLogin(row), unproven_since: options.unproven ? row.created_at : null })
        },
        { isolation: 'read committed' },
      )
      return (await db.selectFrom('accounts').selectAll().where('email', '=', row.email).executeTakeFirst()) ?? row
    },
    passkeyAccount: (credentialId: string) => db.selectFrom('passkey_accounts').selectAll().where('credential_id', '=', credentialId).executeTakeFirst(),
    /** Throws StoreConflictError when the credential is already registered. */
    async insertPasskeyAccount(row: PasskeyAccountRow) {
      try {
        await database.transaction(
          async (trx) => {
            await trx.insertInto('passkey_accounts').values(row).execute()
            await claimLogin(trx, passkeyLogin(row))
          },
          { isolation: 'read committed' },
        )
      } catch (error) {
        if (error instanceof UniqueViolationError) throw new StoreConflictError(error.message)
        throw error
      }
    },
    /**
     * Records a passkey sign-up whose email was proven by a code (security review H2): the email's
     * account and the passkey's, one sub-organization, in one transaction. Throws
     * StoreConflictError `email` when the email has an account already (recorded a moment ago on
     * another instance too), `credential` when the passkey is registered; nothing is written then.
     */
    async insertVerifiedPasskeyAccount(account: AccountRow, passkey: PasskeyAccountRow) {
      try {
        await database.transaction(
          async (trx) => {
            const inserted = await trx
              .insertInto('accounts')
              .values(account)
              .onConflict((conflict) => conflict.column('email').doNothing())
              .executeTakeFirst()
            if (!changed(inserted)) throw new StoreConflictError('email')
            await trx.insertInto('passkey_accounts').values(passkey).execute()
            await claimLogin(trx, emailLogin(account))
            await claimLogin(trx, passkeyLogin(passkey))
          },
          { isolation: 'read committed' },
        )
      } catch (error) {
        // The transaction answers a database's errors typed: here only the credential's key can clash.
        if (error instanceof UniqueViolationError) throw new StoreConflictError('credential')
        throw error
      }
    },
    /** The account of a sub-organization, if this backend created it. */
    accountByOrganization: (organizationId: string): Promise<KnownAccount | undefined> =>
      // One round trip: on PostgreSQL each is a network call on the sign-in path. A passkey sign-up
      // with a proven email has both rows: the email's comes first (`rank`), so its email is known.
      db
        .selectFrom('accounts')
        .select([...known, sql<number>`0`.as('rank')])
        .where('organization_id', '=', organizationId)
        .$castTo<KnownAccount & { rank: number }>()
        .unionAll(
          db
            .selectFrom('passkey_accounts')
            .select([...knownPasskey, sql<number>`1`.as('rank')])
            .where('organization_id', '=', organizationId),
        )
        // A user whose sign-up rows were unlinked is still known by the logins left.
        .unionAll(
          db
            .selectFrom('logins')
            .select([...knownPasskey, sql<number>`2`.as('rank')])
            .where('organization_id', '=', organizationId),
        )
        .orderBy('rank')
        .limit(1)
        .executeTakeFirst()
        .then((row) => (row ? { organization_id: row.organization_id, user_id: row.user_id, address: row.address, email: row.email } : undefined)),
    pendingCode: (otpId: string) => db.selectFrom('pending_codes').selectAll().where('otp_id', '=', otpId).executeTakeFirst(),
    /**
     * An email sign-in's code was proven for the account of `organizationId`: its email login is
     * proven from now on (no link takes it over), if the email is still that account's. False when
     * a link took the unproven login over meanwhile (the code must then sign nobody in there). On
     * PostgreSQL the update waits for a takeover holding the login's row, and a takeover waits for
     * it: one of them wins; SQLite runs one transaction at a time.
     */
    proveEmailSignIn: (email: string, organizationId: string): Promise<boolean> =>
      database.transaction(
        async (trx) => {
          await trx
            .updateTable('logins')
            .set({ unproven_since: null })
            .where('kind', '=', 'email')
            .where('subject', '=', email)
            .where('organization_id', '=', organizationId)
            .execute()
          const account = await trx.selectFrom('accounts').select('organization_id').where('email', '=', email).executeTakeFirst()
          return account?.organization_id === organizationId
        },
        { isolation: 'read committed' },
      ),
    async insertPendingCode(row: PendingCodeRow) {
      // The same request within one millisecond is the same kms activity, so the same otpId.
      await db
        .insertInto('pending_codes')
        .values(row)
        .onConflict((conflict) => conflict.column('otp_id').doNothing())
        .execute()
    },
    async deletePendingCode(otpId: string) {
      await db.deleteFrom('pending_codes').where('otp_id', '=', otpId).execute()
    },
    /** Whether a session JWT (by the digest of its signed part) has signed a browser in already. */
    sessionTokenSpent: async (digest: string) =>
      (await db.selectFrom('spent_session_tokens').select('digest').where('digest', '=', digest).executeTakeFirst()) !== undefined,
    /** Marks a session JWT used until it expires; false when it already was (here or on another instance). */
    spendSessionToken: async (digest: string, expiresAt: number) =>
      changed(
        await db
          .insertInto('spent_session_tokens')
          .values({ digest, expires_at: expiresAt })
          .onConflict((conflict) => conflict.column('digest').doNothing())
          .executeTakeFirst(),
      ),
    /**
     * Marks an OAuth ID token's nonce used until `expiresAt`; false when it was used already, here
     * or on another instance. One insert: of requests racing with one token, exactly one wins.
     * Nonces expired at `at` are dropped first (their tokens are refused on expiry anyway).
     */
    async spendOAuthNonce(nonce: string, expiresAt: number, at: number) {
      await db.deleteFrom('oauth_nonces').where('expires_at', '<=', at).execute()
      return changed(
        await db
          .insertInto('oauth_nonces')
          .values({ nonce, expires_at: expiresAt })
          .onConflict((conflict) => conflict.column('nonce').doNothing())
          .executeTakeFirst(),
      )
    },
    session: (id: string) => db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst(),
    /**
     * Records a session and, in the same transaction, the webhook events it makes (`user.authenticated`;
     * `user.created` and `wallet.created` for a user's first session): no event without its session,
     * none lost after the commit.
     */
    async insertSession(row: SessionRow) {
      const queued = await database.transaction(
        async (trx) => {
          await trx.insertInto('sessions').values(row).execute()
          // A completed sign-in (a code, a recovery email, a provider's verified email) proves the account's email login.
          if (row.organization_id !== null)
            await trx
              .updateTable('logins')
              .set({ unproven_since: null })
              .where('organization_id', '=', row.organization_id)
              .where('unproven_since', 'is not', null)
              .execute()
          return webhooks.enqueue(trx, sessionEvents(row), row.created_at)
        },
        { isolation: 'read committed' },
      )
      if (queued) for (const listener of queuedListeners) listener()
    },
    /** The login of `kind` and `subject`, whoever's it is. */
    login: (kind: LoginKind, subject: string): Promise<LoginRow | undefined> =>
      db.selectFrom('logins').selectAll().where('kind', '=', kind).where('subject', '=', subject).executeTakeFirst(),
    /** A user's logins (the ways in: never a HIDDEN_LOGIN_KINDS row), oldest first. */
    loginsOf: (organizationId: string): Promise<LoginRow[]> =>
      db
        .selectFrom('logins')
        .selectAll()
        .where('organization_id', '=', organizationId)
        .where('kind', 'not in', HIDDEN_LOGIN_KINDS)
        .orderBy('created_at')
        .orderBy('id')
        .execute(),
    /** Records a login a sign-in proved (an OAuth identity) unless its (kind, subject) is recorded already. */
    async recordLogin(row: LoginRow): Promise<void> {
      await database.transaction((trx) => claimLogin(trx, row), { isolation: 'read committed' })
    },
    /**
     * Links a login to its user, in one transaction: the login row (and, for an email, the email's
     * account row, which email sign-in finds it by), then `kms`, which records it in the kms and
     * answers the kms's id of it, then `account.linked`. Throws LoginConflictError (nothing
     * written, `kms` not called) when the login or the email is taken, by this user (`self`) or
     * another (`other`), and EmailAlreadyLinkedError when an email is linked to a user who has
     * one (checked under a transaction-scoped advisory lock on the user's sub-organization on
     * PostgreSQL, so two emails linked at once on any instances link one; SQLite runs one
     * transaction at a time); whatever `kms` throws rolls everything back.
     *
     * An email another account holds only by an unproven login (`insertAccount`'s `unproven`: an
     * email start whose code no sign-in proved) is taken over: that login, its account row and its
     * codes in flight go (the row locked first on PostgreSQL, so a sign-in proving it meanwhile,
     * `proveEmailSignIn`, wins or loses whole), then after `kms`, `release` removes the email from
     * that account in the kms. Nothing else of that account is touched or merged.
     */
    async linkLogin(
      row: LoginRow,
      kms: () => Promise<string | null>,
      account?: AccountRow,
      release?: (squatted: LoginRow) => Promise<void>,
    ): Promise<LoginRow> {
      const { linked, queued } = await database.transaction(
        async (trx) => {
          let squatted: LoginRow | undefined
          if (row.kind === 'email') {
            if (database.dialect === 'postgres')
              await sql`select pg_advisory_xact_lock(hashtext(${`latchkey:email-login:${row.organization_id}`}))`.execute(trx)
            const email = await trx
              .selectFrom('logins')
              .select('id')
              .where('organization_id', '=', row.organization_id)
              .where('kind', '=', 'email')
              .executeTakeFirst()
            if (email) throw new EmailAlreadyLinkedError('the user has an email already')
            squatted = await takeOverUnproven(trx, row)
          }
          const ownerOf = async () =>
            (await trx.selectFrom('logins').select('organization_id').where('kind', '=', row.kind).where('subject', '=', row.subject).executeTakeFirst())
              ?.organization_id
          if (!(await claimLogin(trx, row))) throw new LoginConflictError((await ownerOf()) === row.organization_id ? 'self' : 'other')
          if (account) {
            const inserted = await trx
              .insertInto('accounts')
              .values(account)
              .onConflict((conflict) => conflict.column('email').doNothing())
              .executeTakeFirst()
            if (!changed(inserted)) {
              const owner = await trx.selectFrom('accounts').select('organization_id').where('email', '=', account.email).executeTakeFirst()
              throw new LoginConflictError(owner?.organization_id === row.organization_id ? 'self' : 'other')
            }
          }
          const kmsId = await kms()
          if (squatted) await release?.(squatted)
          if (kmsId !== null) await trx.updateTable('logins').set({ kms_id: kmsId }).where('id', '=', row.id).execute()
          const linked = { ...row, kms_id: kmsId }
          return { linked, queued: await webhooks.enqueue(trx, [{ type: 'account.linked', data: loginEventData(linked) }], row.created_at) }
        },
        { isolation: 'read committed' },
      )
      nudge(queued)
      return linked
    },
    /**
     * Unlinks a user's login, in one transaction that first locks all the user's logins (on
     * PostgreSQL; SQLite runs one transaction at a time): refused with LastLoginError when it is
     * the last one, UnknownLoginError when the user has no such login; else the row goes (with an
     * email's account row, a passkey's sign-up row), every session of the account but `session`
     * (the one unlinking) ends with its refresh tokens (whatever the login opened goes with it),
     * `session` forgets the email if it was the one unlinked, `kms` removes the login from the
     * kms (and the user's other session keys there), and `account.unlinked` is queued. Whatever
     * `kms` throws rolls everything back. Answers the login removed.
     */
    async unlinkLogin(organizationId: string, id: string, session: string, at: number, kms: (row: LoginRow) => Promise<void>): Promise<{ removed: LoginRow }> {
      const { removed, queued } = await database.transaction(
        async (trx) => {
          // An `external` id or a `guest` row is no way in: it is neither counted nor unlinked here.
          const query = trx.selectFrom('logins').selectAll().where('organization_id', '=', organizationId).where('kind', 'not in', HIDDEN_LOGIN_KINDS)
          const rows = await (database.dialect === 'postgres' ? query.forUpdate() : query).execute()
          const removed = rows.find((row) => row.id === id)
          if (!removed) throw new UnknownLoginError()
          if (rows.length <= 1) throw new LastLoginError()
          await trx.deleteFrom('logins').where('id', '=', id).execute()
          if (removed.kind === 'email')
            await trx.deleteFrom('accounts').where('email', '=', removed.subject).where('organization_id', '=', organizationId).execute()
          if (removed.kind === 'passkey')
            await trx.deleteFrom('passkey_accounts').where('credential_id', '=', removed.subject).where('organization_id', '=', organizationId).execute()
          await endSessionsOf(trx, organizationId, session)
          // Its access JWTs would go on claiming an email another account may take next.
          if (removed.kind === 'email')
            await trx.updateTable('sessions').set({ email: null }).where('id', '=', session).where('email', '=', removed.subject).execute()
          await kms(removed)
          const queued = await webhooks.enqueue(trx, [{ type: 'account.unlinked', data: loginEventData(removed) }], at)
          return { removed, queued }
        },
        { isolation: 'read committed' },
      )
      nudge(queued)
      return { removed }
    },
    /**
     * The user of a pregenerated identity (`POST /admin/users`): the login of `row.kind` and
     * `row.subject` if one exists (an email also by its account), else, in one transaction, `create`
     * makes the sub-organization and the login row is written with it (an email's account row too)
     * and `user.created` and `wallet.created` are queued (once-keyed per sub-organization, as the
     * first session's: a claim sends neither again). On PostgreSQL a transaction-scoped advisory lock
     * on the identity orders concurrent calls on every instance, so `create` runs once per identity;
     * SQLite runs one transaction at a time. Throws LoginConflictError('other') when a sign-up took
     * the identity without the lock meanwhile (nothing written then).
     */
    async pregenerate(
      row: Omit<LoginRow, 'organization_id' | 'user_id' | 'address'>,
      create: () => Promise<{ organizationId: string; userId: string; address: string }>,
      event: Record<string, unknown>,
    ): Promise<{ login: LoginRow; created: boolean }> {
      const existing = async (reader: Kysely<ServerSchema> | Transaction<ServerSchema>): Promise<LoginRow | undefined> => {
        const found = await reader.selectFrom('logins').selectAll().where('kind', '=', row.kind).where('subject', '=', row.subject).executeTakeFirst()
        if (found || row.kind !== 'email') return found
        const account = await reader.selectFrom('accounts').selectAll().where('email', '=', row.subject).executeTakeFirst()
        return account && { ...emailLogin(account), created_at: Number(account.created_at) }
      }
      const known = await existing(db)
      if (known) return { login: known, created: false }
      // Kept across a retried transaction: the kms makes one sub-organization whatever happens here.
      let made: { organizationId: string; userId: string; address: string } | undefined
      const { outcome, queued } = await database.transaction(
        async (trx) => {
          if (database.dialect === 'postgres')
            await sql`select pg_advisory_xact_lock(hashtext(${`latchkey:pregenerate:${row.kind} ${row.subject}`}))`.execute(trx)
          const found = await existing(trx)
          if (found) return { outcome: { login: found, created: false }, queued: 0 }
          made ??= await create()
          const login: LoginRow = { ...row, organization_id: made.organizationId, user_id: made.userId, address: made.address }
          if (!(await claimLogin(trx, login))) throw new LoginConflictError('other')
          if (row.kind === 'email') {
            const account = {
              email: row.subject,
              organization_id: login.organization_id,
              user_id: login.user_id,
              address: login.address,
              created_at: row.created_at,
            }
            const inserted = await trx
              .insertInto('accounts')
              .values(account)
              .onConflict((conflict) => conflict.column('email').doNothing())
              .executeTakeFirst()
            if (!changed(inserted)) throw new LoginConflictError('other')
          }
          const user = { userId: login.user_id, organizationId: login.organization_id, address: login.address, ...event }
          const queued = await webhooks.enqueue(
            trx,
            [
              { type: 'user.created', data: user, once: `user.created:${login.organization_id}` },
              { type: 'wallet.created', data: { ...user, walletKind: 'embedded' }, once: `wallet.created:${login.organization_id}` },
            ],
            row.created_at,
          )
          return { outcome: { login, created: true }, queued }
        },
        { isolation: 'read committed' },
      )
      nudge(queued)
      return outcome
    },
    /** Sets what the kms calls a login's credential, and its label (an OAuth login a sign-in claimed). */
    async updateLogin(id: string, change: Pick<LoginRow, 'kms_id' | 'label'>) {
      await db.updateTable('logins').set(change).where('id', '=', id).execute()
    },
    /** The webhook outbox: endpoints, events and their deliveries (webhooks/outbox.ts). */
    webhooks,
    /** Where the kms event follower is in the kms's trail (webhooks/kmsEvents.ts): null before its first run, '' at the trail's beginning. */
    kmsCursor: async (): Promise<string | null> =>
      (await db.selectFrom('kms_event_cursor').select('cursor').where('name', '=', 'activities').executeTakeFirst())?.cursor ?? null,
    /**
     * Moves the kms event follower's cursor from `from` to `to` and queues `events` (each once, by
     * its activity's key) in one transaction: the deliveries queued; undefined, with nothing
     * written, when another instance moved the cursor first.
     */
    async advanceKmsCursor(from: string | null, to: string, events: readonly (NewWebhookEvent & { at: number })[]): Promise<number | undefined> {
      const queued = await database.transaction(
        async (trx) => {
          const moved =
            from === null
              ? ((
                  await trx
                    .insertInto('kms_event_cursor')
                    .values({ name: 'activities', cursor: to })
                    .onConflict((conflict) => conflict.column('name').doNothing())
                    .executeTakeFirst()
                ).numInsertedOrUpdatedRows ?? 0n) > 0n
              : (await trx.updateTable('kms_event_cursor').set({ cursor: to }).where('name', '=', 'activities').where('cursor', '=', from).executeTakeFirst())
                  .numUpdatedRows > 0n
          if (!moved) return undefined
          let count = 0
          for (const event of events) count += await webhooks.enqueue(trx, [event], event.at)
          return count
        },
        { isolation: 'read committed' },
      )
      if (queued !== undefined) nudge(queued)
      return queued
    },
    /** Calls `listener` after each commit that queued webhook deliveries (the sender's nudge); answers how to stop. */
    onWebhooksQueued(listener: () => void) {
      queuedListeners.add(listener)
      return () => queuedListeners.delete(listener)
    },
    /** Tells the sender's nudge that deliveries are due (after a write outside `insertSession`: an operator's replay). */
    webhooksQueued() {
      for (const listener of queuedListeners) listener()
    },
    deleteSession,
    deleteSessionsOf,
    /** The account of the embedded wallet at `address` (any case), if this backend created it. */
    accountByAddress: (address: string): Promise<KnownAccount | undefined> =>
      db
        .selectFrom('accounts')
        .select(known)
        .where(byLowerAddress(address))
        .$castTo<KnownAccount>()
        .unionAll(db.selectFrom('passkey_accounts').select(knownPasskey).where(byLowerAddress(address)))
        .unionAll(db.selectFrom('logins').select(knownPasskey).where(byLowerAddress(address)))
        .limit(1)
        .executeTakeFirst(),
    async insertNonce(row: Omit<NonceRow, 'used_at'>) {
      await db
        .insertInto('siwe_nonces')
        .values({ ...row, used_at: null })
        .execute()
    },
    nonce: (nonce: string) => db.selectFrom('siwe_nonces').selectAll().where('nonce', '=', nonce).executeTakeFirst(),
    /**
     * Marks the nonce used if it is `holder`'s, unused and unexpired at `at`; false otherwise. One
     * conditional statement: of requests racing with one nonce, on any instances, exactly one spends it.
     */
    spendNonce: async (nonce: string, holder: string, at: number) =>
      changed(
        await db
          .updateTable('siwe_nonces')
          .set({ used_at: at })
          .where('nonce', '=', nonce)
          .where('holder', '=', holder)
          .where('used_at', 'is', null)
          .where('expires_at', '>', at)
          .executeTakeFirst(),
      ),
    /** Drops SIWE nonces that have expired, used or not. */
    async pruneNonces(now: number) {
      await db.deleteFrom('siwe_nonces').where('expires_at', '<=', now).execute()
    },
    async insertRefreshToken(row: Omit<RefreshTokenRow, 'used_at'>) {
      await db
        .insertInto('refresh_tokens')
        .values({ ...row, used_at: null })
        .execute()
    },
    /**
     * Spends a refresh token and records its successor, in one transaction: the session it
     * belongs to when it was unused, unexpired and its session lives on; otherwise undefined and
     * nothing written. A token used a second time (stolen, or replayed) ends its session.
     */
    async rotateRefreshToken(digest: string, next: Pick<RefreshTokenRow, 'digest' | 'created_at'>, at: number): Promise<SessionRow | undefined> {
      const outcome = await database.transaction(async (trx) => {
        const token = await trx.selectFrom('refresh_tokens').selectAll().where('digest', '=', digest).executeTakeFirst()
        if (!token || token.expires_at <= at) return undefined
        if (token.used_at !== null) return { reused: token.session_id }
        const session = await trx.selectFrom('sessions').selectAll().where('id', '=', token.session_id).executeTakeFirst()
        if (!session || session.expires_at <= at) return undefined
        const spent = await trx.updateTable('refresh_tokens').set({ used_at: at }).where('digest', '=', digest).where('used_at', 'is', null).executeTakeFirst()
        if (!changed(spent)) return undefined
        await trx
          .insertInto('refresh_tokens')
          .values({ ...next, session_id: session.id, expires_at: session.expires_at, used_at: null })
          .execute()
        return { session }
      })
      if (outcome && 'reused' in outcome) {
        await deleteSession(outcome.reused)
        return undefined
      }
      return outcome?.session
    },
    /** Signs out the session of a refresh token, if it names one. */
    async revokeRefreshToken(digest: string) {
      const token = await db.selectFrom('refresh_tokens').select('session_id').where('digest', '=', digest).executeTakeFirst()
      if (token) await deleteSession(token.session_id)
    },
    /** Drops sessions, refresh tokens, spent session JWTs, OAuth and SIWE nonces that have expired, codes older than `codesBefore`, and settled webhook events older than `WEBHOOK_RETENTION_MS`. */
    async prune(now: number, codesBefore: number) {
      await db.deleteFrom('sessions').where('expires_at', '<=', now).execute()
      await db.deleteFrom('refresh_tokens').where('expires_at', '<=', now).execute()
      await db.deleteFrom('spent_session_tokens').where('expires_at', '<=', now).execute()
      await db.deleteFrom('siwe_nonces').where('expires_at', '<=', now).execute()
      await db.deleteFrom('oauth_nonces').where('expires_at', '<=', now).execute()
      await db.deleteFrom('pending_codes').where('created_at', '<', codesBefore).execute()
      await webhooks.prune(now - WEBHOOK_RETENTION_MS)
    },
    /** Throws unless the database answers a query: the backend's `GET /readyz`. */
    ping: () => database.ping(),
    /**
     * Counts one request against `key`'s fixed window of `windowMs` at `at` (a new window once the
     * last one has passed) and answers the window's count and start. One statement: requests racing
     * on any instances each count once.
     */
    async countRequest(key: string, windowMs: number, at: number): Promise<{ count: number; windowStartedAt: number }> {
      const passed = sql<boolean>`rate_limits.window_started_at <= ${at - windowMs}`
      const row = await db
        .insertInto('rate_limits')
        .values({ key, window_started_at: at, count: 1 })
        .onConflict((conflict) =>
          conflict.column('key').doUpdateSet({
            // Both read the row as it was: a window that has passed starts again at `at`.
            count: sql`case when ${passed} then 1 else rate_limits.count + 1 end`,
            window_started_at: sql`case when ${passed} then ${at} else rate_limits.window_started_at end`,
          }),
        )
        .returning(['count', 'window_started_at'])
        .executeTakeFirstOrThrow()
      return { count: Number(row.count), windowStartedAt: Number(row.window_started_at) }
    },
    /** Drops the windows that started before `before`. */
    async deleteRateLimitsBefore(before: number) {
      await db.deleteFrom('rate_limits').where('window_started_at', '<', before).execute()
    },
    close: () => database.close(),
  }
}

export type Store = Awaited<ReturnType<typeof openStore>>
