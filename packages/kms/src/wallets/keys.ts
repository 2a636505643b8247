import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import type { ActivityContext } from '../context.js'
import type { Db } from '../db.js'
import { alreadyExists, notFound } from '../errors.js'
import { type AccountParams, type DerivedAccount, deriveAccounts, newMnemonic } from '../ethereum.js'
import { accountKeyRecord, open, openBytes, seal } from '../secrets.js'
import type { WalletAccountRow, WalletRow } from '../storage/tables.js'

// Wallets' keys: creating a wallet with its accounts, and opening an account's private key to
// sign or export with. Used by wallets, organizations (a sub-organization's first wallet),
// signing and export/import.

/** An account to derive, as create_wallet and its kin take it. */
export const accountParams = z.object({
  curve: z.string(),
  pathFormat: z.string(),
  path: z.string(),
  addressFormat: z.string(),
})

/** Creates a wallet with its first accounts; returns its id and addresses. */
export async function createWallet(context: ActivityContext, organizationId: string, name: string, accounts: AccountParams[], mnemonicLength?: number) {
  const { db, masterKey, now } = context
  // One indexed look-up, not the organization's wallets: the unique (organization, name) constraint
  // stops a concurrent twin.
  if (await db.walletByName(organizationId, name)) throw alreadyExists(`a wallet named "${name}" already exists`)
  const walletId = randomUUID()
  const mnemonic = newMnemonic(mnemonicLength)
  // Derive first, so a bad account parameter writes nothing.
  const derived = await deriveAccounts(mnemonic, accounts)
  const at = now()
  await db.insertWallet({
    id: walletId,
    organization_id: organizationId,
    name,
    sealed_mnemonic: seal(masterKey, walletId, mnemonic),
    created_at: at,
    exported: 0,
    imported: 0,
  })
  await insertAccounts(context, walletId, organizationId, derived, at)
  return { walletId, addresses: derived.map((account) => account.address) }
}

/** Stores derived accounts of a wallet, each with its private key sealed beside it; the keys are zeroed. */
export async function insertAccounts(
  context: Pick<ActivityContext, 'db' | 'masterKey'>,
  walletId: string,
  organizationId: string,
  accounts: readonly DerivedAccount[],
  at: number,
) {
  try {
    for (const account of accounts) {
      const id = randomUUID()
      await context.db.insertAccount({
        id,
        wallet_id: walletId,
        organization_id: organizationId,
        curve: account.curve,
        path_format: account.pathFormat,
        path: account.path,
        address_format: account.addressFormat,
        address: account.address,
        public_key: account.publicKey,
        created_at: at,
        sealed_private_key: seal(context.masterKey, accountKeyRecord(id), account.privateKey),
      })
    }
  } finally {
    for (const account of accounts) account.privateKey.fill(0)
  }
}

export async function walletOf(db: Db, organizationId: string, walletId: string): Promise<WalletRow> {
  const wallet = await db.wallet(walletId, organizationId)
  if (!wallet) throw notFound(`wallet ${walletId} not found in organization ${organizationId}`)
  return wallet
}

/**
 * Runs `use` with the private key of the wallet account that `signWith` (an address) names in the
 * caller's organization, and zeroes the key after. The key is opened from its sealed copy (one
 * AES-GCM block); an account stored before keys were sealed is derived from the wallet's mnemonic
 * once and sealed for the next time.
 */
export async function withAccountKey<result>(
  context: ActivityContext,
  signWith: string,
  use: (privateKey: Uint8Array, account: WalletAccountRow) => result | Promise<result>,
): Promise<result> {
  const account = await context.db.accountByAddress(context.caller.organizationId, signWith)
  if (!account) throw notFound(`no wallet account with address ${signWith} in organization ${context.caller.organizationId}`)
  return await withKeyOfAccount(context, account, use)
}

/** withAccountKey for an account row already read (the signing path reads it with the private-key look-up). */
export async function withKeyOfAccount<result>(
  context: ActivityContext,
  account: WalletAccountRow,
  use: (privateKey: Uint8Array, account: WalletAccountRow) => result | Promise<result>,
): Promise<result> {
  const { db, masterKey, caller } = context
  let privateKey: Uint8Array
  if (account.sealed_private_key) privateKey = openBytes(masterKey, accountKeyRecord(account.id), account.sealed_private_key)
  else {
    const wallet = await walletOf(db, caller.organizationId, account.wallet_id)
    const params = { curve: account.curve, pathFormat: account.path_format, path: account.path, addressFormat: account.address_format }
    privateKey = (await deriveAccounts(open(masterKey, wallet.id, wallet.sealed_mnemonic), [params]))[0]!.privateKey
    await db.sealAccountKey(account.id, seal(masterKey, accountKeyRecord(account.id), privateKey))
  }
  try {
    return await use(privateKey, account)
  } finally {
    privateKey.fill(0)
  }
}
