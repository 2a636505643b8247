import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { afterAll, describe, expect, test, vi } from 'vitest'
import { openDatabase } from '../src/db.js'
import { createKms, generateApiKeyPair, PostgresError } from '../src/index.js'
import { toPostgres } from '../src/storage/postgres.js'
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
    const parent = first.createParentOrganization({ name: 'App', userName: 'backend', publicKey: generateApiKeyPair().apiPublicKey })
    await first.stop()
    const db = connect(database)
    try {
      expect(db.dialect).toBe(testBackend)
      expect(db.prepare('select name, parent_id, root_quorum_threshold from organizations where id = ?').get(parent.organizationId)).toEqual({
        name: 'App',
        parent_id: null,
        root_quorum_threshold: 1,
      })
    } finally {
      db.close()
    }
    const again = createKms({ port: await getFreePort(), ...database })
    expect(again.hasOrganization(parent.organizationId)).toBe(true)
    await again.stop()
  })

  test('behavior: unix-ms timestamps and counters come back as numbers', async () => {
    const db = openDatabase(location(await testDatabase()))
    try {
      db.insertOrganization(organization('a', 4_102_444_800_123))
      expect(db.organization('a')).toEqual({ id: 'a', name: 'org a', parent_id: null, root_quorum_threshold: 1, created_at: 4_102_444_800_123 })
    } finally {
      db.close()
    }
  })

  test('behavior: a transaction that throws leaves nothing; a nested one that throws undoes only itself', async () => {
    const db = openDatabase(location(await testDatabase()))
    try {
      expect(() =>
        db.transaction(() => {
          db.insertOrganization(organization('a'))
          throw new Error('stop')
        }),
      ).toThrow('stop')
      expect(db.organization('a')).toBeUndefined()
      const result = db.transaction(() => {
        db.insertOrganization(organization('b'))
        expect(() =>
          db.transaction(() => {
            db.insertOrganization(organization('c'))
            throw new Error('inner')
          }),
        ).toThrow('inner')
        db.insertOrganization(organization('d'))
        return 'done'
      })
      expect(result).toBe('done')
      expect(['a', 'b', 'c', 'd'].map((id) => db.organization(id)?.id)).toEqual([undefined, 'b', undefined, 'd'])
    } finally {
      db.close()
    }
  })

  test('error: a transaction whose work returns a promise is refused and undone', async () => {
    const db = openDatabase(location(await testDatabase()))
    try {
      expect(() =>
        db.transaction(() => {
          db.insertOrganization(organization('a'))
          return Promise.resolve()
        }),
      ).toThrow('Transaction function cannot return a promise')
      expect(db.organization('a')).toBeUndefined()
    } finally {
      db.close()
    }
  })

  test('error: a unique constraint refuses the second row and keeps the first', async () => {
    const db = openDatabase(location(await testDatabase()))
    try {
      db.insertOrganization(organization('a'))
      expect(() => db.insertOrganization({ ...organization('a'), name: 'other' })).toThrow(
        /UNIQUE constraint failed: organizations.id|duplicate key value violates unique constraint "organizations_pkey"/,
      )
      expect(db.organization('a')?.name).toBe('org a')
    } finally {
      db.close()
    }
  })

  test('behavior: addresses are found in any letter case', async () => {
    const db = openDatabase(location(await testDatabase()))
    try {
      db.insertOrganization(organization('o'))
      db.insertWallet({ id: 'w', organization_id: 'o', name: 'wallet', sealed_mnemonic: 'v1:sealed', created_at: 1, exported: 0, imported: 0 })
      const address = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
      db.insertAccount({
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
      expect([address, address.toLowerCase(), address.toUpperCase().replace('0X', '0x')].map((form) => db.accountByAddress('o', form)?.id)).toEqual([
        'a',
        'a',
        'a',
      ])
      expect(db.walletAccountByAddress('w', address.toLowerCase())?.address).toBe(address)
    } finally {
      db.close()
    }
  })

  test('behavior: DATABASE_URL chooses PostgreSQL when no option names a database', async () => {
    vi.stubEnv('DATABASE_URL', 'postgres://latchkey@127.0.0.1:1/kms')
    try {
      // An explicit option wins over the environment.
      const kms = createKms({ port: await getFreePort(), ...(await testDatabase()) })
      await kms.stop()
      // Without one, the kms connects where DATABASE_URL says (nothing listens on port 1).
      const port = await getFreePort()
      expect(() => createKms({ port })).toThrow(new PostgresError({ message: 'connect ECONNREFUSED 127.0.0.1:1', code: 'ECONNREFUSED' }))
    } finally {
      vi.unstubAllEnvs()
    }
  })

  test('error: a databaseUrl that is not PostgreSQL is refused', () => {
    expect(() => createKms({ databaseUrl: 'mysql://latchkey@127.0.0.1/kms' })).toThrow('databaseUrl must be a postgres:// or postgresql:// URL')
  })
})

describe('toPostgres', () => {
  test('default: numbered placeholders, insert or ignore, case-insensitive comparisons', () => {
    expect(
      [
        'select * from wallets where id = ? and organization_id = ?',
        'insert or ignore into tag_members (tag_id, member_id) values (?, ?)',
        'select * from wallet_accounts where organization_id = ? and address = ? collate nocase',
      ].map(toPostgres),
    ).toMatchInlineSnapshot(`
      [
        "select * from wallets where id = $1 and organization_id = $2",
        "insert into tag_members (tag_id, member_id) values ($1, $2) on conflict do nothing",
        "select * from wallet_accounts where organization_id = $1 and lower(address) = lower($2)",
      ]
    `)
  })
})
