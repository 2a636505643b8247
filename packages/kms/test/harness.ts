import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { encryptPrivateKeyToBundle } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { generatePrivateKey } from 'viem/accounts'
import { expect } from 'vitest'
import { createKms, generateApiKeyPair, type Kms, type KmsOptions } from '../src/index.js'
import { testDatabase } from './database.js'

// A kms on a free port with a parent organization, driven by the official @turnkey/http client:
// what the admin, private-key, OAuth and SMTP suites share.

export type ApiKeyPair = ReturnType<typeof generateApiKeyPair>
export const ethereumAccount = {
  curve: 'CURVE_SECP256K1',
  pathFormat: 'PATH_FORMAT_BIP32',
  path: "m/44'/60'/0'/0/0",
  addressFormat: 'ADDRESS_FORMAT_ETHEREUM',
} as const

/** create_private_keys parameters of a secp256k1 key with an Ethereum and a compressed address. */
export const ethereumKey = (privateKeyName: string, privateKeyTags: string[] = []) => ({
  privateKeyName,
  curve: 'CURVE_SECP256K1' as const,
  privateKeyTags,
  addressFormats: ['ADDRESS_FORMAT_ETHEREUM' as const, 'ADDRESS_FORMAT_COMPRESSED' as const],
})

/** What a sub-organization's opaque-hash signing (HASH_FUNCTION_NO_OP, as @turnkey/viem's signMessage sends it) is refused with. */
export const OPAQUE_HASH_REFUSED =
  'Turnkey error 7: opaque hash refused: a sub-organization signs only what the kms can read: a message with HASH_FUNCTION_KECCAK256, PAYLOAD_ENCODING_EIP712 typed data or a PAYLOAD_ENCODING_EIP7702_AUTHORIZATION'

/** Starts a kms; `stop` in afterAll. Activities get distinct timestamps, so equal requests are not deduplicated. */
export async function startKms(options: KmsOptions = {}) {
  const clock = { now: Date.now() }
  let sequence = 0
  const kms: Kms = createKms({ port: await getFreePort(), now: () => clock.now, ...(await testDatabase()), ...options })
  await kms.start()
  const parentKey = generateApiKeyPair()
  const parent = await kms.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })
  const client = (keys: ApiKeyPair) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(keys))
  const backend = client(parentKey)
  const timestampMs = () => String(clock.now + ++sequence)

  /**
   * A sub-organization with one root user holding a fresh API key (and `email`), and an Ethereum
   * wallet. With `delegate`, a second user holding that key, as an app backend's delegated user is
   * made (packages/server/src/internal/delegated.ts): a root user at create_sub_organization with a
   * key that never expires, then taken out of the root quorum; `delegateUserId` is its id.
   */
  async function subOrganization(parameters: { email?: string; rootQuorumThreshold?: number; delegate?: ApiKeyPair } = {}) {
    const keys = generateApiKeyPair()
    const { activity } = await backend.createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: timestampMs(),
      organizationId: parent.organizationId,
      parameters: {
        subOrganizationName: `sub ${keys.apiPublicKey.slice(2, 12)}`,
        rootQuorumThreshold: parameters.rootQuorumThreshold ?? 1,
        rootUsers: [
          {
            userName: 'root',
            ...(parameters.email ? { userEmail: parameters.email } : {}),
            apiKeys: [{ apiKeyName: 'root key', publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
            authenticators: [],
            oauthProviders: [],
          },
          ...(parameters.delegate
            ? [
                {
                  userName: 'delegated access',
                  apiKeys: [{ apiKeyName: 'delegated access', publicKey: parameters.delegate.apiPublicKey, curveType: 'API_KEY_CURVE_P256' as const }],
                  authenticators: [],
                  oauthProviders: [],
                },
              ]
            : []),
        ],
        wallet: { walletName: 'Turnkey HD', accounts: [ethereumAccount] },
      },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    const result = activity.result.createSubOrganizationResultV8!
    const organizationId = result.subOrganizationId!
    const userId = result.rootUserIds![0]!
    if (parameters.delegate) {
      const quorum = await client(parameters.delegate).updateRootQuorum({
        type: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
        timestampMs: timestampMs(),
        organizationId,
        parameters: { threshold: 1, userIds: [userId] },
      })
      expect(quorum.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    }
    return {
      keys,
      client: client(keys),
      organizationId,
      userId,
      delegateUserId: result.rootUserIds![1],
      walletId: result.wallet!.walletId,
      address: result.wallet!.addresses[0] as `0x${string}`,
    }
  }

  /** A private key named `name` in the organization; its id and Ethereum address. */
  async function createPrivateKey(by: TurnkeyClient, organizationId: string, name: string) {
    const { activity } = await by.createPrivateKeys({
      type: 'ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2',
      timestampMs: timestampMs(),
      organizationId,
      parameters: { privateKeys: [ethereumKey(name)] },
    })
    const [created] = activity.result.createPrivateKeysResultV2!.privateKeys
    return {
      privateKeyId: created!.privateKeyId!,
      address: created!.addresses!.find((address) => address.format === 'ADDRESS_FORMAT_ETHEREUM')!.address as `0x${string}`,
    }
  }

  /**
   * A fresh secp256k1 key encrypted with @turnkey/crypto to the sub-organization's import bundle,
   * and `importKey()`, which submits import_private_key (named "imported") with it.
   */
  async function prepareImport(sub: Awaited<ReturnType<typeof subOrganization>>) {
    const secret = generatePrivateKey()
    const init = await sub.client.initImportPrivateKey({
      organizationId: sub.organizationId,
      type: 'ACTIVITY_TYPE_INIT_IMPORT_PRIVATE_KEY',
      timestampMs: timestampMs(),
      parameters: { userId: sub.userId },
    })
    const encryptedBundle = await encryptPrivateKeyToBundle({
      privateKey: secret,
      keyFormat: 'HEXADECIMAL',
      importBundle: init.activity.result.initImportPrivateKeyResult!.importBundle,
      userId: sub.userId,
      organizationId: sub.organizationId,
      dangerouslyOverrideSignerPublicKey: kms.signerPublicKey,
    })
    const importKey = () =>
      sub.client.importPrivateKey({
        organizationId: sub.organizationId,
        type: 'ACTIVITY_TYPE_IMPORT_PRIVATE_KEY',
        timestampMs: timestampMs(),
        parameters: { userId: sub.userId, privateKeyName: 'imported', encryptedBundle, curve: 'CURVE_SECP256K1', addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] },
      })
    return { secret, importKey }
  }

  return { kms, clock, parent, parentKey, backend, client, timestampMs, subOrganization, createPrivateKey, prepareImport }
}

/** Posts a raw body stamped by `keys`: for requests the typed client would not let a test write. */
export async function post(kms: Kms, keys: ApiKeyPair, path: string, body: unknown) {
  const text = JSON.stringify(body)
  const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(keys).stamp(text)
  const response = await fetch(`${kms.url}${path}`, { method: 'POST', body: text, headers: { [stampHeaderName]: stampHeaderValue } })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}
