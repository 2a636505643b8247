import { randomUUID } from 'node:crypto'
import { secp256k1 } from '@noble/curves/secp256k1'
import { bytesToHex } from 'viem'
import { publicKeyToAddress } from 'viem/accounts'
import { z } from 'zod'
import type { ActivityContext } from '../context.js'
import { alreadyExists, notFound } from '../errors.js'
import { open, seal } from '../secrets.js'
import type { PrivateKeyRow } from '../storage/tables.js'

// Private keys: secp256k1 keys held on their own rather than derived from a wallet's mnemonic.
// Created here or imported, exported in a signed bundle, and named in sign_raw_payload(s) and
// sign_transaction by their id or by one of their addresses.

const ADDRESS_FORMATS = ['ADDRESS_FORMAT_ETHEREUM', 'ADDRESS_FORMAT_COMPRESSED', 'ADDRESS_FORMAT_UNCOMPRESSED'] as const

/** Associated data a private key is sealed under: a sealed key cannot move to another row. */
const privateKeyRecord = (privateKeyId: string) => `private-key:${privateKeyId}`
/** The same record as init_import_wallet: a user has one import in progress, for a wallet or a key. */
export const importRecord = (userId: string) => `import:${userId}`

export const curve = z
  .string()
  .refine((value) => value === 'CURVE_SECP256K1', { error: (issue) => `unsupported curve ${String(issue.input)}: this service signs with CURVE_SECP256K1` })
export const addressFormats = z
  .array(
    z.string().refine((value): value is (typeof ADDRESS_FORMATS)[number] => (ADDRESS_FORMATS as readonly string[]).includes(value), {
      error: (issue) => `unsupported address format ${String(issue.input)}`,
    }),
  )
  .max(ADDRESS_FORMATS.length, `at most ${ADDRESS_FORMATS.length} address formats in one request`)
  .refine((list) => new Set(list).size === list.length, 'an address format is named twice')

/** The addresses of a secp256k1 key in the formats asked for. */
function addressesOf(privateKey: Uint8Array, formats: readonly string[]) {
  const uncompressed = bytesToHex(secp256k1.getPublicKey(privateKey, false))
  const compressed = bytesToHex(secp256k1.getPublicKey(privateKey, true)).slice(2)
  const byFormat: Record<string, string> = {
    ADDRESS_FORMAT_ETHEREUM: publicKeyToAddress(uncompressed),
    ADDRESS_FORMAT_COMPRESSED: compressed,
    ADDRESS_FORMAT_UNCOMPRESSED: uncompressed.slice(2),
  }
  return { publicKey: compressed, addresses: formats.map((format) => ({ format, address: byFormat[format]! })) }
}

/** Stores a private key sealed under the master key; refused when the name or an address is taken. Synchronous, for a transaction. */
export async function insertPrivateKey(
  context: ActivityContext,
  key: { name: string; privateKey: Uint8Array; addressFormats: readonly string[]; imported: boolean },
) {
  const { db, caller, masterKey, now } = context
  if (await db.privateKeyByName(caller.organizationId, key.name)) throw alreadyExists(`a private key named "${key.name}" already exists`)
  const { publicKey, addresses } = addressesOf(key.privateKey, key.addressFormats)
  for (const { address } of addresses)
    if ((await db.privateKeyByAddress(caller.organizationId, address)) || (await db.accountByAddress(caller.organizationId, address)))
      throw alreadyExists(`the address ${address} is already held in organization ${caller.organizationId}`)
  const id = randomUUID()
  const row: PrivateKeyRow = {
    id,
    organization_id: caller.organizationId,
    name: key.name,
    curve: 'CURVE_SECP256K1',
    public_key: publicKey,
    sealed_private_key: seal(masterKey, privateKeyRecord(id), Buffer.from(key.privateKey).toString('hex')),
    created_at: now(),
    exported: 0,
    imported: key.imported ? 1 : 0,
  }
  await db.insertPrivateKey(row, addresses)
  return { privateKeyId: id, addresses }
}

export async function privateKeyIn(context: ActivityContext, privateKeyId: string) {
  const key = await context.db.privateKey(privateKeyId, context.caller.organizationId)
  if (!key) throw notFound(`private key ${privateKeyId} not found in organization ${context.caller.organizationId}`)
  return key
}

export const openPrivateKey = (context: ActivityContext, row: PrivateKeyRow) =>
  Buffer.from(open(context.masterKey, privateKeyRecord(row.id), row.sealed_private_key), 'hex')

/**
 * The private key `signWith` names in the caller's organization, by id or by address, opened; or
 * undefined when none does. The caller zeroes the bytes once it has signed.
 *
 * @example
 * const key = await heldPrivateKey(context, signWith)
 */
export async function heldPrivateKey(context: ActivityContext, signWith: string): Promise<Uint8Array | undefined> {
  const { db, caller } = context
  // One look-up on the signing path: private key ids are UUIDs, addresses never are.
  const privateKeyId = UUID.test(signWith) ? signWith : (await db.privateKeyByAddress(caller.organizationId, signWith))?.private_key_id
  return privateKeyId === undefined ? undefined : await openedPrivateKey(context, privateKeyId)
}

/** The private key `privateKeyId` of the caller's organization, opened; undefined when there is none. The caller zeroes it. */
export async function openedPrivateKey(context: ActivityContext, privateKeyId: string): Promise<Uint8Array | undefined> {
  const row = await context.db.privateKey(privateKeyId, context.caller.organizationId)
  return row && openPrivateKey(context, row)
}

/** Whether `signWith` has the shape of a private key's id (a UUID); addresses never have it. */
export const isPrivateKeyId = (signWith: string) => UUID.test(signWith)

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
