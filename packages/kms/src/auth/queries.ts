import { z } from 'zod'
import { type QueryContext, type QueryTable, userIn } from '../activities/table.js'
import { parse } from '../params.js'
import { oauthProviderView } from '../views.js'

// Auth: the OAuth providers users sign in with.

/** The auth queries. */
export function authQueries({ db }: QueryContext): QueryTable {
  return {
    async get_oauth_providers(body, caller) {
      const { userId } = parse(z.object({ userId: z.string().min(1).optional() }), body)
      const providers = userId ? await db.oauthProvidersOfUser((await userIn({ db, caller }, userId)).id) : await db.oauthProviders(caller.organizationId)
      return { oauthProviders: providers.map(oauthProviderView) }
    },
  }
}
