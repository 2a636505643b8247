import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createKms, generateApiKeyPair, type Kms } from '../src/index.js'
import { testDatabase } from './database.js'
import { ethereumAccount } from './harness.js'

// Several kms instances on one PostgreSQL (SQLite serves one instance: in one process, a second
// connection's lock wait would block the first's event loop). Run by `npm run test:kms-postgres`
// only (vitest.postgres.config.ts includes *.postgres.ts).

/** Posts the exact bytes `text`, stamped by `keys`, to `url`. */
async function postRaw(url: string, keys: ReturnType<typeof generateApiKeyPair>, path: string, text: string) {
  const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(keys).stamp(text)
  const response = await fetch(`${url}${path}`, { method: 'POST', body: text, headers: { [stampHeaderName]: stampHeaderValue } })
  return { status: response.status, body: (await response.json()) as { activity: { id: string; status: string } } }
}

describe('startup', () => {
  // Several instances on one database is PostgreSQL's case: SQLite serves one instance (in one
  // process, a second connection's lock wait would block the event loop of the first).
  test('behavior: instances starting together on one database migrate it once', async () => {
    const database = await testDatabase()
    const instances = await Promise.all([1, 2, 3].map(async () => createKms({ port: await getFreePort(), ...database })))
    await Promise.all(instances.map((kms) => kms.start()))
    const parents = await Promise.all(
      instances.map((kms, index) => kms.createParentOrganization({ name: `App ${index}`, userName: 'backend', publicKey: generateApiKeyPair().apiPublicKey })),
    )
    for (const kms of instances) for (const parent of parents) expect(await kms.hasOrganization(parent.organizationId)).toBe(true)
    await Promise.all(instances.map((kms) => kms.stop()))
  })
})

describe('two instances on one PostgreSQL', () => {
  let kmsA: Kms
  let kmsB: Kms
  let parentKey: ReturnType<typeof generateApiKeyPair>
  let organizationId: string
  beforeAll(async () => {
    const database = await testDatabase()
    kmsA = createKms({ port: await getFreePort(), ...database })
    kmsB = createKms({ port: await getFreePort(), ...database })
    await Promise.all([kmsA.start(), kmsB.start()])
    parentKey = generateApiKeyPair()
    organizationId = (await kmsA.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })).organizationId
  })
  afterAll(() => Promise.all([kmsA.stop(), kmsB.stop()]))

  test('behavior: twenty identical submissions spread over both answer one activity, one wallet', async () => {
    const body = JSON.stringify({
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: { walletName: 'once', accounts: [ethereumAccount] },
    })
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, index) => postRaw((index % 2 ? kmsA : kmsB).url, parentKey, '/public/v1/submit/create_wallet', body)),
    )
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200))
    expect(new Set(answers.map((answer) => JSON.stringify(answer.body))).size).toBe(1)
    const client = new TurnkeyClient({ baseUrl: kmsB.url }, new ApiKeyStamper(parentKey))
    expect((await client.getWallets({ organizationId })).wallets.filter((wallet) => wallet.walletName === 'once')).toHaveLength(1)
  })

  test('behavior: concurrent different writes on both instances all succeed (no 500)', async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        postRaw(
          (index % 2 ? kmsA : kmsB).url,
          parentKey,
          '/public/v1/submit/create_wallet',
          JSON.stringify({
            type: 'ACTIVITY_TYPE_CREATE_WALLET',
            timestampMs: String(Date.now()),
            organizationId,
            parameters: { walletName: `wallet ${index}`, accounts: [ethereumAccount] },
          }),
        ),
      ),
    )
    expect(answers.map((answer) => answer.status)).toEqual(Array(40).fill(200))
  })
})
