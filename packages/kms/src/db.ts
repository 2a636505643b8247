import type { Metrics } from '@latchkey/service'
import { type AuditStorage, verifyAuditTrail } from '@latchkey/service/database'
import { CompiledQuery, type QueryResult, type RawBuilder, sql } from 'kysely'
import { type Executor, isPostgresUrl, isUniqueViolation, openStorage, type Storage } from './storage/database.js'
import { dataKeyStatements } from './storage/dataKeys.js'
import { KMS_MIGRATIONS } from './storage/migrations.js'
import type {
  ActivityRow,
  ApiKeyRow,
  AuthenticatorRow,
  FeatureRow,
  GrantRow,
  GrantSpendRow,
  ImportTargetRow,
  InvitationRow,
  MailRow,
  MfaFactorRow,
  OauthProviderRow,
  OrganizationRow,
  OtpRow,
  OutboxRow,
  PolicyRow,
  PrivateKeyAddressRow,
  PrivateKeyRow,
  Tables,
  TagRow,
  UserDetailsRow,
  UserRow,
  VoteRow,
  WalletAccountRow,
  WalletRow,
} from './storage/tables.js'

// The row types are storage/tables.ts's: import them from there.

/**
 * The service's tables in one SQLite file (better-sqlite3), or in PostgreSQL when `location` is a
 * postgres:// URL, through Kysely: every statement is awaited, none blocks the event loop. The
 * tables are migrated before the first statement runs. Key material is stored sealed
 * (secrets.ts); this module only moves rows.
 *
 * @example
 * const db = openDatabase(':memory:')
 * const shared = openDatabase('postgres://latchkey@db.internal/kms')
 * await db.transaction(async (trx) => trx.insertUser(row))
 */
export function openDatabase(location: string, options: { metrics?: Metrics | undefined } = {}): Db {
  const storage = openStorage(location, KMS_MIGRATIONS, options.metrics)
  return statementsOf(storage, () => storage.executor(), false)
}

export { isPostgresUrl }

/** The statements, and `transaction`, which hands its work the same statements bound to the transaction. */
export type Db = Statements & {
  /**
   * Runs `work` in one transaction (retried whole on a serialization failure or deadlock), with
   * a `Db` whose statements join it. Inside a transaction already, `work` simply joins it.
   */
  transaction<result>(work: (trx: Db) => Promise<result>): Promise<result>
}
type Statements = ReturnType<typeof statements>

function statementsOf(storage: Storage, executor: () => Promise<Executor>, inTransaction: boolean): Db {
  const db: Db = {
    ...statements(storage, executor, inTransaction),
    async transaction(work) {
      if (inTransaction) return work(db)
      return storage.transaction((trx) => work(statementsOf(storage, async () => trx, true)))
    },
  }
  return db
}

/** Every column of a row type, listed once: a missing or unknown name fails the typecheck. */
const allColumns =
  <row>() =>
  <const names extends readonly (keyof row & string)[]>(names: [Exclude<keyof row, names[number]>] extends [never] ? names : never) =>
    names
const ORGANIZATION_COLUMNS = allColumns<OrganizationRow>()(['id', 'name', 'parent_id', 'root_quorum_threshold', 'created_at'])
const API_KEY_COLUMNS = allColumns<ApiKeyRow>()([
  'id',
  'user_id',
  'organization_id',
  'name',
  'public_key',
  'curve',
  'credential_type',
  'expires_at',
  'created_at',
  'verified_at',
  'created_by_api_key_id',
])
const WALLET_ACCOUNT_COLUMNS = allColumns<WalletAccountRow>()([
  'id',
  'wallet_id',
  'organization_id',
  'curve',
  'path_format',
  'path',
  'address_format',
  'address',
  'public_key',
  'created_at',
  'sealed_private_key',
])

/**
 * Two tables' rows in one statement: `alias.column as alias_column` for each column, and back.
 * For look-ups joined onto a one-row driving table, where either side may be missing.
 */
const prefixed = (alias: string, columns: readonly string[]) => sql.raw(columns.map((column) => `${alias}.${column} as ${alias}_${column}`).join(', '))
function unprefixed<row>(record: Record<string, unknown>, alias: string, columns: readonly string[]): row | undefined {
  // Every table here has a non-null id: a null one is the missing side of a left join.
  if (record[`${alias}_id`] === null || record[`${alias}_id`] === undefined) return undefined
  return Object.fromEntries(columns.map((column) => [column, record[`${alias}_${column}`]])) as row
}

/**
 * The root users of the organization `organizationId` (a value or a column) as a derived table
 * (user_id, first, second; ordered by first, second): the recorded members in the order recorded,
 * or, while none are recorded, every user of the organization (organizations/quorum.ts says why).
 */
const rootUsersOf = (organizationId: RawBuilder<unknown>) =>
  sql`(select user_id, rowid as first, '' as second from root_quorum_members where organization_id = ${organizationId} union all select id as user_id, created_at as first, id as second from users where organization_id = ${organizationId} and not exists (select 1 from root_quorum_members where organization_id = ${organizationId}))`

/** A JSON array of ids as an aggregate answers it: parsed already (PostgreSQL), as text (SQLite), or null for none. */
const jsonIds = (ids: unknown): string[] => (typeof ids === 'string' ? JSON.parse(ids) : (ids ?? [])) as string[]

/** A user as the policies' `approvers` list them: email and name (null for no such user) and tag ids. */
export type Approver = { email: string | null; name: string | null; tags: string[] }

