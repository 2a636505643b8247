import { randomUUID } from 'node:crypto'
import { p256 } from '@noble/curves/p256'
import { secp256k1 } from '@noble/curves/secp256k1'
import { validateMnemonic } from '@scure/bip39'
import { wordlist } from '@scure/bip39/wordlists/english'
import { z } from 'zod'
import { type ActivityTable, userIn } from '../activities/table.js'
import { exportBundle, hpkeOpen, signBundle } from '../bundles.js'
import { alreadyExists, failedPrecondition, invalid, notFound } from '../errors.js'
import { deriveAccounts } from '../ethereum.js'
import { listOf, MAX_ACCOUNTS_PER_REQUEST } from '../lists.js'
import { parse, targetPublicKey } from '../params.js'
import { addressFormats, curve, importRecord, insertPrivateKey, openPrivateKey, privateKeyIn } from '../privateKeys/keys.js'
import { open, seal } from '../secrets.js'
import { accountParams, insertAccounts, walletOf, withAccountKey } from '../wallets/keys.js'

// Export and import: a wallet's mnemonic, one account's key or a private key leaves encrypted to
// the client's key in a signed bundle; a mnemonic or key comes in encrypted to a target key the
// service made for that user's import (one import in progress per user, spent by the import).

export const EXPORT_IMPORT_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_INIT_IMPORT_WALLET: {
    op: 'init_import_wallet',
    intentKey: 'initImportWalletIntent',
    resultKey: 'initImportWalletResult',
    async run(params, context) {
      const { userId } = parse(z.object({ userId: z.string().min(1) }), params)
      const { db, caller, masterKey, now, signerPrivateKey } = context
      if (!(await db.user(userId, caller.organizationId))) throw notFound(`user ${userId} not found in organization ${caller.organizationId}`)
      // A fresh target key per import, kept sealed until the import arrives.
      const target = p256.utils.randomPrivateKey()
      await db.upsertImportTarget({
        user_id: userId,
        organization_id: caller.organizationId,
        sealed_private_key: seal(masterKey, `import:${userId}`, Buffer.from(target).toString('hex')),
        created_at: now(),
      })
      const targetPublic = Buffer.from(p256.getPublicKey(target, false)).toString('hex')
      return { importBundle: signBundle(signerPrivateKey, { organizationId: caller.organizationId, userId, targetPublic }) }
    },
  },
  ACTIVITY_TYPE_IMPORT_WALLET: {
    op: 'import_wallet',
    intentKey: 'importWalletIntent',
    resultKey: 'importWalletResult',
    async run(params, context) {
      const input = parse(
        z.object({
          userId: z.string().min(1),
          walletName: z.string().min(1).max(256),
          encryptedBundle: z.string().min(1),
          accounts: listOf(accountParams, 'accounts', MAX_ACCOUNTS_PER_REQUEST),
        }),
        params,
      )
      const { db, caller, masterKey, now } = context
      const target = await db.importTarget(input.userId, caller.organizationId)
      if (!target) throw failedPrecondition('no import in progress for this user: call init_import_wallet first')
      let envelope: { encappedPublic?: unknown; ciphertext?: unknown }
      try {
        envelope = JSON.parse(input.encryptedBundle)
      } catch {
        throw invalid('encryptedBundle is not JSON')
      }
      if (typeof envelope.encappedPublic !== 'string' || typeof envelope.ciphertext !== 'string')
        throw invalid('encryptedBundle must hold encappedPublic and ciphertext')
      const plaintext = await hpkeOpen(
        open(masterKey, `import:${input.userId}`, target.sealed_private_key),
        Buffer.from(envelope.encappedPublic, 'hex'),
        Buffer.from(envelope.ciphertext, 'hex'),
      )
      const text = new TextDecoder().decode(plaintext)
      if (text.includes('\n--PASS--\n')) throw invalid('wallets with a BIP-39 passphrase cannot be imported here')
      const mnemonic = text.trim().split(/\s+/).join(' ')
      if (!validateMnemonic(mnemonic, wordlist)) throw invalid('the imported secret is not a valid BIP-39 mnemonic')
      if (await db.walletByName(caller.organizationId, input.walletName)) throw alreadyExists(`a wallet named "${input.walletName}" already exists`)
      const derived = await deriveAccounts(mnemonic, input.accounts)
      const walletId = randomUUID()
      const at = now()
      await db.insertWallet({
        id: walletId,
        organization_id: caller.organizationId,
        name: input.walletName,
        sealed_mnemonic: seal(masterKey, walletId, mnemonic),
        created_at: at,
        exported: 0,
        imported: 1,
      })
      await db.markImported(walletId)
      await insertAccounts(context, walletId, caller.organizationId, derived, at)
      // One import per init: the target key is spent.
      await db.deleteImportTarget(input.userId)
      return { walletId, addresses: derived.map((account) => account.address) }
    },
  },
  ACTIVITY_TYPE_EXPORT_WALLET: {
    op: 'export_wallet',
    intentKey: 'exportWalletIntent',
    resultKey: 'exportWalletResult',
    async run(params, context) {
      const input = parse(z.object({ walletId: z.string().min(1), targetPublicKey, language: z.string().optional() }), params)
      const { db, masterKey, caller, signerPrivateKey } = context
      const wallet = await walletOf(db, caller.organizationId, input.walletId)
      const mnemonic = open(masterKey, wallet.id, wallet.sealed_mnemonic)
      const bundle = await exportBundle({
        signerPrivateKey,
        organizationId: caller.organizationId,
        targetPublicKey: input.targetPublicKey,
        plaintext: new TextEncoder().encode(mnemonic),
      })
      await db.markExported(wallet.id)
      return { walletId: wallet.id, exportBundle: bundle }
    },
  },
  ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT: {
    op: 'export_wallet_account',
    intentKey: 'exportWalletAccountIntent',
    resultKey: 'exportWalletAccountResult',
    async run(params, context) {
      const input = parse(z.object({ address: z.string().min(1), targetPublicKey }), params)
      const { bundle, walletId } = await withAccountKey(context, input.address, async (privateKey, account) => ({
        walletId: account.wallet_id,
        bundle: await exportBundle({
          signerPrivateKey: context.signerPrivateKey,
          organizationId: context.caller.organizationId,
          targetPublicKey: input.targetPublicKey,
          plaintext: privateKey,
        }),
      }))
      await context.db.markExported(walletId)
      return { address: input.address, exportBundle: bundle }
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
