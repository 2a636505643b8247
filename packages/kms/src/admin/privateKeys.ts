import { randomUUID } from 'node:crypto'
import { p256 } from '@noble/curves/p256'
import { secp256k1 } from '@noble/curves/secp256k1'
import { bytesToHex } from 'viem'
import { publicKeyToAddress } from 'viem/accounts'
import { z } from 'zod'
import { exportBundle, hpkeOpen, signBundle } from '../bundles.js'
import type { ActivityContext } from '../context.js'
import type { PrivateKeyRow } from '../db.js'
import { ids, invalid, notFound, parse, targetPublicKey } from '../params.js'
import { open, seal } from '../secrets.js'
import { mapSeries } from '../sequence.js'
import { refuseUnexported } from './organization.js'
import { type ActivityTable, alreadyExists, failedPrecondition, userIn } from './table.js'

// Private keys: secp256k1 keys held on their own rather than derived from a wallet's mnemonic.
// Created here or imported, exported in a signed bundle, and named in sign_raw_payload(s) and
// sign_transaction by their id or by one of their addresses.

const ADDRESS_FORMATS = ['ADDRESS_FORMAT_ETHEREUM', 'ADDRESS_FORMAT_COMPRESSED', 'ADDRESS_FORMAT_UNCOMPRESSED'] as const

/** Associated data a private key is sealed under: a sealed key cannot move to another row. */
const privateKeyRecord = (privateKeyId: string) => `private-key:${privateKeyId}`
/** The same record as init_import_wallet: a user has one import in progress, for a wallet or a key. */
const importRecord = (userId: string) => `import:${userId}`

const curve = z
  .string()
  .refine((value) => value === 'CURVE_SECP256K1', { error: (issue) => `unsupported curve ${String(issue.input)}: this service signs with CURVE_SECP256K1` })
