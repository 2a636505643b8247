import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { createAccount } from '@turnkey/viem'
import { createPublicClient, createWalletClient, defineChain, http, parseEther, recoverTransactionAddress, toHex, verifyTypedData } from 'viem'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { generateApiKeyPair as apiKeyPair, createKms, type Kms, UNKNOWN_KEY_MESSAGE } from '../src/index.js'
import { testDatabase } from './database.js'
import { OPAQUE_HASH_REFUSED } from './harness.js'

// The official clients (@turnkey/http with @turnkey/api-key-stamper, @turnkey/viem) against our
// kms on loopback, with nothing changed but the base URL; signatures are checked with viem and a
// transaction is sent to the test run's anvil chain.

const chain = defineChain({
  id: 31337,
  name: 'Anvil A',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [inject('chainARpc')] } },
})
const ethereumAccount = {
  curve: 'CURVE_SECP256K1',
  pathFormat: 'PATH_FORMAT_BIP32',
  path: "m/44'/60'/0'/0/0",
  addressFormat: 'ADDRESS_FORMAT_ETHEREUM',
} as const

let kms: Kms
let clock = Date.now()
const parentKey = apiKeyPair()
let parent: Awaited<ReturnType<Kms['createParentOrganization']>>
let parentClient: TurnkeyClient
const client = (keys: ReturnType<typeof apiKeyPair>) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(keys))

beforeAll(async () => {
  kms = createKms({ port: await getFreePort(), now: () => clock, ...(await testDatabase()) })
  await kms.start()
  parent = await kms.createParentOrganization({ name: 'Test app', userName: 'backend', publicKey: parentKey.apiPublicKey })
  parentClient = client(parentKey)
})
afterAll(() => kms.stop())

/** A sub-organization with one root user holding `keys`, and an Ethereum wallet. */
async function subOrganization(keys = apiKeyPair(), expirationSeconds?: string) {
  const { activity } = await parentClient.createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: String(clock),
    organizationId: parent.organizationId,
    parameters: {
      subOrganizationName: `user ${keys.apiPublicKey.slice(0, 8)}`,
      rootQuorumThreshold: 1,
      rootUsers: [
        {
          userName: 'user',
          userEmail: 'user@example.test',
          apiKeys: [
            { apiKeyName: 'session', publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256', ...(expirationSeconds ? { expirationSeconds } : {}) },
          ],
          authenticators: [],
          oauthProviders: [],
        },
      ],
      wallet: { walletName: 'Turnkey HD', accounts: [ethereumAccount] },
    },
  })
  expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  const result = activity.result.createSubOrganizationResultV8!
  return {
    keys,
    organizationId: result.subOrganizationId!,
    address: result.wallet!.addresses[0] as `0x${string}`,
    walletId: result.wallet!.walletId,
    userId: result.rootUserIds![0]!,
  }
}

