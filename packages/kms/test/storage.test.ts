import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { sql } from 'kysely'
import { afterAll, describe, expect, test, vi } from 'vitest'
import { openDatabase } from '../src/db.js'
import { createKms, generateApiKeyPair } from '../src/index.js'
import { openStorage } from '../src/storage/database.js'
import { KMS_MIGRATIONS } from '../src/storage/migrations.js'
import { connect, type TestDatabase, testBackend, testDatabase } from './database.js'

// Storage as the rest of the suite relies on it, on the backend of this run (database.ts):
// SQLite by default, PostgreSQL in `npm run test:kms-postgres`.

const dir = mkdtempSync(join(tmpdir(), 'latchkey-kms-storage-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
/** A fresh database another connection can open too (a file, not SQLite's private :memory:). */
const sharedDatabase = () => testDatabase(join(dir, `kms-${++files}.db`))
const location = (database: TestDatabase) => ('databaseUrl' in database ? database.databaseUrl : database.databasePath)
const organization = (id: string, created_at = 1_767_225_600_000) => ({ id, name: `org ${id}`, parent_id: null, root_quorum_threshold: 1, created_at })

describe(`storage (${testBackend})`, () => {
  test('default: the kms keeps its rows in the configured database, and finds them after a restart', async () => {
    const database = await sharedDatabase()
    const first = createKms({ port: await getFreePort(), ...database })
    const parent = await first.createParentOrganization({ name: 'App', userName: 'backend', publicKey: generateApiKeyPair().apiPublicKey })
    await first.stop()
    const storage = connect(database)
    try {
      expect(storage.dialect).toBe(testBackend)
      const { rows } = await sql`select name, parent_id, root_quorum_threshold from organizations where id = ${parent.organizationId}`.execute(storage.kysely)
      expect(rows).toEqual([{ name: 'App', parent_id: null, root_quorum_threshold: 1 }])
      // Versioned: each migration applied once, recorded in the kms's own table.
      const migrations = await sql<{ name: string }>`select name from kms_migrations order by name`.execute(storage.kysely)
      expect(migrations.rows.map((row) => row.name)).toEqual([
        '0001_initial',
        '0002_lookups_and_outbox',
        '0003_vote_credentials',
        '0004_vote_stamps_and_evaluations',
        '0005_audit_events',
        '0006_rate_limits',
        '0007_grants',
        '0008_otp_targets',
        '0009_data_keys',
        '0010_api_key_verified_at',
        '0011_grant_key_creators',
        '0012_otp_contacts',
        '0013_mfa',
        '0014_policies_by_organization',
      ])
    } finally {
      await storage.close()
    }
    const again = createKms({ port: await getFreePort(), ...database })
    expect(await again.hasOrganization(parent.organizationId)).toBe(true)
    await again.stop()
  })

  test('behavior: unix-ms timestamps and counters come back as numbers', async () => {
    const db = openDatabase(location(await testDatabase()))
    try {
      await db.insertOrganization(organization('a', 4_102_444_800_123))
      expect(await db.organization('a')).toEqual({ id: 'a', name: 'org a', parent_id: null, root_quorum_threshold: 1, created_at: 4_102_444_800_123 })
    } finally {
      await db.close()
    }
  })

  test('behavior: a transaction that throws leaves nothing; one that returns commits all of it', async () => {
    const db = openDatabase(location(await testDatabase()))
    try {
      await expect(
        db.transaction(async (trx) => {
          await trx.insertOrganization(organization('a'))
          throw new Error('stop')
        }),
      ).rejects.toThrow('stop')
      expect(await db.organization('a')).toBeUndefined()
      const result = await db.transaction(async (trx) => {
        await trx.insertOrganization(organization('b'))
        // Inside a transaction, another `transaction` joins it.
        await trx.transaction(async (inner) => inner.insertOrganization(organization('c')))
        return 'done'
      })
      expect(result).toBe('done')
      expect(await Promise.all(['a', 'b', 'c'].map(async (id) => (await db.organization(id))?.id))).toEqual([undefined, 'b', 'c'])
    } finally {
      await db.close()
    }
  })

  test('error: a unique constraint refuses the second row and keeps the first', async () => {
    const db = openDatabase(location(await testDatabase()))
    try {
      await db.insertOrganization(organization('a'))
      await expect(db.insertOrganization({ ...organization('a'), name: 'other' })).rejects.toThrow(
        /UNIQUE constraint failed: organizations.id|duplicate key value violates unique constraint "organizations_pkey"/,
      )
      expect((await db.organization('a'))?.name).toBe('org a')
    } finally {
      await db.close()
    }
  })

  test('behavior: an insert leaves out a value that is undefined: the column takes its default', async () => {
    const db = openDatabase(location(await testDatabase()))
    try {
      await db.insertOrganization({ ...organization('d'), root_quorum_threshold: undefined } as never)
      expect(await db.organization('d')).toEqual({ ...organization('d'), root_quorum_threshold: 1 })
    } finally {
      await db.close()
    }
  })

  test("behavior: an organization's policies are read by their index, already in order (no scan of every organization's, no sort)", async () => {
    const database = await sharedDatabase()
    const db = openDatabase(location(database))
    await db.insertOrganization(organization('p'))
    await db.close()
    const storage = connect(database)
    try {
      const statement = 'select * from policies where organization_id = $1 order by created_at, rowid'
      if (storage.dialect === 'sqlite') {
        const plan = await sql.raw<{ detail: string }>(`explain query plan ${statement.replace('$1', "'p'")}`).execute(storage.kysely)
        expect(plan.rows.map((row) => row.detail)).toEqual(['SEARCH policies USING INDEX policies_organization (organization_id=?)'])
      } else {
        const indexes = await sql<{
          indexdef: string
        }>`select indexdef from pg_indexes where tablename = 'policies' and indexname = 'policies_organization'`.execute(storage.kysely)
        expect(indexes.rows).toEqual([{ indexdef: 'CREATE INDEX policies_organization ON public.policies USING btree (organization_id, created_at)' }])
      }
    } finally {
      await storage.close()
    }
  })

  test('behavior: addresses are found in any letter case', async () => {
    const db = openDatabase(location(await testDatabase()))
    try {
      await db.insertOrganization(organization('o'))
      await db.insertWallet({ id: 'w', organization_id: 'o', name: 'wallet', sealed_mnemonic: 'v1:sealed', created_at: 1, exported: 0, imported: 0 })
      const address = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
      await db.insertAccount({
        id: 'a',
        wallet_id: 'w',
        organization_id: 'o',
        curve: 'CURVE_SECP256K1',
        path_format: 'PATH_FORMAT_BIP32',
        path: "m/44'/60'/0'/0/0",
        address_format: 'ADDRESS_FORMAT_ETHEREUM',
        address,
        public_key: '02',
        created_at: 1,
        sealed_private_key: null,
      })
      const forms = [address, address.toLowerCase(), address.toUpperCase().replace('0X', '0x')]
      expect(await Promise.all(forms.map(async (form) => (await db.accountByAddress('o', form))?.id))).toEqual(['a', 'a', 'a'])
      expect((await db.walletAccountByAddress('w', address.toLowerCase()))?.address).toBe(address)
    } finally {
      await db.close()
    }
  })

  test('behavior: DATABASE_URL chooses PostgreSQL when no option names a database', async () => {
    vi.stubEnv('DATABASE_URL', 'postgres://latchkey@127.0.0.1:1/kms')
    try {
      // An explicit option wins over the environment.
      const kms = createKms({ port: await getFreePort(), ...(await testDatabase()) })
      await kms.stop()
      // Without one, the kms connects where DATABASE_URL says (nothing listens on port 1): start fails with why.
      const elsewhere = createKms({ port: await getFreePort() })
      await expect(elsewhere.start()).rejects.toThrow('connect ECONNREFUSED 127.0.0.1:1')
      await elsewhere.stop()
    } finally {
      vi.unstubAllEnvs()
    }
  })

  test('behavior: 0011_grant_key_creators leaves a grant key from before it without a creator: deleting the session that made it leaves it', async () => {
    const database = await sharedDatabase()
    // The layout before 0011, with a session key and a grant key it made.
    const before = openStorage(location(database), KMS_MIGRATIONS.slice(0, 10))
    try {
      const old = await before.executor()
      await sql`insert into organizations (id, name, parent_id, root_quorum_threshold, created_at) values ('o', 'org o', null, 1, 1)`.execute(old)
      await sql`insert into users (id, organization_id, name, email, created_at) values ('u', 'o', 'user', null, 1)`.execute(old)
      for (const [id, type] of [
        ['session', 'CREDENTIAL_TYPE_API_KEY_P256'],
        ['grant key', 'CREDENTIAL_TYPE_LATCHKEY_GRANT_API_KEY_P256'],
      ])
        await sql`insert into api_keys (id, user_id, organization_id, name, public_key, curve, credential_type, expires_at, created_at, verified_at) values (${id}, 'u', 'o', ${id}, ${`02${id}`}, 'API_KEY_CURVE_P256', ${type}, 4102444800000, 1, null)`.execute(
          old,
        )
      await sql`insert into grants (id, organization_id, user_id, api_key_id, chain_id, account, rule, expires_at, created_at) values ('g', 'o', 'u', 'grant key', 31337, '0x00', '{}', 4102444800000, 1)`.execute(
        old,
      )
    } finally {
      await before.close()
    }
    const db = openDatabase(location(database))
    try {
      expect((await db.apiKeysOfUser('u')).map((key) => [key.id, key.created_by_api_key_id])).toEqual([
        ['grant key', null],
        ['session', null],
      ])
      await db.deleteApiKey('session')
      expect((await db.apiKeysOfUser('u')).map((key) => key.id)).toEqual(['grant key'])
      expect((await db.grants('o')).map((grant) => grant.id)).toEqual(['g'])
    } finally {
      await db.close()
    }
  })

  test('error: a databaseUrl that is not PostgreSQL is refused', () => {
    expect(() => createKms({ databaseUrl: 'mysql://latchkey@127.0.0.1/kms' })).toThrow('databaseUrl must be a postgres:// or postgresql:// URL')
  })
})
