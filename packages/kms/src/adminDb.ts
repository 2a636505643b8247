import type { ActivityRow, ApiKeyRow, AuthenticatorRow, OrganizationRow, UserRow, WalletAccountRow } from './db.js'
import type { SqlDatabase } from './storage/sqlDatabase.js'

/** A user with the columns the key-management API added: phone number and last change. */
export type UserDetailsRow = UserRow & { phone_number: string | null; updated_at: number | null }
/** A secp256k1 key held on its own (not derived from a wallet), sealed with the master key under its id. */
export type PrivateKeyRow = {
  id: string
  organization_id: string
  name: string
  curve: string
  /** Compressed, hex without 0x. */
  public_key: string
  sealed_private_key: string
  created_at: number
  exported: number
  imported: number
}
export type PrivateKeyAddressRow = { private_key_id: string; organization_id: string; format: string; address: string }
export type TagType = 'TAG_TYPE_USER' | 'TAG_TYPE_PRIVATE_KEY'
export type TagRow = { id: string; organization_id: string; name: string; type: TagType; created_at: number; updated_at: number }
export type PolicyRow = {
  id: string
  organization_id: string
  name: string
  effect: string
  condition: string
  consensus: string
  notes: string
  time: string | null
  created_at: number
  updated_at: number
}
export type InvitationRow = {
  id: string
  organization_id: string
  receiver_user_name: string
  receiver_email: string
  /** JSON array of user tag ids. */
  receiver_user_tags: string
  access_type: string
  sender_user_id: string
  status: string
  created_at: number
  updated_at: number
}
/** An OIDC identity (issuer, audience, subject) that signs a user in through `oauth`. */
export type OauthProviderRow = {
  id: string
  user_id: string
  organization_id: string
  name: string
  issuer: string
  audience: string
  subject: string
  created_at: number
}
export type FeatureRow = { organization_id: string; name: string; value: string }

/** The tables below in SQLite, after db.ts's; storage/postgresSchema.ts has them in PostgreSQL (change both). */
export function createSqliteAdminSchema(db: SqlDatabase) {
  db.exec(`
    create table if not exists private_keys (
      id text primary key, organization_id text not null references organizations (id), name text not null, curve text not null,
      public_key text not null, sealed_private_key text not null, created_at integer not null,
      exported integer not null default 0, imported integer not null default 0, unique (organization_id, name));
    create table if not exists private_key_addresses (
      private_key_id text not null references private_keys (id) on delete cascade, organization_id text not null,
      format text not null, address text not null, primary key (private_key_id, format));
    -- signWith names a private key by address in any letter case, as it does wallet accounts.
    create index if not exists private_key_addresses_address on private_key_addresses (organization_id, address collate nocase);
    create table if not exists tags (
      id text primary key, organization_id text not null references organizations (id), name text not null, type text not null,
      created_at integer not null, updated_at integer not null, unique (organization_id, type, name));
    create table if not exists tag_members (
      tag_id text not null references tags (id) on delete cascade, member_id text not null, primary key (tag_id, member_id));
    create index if not exists tag_members_member on tag_members (member_id);
    create table if not exists policies (
      id text primary key, organization_id text not null references organizations (id), name text not null, effect text not null,
      condition text not null, consensus text not null, notes text not null, time text, created_at integer not null, updated_at integer not null);
    create table if not exists invitations (
      id text primary key, organization_id text not null references organizations (id), receiver_user_name text not null,
      receiver_email text not null, receiver_user_tags text not null, access_type text not null, sender_user_id text not null,
      status text not null, created_at integer not null, updated_at integer not null);
    create table if not exists oauth_providers (
      id text primary key, user_id text not null references users (id), organization_id text not null references organizations (id),
      name text not null, issuer text not null, audience text not null, subject text not null, created_at integer not null,
      unique (organization_id, issuer, audience, subject));
    create table if not exists organization_features (
      organization_id text not null references organizations (id), name text not null, value text not null, primary key (organization_id, name));
    -- Empty for an organization until its users change: then every user it had is a root user.
    create table if not exists root_quorum_members (
      organization_id text not null references organizations (id), user_id text not null references users (id), primary key (organization_id, user_id));
  `)
  const userColumns = new Set((db.prepare('pragma table_info(users)').all() as { name: string }[]).map((column) => column.name))
  if (!userColumns.has('phone_number')) db.exec('alter table users add column phone_number text')
  if (!userColumns.has('updated_at')) db.exec('alter table users add column updated_at integer')
}

