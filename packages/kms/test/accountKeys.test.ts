import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { type Kysely, sql } from 'kysely'
import { type Hex, hashMessage, keccak256, recoverAddress, serializeSignature, toHex, toPrefixedMessage } from 'viem'
import { privateKeyToAccount, sign } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { deriveAccounts, signDigest } from '../src/ethereum.js'
import { generateApiKeyPair as apiKeyPair, createKms, type Kms } from '../src/index.js'
import { accountKeyRecord, openBytes } from '../src/secrets.js'
import { connect, type TestDatabase, testDatabase } from './database.js'

// Wallet account keys: derived once from the mnemonic, kept sealed beside the account, opened to
// sign. What is signed must be what the mnemonic's key signs, and the row must hold no plaintext.

// The BIP-39 test mnemonic of Hardhat and anvil, with its published first two accounts.
const TEST_MNEMONIC = 'test test test test test test test test test test test junk'
const ANVIL_0 = {
  address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
  privateKey: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
} as const
const ANVIL_1 = { address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' } as const
const account = (
  path: string,
  addressFormat: 'ADDRESS_FORMAT_ETHEREUM' | 'ADDRESS_FORMAT_COMPRESSED' | 'ADDRESS_FORMAT_UNCOMPRESSED' = 'ADDRESS_FORMAT_ETHEREUM',
) => ({ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat }) as const
const SECP256K1_HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n

describe('deriveAccounts and signDigest', () => {
  test('default: the test mnemonic gives its published addresses and key', async () => {
    const [first, second, compressed, uncompressed] = await deriveAccounts(TEST_MNEMONIC, [
      account("m/44'/60'/0'/0/0"),
      account("m/44'/60'/0'/0/1"),
      account("m/44'/60'/0'/0/0", 'ADDRESS_FORMAT_COMPRESSED'),
      account("m/44'/60'/0'/0/0", 'ADDRESS_FORMAT_UNCOMPRESSED'),
    ])
    expect([first!.address, second!.address]).toEqual([ANVIL_0.address, ANVIL_1.address])
    expect(toHex(first!.privateKey)).toBe(ANVIL_0.privateKey)
    const { publicKey } = privateKeyToAccount(ANVIL_0.privateKey)
    expect(uncompressed!.address).toBe(publicKey.slice(2))
    expect(compressed!.address).toBe(first!.publicKey)
    expect(compressed!.address).toMatch(/^0[23][0-9a-f]{64}$/)
    expect(compressed!.address.slice(2)).toBe(publicKey.slice(4, 68))
  })

  test('error: a bad account parameter is refused before the seed is computed', async () => {
    await expect(
      deriveAccounts(TEST_MNEMONIC, [account("m/44'/60'/0'/0/0"), { ...account("m/44'/60'/0'/0/1"), addressFormat: 'ADDRESS_FORMAT_SOLANA' }]),
    ).rejects.toThrow('unsupported address format ADDRESS_FORMAT_SOLANA')
  })

  test('behavior: signatures are viem’s (RFC 6979), low-S, and recover to the address', async () => {
    const privateKey = Buffer.from(ANVIL_0.privateKey.slice(2), 'hex')
    for (let i = 0; i < 64; i++) {
      const digest = keccak256(toHex(`digest ${i}`))
      const { r, s, v } = signDigest(privateKey, digest)
      const expected = await sign({ hash: digest, privateKey: ANVIL_0.privateKey })
      expect({ r: `0x${r}`, s: `0x${s}`, yParity: Number(v) }).toEqual({ r: expected.r, s: expected.s, yParity: expected.yParity })
      expect(BigInt(`0x${s}`) <= SECP256K1_HALF_ORDER).toBe(true)
      const signature = serializeSignature({ r: `0x${r}`, s: `0x${s}`, yParity: Number(v) })
      expect(await recoverAddress({ hash: digest, signature })).toBe(ANVIL_0.address)
    }
  })
})

describe('sealed account keys in the service', () => {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-kms-account-keys-'))
  const databasePath = join(dir, 'kms.db')
  const masterKey = randomBytes(32)
  let kms: Kms
  let database: TestDatabase
  let clock = Date.now()

  // A fresh port each start: the clients' kept-alive sockets to a stopped service are not reused.
  const start = async () => {
    kms = createKms({ port: await getFreePort(), ...database, masterKey, now: () => clock })
    await kms.start()
  }
  beforeAll(async () => {
    database = await testDatabase(databasePath)
    await start()
  })
  afterAll(async () => {
    await kms.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  /** A second connection to the service's database, for what no API does: reading and damaging rows. */
  const surgery = async <result>(work: (db: Kysely<never>) => Promise<result>): Promise<result> => {
    const storage = connect(database)
    try {
      return await work(storage.kysely as unknown as Kysely<never>)
    } finally {
      await storage.close()
    }
  }
  const sealedKeyOf = (address: string) =>
    surgery(async (db) => {
      const { rows } = await sql<{
        id: string
        sealed_private_key: string | null
      }>`select id, sealed_private_key from wallet_accounts where address = ${address}`.execute(db)
      return rows[0]!
    })

  /** A sub-organization whose user holds `keys` (expiring after `expirationSeconds`, if given), with a wallet of two accounts. */
  async function subOrganization(keys = apiKeyPair(), expirationSeconds?: string) {
    const backend = apiKeyPair()
    const app = await kms.createParentOrganization({ name: 'app', userName: 'backend', publicKey: backend.apiPublicKey })
    const { activity } = await new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(backend)).createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(clock),
      organizationId: app.organizationId,
      parameters: {
        subOrganizationName: 'user',
        rootQuorumThreshold: 1,
        rootUsers: [
          {
            userName: 'user',
            apiKeys: [
              { apiKeyName: 'session', publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256', ...(expirationSeconds ? { expirationSeconds } : {}) },
            ],
            authenticators: [],
            oauthProviders: [],
          },
        ],
        wallet: { walletName: 'Turnkey HD', accounts: [account("m/44'/60'/0'/0/0"), account("m/44'/60'/0'/0/1")] },
      },
    })
    const result = activity.result.createSubOrganizationResultV8!
    const addresses = result.wallet!.addresses as Hex[]
    return { keys, organizationId: result.subOrganizationId!, addresses }
  }

  /** Signs `digest` as an EIP-191 message with `signWith` through the official client (a sub-organization signs no opaque hash, nor unframed bytes); each call is a new activity (its own timestamp). */
  async function signWithClient(user: { keys: ReturnType<typeof apiKeyPair>; organizationId: string }, signWith: string, digest: Hex) {
    clock += 1
    const { activity } = await new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(user.keys)).signRawPayload({
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: String(clock),
      organizationId: user.organizationId,
      parameters: { signWith, payload: toPrefixedMessage({ raw: digest }), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
    })
    const { r, s, v } = activity.result.signRawPayloadResult!
    return { r, s, v }
  }
  const recovered = ({ r, s, v }: { r: string; s: string; v: string }, digest: Hex) =>
    recoverAddress({ hash: hashMessage({ raw: digest }), signature: serializeSignature({ r: `0x${r}`, s: `0x${s}`, yParity: Number(v) }) })

  test('default: each account’s key is sealed beside it, bound to its row, and signs for its address', async () => {
    const user = await subOrganization()
    const digest = keccak256(toHex('sealed'))
    for (const address of user.addresses) {
      const { id, sealed_private_key } = await sealedKeyOf(address)
      expect(sealed_private_key).toMatch(/^v2:dek_initial:[A-Za-z0-9+/]+=*$/)
      const privateKey = openBytes(kms.keyring, accountKeyRecord(id), sealed_private_key!)
      expect(privateKeyToAccount(toHex(privateKey)).address).toBe(address)
      expect(sealed_private_key).not.toContain(Buffer.from(privateKey).toString('base64'))
      expect(await recovered(await signWithClient(user, address, digest), digest)).toBe(address)
    }
  })

  test('behavior: an account stored before keys were sealed is derived from the mnemonic once, then sealed', async () => {
    const user = await subOrganization()
    const address = user.addresses[1]!
    const digest = keccak256(toHex('derived'))
    const before = await signWithClient(user, address, digest)
    await surgery((db) => sql`update wallet_accounts set sealed_private_key = null where address = ${address}`.execute(db))
    expect(await signWithClient(user, address, digest)).toEqual(before)
    const { id, sealed_private_key } = await sealedKeyOf(address)
    expect(privateKeyToAccount(toHex(openBytes(kms.keyring, accountKeyRecord(id), sealed_private_key!))).address).toBe(address)
    expect(await signWithClient(user, address, digest)).toEqual(before)
  })

  test('behavior: a database from before versioned migrations and sealed account keys opens, and its accounts sign as before', async () => {
    const user = await subOrganization()
    const digest = keccak256(toHex('migrated'))
    const before = await signWithClient(user, user.addresses[0]!, digest)
    await kms.stop()
    // The layout of the first releases: no sealed keys, no migration records.
    await surgery(async (db) => {
      await sql`alter table wallet_accounts drop column sealed_private_key`.execute(db)
      await sql`drop table kms_migrations`.execute(db)
    })
    await start()
    expect(await signWithClient(user, user.addresses[0]!, digest)).toEqual(before)
    expect((await sealedKeyOf(user.addresses[0]!)).sealed_private_key).toMatch(/^v2:dek_initial:/)
  })

  test('error: a sealed key moved to another account’s row does not open', async () => {
    const user = await subOrganization()
    const [first, second] = user.addresses as [Hex, Hex]
    await surgery((db) =>
      sql`update wallet_accounts set sealed_private_key = (select sealed_private_key from wallet_accounts where address = ${first}) where address = ${second}`.execute(
        db,
      ),
    )
    await expect(signWithClient(user, second, keccak256(toHex('moved')))).rejects.toThrow(
      'Turnkey error 13: stored key material does not open with this master key',
    )
  })

  test('error: a key that signed a moment ago is refused once it expires', async () => {
    const user = await subOrganization(apiKeyPair(), '60')
    const digest = keccak256(toHex('expiring'))
    expect(await recovered(await signWithClient(user, user.addresses[0]!, digest), digest)).toBe(user.addresses[0])
    clock += 61_000
    await expect(signWithClient(user, user.addresses[0]!, digest)).rejects.toThrow(
      `Turnkey error 16: rpc error: code = Unauthenticated desc = expired api key publicKey: ${user.keys.apiPublicKey}`,
    )
  })
})
