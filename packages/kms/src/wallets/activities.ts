import { z } from 'zod'
import { type ActivityTable, refuseUnexported } from '../activities/table.js'
import type { ActivityContext } from '../context.js'
import { alreadyExists, failedPrecondition, notFound } from '../errors.js'
import { deriveAccounts } from '../ethereum.js'
import { listOf, MAX_ACCOUNTS_PER_REQUEST, MAX_ACCOUNTS_PER_WALLET } from '../lists.js'
import { ids, parse } from '../params.js'
import { open } from '../secrets.js'
import { mapSeries } from '../sequence.js'
import { accountParams, createWallet, insertAccounts, walletOf } from './keys.js'

// Wallets and their accounts: creating, renaming and deleting them (exporting and importing: exportImport/; signing: signing/).

async function walletIn(context: ActivityContext, walletId: string) {
  const wallet = await context.db.wallet(walletId, context.caller.organizationId)
  if (!wallet) throw notFound(`wallet ${walletId} not found in organization ${context.caller.organizationId}`)
  return wallet
}

export const WALLET_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_CREATE_WALLET: {
    op: 'create_wallet',
    intentKey: 'createWalletIntent',
    resultKey: 'createWalletResult',
    async run(params, context) {
      const { walletName, accounts, mnemonicLength } = parse(
        z.object({
          walletName: z.string().min(1).max(256),
          accounts: listOf(accountParams, 'accounts', MAX_ACCOUNTS_PER_REQUEST),
          mnemonicLength: z.number().int().optional(),
        }),
        params,
      )
      return await createWallet(context, context.caller.organizationId, walletName, accounts, mnemonicLength)
    },
  },
  ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS: {
    op: 'create_wallet_accounts',
    intentKey: 'createWalletAccountsIntent',
    resultKey: 'createWalletAccountsResult',
    async run(params, context) {
      const { walletId, accounts } = parse(
        z.object({ walletId: z.string(), accounts: listOf(accountParams, 'accounts', MAX_ACCOUNTS_PER_REQUEST).min(1) }),
        params,
      )
      const { db, masterKey, caller, now } = context
      const wallet = await walletOf(db, caller.organizationId, walletId)
      const mnemonic = open(masterKey, wallet.id, wallet.sealed_mnemonic)
      const existing = new Set((await db.accountsOfWallet(wallet.id)).map((account) => account.path))
      if (existing.size + accounts.length > MAX_ACCOUNTS_PER_WALLET)
        throw failedPrecondition(
          `a wallet holds at most ${MAX_ACCOUNTS_PER_WALLET} accounts: wallet ${walletId} has ${existing.size}, and ${accounts.length} more were asked for`,
        )
      const derived = await deriveAccounts(mnemonic, accounts)
      const taken = derived.find((account) => existing.has(account.path))
      if (taken) {
        for (const account of derived) account.privateKey.fill(0)
        throw alreadyExists(`wallet ${walletId} already has an account at ${taken.path}`)
      }
      await insertAccounts(context, wallet.id, caller.organizationId, derived, now())
      return { addresses: derived.map((account) => account.address) }
    },
  },
  ACTIVITY_TYPE_UPDATE_WALLET: {
    op: 'update_wallet',
    intentKey: 'updateWalletIntent',
    resultKey: 'updateWalletResult',
    async run(params, context) {
      const input = parse(z.object({ walletId: z.string().min(1), walletName: z.string().min(1).max(256).optional() }), params)
      const { db, caller } = context
      const wallet = await walletIn(context, input.walletId)
      if (input.walletName !== undefined && input.walletName !== wallet.name) {
        if (await db.walletByName(caller.organizationId, input.walletName)) throw alreadyExists(`a wallet named "${input.walletName}" already exists`)
        await db.renameWallet(input.walletName, wallet.id)
      }
      return { walletId: wallet.id }
    },
  },
  ACTIVITY_TYPE_DELETE_WALLETS: {
    op: 'delete_wallets',
    intentKey: 'deleteWalletsIntent',
    resultKey: 'deleteWalletsResult',
    async run(params, context) {
      const input = parse(z.object({ walletIds: ids('wallet'), deleteWithoutExport: z.boolean().optional() }), params)
      const wallets = await mapSeries(input.walletIds, async (walletId) => walletIn(context, walletId))
      refuseUnexported(
        wallets.map((wallet) => ({ exported: wallet.exported, label: `wallet ${wallet.id}` })),
        input.deleteWithoutExport,
      )
      await context.db.transaction(async () => {
        for (const wallet of wallets) await context.db.deleteWallet(wallet.id)
      })
      return { walletIds: input.walletIds }
    },
  },
  ACTIVITY_TYPE_DELETE_WALLET_ACCOUNTS: {
    op: 'delete_wallet_accounts',
    intentKey: 'deleteWalletAccountsIntent',
    resultKey: 'deleteWalletAccountsResult',
    async run(params, context) {
      const input = parse(z.object({ walletAccountIds: ids('wallet account'), deleteWithoutExport: z.boolean().optional() }), params)
      const { db, caller } = context
      const accounts = await mapSeries(input.walletAccountIds, async (accountId) => {
        const account = await db.walletAccount(accountId, caller.organizationId)
        if (!account) throw notFound(`wallet account ${accountId} not found in organization ${caller.organizationId}`)
        return account
      })
      refuseUnexported(
        await mapSeries(accounts, async (account) => ({
          exported: (await db.wallet(account.wallet_id, caller.organizationId))!.exported,
          label: `wallet account ${account.id}`,
        })),
        input.deleteWithoutExport,
      )
      await db.transaction(async () => {
        for (const account of accounts) await db.deleteWalletAccount(account.id)
      })
      return { walletAccountIds: input.walletAccountIds }
    },
  },
}
