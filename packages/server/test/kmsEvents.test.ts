import { createServer, type Server } from 'node:http'
import { generateP256KeyPair } from '@turnkey/crypto'
import { Webhook } from 'standardwebhooks'
import { type Hex, keccak256, serializeTransaction } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { freshDatabaseUrl, testEngine } from '../../service/test/testDatabase.js'
import { openStore } from '../src/index.js'
import { createWebhookSender } from '../src/webhooks/dispatcher.js'
import { createKmsEventFollower, type KmsCursorStore } from '../src/webhooks/kmsEvents.js'
import { generateApiKeyPair, newEmail, useBackend } from './backend.js'
import { totp } from './totp.js'

// The events that happen in the kms (issue 28 item 5): the backend follows the kms's completed
// activities of its sub-organizations with a cursor in its own database and queues each event
// once (its once-key is the activity id), verified here by `standardwebhooks`.

const { t, signedInByEmail } = useBackend()

type Received = { id: string; timestamp: string; signature: string; body: string }
const received: Received[] = []
let server: Server
let url: string
beforeAll(async () => {
  server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk) => {
      body += chunk
    })
    request.on('end', () => {
      received.push({
        id: String(request.headers['webhook-id']),
        timestamp: String(request.headers['webhook-timestamp']),
        signature: String(request.headers['webhook-signature']),
        body,
      })
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

/** A backend instance's follower of the kms's trail, on the shared store. */
const follower = () => createKmsEventFollower({ kms: t.backend, organizationId: t.parentOrganizationId, store: t.store })

/** A user who enrols a TOTP factor, exports the wallet and signs a transaction: what the backend never sees. */
async function kmsActivities() {
  const user = await signedInByEmail(newEmail())
  const submit = (op: string, type: string, parameters: unknown) =>
    user.user.request(`/public/v1/submit/${op}`, { type, timestampMs: String(t.clock), organizationId: user.organizationId, parameters }) as Promise<{
      activity: { id: string; result: Record<string, Record<string, string>> }
    }>
  const created = await submit('create_totp_factor', 'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR', { userId: user.userId })
  const { factorId, secret } = created.activity.result['createTotpFactorResult']!
  const enrolled = await submit('verify_mfa_factor', 'ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR', { factorId, code: totp(secret!, t.clock) })
  // The kms's clock moves only when the test moves it: the export completes a millisecond later.
  t.clock += 1
  const { wallets } = await t.backend.getWallets({ organizationId: user.organizationId })
  const exported = await user.user.exportWallet({
    type: 'ACTIVITY_TYPE_EXPORT_WALLET',
    timestampMs: String(t.clock),
    organizationId: user.organizationId,
    parameters: { walletId: wallets[0]!.walletId, targetPublicKey: generateP256KeyPair().publicKeyUncompressed },
  })
  return { user, factorId: factorId!, walletId: wallets[0]!.walletId, enrolledId: enrolled.activity.id, exportedId: exported.activity.id }
}

describe('kms events', () => {
  test('default: mfa.enrolled and wallet.exported reach the endpoint signed, once each, after the activities settle; a restarted follower resumes at its cursor', async () => {
    const { secret } = await t.store.webhooks.createEndpoint({ url, eventTypes: ['mfa.enrolled', 'wallet.exported'], at: Date.now() })
    const { user, factorId, walletId, enrolledId, exportedId } = await kmsActivities()
    const sender = createWebhookSender({ outbox: t.store.webhooks })
    // Completed a moment ago: the kms lists them once they settle (2 s), so none is passed over.
    expect(await follower().runOnce()).toBe(0)
    t.clock += 2_500
    expect(await follower().runOnce()).toBe(2)
    expect(await sender.runOnce()).toBe(2)
    received.sort((a, b) => a.body.localeCompare(b.body))
    const bodies = received.map((message) =>
      new Webhook(secret).verify(message.body, { 'webhook-id': message.id, 'webhook-timestamp': message.timestamp, 'webhook-signature': message.signature }),
    )
    const subject = { organizationId: user.organizationId, userId: user.userId }
    // Sent at once, so they arrive in either order: by body.
    expect(bodies).toEqual([
      { type: 'mfa.enrolled', timestamp: expect.any(String), data: { ...subject, activityId: enrolledId, factorId, factorType: 'totp' } },
      { type: 'wallet.exported', timestamp: expect.any(String), data: { ...subject, activityId: exportedId, walletId } },
    ])
    expect(new Set(received.map((message) => message.id)).size).toBe(2)
    // A new instance (or this one after a restart) reads on from the stored cursor: nothing again.
    expect(await follower().runOnce()).toBe(0)
    expect(await t.store.kmsCursor()).toMatch(new RegExp(`^\\d+:${exportedId}$`))
  })

  test('behavior: two instances that read one page at once queue each activity once: the cursor moves once, and the once-keys drop a page read again', async () => {
    // Each test has its own backend database, and the kms lives for the file: catch up first.
    t.clock += 2_500
    await follower().runOnce()
    const start = (await t.store.kmsCursor())!
    await t.store.webhooks.createEndpoint({ url, eventTypes: ['wallet.exported', 'mfa.enrolled'], at: Date.now() })
    const before = (await t.store.database.db.selectFrom('webhook_events').select('id').where('type', '=', 'wallet.exported').execute()).length
    await kmsActivities()
    t.clock += 2_500
    const queued = await Promise.all([follower().runOnce(), follower().runOnce()])
    const after = (await t.store.database.db.selectFrom('webhook_events').select('id').where('type', '=', 'wallet.exported').execute()).length
    expect(after - before).toBe(1)
    expect(queued.sort()).toEqual([0, 2])
    // The page read again from an old cursor (a replayed read): no event twice.
    await t.store.database.db.updateTable('kms_event_cursor').set({ cursor: start }).execute()
    expect(await follower().runOnce()).toBe(0)
    expect((await t.store.database.db.selectFrom('webhook_events').select('id').where('type', '=', 'wallet.exported').execute()).length - before).toBe(1)
  })

  test('behavior: a transaction the kms signs for a user is transaction.sent, named by the signed transaction’s hash', async () => {
    t.clock += 2_500
    await follower().runOnce()
    const user = await signedInByEmail(newEmail())
    const { activity } = await user.user.signTransaction({
      type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
      timestampMs: String(t.clock),
      organizationId: user.organizationId,
      parameters: {
        signWith: user.address,
        unsignedTransaction: serializeTransaction({ chainId: 31337, type: 'eip1559', to: user.address as Hex, value: 1n, gas: 21_000n }).slice(2),
        type: 'TRANSACTION_TYPE_ETHEREUM',
      },
    })
    const signed = activity.result.signTransactionResult!.signedTransaction
    t.clock += 2_500
    await follower().runOnce()
    const rows = await t.store.database.db.selectFrom('webhook_events').select('body').where('type', '=', 'transaction.sent').execute()
    expect(rows.map((row) => JSON.parse(row.body).data)).toEqual([
      {
        organizationId: user.organizationId,
        userId: user.userId,
        activityId: activity.id,
        signWith: user.address,
        transactionHash: keccak256((signed.startsWith('0x') ? signed : `0x${signed}`) as Hex),
      },
    ])
  })

  test('behavior: an ERC-7715 grant the user makes in the kms is permission.granted, named by its grantId, verified by standardwebhooks', async () => {
    t.clock += 2_500
    await follower().runOnce()
    const { secret } = await t.store.webhooks.createEndpoint({ url, eventTypes: ['permission.granted'], at: Date.now() })
    const user = await signedInByEmail(newEmail())
    // As the consent frame makes it: the user's session key submits create_grant for a new key of the app's.
    const { activity } = await user.user.request<
      Record<string, unknown>,
      { activity: { id: string; status: string; result: { createGrantResult: { grantId: string } } } }
    >('/public/v1/submit/create_grant', {
      type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT',
      timestampMs: String(t.clock),
      organizationId: user.organizationId,
      parameters: {
        userId: user.userId,
        apiKey: { apiKeyName: 'game', publicKey: generateApiKeyPair().apiPublicKey },
        grant: {
          chainId: '31337',
          account: user.address,
          expiry: String(Math.floor(t.clock / 1000) + 600),
          permissions: [{ type: 'native-token-recurring-allowance', data: { allowance: '1000', period: '86400' } }],
        },
      },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    t.clock += 2_500
    expect(await follower().runOnce()).toBe(1)
    received.length = 0
    // The event is due at the kms's time of the grant, which the test's clock has moved past.
    expect(await createWebhookSender({ outbox: t.store.webhooks, now: () => t.clock }).runOnce()).toBe(1)
    expect(received.length).toBe(1)
    const [message] = received
    expect(
      new Webhook(secret).verify(message!.body, {
        'webhook-id': message!.id,
        'webhook-timestamp': message!.timestamp,
        'webhook-signature': message!.signature,
      }),
    ).toEqual({
      type: 'permission.granted',
      timestamp: new Date(t.clock - 2_500).toISOString(),
      data: { organizationId: user.organizationId, userId: user.userId, activityId: activity.id, grantId: activity.result.createGrantResult.grantId },
    })
    expect(activity.result.createGrantResult.grantId).toMatch(/^\S+$/)
  })

  test('behavior: a backend’s first run starts at the kms’s newest settled activity: what happened before is not sent, what happens after is', async () => {
    // Activities before this backend ran its follower (an upgrade to a release with webhooks).
    const before = await kmsActivities()
    t.clock += 2_500
    await t.store.webhooks.createEndpoint({ url, eventTypes: null, at: Date.now() })
    expect(await t.store.kmsCursor()).toBe(null)
    expect(await follower().runOnce()).toBe(0)
    expect(await t.store.kmsCursor()).toMatch(new RegExp(`^\\d+:${before.exportedId}$`))
    const kmsEvents = () => t.store.database.db.selectFrom('webhook_events').select('body').where('type', 'in', ['wallet.exported', 'mfa.enrolled']).execute()
    expect(await kmsEvents()).toEqual([])
    // After the start: sent.
    const after = await kmsActivities()
    t.clock += 2_500
    expect(await follower().runOnce()).toBe(2)
    const rows = await kmsEvents()
    expect(rows.map((row) => JSON.parse(row.body).data.activityId).sort()).toEqual([after.enrolledId, after.exportedId].sort())
  })

  test('behavior: forty followers on two instances starting together agree on one first cursor: each event after it queued once, none before it', async () => {
    t.clock += 2_500
    const newest = () =>
      t.backend.request<unknown, { cursor: string }>('/public/v1/query/list_suborganization_activities', {
        organizationId: t.parentOrganizationId,
        filterByType: ['ACTIVITY_TYPE_EXPORT_WALLET'],
        startAtNewest: true,
      })
    // Half of them ask the kms for its newest activity before an export settles, half after: the
    // two first cursors they could write differ by that export.
    const early = (await newest()).cursor
    const between = await kmsActivities()
    t.clock += 2_500
    const late = (await newest()).cursor
    expect(late).toMatch(new RegExp(`^\\d+:${between.exportedId}$`))
    // Two instances on one database (on SQLite one store, as two connections in one process would wait on each other's lock).
    const databaseUrl = await freshDatabaseUrl()
    const stores = testEngine === 'sqlite' ? [await openStore(databaseUrl)] : [await openStore(databaseUrl), await openStore(databaseUrl)]
    try {
      let asked = 0
      let allAsked!: () => void
      const everyoneAsked = new Promise<void>((resolve) => {
        allAsked = resolve
      })
      const firstWrites: { to: string; won: boolean }[] = []
      const followers = Array.from({ length: 40 }, (_, index) => {
        const store = stores[index % stores.length]!
        const watched: KmsCursorStore = {
          kmsCursor: () => store.kmsCursor(),
          async advanceKmsCursor(from, to, events) {
            const queued = await store.advanceKmsCursor(from, to, events)
            if (from === null) firstWrites.push({ to, won: queued !== undefined })
            return queued
          },
        }
        const kms = {
          async request(path: string, body: { startAtNewest?: boolean }) {
            if (!body.startAtNewest) return t.backend.request(path, body)
            // Every follower has read no cursor and asked before any writes one.
            if (++asked === 40) allAsked()
            await everyoneAsked
            return { activities: [], cursor: index < 20 ? early : late }
          },
        } as unknown as typeof t.backend
        return createKmsEventFollower({ kms, organizationId: t.parentOrganizationId, store: watched })
      })
      await Promise.all(followers.map((each) => each.runOnce()))
      expect(firstWrites.length).toBe(40)
      const winners = firstWrites.filter((write) => write.won)
      expect(winners.length).toBe(1)
      // Every follower read on from the one cursor written: the export between is sent if and only if it came after it.
      const events = await stores[0]!.database.db.selectFrom('webhook_events').select('body').where('type', '=', 'wallet.exported').execute()
      expect(events.map((row) => JSON.parse(row.body).data.activityId)).toEqual(winners[0]!.to === early ? [between.exportedId] : [])
      expect(await stores[0]!.kmsCursor()).toBe(late)
      const onceKeys = await stores[0]!.database.db.selectFrom('webhook_once').select('key').execute()
      expect(onceKeys.length).toBe(new Set(onceKeys.map((row) => row.key)).size)
    } finally {
      for (const store of stores) await store.close()
    }
  })

  test('error: startAtNewest takes no afterCursor', async () => {
    await expect(
      t.backend.request('/public/v1/query/list_suborganization_activities', {
        organizationId: t.parentOrganizationId,
        filterByType: ['ACTIVITY_TYPE_EXPORT_WALLET'],
        startAtNewest: true,
        afterCursor: '1:a',
      }),
    ).rejects.toThrow('Turnkey error 3: invalid parameters: startAtNewest: takes no afterCursor')
  })

  test('error: a sub-organization’s key may not read the trail of its siblings', async () => {
    const user = await signedInByEmail(newEmail())
    await expect(
      user.user.request('/public/v1/query/list_suborganization_activities', {
        organizationId: user.organizationId,
        filterByType: ['ACTIVITY_TYPE_EXPORT_WALLET'],
      }),
    ).rejects.toThrow('Turnkey error 7: the activities of sub-organizations are read by a user of their parent organization, in it')
  })
})
