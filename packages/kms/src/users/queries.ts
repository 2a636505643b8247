import type { QueryContext, QueryTable } from '../activities/table.js'
import { found, userIn } from '../activities/table.js'
import { requiredString } from '../params.js'
import { mapSeries } from '../sequence.js'
import { apiKeyView, authenticatorView, tagView, userView } from '../views.js'

// Users: users, their API keys, passkeys and tags.

/** The users queries. */
export function userQueries({ db }: QueryContext): QueryTable {
  return {
    async get_user(body, caller) {
      return { user: await userView(db, await userIn({ db, caller }, requiredString(body, 'userId'))) }
    },
    async list_users(_, caller) {
      return { users: await mapSeries(await db.users(caller.organizationId), async (row) => userView(db, row)) }
    },
    async list_user_tags(_, caller) {
      return { userTags: (await db.tags(caller.organizationId, 'TAG_TYPE_USER')).map(tagView) }
    },
    async get_api_key(body, caller) {
      const apiKeyId = requiredString(body, 'apiKeyId')
      return { apiKey: apiKeyView(found(await db.apiKey(apiKeyId, caller.organizationId), 'API key', apiKeyId, caller)) }
    },
    async get_api_keys(body, caller) {
      const userId = typeof body['userId'] === 'string' ? body['userId'] : caller.userId
      return {
        apiKeys: (await db.apiKeysOfUser(userId))
          .filter((key) => key.organization_id === caller.organizationId || key.user_id === caller.userId)
          .map(apiKeyView),
      }
    },
    async get_authenticator(body, caller) {
      const authenticatorId = requiredString(body, 'authenticatorId')
      return {
        authenticator: authenticatorView(found(await db.authenticator(authenticatorId, caller.organizationId), 'authenticator', authenticatorId, caller)),
      }
    },
    async get_authenticators(body, caller) {
      return { authenticators: (await db.authenticatorsOfUser((await userIn({ db, caller }, requiredString(body, 'userId'))).id)).map(authenticatorView) }
    },
  }
}