describe('with the official clients', () => {
  test('default: whoami answers for the parent organization key', async () => {
    expect(await parentClient.getWhoami({ organizationId: parent.organizationId })).toEqual({
      organizationId: parent.organizationId,
      organizationName: 'Test app',
      userId: parent.userId,
      username: 'backend',
    })
  })

  test('behavior: a sub-organization with a wallet; its user sees it; the parent key may act in it', async () => {
    const sub = await subOrganization()
    const user = client(sub.keys)
    expect(await user.getWhoami({ organizationId: sub.organizationId })).toMatchObject({
      organizationId: sub.organizationId,
      userId: sub.userId,
      username: 'user',
    })
    const { wallets } = await user.getWallets({ organizationId: sub.organizationId })
    expect(wallets.map((wallet) => wallet.walletName)).toEqual(['Turnkey HD'])
    const { accounts } = await parentClient.getWalletAccounts({ organizationId: sub.organizationId, walletId: sub.walletId })
    expect(accounts.map((account) => [account.path, account.address])).toEqual([["m/44'/60'/0'/0/0", sub.address]])
  })

  test('behavior: @turnkey/viem signs typed data and a transaction that anvil accepts; its signMessage (an opaque hash) is refused in a sub-organization', async () => {
    const sub = await subOrganization()
    // @turnkey/viem pins its own @turnkey/http (6.2.1); the 6.6.0 client has the same surface.
    const turnkey = client(sub.keys) as unknown as Parameters<typeof createAccount>[0]['client']
    const account = await createAccount({ client: turnkey, organizationId: sub.organizationId, signWith: sub.address, ethereumAddress: sub.address })
    expect(account.address).toBe(sub.address)

    await expect(account.signMessage({ message: 'hello kms' })).rejects.toThrow(OPAQUE_HASH_REFUSED)

    // Through a wallet client, which adds EIP712Domain to the types as @turnkey/viem expects.
    const wallet = createWalletClient({ account, chain, transport: http() })
    const typed = {
      domain: { name: 'Latchkey', version: '1', chainId: 31337 },
      types: { Note: [{ name: 'text', type: 'string' }] },
      primaryType: 'Note',
      message: { text: 'typed' },
    } as const
    const typedSignature = await wallet.signTypedData(typed)
    expect(await verifyTypedData({ ...typed, address: sub.address, signature: typedSignature })).toBe(true)

    const publicClient = createPublicClient({ chain, transport: http() })
    await publicClient.request({ method: 'anvil_setBalance' as never, params: [sub.address, toHex(parseEther('1'))] as never })
    const request = await wallet.prepareTransactionRequest({ to: '0x000000000000000000000000000000000000dEaD', value: 1000n })
    const signed = await wallet.signTransaction(request)
    expect(await recoverTransactionAddress({ serializedTransaction: signed })).toBe(sub.address)
    const hash = await publicClient.sendRawTransaction({ serializedTransaction: signed })
    const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    expect([receipt.status, receipt.from]).toEqual(['success', sub.address.toLowerCase()])
  })

  test('behavior: the same body submitted twice returns the same activity and signs once', async () => {
    const sub = await subOrganization()
    const body = JSON.stringify({
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: String(clock),
      organizationId: sub.organizationId,
      parameters: {
        signWith: sub.address,
        payload: `0x19${'11'.repeat(32)}`,
        encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
        hashFunction: 'HASH_FUNCTION_KECCAK256',
      },
    })
    const send = async () => {
      const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(sub.keys).stamp(body)
      return (await (
        await fetch(`${kms.url}/public/v1/submit/sign_raw_payload`, { method: 'POST', body, headers: { [stampHeaderName]: stampHeaderValue } })
      ).json()) as {
        activity: { id: string; fingerprint: string; result: { signRawPayloadResult: { r: string; s: string; v: string } } }
      }
    }
    const [first, second] = [await send(), await send()]
    expect(second.activity.id).toBe(first.activity.id)
    expect(first.activity.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(first.activity.result.signRawPayloadResult).toMatchObject({
      r: expect.stringMatching(/^[0-9a-f]{64}$/),
      s: expect.stringMatching(/^[0-9a-f]{64}$/),
      v: expect.stringMatching(/^0[01]$/),
    })
  })
})

describe('refusals', () => {
  test('error: an unknown key gets the text the clients map to an expired session', async () => {
    await expect(client(apiKeyPair()).getWhoami({ organizationId: parent.organizationId })).rejects.toThrow(`Turnkey error 16: ${UNKNOWN_KEY_MESSAGE}`)
  })

  test('error: an expired key is refused with "expired api key"', async () => {
    const sub = await subOrganization(apiKeyPair(), '60')
    const user = client(sub.keys)
    await user.getWhoami({ organizationId: sub.organizationId })
    clock += 61_000
    try {
      await expect(user.getWhoami({ organizationId: sub.organizationId })).rejects.toThrow(
        `Turnkey error 16: rpc error: code = Unauthenticated desc = expired api key publicKey: ${sub.keys.apiPublicKey}`,
      )
    } finally {
      clock -= 61_000
    }
  })

  test('error: a key of one sub-organization cannot act in another', async () => {
    const [alice, bob] = [await subOrganization(), await subOrganization()]
    await expect(client(alice.keys).getWallets({ organizationId: bob.organizationId })).rejects.toThrow(`Turnkey error 16: ${UNKNOWN_KEY_MESSAGE}`)
  })

  /** Posts `body` with a stamp made over `stampedBody`. */
  async function post(path: string, body: string, stampedBody = body) {
    const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(parentKey).stamp(stampedBody)
    const response = await fetch(`${kms.url}${path}`, { method: 'POST', body, headers: { [stampHeaderName]: stampHeaderValue } })
    return { status: response.status, body: (await response.json()) as { code: number; message: string; details: unknown[] } }
  }

  test('error: a body changed after stamping is refused', async () => {
    const body = JSON.stringify({ organizationId: parent.organizationId })
    expect(await post('/public/v1/query/whoami', body.replace('}', ' }'), body)).toEqual({
      status: 401,
      body: { code: 16, message: 'invalid stamp: the signature does not match the request body', details: [] },
    })
  })

  test('error: a missing stamp, malformed JSON, an oversized body, a stale timestamp', async () => {
    const missing = await fetch(`${kms.url}/public/v1/query/whoami`, { method: 'POST', body: '{}' })
    expect([missing.status, await missing.json()]).toEqual([401, { code: 16, message: 'missing stamp: send X-Stamp or X-Stamp-Webauthn', details: [] }])
    expect(await post('/public/v1/query/whoami', '{"organizationId":')).toEqual({
      status: 400,
      body: { code: 3, message: 'the request body is not JSON', details: [] },
    })
    expect((await post('/public/v1/query/whoami', JSON.stringify({ organizationId: parent.organizationId, padding: 'x'.repeat(300 * 1024) }))).status).toBe(413)
    const stale = JSON.stringify({
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: String(clock - 11 * 60_000),
      organizationId: parent.organizationId,
      parameters: { walletName: 'stale', accounts: [ethereumAccount] },
    })
    expect(await post('/public/v1/submit/create_wallet', stale)).toEqual({
      status: 400,
      body: { code: 3, message: 'timestampMs is outside the accepted window (10 minutes back, 5 ahead)', details: [] },
    })
    expect((await parentClient.getWallets({ organizationId: parent.organizationId })).wallets.map((w) => w.walletName)).not.toContain('stale')
  })

  test('error: a wallet with one bad account is not created at all', async () => {
    const before = (await parentClient.getWallets({ organizationId: parent.organizationId })).wallets.length
    await expect(
      parentClient.createWallet({
        type: 'ACTIVITY_TYPE_CREATE_WALLET',
        timestampMs: String(clock),
        organizationId: parent.organizationId,
        parameters: { walletName: 'half', accounts: [ethereumAccount, { ...ethereumAccount, path: "m/44'/60'/0'/0/1", curve: 'CURVE_ED25519' }] },
      }),
    ).rejects.toThrow('Turnkey error 3: unsupported curve CURVE_ED25519: this service signs with CURVE_SECP256K1')
    expect((await parentClient.getWallets({ organizationId: parent.organizationId })).wallets).toHaveLength(before)
  })

  test('error: signing with an address the organization does not hold', async () => {
    await expect(
      parentClient.signRawPayload({
        type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
        timestampMs: String(clock),
        organizationId: parent.organizationId,
        parameters: {
          signWith: '0x000000000000000000000000000000000000dEaD',
          payload: `0x${'11'.repeat(32)}`,
          encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
          hashFunction: 'HASH_FUNCTION_NO_OP',
        },
      }),
    ).rejects.toThrow(`Turnkey error 5: no wallet account with address 0x000000000000000000000000000000000000dEaD in organization ${parent.organizationId}`)
  })
})
