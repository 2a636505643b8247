import { randomBytes } from 'node:crypto'
import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { encodeFunctionData, parseAbi, parseUnits, serializeTransaction } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { testTokenAddress as token } from '../../../contracts/index.js'
import { createKms, generateApiKeyPair, type Kms } from '../src/index.js'
import { testDatabase } from './database.js'
import { ethereumAccount } from './harness.js'

// A grant's ledger held exactly across kms instances on one PostgreSQL: the spend commits with
// the signature under the grant's row lock, so concurrent signatures on both instances cannot
// overspend it. Run by the PostgreSQL config only (vitest.postgres.config.ts includes *.postgres.ts).

const TRANSFER = parseAbi(['function transfer(address to, uint256 amount)'])
const recipient = '0x000000000000000000000000000000000000dEaD'

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

  test('behavior: forty signatures at once over both instances sign exactly as many as the allowance holds', async () => {
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
    expect(answers.filter((answer) => answer === 'signed')).toHaveLength(5)
    expect(answers.filter((answer) => answer === 'Turnkey error 7: Grant limit: 5 TKN per 1 day; 5 TKN already spent')).toHaveLength(35)
  })
})
