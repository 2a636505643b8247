import { decryptExportBundle, encryptPrivateKeyToBundle, generateP256KeyPair } from '@turnkey/crypto'
import { Turnkey } from '@turnkey/sdk-server'
import type { Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { ethereumKey, startKms } from './harness.js'

// Private keys (secp256k1, held on their own rather than derived from a wallet) through the
// official clients: created, tagged, exported and imported with @turnkey/crypto's bundle
// functions, and deleted. Signing with them: privateKeySigning.test.ts.

let harness: Awaited<ReturnType<typeof startKms>>
beforeAll(async () => {
  harness = await startKms()
})
afterAll(() => harness.kms.stop())

describe('private keys', () => {
  test('default: create_private_keys V2 makes a secp256k1 key with its addresses; get and list show it', async () => {
    const sub = await harness.subOrganization()
    const { activity } = await sub.client.createPrivateKeys({
      type: 'ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { privateKeys: [ethereumKey('hot')] },
    })
    const [created] = activity.result.createPrivateKeysResultV2!.privateKeys
    const [ethereum, compressed] = created!.addresses!
    expect([ethereum!.format, compressed!.format]).toEqual(['ADDRESS_FORMAT_ETHEREUM', 'ADDRESS_FORMAT_COMPRESSED'])
    expect(ethereum!.address).toMatch(/^0x[0-9a-fA-F]{40}$/)
    const { privateKey } = await sub.client.getPrivateKey({ organizationId: sub.organizationId, privateKeyId: created!.privateKeyId! })
    expect(privateKey).toMatchObject({
      privateKeyId: created!.privateKeyId,
      privateKeyName: 'hot',
      curve: 'CURVE_SECP256K1',
      publicKey: compressed!.address,
      exported: false,
      imported: false,
      privateKeyTags: [],
    })
    expect(privateKey.addresses).toEqual(created!.addresses)
    // @turnkey/sdk-server reads the result under createPrivateKeysResultV2 and lists with list_private_keys.
    const sdk = new Turnkey({
      apiBaseUrl: harness.kms.url,
      apiPublicKey: sub.keys.apiPublicKey,
      apiPrivateKey: sub.keys.apiPrivateKey,
      defaultOrganizationId: sub.organizationId,
    }).apiClient()
    const second = await sdk.createPrivateKeys({ privateKeys: [ethereumKey('cold')] })
    expect(second.privateKeys[0]!.addresses![0]!.address).toMatch(/^0x[0-9a-fA-F]{40}$/)
    expect((await sdk.getPrivateKeys({})).privateKeys.map((key) => key.privateKeyName)).toEqual(['hot', 'cold'])
  })

  test('behavior: private key tags are created with keys, updated, listed and deleted', async () => {
    const { timestampMs } = harness
    const sub = await harness.subOrganization()
    const [first, second] = [
      await harness.createPrivateKey(sub.client, sub.organizationId, 'one'),
      await harness.createPrivateKey(sub.client, sub.organizationId, 'two'),
    ]
    const base = { organizationId: sub.organizationId }
    const created = await sub.client.createPrivateKeyTag({
      ...base,
      type: 'ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG',
      timestampMs: timestampMs(),
      parameters: { privateKeyTagName: 'treasury', privateKeyIds: [first.privateKeyId] },
    })
    const { privateKeyTagId } = created.activity.result.createPrivateKeyTagResult!
    await sub.client.updatePrivateKeyTag({
      ...base,
      type: 'ACTIVITY_TYPE_UPDATE_PRIVATE_KEY_TAG',
      timestampMs: timestampMs(),
      parameters: { privateKeyTagId, newPrivateKeyTagName: 'vault', addPrivateKeyIds: [second.privateKeyId], removePrivateKeyIds: [] },
    })
    expect((await sub.client.listPrivateKeyTags(base)).privateKeyTags.map((tag) => [tag.tagId, tag.tagName, tag.tagType])).toEqual([
      [privateKeyTagId, 'vault', 'TAG_TYPE_PRIVATE_KEY'],
    ])
    expect((await sub.client.getPrivateKey({ ...base, privateKeyId: second.privateKeyId })).privateKey.privateKeyTags).toEqual([privateKeyTagId])
    // A new key may carry the tag from the start.
    await sub.client.createPrivateKeys({
      ...base,
      type: 'ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2',
      timestampMs: timestampMs(),
      parameters: { privateKeys: [ethereumKey('three', [privateKeyTagId])] },
    })
    const deleted = await sub.client.deletePrivateKeyTags({
      ...base,
      type: 'ACTIVITY_TYPE_DELETE_PRIVATE_KEY_TAGS',
      timestampMs: timestampMs(),
      parameters: { privateKeyTagIds: [privateKeyTagId] },
    })
    expect(deleted.activity.result.deletePrivateKeyTagsResult!.privateKeyIds).toHaveLength(3)
    expect((await sub.client.listPrivateKeyTags(base)).privateKeyTags).toEqual([])
  })

  test('default: export_private_key gives a bundle @turnkey/crypto opens to the key itself; then it may be deleted', async () => {
    const { timestampMs, kms } = harness
    const sub = await harness.subOrganization()
    const key = await harness.createPrivateKey(sub.client, sub.organizationId, 'exported')
    const base = { organizationId: sub.organizationId }
    const deleteKey = (deleteWithoutExport?: boolean) =>
      sub.client.deletePrivateKeys({
        ...base,
        type: 'ACTIVITY_TYPE_DELETE_PRIVATE_KEYS',
        timestampMs: timestampMs(),
        parameters: { privateKeyIds: [key.privateKeyId], ...(deleteWithoutExport ? { deleteWithoutExport } : {}) },
      })
    await expect(deleteKey()).rejects.toThrow(
      `Turnkey error 9: private key ${key.privateKeyId} has not been exported: export first, or set deleteWithoutExport`,
    )

    const embedded = generateP256KeyPair()
    const { activity } = await sub.client.exportPrivateKey({
      ...base,
      type: 'ACTIVITY_TYPE_EXPORT_PRIVATE_KEY',
      timestampMs: timestampMs(),
      parameters: { privateKeyId: key.privateKeyId, targetPublicKey: embedded.publicKeyUncompressed },
    })
    const result = activity.result.exportPrivateKeyResult!
    expect(result.privateKeyId).toBe(key.privateKeyId)
    const opened = await decryptExportBundle({
      exportBundle: result.exportBundle,
      embeddedKey: embedded.privateKey,
      organizationId: sub.organizationId,
      returnMnemonic: false,
      dangerouslyOverrideSignerPublicKey: kms.signerPublicKey,
    })
    expect(privateKeyToAddress(`0x${opened}`)).toBe(key.address)
    expect((await sub.client.getPrivateKey({ ...base, privateKeyId: key.privateKeyId })).privateKey.exported).toBe(true)

    expect((await deleteKey()).activity.result.deletePrivateKeysResult).toEqual({ privateKeyIds: [key.privateKeyId] })
    await expect(sub.client.getPrivateKey({ ...base, privateKeyId: key.privateKeyId })).rejects.toThrow(
      `Turnkey error 5: private key ${key.privateKeyId} not found in organization ${sub.organizationId}`,
    )
  })

  test('default: init_import_private_key and import_private_key take a key encrypted with @turnkey/crypto', async () => {
    const sub = await harness.subOrganization()
    const base = { organizationId: sub.organizationId }
    const { secret, importKey } = await harness.prepareImport(sub)
    const { activity } = await importKey()
    const result = activity.result.importPrivateKeyResult!
    expect(result.addresses).toEqual([{ format: 'ADDRESS_FORMAT_ETHEREUM', address: privateKeyToAddress(secret) }])
    expect((await sub.client.getPrivateKey({ ...base, privateKeyId: result.privateKeyId })).privateKey).toMatchObject({
      privateKeyName: 'imported',
      imported: true,
      exported: false,
    })
    // One import per init: the target key is spent.
    await expect(importKey()).rejects.toThrow('Turnkey error 9: no import in progress for this user: call init_import_private_key first')
  })
})

describe('refusals', () => {
  test('error: an unsupported curve or address format, or a name in use, creates no key at all', async () => {
    const sub = await harness.subOrganization()
    await harness.createPrivateKey(sub.client, sub.organizationId, 'taken')
    const create = (privateKeys: ReturnType<typeof ethereumKey>[]) =>
      sub.client.createPrivateKeys({
        type: 'ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { privateKeys },
      })
    await expect(create([ethereumKey('fresh'), { ...ethereumKey('ed'), curve: 'CURVE_ED25519' as never }])).rejects.toThrow(
      'Turnkey error 3: invalid parameters: privateKeys.1.curve: unsupported curve CURVE_ED25519: this service signs with CURVE_SECP256K1',
    )
    await expect(create([{ ...ethereumKey('sol'), addressFormats: ['ADDRESS_FORMAT_SOLANA' as never] }])).rejects.toThrow(
      'Turnkey error 3: invalid parameters: privateKeys.0.addressFormats.0: unsupported address format ADDRESS_FORMAT_SOLANA',
    )
    await expect(create([ethereumKey('fresh'), ethereumKey('taken')])).rejects.toThrow('Turnkey error 6: a private key named "taken" already exists')
    await expect(create([ethereumKey('fresh', ['no-such-tag'])])).rejects.toThrow(
      `Turnkey error 5: private key tag no-such-tag not found in organization ${sub.organizationId}`,
    )
    expect((await sub.client.getPrivateKeys({ organizationId: sub.organizationId })).privateKeys.map((key) => key.privateKeyName)).toEqual(['taken'])
  })

  test('error: an import without init, a bundle that does not open, or a key already held is refused', async () => {
    const { timestampMs, kms } = harness
    const sub = await harness.subOrganization()
    const base = { organizationId: sub.organizationId }
    const importKey = (encryptedBundle: string, privateKeyName = 'imported') =>
      sub.client.importPrivateKey({
        ...base,
        type: 'ACTIVITY_TYPE_IMPORT_PRIVATE_KEY',
        timestampMs: timestampMs(),
        parameters: { userId: sub.userId, privateKeyName, encryptedBundle, curve: 'CURVE_SECP256K1', addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] },
      })
    await expect(importKey('{}')).rejects.toThrow('Turnkey error 9: no import in progress for this user: call init_import_private_key first')
    const bundleFor = async (privateKey: Hex) => {
      const init = await sub.client.initImportPrivateKey({
        ...base,
        type: 'ACTIVITY_TYPE_INIT_IMPORT_PRIVATE_KEY',
        timestampMs: timestampMs(),
        parameters: { userId: sub.userId },
      })
      const importBundle = init.activity.result.initImportPrivateKeyResult!.importBundle
      return encryptPrivateKeyToBundle({
        privateKey,
        keyFormat: 'HEXADECIMAL',
        importBundle,
        userId: sub.userId,
        organizationId: sub.organizationId,
        dangerouslyOverrideSignerPublicKey: kms.signerPublicKey,
      })
    }
    const stale = await bundleFor(generatePrivateKey())
    await bundleFor(generatePrivateKey()) // a new init replaces the target key the first bundle was made for
    await expect(importKey(stale)).rejects.toThrow('Turnkey error 3: the bundle does not open with this key')
    await expect(importKey('not json')).rejects.toThrow('Turnkey error 3: encryptedBundle is not JSON')
    const created = await harness.createPrivateKey(sub.client, sub.organizationId, 'original')
    const exported = generateP256KeyPair()
    const bundle = await sub.client.exportPrivateKey({
      ...base,
      type: 'ACTIVITY_TYPE_EXPORT_PRIVATE_KEY',
      timestampMs: timestampMs(),
      parameters: { privateKeyId: created.privateKeyId, targetPublicKey: exported.publicKeyUncompressed },
    })
    const secret = await decryptExportBundle({
      exportBundle: bundle.activity.result.exportPrivateKeyResult!.exportBundle,
      embeddedKey: exported.privateKey,
      organizationId: sub.organizationId,
      returnMnemonic: false,
      dangerouslyOverrideSignerPublicKey: kms.signerPublicKey,
    })
    await expect(importKey(await bundleFor(`0x${secret}`), 'copy')).rejects.toThrow(
      `Turnkey error 6: the address ${created.address} is already held in organization ${sub.organizationId}`,
    )
    expect((await sub.client.getPrivateKeys(base)).privateKeys.map((key) => key.privateKeyName)).toEqual(['original'])
  })
})
