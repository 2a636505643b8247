import { secp256k1 } from '@noble/curves/secp256k1'
import { z } from 'zod'
import { type ActivityTable, refuseUnexported } from '../activities/table.js'
import { notFound } from '../errors.js'
import { listOf, MAX_LIST_ITEMS } from '../lists.js'
import { ids, parse } from '../params.js'
import { mapSeries } from '../sequence.js'
import { addressFormats, curve, insertPrivateKey, privateKeyIn } from './keys.js'

// Private keys: secp256k1 keys held on their own rather than derived from a wallet's mnemonic
// (privateKeys/keys.ts), created and deleted here; exported and imported in exportImport/, named
// in signing/ by their id or by one of their addresses.

export const PRIVATE_KEY_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2: {
    op: 'create_private_keys',
    intentKey: 'createPrivateKeysIntentV2',
    resultKey: 'createPrivateKeysResultV2',
    async run(params, context) {
      const input = parse(
        z.object({
          privateKeys: z
            .array(
              z.object({ privateKeyName: z.string().min(1).max(256), curve, privateKeyTags: listOf(z.string().min(1), 'tags').default([]), addressFormats }),
            )
            .min(1)
            .max(MAX_LIST_ITEMS, `at most ${MAX_LIST_ITEMS} private keys in one request`)
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
}