/**
 * The tables of the key-management API beyond wallets and sign-in: private keys, tags, policies,
 * invitations, OAuth providers, organization features and the root quorum's members. Opened by
 * `openDatabase`, whose object carries these statements too.
 *
 * @example
 * const db = openDatabase(':memory:')
 * db.privateKeys(organizationId)
 */
export function adminStatements(db: SqlDatabase) {
  const get = <row>(sql: string) => {
    const statement = db.prepare(sql)
    return (...parameters: unknown[]) => statement.get(...parameters) as row | undefined
  }
  const all = <row>(sql: string) => {
    const statement = db.prepare(sql)
    return (...parameters: unknown[]) => statement.all(...parameters) as row[]
  }
  const run = (sql: string) => {
    const statement = db.prepare(sql)
    return (...parameters: unknown[]) => void statement.run(...parameters)
  }
  /** Everything of an organization, children first (foreign keys are on). */
  const organizationTables = [
    'delete from tag_members where tag_id in (select id from tags where organization_id = ?)',
    'delete from tags where organization_id = ?',
    'delete from private_key_addresses where organization_id = ?',
    'delete from private_keys where organization_id = ?',
    'delete from policies where organization_id = ?',
    'delete from invitations where organization_id = ?',
    'delete from oauth_providers where organization_id = ?',
    'delete from organization_features where organization_id = ?',
    'delete from root_quorum_members where organization_id = ?',
    'delete from wallet_accounts where organization_id = ?',
    'delete from wallets where organization_id = ?',
    'delete from api_keys where organization_id = ?',
    'delete from authenticators where organization_id = ?',
    'delete from import_targets where organization_id = ?',
    'delete from otps where organization_id = ?',
    'delete from users where organization_id = ?',
    'delete from organizations where id = ?',
  ].map(run)

  // Statements the functions below share.
  function subOrganizationsWith(table: string, condition: string) {
    return `select id from organizations where parent_id = ? and id in (select organization_id from ${table} where ${condition}) order by created_at, rowid`
  }
  const updateUser = run('update users set name = ?, email = ?, phone_number = ?, updated_at = ? where id = ?')
  const deleteOfUser = [
    'delete from tag_members where member_id = ?',
    'delete from root_quorum_members where user_id = ?',
    'delete from oauth_providers where user_id = ?',
    'delete from api_keys where user_id = ?',
    'delete from authenticators where user_id = ?',
    'delete from import_targets where user_id = ?',
    'delete from otps where user_id = ?',
    'delete from users where id = ?',
  ].map(run)
  const rootQuorumMembers = all<{ user_id: string }>('select user_id from root_quorum_members where organization_id = ? order by rowid')
  const clearRootQuorum = run('delete from root_quorum_members where organization_id = ?')
  const insertRootQuorumMember = run('insert into root_quorum_members (organization_id, user_id) values (?, ?)')
  const insertTag = run('insert into tags (id, organization_id, name, type, created_at, updated_at) values (?, ?, ?, ?, ?, ?)')
  const tagMembers = all<{ member_id: string }>('select member_id from tag_members where tag_id = ? order by rowid')
  const tagsOf = all<{ tag_id: string }>('select tag_id from tag_members where member_id = ? order by rowid')
  const insertPolicy = run(
    'insert into policies (id, organization_id, name, effect, condition, consensus, notes, time, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  )
  const updatePolicy = run('update policies set name = ?, effect = ?, condition = ?, consensus = ?, notes = ?, time = ?, updated_at = ? where id = ?')
  const insertInvitation = run(
    'insert into invitations (id, organization_id, receiver_user_name, receiver_email, receiver_user_tags, access_type, sender_user_id, status, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  )
  const insertOauthProvider = run(
    'insert into oauth_providers (id, user_id, organization_id, name, issuer, audience, subject, created_at) values (?, ?, ?, ?, ?, ?, ?, ?)',
  )
  const insertPrivateKey = run(
    'insert into private_keys (id, organization_id, name, curve, public_key, sealed_private_key, created_at, exported, imported) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  )
  const insertPrivateKeyAddress = run('insert into private_key_addresses (private_key_id, organization_id, format, address) values (?, ?, ?, ?)')
  const deleteAccountsOfWallet = run('delete from wallet_accounts where wallet_id = ?')
  const deleteWallet = run('delete from wallets where id = ?')

  return {
    // Users, their keys and passkeys.
    userDetails: get<UserDetailsRow>('select * from users where id = ? and organization_id = ?'),
    updateUser: (row: { id: string; name: string; email: string | null; phone_number: string | null; updated_at: number }) =>
      updateUser(row.name, row.email, row.phone_number, row.updated_at, row.id),
    /** A user and what only they hold: keys, passkeys, OAuth identities, pending codes and imports. */
    deleteUser: (id: string) => {
      for (const remove of deleteOfUser) remove(id)
    },
    apiKey: get<ApiKeyRow>('select * from api_keys where id = ? and organization_id = ?'),
    deleteApiKey: run('delete from api_keys where id = ?'),
    authenticator: get<AuthenticatorRow>('select * from authenticators where id = ? and organization_id = ?'),
    deleteAuthenticator: run('delete from authenticators where id = ?'),
    usersByName: all<UserRow>('select * from users where organization_id = ? and name = ?'),

    // Organizations.
    subOrganizations: all<OrganizationRow>('select * from organizations where parent_id = ? order by created_at, rowid'),
    renameOrganization: run('update organizations set name = ? where id = ?'),
    setRootQuorumThreshold: run('update organizations set root_quorum_threshold = ? where id = ?'),
    /** Removes an organization and everything it holds; its activities stay as the record of what happened. */
    deleteOrganization: (id: string) => {
      for (const remove of organizationTables) remove(id)
    },
    rootQuorumMembers: (organizationId: string) => rootQuorumMembers(organizationId).map((row) => row.user_id),
    setRootQuorumMembers: (organizationId: string, userIds: readonly string[]) => {
      clearRootQuorum(organizationId)
      for (const userId of userIds) insertRootQuorumMember(organizationId, userId)
    },
    features: all<FeatureRow>('select * from organization_features where organization_id = ? order by name'),
    setFeature: run(
      'insert into organization_features (organization_id, name, value) values (?, ?, ?) on conflict (organization_id, name) do update set value = excluded.value',
    ),
    removeFeature: run('delete from organization_features where organization_id = ? and name = ?'),

    // Tags of users and private keys.
    insertTag: (row: TagRow) => insertTag(row.id, row.organization_id, row.name, row.type, row.created_at, row.updated_at),
    tag: get<TagRow>('select * from tags where id = ? and organization_id = ? and type = ?'),
    tagByName: get<TagRow>('select * from tags where organization_id = ? and type = ? and name = ?'),
    tags: all<TagRow>('select * from tags where organization_id = ? and type = ? order by created_at, rowid'),
    renameTag: run('update tags set name = ?, updated_at = ? where id = ?'),
    touchTag: run('update tags set updated_at = ? where id = ?'),
    deleteTag: run('delete from tags where id = ?'),
    tagMembers: (tagId: string) => tagMembers(tagId).map((row) => row.member_id),
    addTagMember: run('insert or ignore into tag_members (tag_id, member_id) values (?, ?)'),
    removeTagMember: run('delete from tag_members where tag_id = ? and member_id = ?'),
    tagsOf: (memberId: string) => tagsOf(memberId).map((row) => row.tag_id),
    untagMember: run('delete from tag_members where member_id = ?'),

    // Policies (stored and reported; not evaluated).
    insertPolicy: (row: PolicyRow) =>
      insertPolicy(row.id, row.organization_id, row.name, row.effect, row.condition, row.consensus, row.notes, row.time, row.created_at, row.updated_at),
    policy: get<PolicyRow>('select * from policies where id = ? and organization_id = ?'),
    policies: all<PolicyRow>('select * from policies where organization_id = ? order by created_at, rowid'),
    updatePolicy: (row: PolicyRow) => updatePolicy(row.name, row.effect, row.condition, row.consensus, row.notes, row.time, row.updated_at, row.id),
    deletePolicy: run('delete from policies where id = ?'),

    // Invitations.
    insertInvitation: (row: InvitationRow) =>
      insertInvitation(
        row.id,
        row.organization_id,
        row.receiver_user_name,
        row.receiver_email,
        row.receiver_user_tags,
        row.access_type,
        row.sender_user_id,
        row.status,
        row.created_at,
        row.updated_at,
      ),
    invitation: get<InvitationRow>('select * from invitations where id = ? and organization_id = ?'),
    invitations: all<InvitationRow>('select * from invitations where organization_id = ? order by created_at, rowid'),
    deleteInvitation: run('delete from invitations where id = ?'),

    // OAuth providers.
    insertOauthProvider: (row: OauthProviderRow) =>
      insertOauthProvider(row.id, row.user_id, row.organization_id, row.name, row.issuer, row.audience, row.subject, row.created_at),
    oauthProvider: get<OauthProviderRow>('select * from oauth_providers where id = ? and organization_id = ?'),
    oauthProvidersOfUser: all<OauthProviderRow>('select * from oauth_providers where user_id = ? order by created_at, rowid'),
    oauthProviders: all<OauthProviderRow>('select * from oauth_providers where organization_id = ? order by created_at, rowid'),
    oauthProviderByIdentity: get<OauthProviderRow>('select * from oauth_providers where organization_id = ? and issuer = ? and audience = ? and subject = ?'),
    deleteOauthProvider: run('delete from oauth_providers where id = ?'),

    // Private keys.
    insertPrivateKey: (row: PrivateKeyRow, addresses: readonly { format: string; address: string }[]) => {
      insertPrivateKey(row.id, row.organization_id, row.name, row.curve, row.public_key, row.sealed_private_key, row.created_at, row.exported, row.imported)
      for (const address of addresses) insertPrivateKeyAddress(row.id, row.organization_id, address.format, address.address)
    },
    privateKey: get<PrivateKeyRow>('select * from private_keys where id = ? and organization_id = ?'),
    privateKeyByName: get<PrivateKeyRow>('select * from private_keys where organization_id = ? and name = ?'),
    privateKeys: all<PrivateKeyRow>('select * from private_keys where organization_id = ? order by created_at, rowid'),
    privateKeyAddresses: all<PrivateKeyAddressRow>('select * from private_key_addresses where private_key_id = ? order by rowid'),
    privateKeyByAddress: get<PrivateKeyAddressRow>('select * from private_key_addresses where organization_id = ? and address = ? collate nocase'),
    markPrivateKeyExported: run('update private_keys set exported = 1 where id = ?'),
    deletePrivateKey: run('delete from private_keys where id = ?'),

    // Wallets.
    renameWallet: run('update wallets set name = ? where id = ?'),
    deleteWallet: (id: string) => {
      deleteAccountsOfWallet(id)
      deleteWallet(id)
    },
    walletAccount: get<WalletAccountRow>('select * from wallet_accounts where id = ? and organization_id = ?'),
    walletAccountByPath: get<WalletAccountRow>('select * from wallet_accounts where wallet_id = ? and path = ?'),
    walletAccountByAddress: get<WalletAccountRow>('select * from wallet_accounts where wallet_id = ? and address = ? collate nocase'),
    deleteWalletAccount: run('delete from wallet_accounts where id = ?'),

    // Activities, newest first.
    activities: all<ActivityRow>('select * from activities where organization_id = ? order by created_at desc, rowid desc'),

    // Sub-organizations of a parent, found by what they hold (list_suborgs).
    subOrganizationsBy: {
      NAME: all<{ id: string }>('select id from organizations where parent_id = ? and name = ? order by created_at, rowid'),
      USERNAME: all<{ id: string }>(subOrganizationsWith('users', 'name = ?')),
      EMAIL: all<{ id: string }>(subOrganizationsWith('users', 'lower(email) = lower(?)')),
      PHONE_NUMBER: all<{ id: string }>(subOrganizationsWith('users', 'phone_number = ?')),
      CREDENTIAL_ID: all<{ id: string }>(subOrganizationsWith('authenticators', 'credential_id = ?')),
      PUBLIC_KEY: all<{ id: string }>(subOrganizationsWith('api_keys', 'public_key = ?')),
      WALLET_ACCOUNT_ADDRESS: all<{ id: string }>(subOrganizationsWith('wallet_accounts', 'address = ? collate nocase')),
    },
    subOrganizationsByOauth: all<{ id: string }>(subOrganizationsWith('oauth_providers', 'issuer = ? and audience = ? and subject = ?')),
  }
}