const addressFormats = z
  .array(
    z.string().refine((value): value is (typeof ADDRESS_FORMATS)[number] => (ADDRESS_FORMATS as readonly string[]).includes(value), {
      error: (issue) => `unsupported address format ${String(issue.input)}`,
    }),
  )
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
async function insertPrivateKey(context: ActivityContext, key: { name: string; privateKey: Uint8Array; addressFormats: readonly string[]; imported: boolean }) {
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

async function privateKeyIn(context: ActivityContext, privateKeyId: string) {
  const key = await context.db.privateKey(privateKeyId, context.caller.organizationId)
  if (!key) throw notFound(`private key ${privateKeyId} not found in organization ${context.caller.organizationId}`)
  return key
}

const openPrivateKey = (context: ActivityContext, row: PrivateKeyRow) =>
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
  const row = privateKeyId === undefined ? undefined : await db.privateKey(privateKeyId, caller.organizationId)
  return row && openPrivateKey(context, row)
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export const PRIVATE_KEY_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2: {
    op: 'create_private_keys',
    intentKey: 'createPrivateKeysIntentV2',
    resultKey: 'createPrivateKeysResultV2',
    async run(params, context) {
      const input = parse(
        z.object({
          privateKeys: z
            .array(z.object({ privateKeyName: z.string().min(1).max(256), curve, privateKeyTags: z.array(z.string().min(1)).default([]), addressFormats }))
            .min(1)
            .max(100)
            .refine((keys) => new Set(keys.map((key) => key.privateKeyName)).size === keys.length, 'a private key name is given twice'),
        }),
        params,
      )
      const { db, caller, now } = context
      for (const tagId of input.privateKeys.flatMap((key) => key.privateKeyTags))
        if (!(await db.tag(tagId, caller.organizationId, 'TAG_TYPE_PRIVATE_KEY')))
          throw notFound(`private key tag ${tagId} not found in organization ${caller.organizationId}`)
      const secrets = input.privateKeys.map(() => secp256k1.utils.randomPrivateKey())
      try {
        return {
          privateKeys: await db.transaction(
            async () =>
              await mapSeries(input.privateKeys, async (key, index) => {
                const created = await insertPrivateKey(context, {
                  name: key.privateKeyName,
                  privateKey: secrets[index]!,
                  addressFormats: key.addressFormats,
                  imported: false,
                })
                for (const tagId of new Set(key.privateKeyTags)) await db.addTagMember(tagId, created.privateKeyId), await db.touchTag(now(), tagId)
                return created
              }),
          ),
        }
      } finally {
        for (const secret of secrets) secret.fill(0)
      }
    },
  },
  ACTIVITY_TYPE_DELETE_PRIVATE_KEYS: {
    op: 'delete_private_keys',
    intentKey: 'deletePrivateKeysIntent',
    resultKey: 'deletePrivateKeysResult',
    async run(params, context) {
      const input = parse(z.object({ privateKeyIds: ids('private key'), deleteWithoutExport: z.boolean().optional() }), params)
      const keys = await mapSeries(input.privateKeyIds, async (privateKeyId) => privateKeyIn(context, privateKeyId))
      refuseUnexported(
        keys.map((key) => ({ exported: key.exported, label: `private key ${key.id}` })),
        input.deleteWithoutExport,
      )
      await context.db.transaction(async () => {
        for (const key of keys) {
          await context.db.untagMember(key.id)
          await context.db.deletePrivateKey(key.id)
        }
      })
      return { privateKeyIds: input.privateKeyIds }
    },
  },
  ACTIVITY_TYPE_EXPORT_PRIVATE_KEY: {
    op: 'export_private_key',
    intentKey: 'exportPrivateKeyIntent',
    resultKey: 'exportPrivateKeyResult',
    async run(params, context) {
      const input = parse(z.object({ privateKeyId: z.string().min(1), targetPublicKey }), params)
      const key = await privateKeyIn(context, input.privateKeyId)
      const plaintext = openPrivateKey(context, key)
      try {
        const bundle = await exportBundle({
          signerPrivateKey: context.signerPrivateKey,
          organizationId: context.caller.organizationId,
          targetPublicKey: input.targetPublicKey,
          plaintext,
        })
        await context.db.markPrivateKeyExported(key.id)
        return { privateKeyId: key.id, exportBundle: bundle }
      } finally {
        plaintext.fill(0)
      }
    },
  },
  ACTIVITY_TYPE_INIT_IMPORT_PRIVATE_KEY: {
    op: 'init_import_private_key',
    intentKey: 'initImportPrivateKeyIntent',
    resultKey: 'initImportPrivateKeyResult',
    async run(params, context) {
      const { userId } = parse(z.object({ userId: z.string().min(1) }), params)
      const { db, caller, masterKey, now, signerPrivateKey } = context
      await userIn(context, userId)
      // A fresh target key per import, kept sealed until the import arrives.
      const target = p256.utils.randomPrivateKey()
      await db.upsertImportTarget({
        user_id: userId,
        organization_id: caller.organizationId,
        sealed_private_key: seal(masterKey, importRecord(userId), Buffer.from(target).toString('hex')),
        created_at: now(),
      })
      const targetPublic = Buffer.from(p256.getPublicKey(target, false)).toString('hex')
      target.fill(0)
      return { importBundle: signBundle(signerPrivateKey, { organizationId: caller.organizationId, userId, targetPublic }) }
    },
  },
  ACTIVITY_TYPE_IMPORT_PRIVATE_KEY: {
    op: 'import_private_key',
    intentKey: 'importPrivateKeyIntent',
    resultKey: 'importPrivateKeyResult',
    async run(params, context) {
      const input = parse(
        z.object({ userId: z.string().min(1), privateKeyName: z.string().min(1).max(256), encryptedBundle: z.string().min(1), curve, addressFormats }),
        params,
      )
      const { db, caller, masterKey } = context
      await userIn(context, input.userId)
      const target = await db.importTarget(input.userId, caller.organizationId)
      if (!target) throw failedPrecondition('no import in progress for this user: call init_import_private_key first')
      let envelope: { encappedPublic?: unknown; ciphertext?: unknown }
      try {
        envelope = JSON.parse(input.encryptedBundle)
      } catch {
        throw invalid('encryptedBundle is not JSON')
      }
      if (typeof envelope.encappedPublic !== 'string' || typeof envelope.ciphertext !== 'string')
        throw invalid('encryptedBundle must hold encappedPublic and ciphertext')
      const privateKey = await hpkeOpen(
        open(masterKey, importRecord(input.userId), target.sealed_private_key),
        Buffer.from(envelope.encappedPublic, 'hex'),
        Buffer.from(envelope.ciphertext, 'hex'),
      )
      try {
        if (privateKey.length !== 32 || !secp256k1.utils.isValidPrivateKey(privateKey))
          throw invalid('the imported secret is not a secp256k1 private key (32 bytes)')
        return await db.transaction(async () => {
          const imported = await insertPrivateKey(context, { name: input.privateKeyName, privateKey, addressFormats: input.addressFormats, imported: true })
          // One import per init: the target key is spent.
          await db.deleteImportTarget(input.userId)
          return imported
        })
      } finally {
        privateKey.fill(0)
      }
    },
  },
}
