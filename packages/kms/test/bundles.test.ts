import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { decryptCredentialBundle, decryptExportBundle, encryptWalletToBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { english, generateMnemonic, mnemonicToAccount, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair as apiKeyPair, createKms, hpkeOpen, hpkeSeal, type Kms, openExportBundle, SIGNER_PATH } from '../src/index.js'
import { testDatabase } from './database.js'

// Bundles: the real export bundle of the hosted service opened by our code, and our bundles
// opened by @turnkey/crypto as an app or frame would, given our signer key.

// A copy of shared/research/vectors/turnkey-export-bundle.json (from the public tkhq/sdk crypto tests).
const vector = JSON.parse(readFileSync(new URL('./vectors/turnkey-export-bundle.json', import.meta.url), 'utf8')) as {
  bundle: { data: string; enclaveQuorumPublic: string }
  recipientPrivateKeyHex: string
}

describe('the hosted service’s export bundle', () => {
  const organizationId = (JSON.parse(Buffer.from(vector.bundle.data, 'hex').toString('utf8')) as { organizationId: string }).organizationId
  const open = (overrides: Partial<Parameters<typeof openExportBundle>[0]> = {}) =>
    openExportBundle({
      bundle: JSON.stringify(vector.bundle),
      recipientPrivateKey: vector.recipientPrivateKeyHex,
      signerPublicKey: vector.bundle.enclaveQuorumPublic,
      organizationId,
      ...overrides,
    })

  test('default: opens with its recipient key to a BIP-39 mnemonic', async () => {
    const mnemonic = new TextDecoder().decode(await open())
    expect(mnemonic.split(' ').slice(0, 3)).toEqual(['leaf', 'lady', 'until'])
    expect([12, 15, 18, 21, 24]).toContain(mnemonic.split(' ').length)
  })

  test('error: another signer, another organization, a changed byte, another key', async () => {
    const other = generateP256KeyPair()
    await expect(open({ signerPublicKey: other.publicKeyUncompressed })).rejects.toThrow('not the expected signer')
    await expect(open({ organizationId: 'someone-else' })).rejects.toThrow(`the bundle belongs to organization ${organizationId}, not someone-else`)
    const tampered = { ...vector.bundle, data: vector.bundle.data.replace(/.$/, (c) => (c === '0' ? '1' : '0')) }
    await expect(open({ bundle: JSON.stringify(tampered) })).rejects.toThrow('the bundle signature does not verify')
    await expect(open({ recipientPrivateKey: other.privateKey })).rejects.toThrow('the bundle does not open with this key')
  })
})

describe('HPKE open (OpenSSL) against the seal (@hpke/core)', () => {
  test('default: every length from empty to 100 bytes opens to what was sealed', async () => {
    const recipient = generateP256KeyPair()
    for (let length = 0; length <= 100; length++) {
      const plaintext = randomBytes(length)
      const { enc, ciphertext } = await hpkeSeal(recipient.publicKey, plaintext)
      expect(Buffer.from(await hpkeOpen(recipient.privateKey, enc, ciphertext)).equals(plaintext)).toBe(true)
    }
  })

  test('error: another key, a changed byte, a cut tag or another enc do not open', async () => {
    const recipient = generateP256KeyPair()
    const { enc, ciphertext } = await hpkeSeal(recipient.publicKey, new TextEncoder().encode('{"otp_code":"123456"}'))
    const changed = Uint8Array.from(ciphertext)
    changed[0]! ^= 1
    const otherEnc = (await hpkeSeal(recipient.publicKey, new Uint8Array(1))).enc
    for (const [key, encapped, sealed] of [
      [generateP256KeyPair().privateKey, enc, ciphertext],
      [recipient.privateKey, enc, changed],
      [recipient.privateKey, enc, ciphertext.subarray(0, ciphertext.length - 1)],
      [recipient.privateKey, enc, ciphertext.subarray(0, 15)],
      [recipient.privateKey, otherEnc, ciphertext],
    ] as const)
      await expect(hpkeOpen(key, encapped, sealed)).rejects.toThrow('the bundle does not open with this key')
  })
})

describe('our bundles, opened by @turnkey/crypto', () => {
  let kms: Kms
  let clock = Date.now()
  const userKey = apiKeyPair()
  let sub: { organizationId: string; walletId: string; address: `0x${string}`; userId: string }
  const client = (keys: { apiPrivateKey: string; apiPublicKey: string }) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(keys))

  beforeAll(async () => {
    kms = createKms({ port: await getFreePort(), now: () => clock, ...(await testDatabase()) })
    await kms.start()
    const parentKey = apiKeyPair()
    const parent = await kms.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })
    const { activity } = await client(parentKey).createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(clock),
      organizationId: parent.organizationId,
      parameters: {
        subOrganizationName: 'user',
        rootQuorumThreshold: 1,
        rootUsers: [
          {
            userName: 'user',
            apiKeys: [{ apiKeyName: 'k', publicKey: userKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
            authenticators: [],
            oauthProviders: [],
          },
        ],
        wallet: {
          walletName: 'Turnkey HD',
          accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
        },
      },
    })
    const result = activity.result.createSubOrganizationResultV8!
    sub = {
      organizationId: result.subOrganizationId!,
      walletId: result.wallet!.walletId,
      address: result.wallet!.addresses[0] as `0x${string}`,
      userId: result.rootUserIds![0]!,
    }
  })
  afterAll(() => kms.stop())

  test('default: the signer key is published', async () => {
    expect(await (await fetch(`${kms.url}${SIGNER_PATH}`)).json()).toEqual({ signerPublicKey: kms.signerPublicKey })
    expect(kms.signerPublicKey).toMatch(/^04[0-9a-f]{128}$/)
  })

  test('behavior: export_wallet gives the mnemonic behind the wallet’s address, and marks it exported', async () => {
    const embedded = generateP256KeyPair()
    const { activity } = await client(userKey).exportWallet({
      type: 'ACTIVITY_TYPE_EXPORT_WALLET',
      timestampMs: String(clock),
      organizationId: sub.organizationId,
      parameters: { walletId: sub.walletId, targetPublicKey: embedded.publicKeyUncompressed },
    })
    const mnemonic = await decryptExportBundle({
      exportBundle: activity.result.exportWalletResult!.exportBundle,
      embeddedKey: embedded.privateKey,
      organizationId: sub.organizationId,
      returnMnemonic: true,
      dangerouslyOverrideSignerPublicKey: kms.signerPublicKey,
    })
    expect(mnemonicToAccount(mnemonic).address).toBe(sub.address)
    expect((await client(userKey).getWallet({ organizationId: sub.organizationId, walletId: sub.walletId })).wallet.exported).toBe(true)
  })

  test('behavior: export_wallet_account gives the account’s private key', async () => {
    const embedded = generateP256KeyPair()
    const { activity } = await client(userKey).exportWalletAccount({
      type: 'ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT',
      timestampMs: String(clock),
      organizationId: sub.organizationId,
      parameters: { address: sub.address, targetPublicKey: embedded.publicKey },
    })
    const key = await decryptExportBundle({
      exportBundle: activity.result.exportWalletAccountResult!.exportBundle,
      embeddedKey: embedded.privateKey,
      organizationId: sub.organizationId,
      returnMnemonic: false,
      dangerouslyOverrideSignerPublicKey: kms.signerPublicKey,
    })
    expect(privateKeyToAccount(`0x${key}`).address).toBe(sub.address)
  })

  test('behavior: a read-write session’s credential bundle is a working key until it expires', async () => {
    const embedded = generateP256KeyPair()
    const { activity } = await client(userKey).createReadWriteSession({
      type: 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2',
      timestampMs: String(clock),
      organizationId: sub.organizationId,
      parameters: { targetPublicKey: embedded.publicKeyUncompressed, expirationSeconds: '120' },
    })
    const result = activity.result.createReadWriteSessionResultV2!
    expect(result).toMatchObject({ organizationId: sub.organizationId, organizationName: 'user', userId: sub.userId, username: 'user' })
    const sessionPrivateKey = decryptCredentialBundle(result.credentialBundle, embedded.privateKey)
    const session = client({ apiPrivateKey: sessionPrivateKey, apiPublicKey: Buffer.from(getPublicKey(sessionPrivateKey, true)).toString('hex') })
    expect(await session.getWhoami({ organizationId: sub.organizationId })).toMatchObject({ userId: sub.userId })
    clock += 121_000
    try {
      await expect(session.getWhoami({ organizationId: sub.organizationId })).rejects.toThrow('expired api key publicKey')
    } finally {
      clock -= 121_000
    }
  })

  test('behavior: import — init gives a signed bundle; the wallet encrypted to it is imported with its addresses', async () => {
    const user = client(userKey)
    const init = await user.initImportWallet({
      type: 'ACTIVITY_TYPE_INIT_IMPORT_WALLET',
      timestampMs: String(clock),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId },
    })
    const mnemonic = generateMnemonic(english)
    const encryptedBundle = await encryptWalletToBundle({
      mnemonic,
      importBundle: init.activity.result.initImportWalletResult!.importBundle,
      userId: sub.userId,
      organizationId: sub.organizationId,
      dangerouslyOverrideSignerPublicKey: kms.signerPublicKey,
    })
    const imported = await user.importWallet({
      type: 'ACTIVITY_TYPE_IMPORT_WALLET',
      timestampMs: String(clock),
      organizationId: sub.organizationId,
      parameters: {
        userId: sub.userId,
        walletName: 'Imported',
        encryptedBundle,
        accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
      },
    })
    const result = imported.activity.result.importWalletResult!
    expect(result.addresses).toEqual([mnemonicToAccount(mnemonic).address])
    expect((await user.getWallet({ organizationId: sub.organizationId, walletId: result.walletId })).wallet).toMatchObject({
      walletName: 'Imported',
      imported: true,
    })
    // The target key is spent: the same bundle cannot be imported again.
    await expect(
      user.importWallet({
        type: 'ACTIVITY_TYPE_IMPORT_WALLET',
        timestampMs: String(clock + 1),
        organizationId: sub.organizationId,
        parameters: { userId: sub.userId, walletName: 'Again', encryptedBundle, accounts: [] },
      }),
    ).rejects.toThrow('Turnkey error 9: no import in progress for this user: call init_import_wallet first')
  })

  test('error: a target that is not a P-256 key is refused', async () => {
    await expect(
      client(userKey).exportWallet({
        type: 'ACTIVITY_TYPE_EXPORT_WALLET',
        timestampMs: String(clock + 1),
        organizationId: sub.organizationId,
        parameters: { walletId: sub.walletId, targetPublicKey: `04${'00'.repeat(64)}` },
      }),
    ).rejects.toThrow('Turnkey error 3: targetPublicKey must be a P-256 public key (33 or 65 bytes of hex)')
  })
})
