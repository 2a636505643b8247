import { randomBytes } from 'node:crypto'
import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createKms, generateApiKeyPair, type Kms } from '../src/index.js'
import { rewrapRows, rotateDataKey } from '../src/keyring/operations.js'
import { testDatabase } from './database.js'
import { ethereumAccount } from './harness.js'

// `keys rewrap` online on PostgreSQL, where several instances share the database: both keep
// signing through it without a failure, and each row is resealed once.

describe('keys rewrap while two instances sign on one PostgreSQL', () => {
  const rows = 100
  let kmsA: Kms
  let kmsB: Kms
  beforeAll(async () => {
    const database = await testDatabase()
    const masterKey = randomBytes(32)
    kmsA = createKms({ port: await getFreePort(), ...database, masterKey, keyRefreshMs: 50 })
    kmsB = createKms({ port: await getFreePort(), ...database, masterKey, keyRefreshMs: 50 })
    await Promise.all([kmsA.start(), kmsB.start()])
  })
  afterAll(() => Promise.all([kmsA.stop(), kmsB.stop()]))

  test('behavior: 0 signing failures on either instance, every row resealed once under the new data key', async () => {
    const parentKey = generateApiKeyPair()
    const { organizationId } = await kmsA.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })
    const clients = [kmsA, kmsB].map((kms) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(parentKey)))
    let sequence = Date.now()
    const { activity } = await clients[0]!.createWallet({
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: String(++sequence),
      organizationId,
      parameters: { walletName: 'rewrap', accounts: [ethereumAccount] },
    })
    const signWith = activity.result.createWalletResult!.addresses[0]!
    // Sealed rows to reseal besides the wallet: mail in the outbox, never sent.
    await kmsA.db.transaction(async (trx) => {
      for (let i = 0; i < rows; i++) {
        const id = `rewrap-${String(i).padStart(4, '0')}`
        await trx.insertOutbox({
          id,
          activity_id: null,
          to_address: 'rewrap@example.com',
          sealed_mail: kmsA.keyring.seal(`outbox:${id}`, JSON.stringify({ to: 'rewrap@example.com', subject: 'x', text: 'x', html: '' })),
          status: 'failed',
          attempts: 0,
          next_attempt_at: 0,
          last_error: null,
          created_at: 0,
          expires_at: 0,
        })
      }
    })
    const sealedBefore = (await kmsA.db.sealedCounts()).reduce((sum, count) => sum + count.rows, 0)

    const { dataKey } = await rotateDataKey(kmsA.db, kmsA.keyring)
    let rewrapping = true
    const rewrap = rewrapRows(kmsA.db, kmsA.keyring, { batchSize: 10 }).finally(() => {
      rewrapping = false
    })
    const failures: string[] = []
    let signed = 0
    await Promise.all(
      clients.flatMap((client) =>
        [1, 2].map(async () => {
          while (rewrapping) {
            try {
              await client.signRawPayload({
                type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
                timestampMs: String(++sequence),
                organizationId,
                parameters: {
                  signWith,
                  payload: `0x${randomBytes(32).toString('hex')}`,
                  encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
                  hashFunction: 'HASH_FUNCTION_NO_OP',
                },
              })
              signed++
            } catch (error) {
              failures.push((error as Error).message)
            }
          }
        }),
      ),
    )
    const result = await rewrap
    expect(failures).toEqual([])
    expect(signed).toBeGreaterThan(0)
    // Each row sealed before the rotation moved exactly once; nothing is left under an older key.
    expect(result).toEqual({ dataKey, moved: sealedBefore, left: 0 })
    expect((await kmsB.db.sealedCounts()).filter((count) => count.dataKey !== dataKey)).toEqual([])
    // The rewrap rests between batches (REWRAP_DEFAULTS), so it runs longer than a test usually does.
  }, 120_000)
})
