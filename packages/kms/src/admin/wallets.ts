import { z } from 'zod'
import type { ActivityContext } from '../activities.js'
import { ids, notFound, parse } from '../params.js'
import { refuseUnexported } from './organization.js'
import { type ActivityTable, alreadyExists } from './table.js'

// Renaming and deleting wallets and their accounts (creating, exporting and importing them is in activities.ts).

function walletIn(context: ActivityContext, walletId: string) {
  const wallet = context.db.wallet(walletId, context.caller.organizationId)
  if (!wallet) throw notFound(`wallet ${walletId} not found in organization ${context.caller.organizationId}`)
  return wallet
}

export const WALLET_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_UPDATE_WALLET: {
    op: 'update_wallet',
    intentKey: 'updateWalletIntent',
    resultKey: 'updateWalletResult',
    run(params, context) {
      const input = parse(z.object({ walletId: z.string().min(1), walletName: z.string().min(1).max(256).optional() }), params)
      const { db, caller } = context
      const wallet = walletIn(context, input.walletId)
      if (input.walletName !== undefined && input.walletName !== wallet.name) {
        if (db.wallets(caller.organizationId).some((other) => other.name === input.walletName))
          throw alreadyExists(`a wallet named "${input.walletName}" already exists`)
        db.transaction(() => db.renameWallet(input.walletName, wallet.id))
      }
      return { walletId: wallet.id }
    },
  },
  ACTIVITY_TYPE_DELETE_WALLETS: {
    op: 'delete_wallets',
    intentKey: 'deleteWalletsIntent',
    resultKey: 'deleteWalletsResult',
    run(params, context) {
      const input = parse(z.object({ walletIds: ids('wallet'), deleteWithoutExport: z.boolean().optional() }), params)
      const wallets = input.walletIds.map((walletId) => walletIn(context, walletId))
      refuseUnexported(
        wallets.map((wallet) => ({ exported: wallet.exported, label: `wallet ${wallet.id}` })),
        input.deleteWithoutExport,
      )
      context.db.transaction(() => {
        for (const wallet of wallets) context.db.deleteWallet(wallet.id)
      })
      return { walletIds: input.walletIds }
    },
  },
  ACTIVITY_TYPE_DELETE_WALLET_ACCOUNTS: {
    op: 'delete_wallet_accounts',
    intentKey: 'deleteWalletAccountsIntent',
    resultKey: 'deleteWalletAccountsResult',
    run(params, context) {
      const input = parse(z.object({ walletAccountIds: ids('wallet account'), deleteWithoutExport: z.boolean().optional() }), params)
      const { db, caller } = context
      const accounts = input.walletAccountIds.map((accountId) => {
        const account = db.walletAccount(accountId, caller.organizationId)
        if (!account) throw notFound(`wallet account ${accountId} not found in organization ${caller.organizationId}`)
        return account
      })
      refuseUnexported(
        accounts.map((account) => ({ exported: db.wallet(account.wallet_id, caller.organizationId)!.exported, label: `wallet account ${account.id}` })),
        input.deleteWithoutExport,
      )
      db.transaction(() => {
        for (const account of accounts) db.deleteWalletAccount(account.id)
      })
      return { walletAccountIds: input.walletAccountIds }
    },
  },
}
