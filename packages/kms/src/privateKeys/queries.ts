import { found, type QueryContext, type QueryTable } from '../activities/table.js'
import { requiredString } from '../params.js'
import { mapSeries } from '../sequence.js'
import { privateKeyView, tagView } from '../views.js'

// Private keys: keys held on their own, and their tags.

/** The private keys queries. */
export function privateKeyQueries({ db }: QueryContext): QueryTable {
  return {
    async get_private_key(body, caller) {
      const privateKeyId = requiredString(body, 'privateKeyId')
      return { privateKey: await privateKeyView(db, found(await db.privateKey(privateKeyId, caller.organizationId), 'private key', privateKeyId, caller)) }
    },
    async list_private_keys(_, caller) {
      return { privateKeys: await mapSeries(await db.privateKeys(caller.organizationId), async (row) => privateKeyView(db, row)) }
    },
    async list_private_key_tags(_, caller) {
      return { privateKeyTags: (await db.tags(caller.organizationId, 'TAG_TYPE_PRIVATE_KEY')).map(tagView) }
    },
  }
}