/** An identifier as SQL text, double-quoted. */
const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`
/** Whether an insert's value is SQL for the builder to place (an expression or a factory of one), not a value. */
const isExpression = (value: unknown) =>
  typeof value === 'function' || (typeof value === 'object' && value !== null && typeof (value as { toOperationNode?: unknown }).toOperationNode === 'function')

/**
 * An insert's text by engine, table and column list, written once per process: the builder made a
 * query tree and compiled it on every insert, which cost the activity write more than SQLite's own
 * work (issue 31). Column names come from the row types, never from a request.
 */
const INSERT_TEXTS = new Map<string, string>()
function insertText(dialect: 'sqlite' | 'postgres', table: string, columns: readonly string[]) {
  const key = `${dialect} ${table}(${columns.join(',')})`
  let text = INSERT_TEXTS.get(key)
  if (text === undefined) {
    const placeholders = columns.map((_, index) => (dialect === 'postgres' ? `$${index + 1}` : '?'))
    text = `insert into ${quoted(table)} (${columns.map(quoted).join(', ')}) values (${placeholders.join(', ')})`
    INSERT_TEXTS.set(key, text)
  }
  return text
}

function statements(storage: Storage, executor: () => Promise<Executor>, inTransaction: boolean) {
  // Outside a transaction, SQLite runs a statement at once when it can (storage.runNow); else, and
  // in a transaction, through Kysely on the executor.
  const execute = async <row>(query: RawBuilder<row> | CompiledQuery<row>): Promise<QueryResult<row>> => {
    const now = inTransaction ? undefined : storage.runNow(query)
    if (now) return now
    const on = await executor()
    return 'compile' in query ? await query.execute(on) : await on.executeQuery(query)
  }
  const run = async (query: RawBuilder<unknown>) => {
    await execute(query)
  }
  const all = async <row>(query: RawBuilder<row>): Promise<row[]> => (await execute(query)).rows
  const get = async <row>(query: RawBuilder<row>): Promise<row | undefined> => (await all(query))[0]
  const insert = async <table extends keyof Tables>(table: table, row: Tables[table]) => {
    const values = row as Record<string, unknown>
    const columns = Object.keys(values).filter((column) => values[column] !== undefined)
    // A value that is SQL (an expression) is the builder's to place.
    if (columns.some((column) => isExpression(values[column]))) {
      await (await executor())
        .insertInto(table)
        .values(row as never)
        .execute()
      return
    }
    const query = CompiledQuery.raw(
      insertText(storage.dialect, table, columns),
      columns.map((column) => values[column]),
    )
    // Outside a transaction, SQLite commits it with the other writes of this turn (one commit for the group).
    const grouped = inTransaction ? undefined : storage.groupCommit((run) => run(query))
    if (grouped && (await grouped)) return
    await execute(query)
  }
  /** A member's tag ids (a value, or SQL such as a column) as one JSON array, in tagsOf's order. */
  const tagIdsOf = (member: unknown) =>
    storage.dialect === 'postgres'
      ? sql`(select json_agg(tag_id order by rowid) from tag_members where member_id = ${member})`
      : sql`(select json_group_array(tag_id order by rowid) from tag_members where member_id = ${member})`
  const subOrganizationsWith = (table: string, condition: RawBuilder<unknown>) => (parent: string) =>
    all<{ id: string }>(
      sql`select id from organizations where parent_id = ${parent} and id in (select organization_id from ${sql.table(table)} where ${condition}) order by created_at, rowid`,
    )

  return {
    dialect: storage.dialect,
    /**
     * Takes the organization's row lock until the transaction ends: writes that check rules over
     * an organization's rows (names, root users, quorum) run one at a time per organization, on
     * every instance. Changes nothing.
     */
    lockOrganization: (id: string) => run(sql`update organizations set root_quorum_threshold = root_quorum_threshold where id = ${id}`),

    /** Takes an activity's row lock until the transaction ends (votes on it count one at a time). Changes nothing. */
    lockActivity: (id: string) => run(sql`update activities set updated_at = updated_at where id = ${id}`),

    insertOrganization: (row: OrganizationRow) => insert('organizations', row),
    organization: (id: string) => get<OrganizationRow>(sql`select * from organizations where id = ${id}`),
    insertUser: (row: UserRow) => insert('users', { ...row, phone_number: null, updated_at: null }),
    user: (id: string, organizationId: string) => get<UserRow>(sql`select * from users where id = ${id} and organization_id = ${organizationId}`),
    users: (organizationId: string) => all<UserRow>(sql`select * from users where organization_id = ${organizationId} order by created_at, id`),
    /**
     * Whether `userId` is a user of the organization and none of its users has a way in besides
     * their keys: an email, a passkey or an OAuth identity (policies/freshVerification.ts, a guest's
     * organization). One statement, whatever the number of users.
     */
    onlyKeysLetIn: async (userId: string, organizationId: string) =>
      Number(
        (
          await get<{ guest: number | string }>(
            sql`select case when exists (select 1 from users where id = ${userId} and organization_id = ${organizationId})
              and not exists (
                select 1 from users u where u.organization_id = ${organizationId} and (
                  (u.email is not null and u.email <> '')
                  or exists (select 1 from authenticators a where a.user_id = u.id)
                  or exists (select 1 from oauth_providers o where o.user_id = u.id)))
              then 1 else 0 end as guest`,
          )
        )?.guest ?? 0,
      ) === 1,
    insertAuthenticator: (row: AuthenticatorRow) => insert('authenticators', row),
    upsertImportTarget: (row: ImportTargetRow) =>
      run(
        sql`insert into import_targets (user_id, organization_id, sealed_private_key, created_at) values (${row.user_id}, ${row.organization_id}, ${row.sealed_private_key}, ${row.created_at}) on conflict (user_id) do update set sealed_private_key = excluded.sealed_private_key, created_at = excluded.created_at`,
      ),
    importTarget: (userId: string, organizationId: string) =>
      get<ImportTargetRow>(sql`select * from import_targets where user_id = ${userId} and organization_id = ${organizationId}`),
    deleteImportTarget: (userId: string) => run(sql`delete from import_targets where user_id = ${userId}`),
    markImported: (walletId: string) => run(sql`update wallets set imported = 1 where id = ${walletId}`),
    authenticatorByCredential: (credentialId: string) => get<AuthenticatorRow>(sql`select * from authenticators where credential_id = ${credentialId}`),
    authenticatorsOfUser: (userId: string) => all<AuthenticatorRow>(sql`select * from authenticators where user_id = ${userId} order by created_at, id`),
    setAuthenticatorCounter: (id: string, counter: number) => run(sql`update authenticators set counter = ${counter} where id = ${id}`),
    userByEmail: (organizationId: string, email: string) =>
      get<UserRow>(sql`select * from users where organization_id = ${organizationId} and lower(email) = lower(${email})`),
    insertOtp: (row: Omit<OtpRow, 'attempts' | 'used' | 'sealed_target_key' | 'contact'> & { sealed_target_key?: string; contact?: string }) =>
      insert('otps', { ...row, sealed_target_key: row.sealed_target_key ?? null, contact: row.contact ?? null, attempts: 0, used: 0 }),
    otp: (id: string, organizationId: string) => get<OtpRow>(sql`select * from otps where id = ${id} and organization_id = ${organizationId}`),
    /**
     * Reserves one guess at a code, atomically, before it is compared: the attempts it makes, or
     * undefined when the code is spent, used, replaced or expired. Concurrent guesses (on any
     * instance) wait on the row and see each other's count, so at most `max` are ever compared.
     */
    reserveOtpAttempt: async (id: string, organizationId: string, at: number, max: number) =>
      (
        await get<{ attempts: number }>(
          sql`update otps set attempts = attempts + 1 where id = ${id} and organization_id = ${organizationId} and attempts < ${max} and used = 0 and expires_at > ${at} returning attempts`,
        )
      )?.attempts,
    /** Replaces a user's codes still open: only the newest one sent may be redeemed. */
    retireOtps: (userId: string, organizationId: string) =>
      run(sql`update otps set used = 2 where user_id = ${userId} and organization_id = ${organizationId} and used = 0`),
    /** Replaces the codes still open to an address no user has (`contact`, lowercase): only the newest one may be redeemed. */
    retireContactOtps: (contact: string, organizationId: string) =>
      run(sql`update otps set used = 2 where user_id = '' and contact = ${contact} and organization_id = ${organizationId} and used = 0`),
    /** Marks a code used; false when it was used already (two right answers racing redeem it once). */
    otpUsed: async (id: string) => {
      const result = await (await executor()).updateTable('otps').set({ used: 1 }).where('id', '=', id).where('used', '=', 0).executeTakeFirst()
      return result.numUpdatedRows > 0n
    },
    /** Spends the verification token of a redeemed code; false when it was spent already (logins racing sign in once). */
    otpTokenUsed: async (id: string, organizationId: string) => {
      const result = await (await executor())
        .updateTable('otps')
        .set({ used: 3 })
        .where('id', '=', id)
        .where('organization_id', '=', organizationId)
        .where('used', '=', 1)
        .where('sealed_target_key', 'is not', null)
        .executeTakeFirst()
      return result.numUpdatedRows > 0n
    },
    /**
     * Adds `weight` to `subject`'s fixed window of `windowMs` at `at` (a new window once the last
     * one has passed) and answers the window's count and start. One statement: requests racing on
     * any instances each count once.
     */
    countRequest: async (subject: string, weight: number, windowMs: number, at: number) => {
      const passed = sql`rate_limits.window_started_at <= ${at - windowMs}`
      const row = await get<{ count: number | string; window_started_at: number | string }>(
        sql`insert into rate_limits (subject, window_started_at, count) values (${subject}, ${at}, ${weight}) on conflict (subject) do update set count = case when ${passed} then ${weight} else rate_limits.count + ${weight} end, window_started_at = case when ${passed} then ${at} else rate_limits.window_started_at end returning count, window_started_at`,
      )
      return { count: Number(row!.count), windowStartedAt: Number(row!.window_started_at) }
    },
    /** Drops the rate-limit windows that started before `before`. */
    deleteRateLimitsBefore: (before: number) => run(sql`delete from rate_limits where window_started_at < ${before}`),
    insertMail: (row: MailRow) => insert('mailbox', row),
    mailbox: () => all<MailRow>(sql`select * from mailbox order by created_at desc, rowid desc limit 200`),
    insertApiKey: (row: ApiKeyRow) => insert('api_keys', row),
    apiKeyByPublicKey: (publicKey: string) => get<ApiKeyRow>(sql`select * from api_keys where public_key = ${publicKey}`),
    /**
     * The API key with `publicKey`, the organization `organizationId` and its root users (as
     * `rootUserIds` reads them), each or all missing, in one round trip: what authenticating a
     * stamped request reads, and what authorizing a signature then needs without another statement.
     */
    apiKeyAndOrganization: async (publicKey: string, organizationId: string) => {
      const roots = rootUsersOf(sql`o.id`)
      // Both engines aggregate in order (SQLite since 3.44); PostgreSQL's json arrives parsed, SQLite's as text.
      const rootsArray =
        storage.dialect === 'postgres'
          ? sql`(select json_agg(user_id order by first, second) from ${roots} roots)`
          : sql`(select json_group_array(user_id order by first, second) from ${roots} roots)`
      const record = (await get<Record<string, unknown>>(
        sql`select ${prefixed('k', API_KEY_COLUMNS)}, ${prefixed('o', ORGANIZATION_COLUMNS)}, ${rootsArray} as root_user_ids, u.email as u_email, u.name as u_name, ${tagIdsOf(sql`k.user_id`)} as u_tags from (select 1 as one) one left join api_keys k on k.public_key = ${publicKey} left join organizations o on o.id = ${organizationId} left join users u on u.id = k.user_id and u.organization_id = o.id`,
      ))!
      const organization = unprefixed<OrganizationRow>(record, 'o', ORGANIZATION_COLUMNS)
      const apiKey = unprefixed<ApiKeyRow>(record, 'k', API_KEY_COLUMNS)
      return {
        apiKey,
        organization,
        rootUserIds: organization ? jsonIds(record['root_user_ids']) : undefined,
        // What approver(apiKey.user_id, organizationId) answers, read in the same statement.
        approver:
          apiKey && organization
            ? { email: record['u_email'] as string | null, name: record['u_name'] as string | null, tags: jsonIds(record['u_tags']) }
            : undefined,
      }
    },
    apiKeysOfUser: (userId: string) => all<ApiKeyRow>(sql`select * from api_keys where user_id = ${userId} order by created_at, id`),
    insertWallet: (row: WalletRow) => insert('wallets', row),
    wallet: (id: string, organizationId: string) => get<WalletRow>(sql`select * from wallets where id = ${id} and organization_id = ${organizationId}`),
    walletByName: (organizationId: string, name: string) =>
      get<WalletRow>(sql`select * from wallets where organization_id = ${organizationId} and name = ${name}`),
    wallets: (organizationId: string) => all<WalletRow>(sql`select * from wallets where organization_id = ${organizationId} order by created_at, id`),
    markExported: (walletId: string) => run(sql`update wallets set exported = 1 where id = ${walletId}`),
    insertAccount: (row: WalletAccountRow) => insert('wallet_accounts', row),
    /** Keeps an older account's key sealed beside it, once derived; a key already there stays. */
    sealAccountKey: (accountId: string, sealedPrivateKey: string) =>
      run(sql`update wallet_accounts set sealed_private_key = ${sealedPrivateKey} where id = ${accountId} and sealed_private_key is null`),
    accountsOfWallet: (walletId: string) => all<WalletAccountRow>(sql`select * from wallet_accounts where wallet_id = ${walletId} order by created_at, rowid`),
    accountsOfOrganization: (organizationId: string) =>
      all<WalletAccountRow>(sql`select * from wallet_accounts where organization_id = ${organizationId} order by created_at, rowid`),
    /**
     * What a signing address names in an organization, in one round trip: the id of the private
     * key holding it, and the wallet account holding it (either, both or neither).
     */
    signingKeyByAddress: async (organizationId: string, address: string) => {
      const record = (await get<Record<string, unknown>>(
        sql`select (select private_key_id from private_key_addresses where organization_id = ${organizationId} and lower(address) = lower(${address}) limit 1) as private_key_id, ${prefixed('a', WALLET_ACCOUNT_COLUMNS)} from (select 1 as one) one left join wallet_accounts a on a.organization_id = ${organizationId} and lower(a.address) = lower(${address})`,
      ))!
      return {
        privateKeyId: typeof record['private_key_id'] === 'string' ? record['private_key_id'] : undefined,
        account: unprefixed<WalletAccountRow>(record, 'a', WALLET_ACCOUNT_COLUMNS),
      }
    },
    /**
     * What an address names for the policies, in one statement: the private key holding it (its
     * address row), else the wallet account holding it with that account's wallet. Each side is
     * what privateKeyByAddress, accountByAddress and wallet answer alone; the account is its whole
     * row, so a signature authorized on it signs without reading it again (signingKeyByAddress).
     */
    addressHolders: async (organizationId: string, address: string) => {
      const record = (await get<Record<string, unknown>>(
        sql`select p.private_key_id as p_private_key_id, p.address as p_address, ${prefixed('a', WALLET_ACCOUNT_COLUMNS)}, w.id as w_id, w.name as w_name, w.imported as w_imported, w.exported as w_exported from (select 1 as one) one left join private_key_addresses p on p.organization_id = ${organizationId} and lower(p.address) = lower(${address}) left join wallet_accounts a on a.organization_id = ${organizationId} and lower(a.address) = lower(${address}) left join wallets w on w.id = a.wallet_id and w.organization_id = ${organizationId}`,
      ))!
      const privateKey =
        typeof record['p_private_key_id'] === 'string' ? { private_key_id: record['p_private_key_id'], address: record['p_address'] as string } : undefined
      const account = unprefixed<WalletAccountRow>(record, 'a', WALLET_ACCOUNT_COLUMNS)
      const wallet =
        typeof record['w_id'] === 'string'
          ? { id: record['w_id'], name: record['w_name'] as string, imported: Number(record['w_imported']), exported: Number(record['w_exported']) }
          : undefined
      return { privateKey, account, wallet }
    },
    accountByAddress: (organizationId: string, address: string) =>
      get<WalletAccountRow>(sql`select * from wallet_accounts where organization_id = ${organizationId} and lower(address) = lower(${address})`),
    insertActivity: (row: ActivityRow) => insert('activities', row),
    settleActivity: (id: string, status: string, result: string | null, failure: string | null, at: number) =>
      run(sql`update activities set status = ${status}, result = ${result}, failure = ${failure}, updated_at = ${at} where id = ${id}`),
    /** Settles an activity still waiting for consensus; false when another vote settled it first. */
    settleWaitingActivity: async (id: string, status: string, result: string | null, failure: string | null, at: number) => {
      const update = await (await executor())
        .updateTable('activities')
        .set({ status, result, failure, updated_at: at })
        .where('id', '=', id)
        .where('status', '=', 'ACTIVITY_STATUS_CONSENSUS_NEEDED')
        .executeTakeFirst()
      return update.numUpdatedRows > 0n
    },
    insertVote: (row: VoteRow) => insert('votes', row),
    /** Replaces an activity's policy evaluations (JSON): a vote adds the engine's decision on it. */
    setPolicyEvaluations: (activityId: string, evaluations: string) =>
      run(sql`update activities set policy_evaluations = ${evaluations} where id = ${activityId}`),
    /** Removes a user's vote on an activity: a lapsed one, before the user votes again (one row per user and activity). */
    deleteVote: (activityId: string, userId: string) => run(sql`delete from votes where activity_id = ${activityId} and user_id = ${userId}`),
    votes: (activityId: string) => all<VoteRow>(sql`select * from votes where activity_id = ${activityId} order by created_at, rowid`),
    activity: (id: string, organizationId: string) => get<ActivityRow>(sql`select * from activities where id = ${id} and organization_id = ${organizationId}`),
    activityByFingerprint: (fingerprint: string) => get<ActivityRow>(sql`select * from activities where fingerprint = ${fingerprint}`),
    /** Where the audit trail appends (its own transactions, on the database itself). */
    auditStorage: {
      dialect: storage.dialect,
      transaction: (work) => storage.transaction((trx) => work(trx)),
      connection: async (work) => (await storage.executor()).connection().execute(work),
      groupCommit: storage.groupCommit,
    } satisfies AuditStorage as AuditStorage,
    /** Walks the audit chain (`latchkey-kms audit verify`): intact, or the first altered row. */
    verifyAudit: async () => verifyAuditTrail(await storage.executor(), 'kms'),
    /** Throws unless the database answers a query: the kms's `GET /readyz`. */
    ping: () => storage.ping(),
    close: () => storage.close(),
    // The key hierarchy's data keys and the sealed rows they open (keyring/).
    ...dataKeyStatements(storage.dialect, executor),

    // Mail after commit (outbox.ts).
    insertOutbox: (row: OutboxRow) => insert('outbox', row),
    dueOutbox: (at: number, limit: number) =>
      all<OutboxRow>(sql`select * from outbox where status = 'pending' and next_attempt_at <= ${at} order by next_attempt_at, rowid limit ${limit}`),
    outboxOfActivity: (activityId: string) => all<OutboxRow>(sql`select * from outbox where activity_id = ${activityId} order by rowid`),
    outbox: () => all<OutboxRow>(sql`select * from outbox order by created_at, rowid`),
    /** Messages in the outbox by status, and the oldest one's creation time (unix ms), for the metrics. */
    outboxBacklog: () =>
      all<{ status: string; count: number; oldest: number }>(sql`select status, count(*) as count, min(created_at) as oldest from outbox group by status`),
    /** Claims a due message until `until`: false when another instance claimed it first. */
    claimOutbox: async (id: string, seenAt: number, until: number) => {
      const update = await (await executor())
        .updateTable('outbox')
        .set({ next_attempt_at: until })
        .where('id', '=', id)
        .where('status', '=', 'pending')
        .where('next_attempt_at', '=', seenAt)
        .executeTakeFirst()
      return update.numUpdatedRows > 0n
    },
    deleteOutbox: (id: string) => run(sql`delete from outbox where id = ${id}`),
    retryOutbox: (id: string, attempts: number, nextAttemptAt: number, error: string) =>
      run(sql`update outbox set attempts = ${attempts}, next_attempt_at = ${nextAttemptAt}, last_error = ${error} where id = ${id}`),
    failOutbox: (id: string, attempts: number, error: string) =>
      run(sql`update outbox set status = 'failed', attempts = ${attempts}, last_error = ${error} where id = ${id}`),

    // Users, their keys and passkeys.
    userDetails: (id: string, organizationId: string) => get<UserDetailsRow>(sql`select * from users where id = ${id} and organization_id = ${organizationId}`),
    updateUser: (row: { id: string; name: string; email: string | null; phone_number: string | null; updated_at: number }) =>
      run(
        sql`update users set name = ${row.name}, email = ${row.email}, phone_number = ${row.phone_number}, updated_at = ${row.updated_at} where id = ${row.id}`,
      ),
    /** A user and what only they hold: keys, passkeys, OAuth identities, pending codes and imports. */
    deleteUser: async (id: string) => {
      await run(sql`delete from tag_members where member_id = ${id}`)
      await run(sql`delete from root_quorum_members where user_id = ${id}`)
      await run(sql`delete from oauth_providers where user_id = ${id}`)
      await run(sql`delete from api_keys where user_id = ${id}`)
      await run(sql`delete from mfa_factors where user_id = ${id}`)
      await run(sql`delete from mfa_recovery_codes where user_id = ${id}`)
      await run(sql`delete from authenticators where user_id = ${id}`)
      await run(sql`delete from import_targets where user_id = ${id}`)
      await run(sql`delete from otps where user_id = ${id}`)
      await run(sql`delete from users where id = ${id}`)
    },
    apiKey: (id: string, organizationId: string) => get<ApiKeyRow>(sql`select * from api_keys where id = ${id} and organization_id = ${organizationId}`),
    /**
     * Deletes an API key, and with it (on delete cascade, in this statement) the grant keys it
     * created and their rules and ledgers (grants/).
     */
    deleteApiKey: (id: string) => run(sql`delete from api_keys where id = ${id}`),
    /** Records that the holder of API key `id` proved themselves again at `at` (otp_login of a key the user has). */
    setApiKeyVerifiedAt: (id: string, at: number) => run(sql`update api_keys set verified_at = ${at} where id = ${id}`),
    /**
     * Whether the API key `id` still exists, its row lock taken until the transaction ends: a key
     * registered as created by it (grants/) then commits before the key can be deleted, so the
     * deletion finds it, or sees that the key is gone already, on any instance.
     */
    lockApiKey: async (id: string) => (await get<{ id: string }>(sql`update api_keys set name = name where id = ${id} returning id`)) !== undefined,

    // Second factors (mfa/).
    insertMfaFactor: (row: MfaFactorRow) => insert('mfa_factors', row),
    mfaFactor: (id: string, organizationId: string) =>
      get<MfaFactorRow>(sql`select * from mfa_factors where id = ${id} and organization_id = ${organizationId}`),
    mfaFactorsOfUser: (userId: string) => all<MfaFactorRow>(sql`select * from mfa_factors where user_id = ${userId} order by created_at, rowid`),
    /** How many factors the user has enrolled (pending TOTP enrolments aside). */
    activeMfaFactorCount: async (userId: string) =>
      Number(
        (
          await get<{ count: number | string }>(
            sql`select count(*) as count from mfa_factors where user_id = ${userId} and status = 'MFA_FACTOR_STATUS_ACTIVE'`,
          )
        )?.count ?? 0,
      ),
    /** How many factors the users of an organization have enrolled between them (pending TOTP enrolments aside). */
    activeMfaFactorCountOfOrganization: async (organizationId: string) =>
      Number(
        (
          await get<{ count: number | string }>(
            sql`select count(*) as count from mfa_factors f join users u on u.id = f.user_id where u.organization_id = ${organizationId} and f.status = 'MFA_FACTOR_STATUS_ACTIVE'`,
          )
        )?.count ?? 0,
      ),
    deleteMfaFactor: (id: string) => run(sql`delete from mfa_factors where id = ${id}`),
    deletePendingMfaFactors: (userId: string, type: string) =>
      run(sql`delete from mfa_factors where user_id = ${userId} and type = ${type} and status = 'MFA_FACTOR_STATUS_PENDING'`),
    /**
     * Reserves one judgement of a code for factor `id`, atomically, before the code is compared:
     * the failures it counts (this attempt included) and the lock it sets, or undefined while the
     * factor is locked. The attempt that reaches `max` locks the factor until `at + lockMs`; one
     * after an expired lock starts the count again. Concurrent attempts (on any instance) wait on
     * the row and see each other's count, so at most `max` are judged before the lock.
     */
    reserveMfaAttempt: (id: string, at: number, max: number, lockMs: number) =>
      get<{ failures: number; locked_until: number | null }>(
        sql`update mfa_factors set failures = case when locked_until is not null then 1 else failures + 1 end, locked_until = case when (case when locked_until is not null then 1 else failures + 1 end) >= ${max} then cast(${at + lockMs} as bigint) else null end where id = ${id} and (locked_until is null or locked_until <= ${at}) returning failures, locked_until`,
      ),
    /** A right code: the count and lock cleared, the step remembered, a pending factor activated. */
    acceptMfaCode: (id: string, timeStep: number | null) =>
      run(sql`update mfa_factors set failures = 0, locked_until = null, last_time_step = ${timeStep}, status = 'MFA_FACTOR_STATUS_ACTIVE' where id = ${id}`),
    /** A recovery code spent: every factor of the user unlocked. */
    unlockMfaFactors: (userId: string) => run(sql`update mfa_factors set failures = 0, locked_until = null where user_id = ${userId}`),
    replaceRecoveryCodes: async (userId: string, organizationId: string, hashes: readonly string[], at: number) => {
      await run(sql`delete from mfa_recovery_codes where user_id = ${userId}`)
      for (const hash of hashes)
        await insert('mfa_recovery_codes', { code_hash: hash, user_id: userId, organization_id: organizationId, used_at: null, created_at: at })
    },
    deleteRecoveryCodes: (userId: string) => run(sql`delete from mfa_recovery_codes where user_id = ${userId}`),
    /** Spends a recovery code; false when it is not the user's or was spent already (two racing spend it once). */
    spendRecoveryCode: async (userId: string, hash: string, at: number) =>
      (await get<{ code_hash: string }>(
        sql`update mfa_recovery_codes set used_at = ${at} where code_hash = ${hash} and user_id = ${userId} and used_at is null returning code_hash`,
      )) !== undefined,
    unusedRecoveryCodeCount: async (userId: string) =>
      Number(
        (await get<{ count: number | string }>(sql`select count(*) as count from mfa_recovery_codes where user_id = ${userId} and used_at is null`))?.count ??
          0,
      ),
    /** Records that the holder of API key `apiKeyId` verified a second factor at `at`. */
    setMfaVerifiedAt: (apiKeyId: string, at: number) =>
      run(
        sql`insert into mfa_verifications (api_key_id, verified_at) values (${apiKeyId}, ${at}) on conflict (api_key_id) do update set verified_at = excluded.verified_at`,
      ),
    mfaVerifiedAt: async (apiKeyId: string) =>
      (await get<{ verified_at: number }>(sql`select verified_at from mfa_verifications where api_key_id = ${apiKeyId}`))?.verified_at,

    // ERC-7715 grants (grants/).
    insertGrant: (row: GrantRow) => insert('grants', row),
    grant: (id: string, organizationId: string) => get<GrantRow>(sql`select * from grants where id = ${id} and organization_id = ${organizationId}`),
    grants: (organizationId: string) => all<GrantRow>(sql`select * from grants where organization_id = ${organizationId} order by created_at, rowid`),
    /**
     * The grant of an API key, its row lock taken until the transaction ends: signatures under one
     * grant are counted one at a time, on every instance, so its ledger cannot be overspent.
     */
    lockGrantOfKey: (apiKeyId: string) => get<GrantRow>(sql`update grants set created_at = created_at where api_key_id = ${apiKeyId} returning *`),
    insertGrantSpend: (row: GrantSpendRow) => insert('grant_spends', row),
    /** What a grant spent of `asset` at or after `since` (unix ms): the amounts, as decimal strings. */
    grantSpendsSince: async (grantId: string, asset: string, since: number) =>
      (await all<{ amount: string }>(sql`select amount from grant_spends where grant_id = ${grantId} and asset = ${asset} and signed_at > ${since}`)).map(
        (row) => row.amount,
      ),
    authenticator: (id: string, organizationId: string) =>
      get<AuthenticatorRow>(sql`select * from authenticators where id = ${id} and organization_id = ${organizationId}`),
    deleteAuthenticator: (id: string) => run(sql`delete from authenticators where id = ${id}`),
    usersByName: (organizationId: string, name: string) => all<UserRow>(sql`select * from users where organization_id = ${organizationId} and name = ${name}`),

    // Organizations.
    subOrganizations: (parentId: string) => all<OrganizationRow>(sql`select * from organizations where parent_id = ${parentId} order by created_at, rowid`),
    renameOrganization: (name: string, id: string) => run(sql`update organizations set name = ${name} where id = ${id}`),
    setRootQuorumThreshold: (threshold: number, id: string) => run(sql`update organizations set root_quorum_threshold = ${threshold} where id = ${id}`),
    /** Removes an organization and everything it holds; its activities stay as the record of what happened. */
    deleteOrganization: async (id: string) => {
      await run(sql`delete from tag_members where tag_id in (select id from tags where organization_id = ${id})`)
      for (const table of [
        'tags',
        'private_key_addresses',
        'private_keys',
        'policies',
        'invitations',
        'oauth_providers',
        'organization_features',
        'root_quorum_members',
        'wallet_accounts',
        'wallets',
        'mfa_factors',
        'mfa_recovery_codes',
        'api_keys',
        'authenticators',
        'import_targets',
        'otps',
        'users',
      ])
        await run(sql`delete from ${sql.table(table)} where organization_id = ${id}`)
      await run(sql`delete from organizations where id = ${id}`)
    },
    rootQuorumMembers: async (organizationId: string) =>
      (await all<{ user_id: string }>(sql`select user_id from root_quorum_members where organization_id = ${organizationId} order by rowid`)).map(
        (row) => row.user_id,
      ),
    /**
     * The root users in one statement: the recorded members (in the order recorded), or, while none
     * are recorded, every user of the organization (organizations/quorum.ts says why).
     */
    rootUserIds: async (organizationId: string) =>
      (await all<{ user_id: string }>(sql`select user_id from ${rootUsersOf(sql`${organizationId}`)} roots order by first, second`)).map((row) => row.user_id),
    setRootQuorumMembers: async (organizationId: string, userIds: readonly string[]) => {
      await run(sql`delete from root_quorum_members where organization_id = ${organizationId}`)
      for (const userId of userIds) await insert('root_quorum_members', { organization_id: organizationId, user_id: userId })
    },
    features: (organizationId: string) => all<FeatureRow>(sql`select * from organization_features where organization_id = ${organizationId} order by name`),
    setFeature: (organizationId: string, name: string, value: string) =>
      run(
        sql`insert into organization_features (organization_id, name, value) values (${organizationId}, ${name}, ${value}) on conflict (organization_id, name) do update set value = excluded.value`,
      ),
    removeFeature: (organizationId: string, name: string) =>
      run(sql`delete from organization_features where organization_id = ${organizationId} and name = ${name}`),

    // Tags of users and private keys.
    insertTag: (row: TagRow) => insert('tags', row),
    tag: (id: string, organizationId: string, type: string) =>
      get<TagRow>(sql`select * from tags where id = ${id} and organization_id = ${organizationId} and type = ${type}`),
    tagByName: (organizationId: string, type: string, name: string) =>
      get<TagRow>(sql`select * from tags where organization_id = ${organizationId} and type = ${type} and name = ${name}`),
    tags: (organizationId: string, type: string) =>
      all<TagRow>(sql`select * from tags where organization_id = ${organizationId} and type = ${type} order by created_at, rowid`),
    renameTag: (name: string, at: number, id: string) => run(sql`update tags set name = ${name}, updated_at = ${at} where id = ${id}`),
    touchTag: (at: number, id: string) => run(sql`update tags set updated_at = ${at} where id = ${id}`),
    deleteTag: (id: string) => run(sql`delete from tags where id = ${id}`),
    tagMembers: async (tagId: string) =>
      (await all<{ member_id: string }>(sql`select member_id from tag_members where tag_id = ${tagId} order by rowid`)).map((row) => row.member_id),
    addTagMember: (tagId: string, memberId: string) =>
      run(sql`insert into tag_members (tag_id, member_id) values (${tagId}, ${memberId}) on conflict do nothing`),
    removeTagMember: (tagId: string, memberId: string) => run(sql`delete from tag_members where tag_id = ${tagId} and member_id = ${memberId}`),
    /** A user as the policies' `approvers` list them, in one statement: email and name (absent for no such user), and tag ids in tagsOf's order. */
    approver: async (id: string, organizationId: string): Promise<Approver> => {
      const record = (await get<{ email: string | null; name: string | null; tags: unknown }>(
        sql`select u.email as email, u.name as name, ${tagIdsOf(id)} as tags from (select 1 as one) one left join users u on u.id = ${id} and u.organization_id = ${organizationId}`,
      ))!
      return { email: record.email, name: record.name, tags: jsonIds(record.tags) }
    },
    tagsOf: async (memberId: string) =>
      (await all<{ tag_id: string }>(sql`select tag_id from tag_members where member_id = ${memberId} order by rowid`)).map((row) => row.tag_id),
    untagMember: (memberId: string) => run(sql`delete from tag_members where member_id = ${memberId}`),

    // Policies.
    insertPolicy: (row: PolicyRow) => insert('policies', row),
    policy: (id: string, organizationId: string) => get<PolicyRow>(sql`select * from policies where id = ${id} and organization_id = ${organizationId}`),
    policies: (organizationId: string) => all<PolicyRow>(sql`select * from policies where organization_id = ${organizationId} order by created_at, rowid`),
    updatePolicy: (row: PolicyRow) =>
      run(
        sql`update policies set name = ${row.name}, effect = ${row.effect}, condition = ${row.condition}, consensus = ${row.consensus}, notes = ${row.notes}, time = ${row.time}, updated_at = ${row.updated_at} where id = ${row.id}`,
      ),
    deletePolicy: (id: string) => run(sql`delete from policies where id = ${id}`),

    // Invitations.
    insertInvitation: (row: InvitationRow) => insert('invitations', row),
    invitation: (id: string, organizationId: string) =>
      get<InvitationRow>(sql`select * from invitations where id = ${id} and organization_id = ${organizationId}`),
    invitations: (organizationId: string) =>
      all<InvitationRow>(sql`select * from invitations where organization_id = ${organizationId} order by created_at, rowid`),
    deleteInvitation: (id: string) => run(sql`delete from invitations where id = ${id}`),

    // OAuth providers.
    insertOauthProvider: (row: OauthProviderRow) => insert('oauth_providers', row),
    oauthProvider: (id: string, organizationId: string) =>
      get<OauthProviderRow>(sql`select * from oauth_providers where id = ${id} and organization_id = ${organizationId}`),
    oauthProvidersOfUser: (userId: string) => all<OauthProviderRow>(sql`select * from oauth_providers where user_id = ${userId} order by created_at, rowid`),
    oauthProviders: (organizationId: string) =>
      all<OauthProviderRow>(sql`select * from oauth_providers where organization_id = ${organizationId} order by created_at, rowid`),
    oauthProviderByIdentity: (organizationId: string, issuer: string, audience: string, subject: string) =>
      get<OauthProviderRow>(
        sql`select * from oauth_providers where organization_id = ${organizationId} and issuer = ${issuer} and audience = ${audience} and subject = ${subject}`,
      ),
    deleteOauthProvider: (id: string) => run(sql`delete from oauth_providers where id = ${id}`),

    // Private keys.
    insertPrivateKey: async (row: PrivateKeyRow, addresses: readonly { format: string; address: string }[]) => {
      await insert('private_keys', row)
      for (const address of addresses)
        await insert('private_key_addresses', {
          private_key_id: row.id,
          organization_id: row.organization_id,
          format: address.format,
          address: address.address,
        })
    },
    privateKey: (id: string, organizationId: string) =>
      get<PrivateKeyRow>(sql`select * from private_keys where id = ${id} and organization_id = ${organizationId}`),
    privateKeyByName: (organizationId: string, name: string) =>
      get<PrivateKeyRow>(sql`select * from private_keys where organization_id = ${organizationId} and name = ${name}`),
    privateKeys: (organizationId: string) =>
      all<PrivateKeyRow>(sql`select * from private_keys where organization_id = ${organizationId} order by created_at, rowid`),
    privateKeyAddresses: (privateKeyId: string) =>
      all<PrivateKeyAddressRow>(sql`select * from private_key_addresses where private_key_id = ${privateKeyId} order by rowid`),
    privateKeyByAddress: (organizationId: string, address: string) =>
      get<PrivateKeyAddressRow>(sql`select * from private_key_addresses where organization_id = ${organizationId} and lower(address) = lower(${address})`),
    markPrivateKeyExported: (id: string) => run(sql`update private_keys set exported = 1 where id = ${id}`),
    deletePrivateKey: (id: string) => run(sql`delete from private_keys where id = ${id}`),

    // Wallets.
    renameWallet: (name: string, id: string) => run(sql`update wallets set name = ${name} where id = ${id}`),
    deleteWallet: async (id: string) => {
      await run(sql`delete from wallet_accounts where wallet_id = ${id}`)
      await run(sql`delete from wallets where id = ${id}`)
    },
    walletAccount: (id: string, organizationId: string) =>
      get<WalletAccountRow>(sql`select * from wallet_accounts where id = ${id} and organization_id = ${organizationId}`),
    walletAccountByPath: (walletId: string, path: string) =>
      get<WalletAccountRow>(sql`select * from wallet_accounts where wallet_id = ${walletId} and path = ${path}`),
    walletAccountByAddress: (walletId: string, address: string) =>
      get<WalletAccountRow>(sql`select * from wallet_accounts where wallet_id = ${walletId} and lower(address) = lower(${address})`),
    deleteWalletAccount: (id: string) => run(sql`delete from wallet_accounts where id = ${id}`),

    // Activities, newest first.
    activities: (organizationId: string) =>
      all<ActivityRow>(sql`select * from activities where organization_id = ${organizationId} order by created_at desc, rowid desc`),

    /**
     * Completed activities of `parent`'s sub-organizations of `types`, after the cursor `after`
     * (updated_at, id) and completed no later than `until`, oldest first (list_suborganization_activities).
     */
    completedSubOrganizationActivities: (parent: string, types: readonly string[], after: { at: number; id: string }, until: number, limit: number) =>
      all<ActivityRow>(
        sql`select a.* from activities a join organizations o on o.id = a.organization_id where o.parent_id = ${parent} and a.status = 'ACTIVITY_STATUS_COMPLETED' and a.type in (${sql.join([...types])}) and a.updated_at <= ${until} and (a.updated_at > ${after.at} or (a.updated_at = ${after.at} and a.id > ${after.id})) order by a.updated_at, a.id limit ${limit}`,
      ),

    /** The newest completed activity of `parent`'s sub-organizations of `types`, completed no later than `until` (a follower's first cursor). */
    newestCompletedSubOrganizationActivity: (parent: string, types: readonly string[], until: number) =>
      get<Pick<ActivityRow, 'id' | 'updated_at'>>(
        sql`select a.id, a.updated_at from activities a join organizations o on o.id = a.organization_id where o.parent_id = ${parent} and a.status = 'ACTIVITY_STATUS_COMPLETED' and a.type in (${sql.join([...types])}) and a.updated_at <= ${until} order by a.updated_at desc, a.id desc limit 1`,
      ),

    // Sub-organizations of a parent, found by what they hold (list_suborgs).
    subOrganizationsBy: {
      NAME: (parent: string, value: string) =>
        all<{ id: string }>(sql`select id from organizations where parent_id = ${parent} and name = ${value} order by created_at, rowid`),
      USERNAME: (parent: string, value: string) => subOrganizationsWith('users', sql`name = ${value}`)(parent),
      EMAIL: (parent: string, value: string) => subOrganizationsWith('users', sql`lower(email) = lower(${value})`)(parent),
      PHONE_NUMBER: (parent: string, value: string) => subOrganizationsWith('users', sql`phone_number = ${value}`)(parent),
      CREDENTIAL_ID: (parent: string, value: string) => subOrganizationsWith('authenticators', sql`credential_id = ${value}`)(parent),
      PUBLIC_KEY: (parent: string, value: string) => subOrganizationsWith('api_keys', sql`public_key = ${value}`)(parent),
      WALLET_ACCOUNT_ADDRESS: (parent: string, value: string) => subOrganizationsWith('wallet_accounts', sql`lower(address) = lower(${value})`)(parent),
    } as Readonly<Record<string, (parent: string, value: string) => Promise<{ id: string }[]>>>,
    subOrganizationsByOauth: (parent: string, issuer: string, audience: string, subject: string) =>
      subOrganizationsWith('oauth_providers', sql`issuer = ${issuer} and audience = ${audience} and subject = ${subject}`)(parent),
  }
}

export { isUniqueViolation }
