import { randomBytes } from 'node:crypto'
import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { encodeFunctionData, parseAbi, parseEther, parseUnits, serializeTransaction } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { testTokenAddress as token } from '../../../contracts/index.js'
import { createKms, generateApiKeyPair, type Kms } from '../src/index.js'
import { testDatabase } from './database.js'
import { ethereumAccount } from './harness.js'

// A grant's ledger held exactly across kms instances on one PostgreSQL: the spend commits with
// the signature under the grant's row lock, so concurrent signatures on both instances cannot
// overspend it. And a grant ends with its session on any instance: create_grant locks the session
// key that stamps it, so a sign-out racing it either deletes the grant's key or leaves nothing made.
// Run by the PostgreSQL config only (vitest.postgres.config.ts includes *.postgres.ts).

const TRANSFER = parseAbi(['function transfer(address to, uint256 amount)'])
const recipient = '0x000000000000000000000000000000000000dEaD'
const UNKNOWN_KEY = 'Turnkey error 16: could not find public key in organization or its parent organization'

describe('a grant on two instances on one PostgreSQL', () => {
  let kmsA: Kms
  let kmsB: Kms
  beforeAll(async () => {
    // One master key: both instances open the keys either one sealed.
    const shared = { ...(await testDatabase()), masterKey: randomBytes(32) }
    kmsA = createKms({ port: await getFreePort(), ...shared })
    kmsB = createKms({ port: await getFreePort(), ...shared })
    await Promise.all([kmsA.start(), kmsB.start()])
  })
  afterAll(() => Promise.all([kmsA.stop(), kmsB.stop()]))

  test('behavior: forty signatures at once over both instances sign exactly as many as the allowances hold, network fees counted', async () => {
    const parentKey = generateApiKeyPair()
    const { organizationId } = await kmsA.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })
    const userKey = generateApiKeyPair()
    const on = (kms: Kms, keys: ReturnType<typeof generateApiKeyPair>) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(keys))
    const created = await on(kmsA, parentKey).createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: {
        subOrganizationName: 'granting user',
        rootQuorumThreshold: 1,
        rootUsers: [
          {
            userName: 'root',
            apiKeys: [{ apiKeyName: 'session', publicKey: userKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
            authenticators: [],
            oauthProviders: [],
          },
        ],
        wallet: { walletName: 'Turnkey HD', accounts: [ethereumAccount] },
      },
    })
    const result = created.activity.result.createSubOrganizationResultV8!
    const subOrganizationId = result.subOrganizationId!
    const account = result.wallet!.addresses[0] as `0x${string}`
    const grantKey = generateApiKeyPair()
    const body = {
      type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
      timestampMs: String(Date.now()),
      organizationId: subOrganizationId,
      parameters: {
        userId: result.rootUserIds![0]!,
        apiKey: { apiKeyName: 'grant', publicKey: grantKey.apiPublicKey },
        grant: {
          chainId: '31337',
          account,
          expiry: String(Math.floor(Date.now() / 1000) + 3600),
          permissions: [
            {
              type: 'erc20-recurring-allowance',
              data: { address: token, allowance: parseUnits('5', 18).toString(), period: '86400', symbol: 'TKN', decimals: 18 },
            },
            // The fees of four: each transaction's fee ceiling (100,000 gas at 2 gwei, 0.0002 ETH) is native spend.
            { type: 'native-token-recurring-allowance', data: { allowance: parseEther('0.0008').toString(), period: '86400' } },
          ],
        },
      },
    }
    const grant = await on(kmsB, userKey).request<typeof body, { activity: { status: string } }>('/public/v1/submit/create_grant', body)
    expect(grant.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')

    const data = encodeFunctionData({ abi: TRANSFER, functionName: 'transfer', args: [recipient, parseUnits('1', 18)] })
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, nonce) =>
        on(nonce % 2 ? kmsA : kmsB, grantKey)
          .signTransaction({
            type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
            timestampMs: String(Date.now()),
            organizationId: subOrganizationId,
            parameters: {
              signWith: account,
              unsignedTransaction: serializeTransaction({
                chainId: 31337,
                type: 'eip1559',
                to: token,
                data,
                nonce,
                gas: 100_000n,
                maxFeePerGas: 2_000_000_000n,
              }).slice(2),
              type: 'TRANSACTION_TYPE_ETHEREUM',
            },
          })
          .then(
            () => 'signed',
            (error: Error) => error.message.replace(/ \(Details: .*\)$/s, ''),
          ),
      ),
    )
    expect(answers.filter((answer) => answer === 'signed')).toHaveLength(4)
    expect(answers.filter((answer) => answer === 'Turnkey error 7: Grant limit: 0.0008 ETH per 1 day; 0.0008 ETH already spent')).toHaveLength(36)
  })

  test('behavior: a sign-out racing forty grants of its session over both instances leaves no grant of that session', async () => {
    const on = (kms: Kms, keys: ReturnType<typeof generateApiKeyPair>) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(keys))
    const parentKey = generateApiKeyPair()
    const { organizationId } = await kmsA.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })
    const rootKey = generateApiKeyPair()
    const created = await on(kmsA, parentKey).createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: {
        subOrganizationName: 'signing out',
        rootQuorumThreshold: 1,
        rootUsers: [
          {
            userName: 'root',
            apiKeys: [{ apiKeyName: 'root', publicKey: rootKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
            authenticators: [],
            oauthProviders: [],
          },
        ],
        wallet: { walletName: 'Turnkey HD', accounts: [ethereumAccount] },
      },
    })
    const result = created.activity.result.createSubOrganizationResultV8!
    const subOrganizationId = result.subOrganizationId!
    const userId = result.rootUserIds![0]!
    const account = result.wallet!.addresses[0] as `0x${string}`
    let sequence = 0
    const timestampMs = () => String(Date.now() + ++sequence)
    const sessionKey = generateApiKeyPair()
    const registered = await on(kmsB, rootKey).createApiKeys({
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      timestampMs: timestampMs(),
      organizationId: subOrganizationId,
      parameters: {
        userId,
        apiKeys: [{ apiKeyName: 'session', publicKey: sessionKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '3600' }],
      },
    })
    const sessionKeyId = registered.activity.result.createApiKeysResult!.apiKeyIds[0]!
    const grantKeys: ReturnType<typeof generateApiKeyPair>[] = []
    /** create_grant stamped by the session on `kms`: 'completed', or the refusal. */
    const createGrant = (kms: Kms) => {
      const grantKey = generateApiKeyPair()
      grantKeys.push(grantKey)
      return on(kms, sessionKey)
        .request<Record<string, unknown>, { activity: { status: string } }>('/public/v1/submit/create_grant', {
          type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
          timestampMs: timestampMs(),
          organizationId: subOrganizationId,
          parameters: {
            userId,
            apiKey: { apiKeyName: 'grant', publicKey: grantKey.apiPublicKey },
            grant: {
              chainId: '31337',
              account,
              // Within the session's hour (registered above): a grant may not outlive the session.
              expiry: String(Math.floor(Date.now() / 1000) + 3000),
              permissions: [{ type: 'native-token-recurring-allowance', data: { allowance: '1000', period: '86400' } }],
            },
          },
        })
        .then(
          (answer) => answer.activity.status,
          (error: Error) => error.message.replace(/ \(Details: .*\)$/s, ''),
        )
    }
    // Grants made before the sign-out, on both instances.
    for (const kms of [kmsA, kmsB, kmsA, kmsB]) expect(await createGrant(kms)).toBe('ACTIVITY_STATUS_COMPLETED')
    const racing = Array.from({ length: 40 }, (_, index) => createGrant(index % 2 ? kmsA : kmsB))
    const signOut = on(kmsA, rootKey).deleteApiKeys({
      type: 'ACTIVITY_TYPE_DELETE_API_KEYS',
      timestampMs: timestampMs(),
      organizationId: subOrganizationId,
      parameters: { userId, apiKeyIds: [sessionKeyId] },
    })
    expect((await signOut).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    const answers = await Promise.all(racing)
    // Each racing grant was made (and then deleted with its session) or refused as the unknown key it stamped with.
    expect(answers.filter((answer) => answer !== 'ACTIVITY_STATUS_COMPLETED' && answer !== UNKNOWN_KEY)).toEqual([])

    const root = on(kmsB, rootKey)
    expect(
      (await root.request<Record<string, unknown>, { grants: unknown[] }>('/public/v1/query/list_grants', { organizationId: subOrganizationId })).grants,
    ).toEqual([])
    expect((await root.getApiKeys({ organizationId: subOrganizationId, userId })).apiKeys.map((key) => key.credential.publicKey)).toEqual([
      rootKey.apiPublicKey,
    ])
    const stamps = await Promise.all(
      grantKeys.map((grantKey, nonce) =>
        on(nonce % 2 ? kmsA : kmsB, grantKey)
          .signTransaction({
            type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
            timestampMs: timestampMs(),
            organizationId: subOrganizationId,
            parameters: {
              signWith: account,
              unsignedTransaction: serializeTransaction({
                chainId: 31337,
                type: 'eip1559',
                to: recipient,
                value: 1n,
                nonce,
                gas: 21_000n,
                maxFeePerGas: 2_000_000_000n,
              }).slice(2),
              type: 'TRANSACTION_TYPE_ETHEREUM',
            },
          })
          .then(
            () => 'signed',
            (error: Error) => error.message.replace(/ \(Details: .*\)$/s, ''),
          ),
      ),
    )
    expect(new Set(stamps)).toEqual(new Set([UNKNOWN_KEY]))
  })
})
