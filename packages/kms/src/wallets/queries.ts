import { z } from 'zod'
import { found, type QueryContext, type QueryTable } from '../activities/table.js'
import { invalid, notFound } from '../errors.js'
import { parse, requiredString } from '../params.js'
import { walletAccountView, walletView } from '../views.js'

// Wallets: wallets and their accounts.

/** The wallets queries. */
export function walletQueries({ db }: QueryContext): QueryTable {
  return {
    async get_wallet(body, caller) {
      const walletId = requiredString(body, 'walletId')
      return { wallet: walletView(found(await db.wallet(walletId, caller.organizationId), 'wallet', walletId, caller)) }
    },
    async list_wallets(_, caller) {
      return { wallets: (await db.wallets(caller.organizationId)).map(walletView) }
    },
    async get_wallet_account(body, caller) {
      const input = parse(
        z
          .object({ walletId: z.string().min(1), address: z.string().min(1).optional(), path: z.string().min(1).optional() })
          .refine((query) => (query.address === undefined) !== (query.path === undefined), 'give either address or path'),
        body,
      )
      found(await db.wallet(input.walletId, caller.organizationId), 'wallet', input.walletId, caller)
      const account = input.address ? await db.walletAccountByAddress(input.walletId, input.address) : await db.walletAccountByPath(input.walletId, input.path!)
      if (!account) throw notFound(`wallet ${input.walletId} has no account at ${input.address ?? input.path}`)
      return { account: walletAccountView(account) }
    },
    async list_wallet_accounts(body, caller) {
      const walletId = body['walletId']
      if (walletId !== undefined && typeof walletId !== 'string') throw invalid('walletId must be a string')
      if (walletId) found(await db.wallet(walletId, caller.organizationId), 'wallet', walletId, caller)
      const accounts = walletId ? await db.accountsOfWallet(walletId) : await db.accountsOfOrganization(caller.organizationId)
      return { accounts: accounts.map(walletAccountView) }
    },
  }
}
