import type { QueryContext, QueryTable } from '../activities/table.js'
import { invalid } from '../errors.js'
import type { GrantRow } from '../storage/tables.js'
import type { GrantRule } from './rule.js'

/** A grant as list_grants answers it: its key, account, chain, permissions and expiry (unix seconds). */
export function grantView(row: GrantRow, publicKey: string | undefined) {
  const rule = JSON.parse(row.rule) as GrantRule
  return {
    grantId: row.id,
    userId: row.user_id,
    apiKeyId: row.api_key_id,
    publicKey: publicKey ?? '',
    chainId: String(row.chain_id),
    account: row.account,
    expiry: String(Math.floor(row.expires_at / 1000)),
    permissions: rule.permissions,
    createdAt: { seconds: String(Math.floor(row.created_at / 1000)), nanos: '0' },
  }
}

/** The grants queries (a Latchkey extension, as the grant activities are). */
export function grantQueries({ db, now }: QueryContext): QueryTable {
  return {
    /** The organization's grants still in force, oldest first; `userId` narrows them to one user's. */
    async list_grants(body, caller) {
      const userId = body['userId']
      if (userId !== undefined && typeof userId !== 'string') throw invalid('userId must be a string')
      const at = now()
      const rows = (await db.grants(caller.organizationId)).filter((row) => row.expires_at > at && (!userId || row.user_id === userId))
      const keys = new Map(
        (await Promise.all([...new Set(rows.map((row) => row.user_id))].map((id) => db.apiKeysOfUser(id)))).flat().map((key) => [key.id, key]),
      )
      return { grants: rows.map((row) => grantView(row, keys.get(row.api_key_id)?.public_key)) }
    },
  }
}
