import { randomBytes } from 'node:crypto'
import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { pgBackRest } from '../../../scripts/ensure-pgbackrest.mjs'
import { startPostgres } from '../../../scripts/ensure-postgres.mjs'
import { createKms, generateApiKeyPair, type Kms } from '../src/index.js'
import { ethereumAccount } from './harness.js'

// Point-in-time recovery of the kms's PostgreSQL with pgBackRest, as the kms README's "Backing up
// Latchkey" tells an operator to run it: WAL archived to a repository, a full backup, a named
// restore point, then an incident (every wallet deleted), and a restore to the mark. The kms that
// opens the restored database has what existed at the mark, signs with it under the same master
// key, and has nothing written after it.

describe('point-in-time recovery with pgBackRest', () => {
  let postgres: Awaited<ReturnType<typeof startPostgres>>
  let backRest: ReturnType<typeof pgBackRest>
  const masterKey = randomBytes(32)
  const running: Kms[] = []

  async function sql(text: string) {
    const client = new pg.Client({ connectionString: postgres.url })
    await client.connect()
    try {
      return (await client.query(text)).rows
    } finally {
      await client.end()
    }
  }

  /** Polls until the restored server has replayed to its mark, promoted and takes connections (at most 60 s). */
  async function recovered() {
    const deadline = Date.now() + 60_000
    for (;;) {
      try {
        return await sql('select 1')
      } catch (error) {
        if (Date.now() > deadline || (error as { code?: string }).code !== '57P03') throw error
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
  }

  async function startKms() {
    const kms = createKms({ port: await getFreePort(), databaseUrl: postgres.url, masterKey })
    await kms.start()
    running.push(kms)
    return kms
  }

  beforeAll(async () => {
    postgres = await startPostgres()
    backRest = pgBackRest(postgres.cluster)
    // Archiving needs a restart to turn on (archive_mode), as on any server.
    await sql(`alter system set archive_mode = 'on'`)
    await sql(`alter system set archive_command = '${backRest.archiveCommand}'`)
    // A restored server takes no connection until its recovery has reached the mark and promoted
    // (with hot standby it would answer read-only meanwhile).
    await sql(`alter system set hot_standby = 'off'`)
    postgres.cluster.stopServer()
    postgres.cluster.start()
    backRest.run(['stanza-create'])
    backRest.run(['check'])
    backRest.run(['backup', '--type=full'])
  })
  afterAll(async () => {
    await Promise.all(running.map((kms) => kms.stop()))
    await postgres?.stop()
  })

  test('behavior: a restore to a named mark brings back the wallets of that moment, signing, and nothing after it', async () => {
    const parentKey = generateApiKeyPair()
    let kms = await startKms()
    const { organizationId } = await kms.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })
    const client = () => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(parentKey))
    let sequence = Date.now()
    const createWallet = async (walletName: string) => {
      const { activity } = await client().createWallet({
        type: 'ACTIVITY_TYPE_CREATE_WALLET',
        timestampMs: String(++sequence),
        organizationId,
        parameters: { walletName, accounts: [ethereumAccount] },
      })
      return activity.result.createWalletResult!
    }
    const walletNames = async () => (await client().getWallets({ organizationId })).wallets.map((wallet) => wallet.walletName).sort()

    const before = await createWallet('before the mark')
    await sql(`select pg_create_restore_point('before-incident')`)
    await createWallet('after the mark')
    // The incident: an operator's mistake deletes every wallet.
    await sql('delete from wallet_accounts')
    await sql('delete from wallets')
    expect(await walletNames()).toEqual([])
    // The segment holding the mark and the incident goes to the repository before the server stops.
    await sql('select pg_switch_wal()')
    backRest.run(['check'])
    await kms.stop()
    running.length = 0
    postgres.cluster.stopServer()

    backRest.run(['restore', '--delta', '--type=name', '--target=before-incident', '--target-action=promote'])
    postgres.cluster.start()
    await recovered()
    kms = await startKms()

    expect(await walletNames()).toEqual(['before the mark'])
    const { activity } = await client().signRawPayload({
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: String(++sequence),
      organizationId,
      parameters: {
        signWith: before.addresses[0]!,
        payload: `0x${randomBytes(32).toString('hex')}`,
        encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
        hashFunction: 'HASH_FUNCTION_NO_OP',
      },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect(activity.result.signRawPayloadResult?.r).toMatch(/^[0-9a-f]{64}$/)
  })
})
