import type { Database } from '@latchkey/service/database'
import type { TurnkeyClient } from '@turnkey/http'
import { sql } from 'kysely'
import { beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { freshDatabaseUrl } from '../../service/test/testDatabase.js'
import { createServerApp, openStore } from '../src/index.js'
import { endReservation, type PaymasterSchema, reserve } from '../src/paymaster/schema.js'
import { answer, newEmail, useBackend } from './backend.js'
import { parentApprovals } from './consoleSetup.js'
import { totp } from './totp.js'

// The operator console's admin API (issue 29 item 7) against a real kms: users, their activities,
// the parent organization's pending approvals and its policies, webhook deliveries with replay,
// the sponsorship budgets. On SQLite here and on PostgreSQL with vitest.postgres.config.ts.

const { t, signedInByEmail, signedUpWithPasskey, withPasskey } = useBackend()
const token = 'admin-token-of-the-console-tests-0123456789'
let app: ReturnType<typeof createServerApp>
beforeEach(() => {
  app = createServerApp({ ...t.options, adminToken: token })
})

const call = (method: string, path: string, bearer: string | null = token) =>
  app.request(path, { method, headers: { ...(bearer === null ? {} : { authorization: `Bearer ${bearer}` }), origin: 'https://elsewhere.example' } })
const get = async (path: string) => {
  const response = await call('GET', path)
  expect(response.status).toBe(200)
  return (await response.json()) as Record<string, unknown>
}
const auditRows = async () =>
  (
    await sql<{ action: string; outcome: string; reason: string | null }>`select action, outcome, reason from server_audit_events order by seq`.execute(
      t.store.database.db,
    )
  ).rows
const audited = async () => (await auditRows()).filter((row) => !row.action.startsWith('POST /auth/'))
const UNAUTHORIZED = { error: { code: 'admin_unauthorized', message: 'The admin API needs the admin token as a bearer token' } }

let bot: TurnkeyClient
let backendUserId: string
let pendingApproval: (walletName: string) => Promise<{ id: string; fingerprint: string }>
beforeAll(async () => {
  ;({ bot, backendUserId, pendingApproval } = await parentApprovals(t))
})
const pendingIds = async () => ((await get('/admin/approvals?limit=100')).approvals as { id: string }[]).map((activity) => activity.id)

describe('users', () => {
  test('default: searched by email or by address, with their logins, wallets, MFA and activities', async () => {
    const email = newEmail()
    const alice = await signedInByEmail(email)
    const passkey = await signedUpWithPasskey()
    const listed = await get(`/admin/users?query=${encodeURIComponent(email.toUpperCase())}`)
    const aliceRow = {
      organizationId: alice.organizationId,
      userId: alice.userId,
      address: alice.address,
      email,
      unverifiedEmail: null,
      createdAt: expect.any(Number),
    }
    expect(listed).toEqual({ users: [aliceRow], next: null })
    expect(await get(`/admin/users?query=${passkey.address.slice(0, 12).toUpperCase().replace('0X', '0x')}`)).toEqual({
      users: [
        {
          organizationId: passkey.organizationId,
          userId: passkey.userId,
          address: passkey.address,
          email: null,
          unverifiedEmail: null,
          createdAt: expect.any(Number),
        },
      ],
      next: null,
    })
    // Every user, a page at a time.
    const ordered = [alice.organizationId, passkey.organizationId].sort()
    const first = await get('/admin/users?limit=1')
    expect([(first.users as { organizationId: string }[]).map((user) => user.organizationId), first.next]).toEqual([[ordered[0]], ordered[0]])
    const second = await get(`/admin/users?limit=1&after=${first.next}`)
    expect((second.users as { organizationId: string }[]).map((user) => user.organizationId)).toEqual([ordered[1]])
    expect(await get(`/admin/users?limit=1&after=${second.next}`)).toEqual({ users: [], next: null })
    expect(await get('/admin/users?query=nobody%40example.test')).toEqual({ users: [], next: null })
    // A LIKE wildcard is a character like any other.
    expect(await get('/admin/users?query=%25')).toEqual({ users: [], next: null })

    const detail = await get(`/admin/users/${alice.organizationId}`)
    expect(detail).toEqual({
      ...aliceRow,
      userName: expect.any(String),
      logins: [{ id: expect.any(String), kind: 'email', label: email, since: expect.any(Number) }],
      authenticators: [],
      wallets: [
        {
          walletId: expect.any(String),
          walletName: expect.any(String),
          createdAt: expect.any(Number),
          accounts: [{ address: alice.address, path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
        },
      ],
      mfa: { status: 'not enrolled', factors: [] },
    })
    const passkeyDetail = await get(`/admin/users/${passkey.organizationId}`)
    expect([passkeyDetail.logins, (passkeyDetail.authenticators as unknown[]).length]).toEqual([
      [{ id: expect.any(String), kind: 'passkey', label: 'my passkey', since: expect.any(Number) }],
      1,
    ])

    const { activities, next } = (await get(`/admin/activities?org=${alice.organizationId}&limit=100`)) as {
      activities: { id: string; type: string; status: string; organizationId: string }[]
      next: string | null
    }
    expect(next).toBe(null)
    expect(activities.length).toBeGreaterThan(0)
    expect(activities.every((activity) => activity.organizationId === alice.organizationId && activity.status === 'ACTIVITY_STATUS_COMPLETED')).toBe(true)
    // Newest first: the sign-in's activities in the sub-organization (its creation is the parent's).
    expect(activities.map((activity) => activity.type)).toEqual([
      'ACTIVITY_TYPE_OTP_LOGIN_V2',
      'ACTIVITY_TYPE_VERIFY_OTP_V2',
      'ACTIVITY_TYPE_INIT_OTP_V3',
      'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
      'ACTIVITY_TYPE_CREATE_POLICIES',
    ])
    const paged = (await get(`/admin/activities?org=${alice.organizationId}&limit=1`)) as { activities: { id: string }[]; next: string }
    expect(paged.next).toBe(paged.activities[0]!.id)
    const after = (await get(`/admin/activities?org=${alice.organizationId}&limit=1&after=${paged.next}`)) as { activities: { id: string }[] }
    expect(after.activities[0]!.id).toBe(activities[1]!.id)
    expect(await get(`/admin/activities?org=${alice.organizationId}&status=ACTIVITY_STATUS_FAILED`)).toEqual({ activities: [], next: null })
  })

  test('behavior: MFA names each factor the kms holds, by type, and a locked one with when it unlocks', async () => {
    const alice = await signedInByEmail(newEmail())
    const submit = (client: TurnkeyClient, organizationId: string, op: string, type: string, parameters: unknown) =>
      client.request(`/public/v1/submit/${op}`, { type, timestampMs: String(t.clock), organizationId, parameters }) as Promise<{
        activity: { result: { createTotpFactorResult: { factorId: string; secret: string } } }
      }>
    const enrolledAt = new Date(t.clock).toISOString()
    const created = await submit(alice.user, alice.organizationId, 'create_totp_factor', 'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR', { userId: alice.userId })
    const { factorId, secret } = created.activity.result.createTotpFactorResult
    const verify = (code: string) =>
      submit(alice.user, alice.organizationId, 'verify_mfa_factor', 'ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR', { factorId, code })
    await verify(totp(secret, t.clock))
    const factor = { factorId, type: 'totp', name: 'Authenticator app', enrolledAt }
    expect((await get(`/admin/users/${alice.organizationId}`)).mfa).toEqual({ status: 'TOTP', factors: [factor] })
    t.clock += 60_000
    const wrong = [-30_000, 0, 30_000].some((offset) => totp(secret, t.clock + offset) === '000000') ? '111111' : '000000'
    for (let attempt = 0; attempt < 5; attempt++) await expect(verify(wrong)).rejects.toThrow(/^Turnkey error 3: invalid code: /)
    const lockedUntil = new Date(t.clock + 900_000).toISOString()
    expect((await get(`/admin/users/${alice.organizationId}`)).mfa).toEqual({
      status: `TOTP (locked until ${lockedUntil})`,
      factors: [{ ...factor, lockedUntil }],
    })

    const passkey = await signedUpWithPasskey()
    const { authenticators } = await t.backend.getAuthenticators({ organizationId: passkey.organizationId, userId: passkey.userId })
    await submit(withPasskey(passkey.authenticator), passkey.organizationId, 'create_passkey_factor', 'ACTIVITY_TYPE_LATCHKEY_CREATE_PASSKEY_FACTOR', {
      userId: passkey.userId,
      authenticatorId: authenticators[0]!.authenticatorId,
    })
    expect(((await get(`/admin/users/${passkey.organizationId}`)).mfa as { status: string }).status).toBe('passkey')
  })

  test('error: a user or an organization the backend did not create is 404, and the kms is not asked', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000'
    for (const path of [`/admin/users/${unknown}`, `/admin/activities?org=${unknown}`, `/admin/policies?org=${unknown}`]) {
      expect(await answer(await call('GET', path))).toEqual([
        404,
        { error: { code: 'unknown_user', message: 'This backend created no user with this sub-organization' } },
      ])
    }
  })
})

describe('approvals', () => {
  test('default: the parent organization’s pending approvals, approved or rejected with its key; audited', async () => {
    const approved = await pendingApproval('approved by the operator')
    const rejected = await pendingApproval('rejected by the operator')
    const listed = (await get('/admin/approvals?limit=100')) as { approvals: Record<string, unknown>[]; next: null }
    expect(listed.approvals.find((activity) => activity.id === approved.id)).toEqual({
      id: approved.id,
      organizationId: t.parentOrganizationId,
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      status: 'ACTIVITY_STATUS_CONSENSUS_NEEDED',
      fingerprint: approved.fingerprint,
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
      canApprove: true,
      canReject: true,
      votes: [{ userId: expect.any(String), userName: 'bot', selection: 'VOTE_SELECTION_APPROVED' }],
      failure: null,
    })
    expect(listed.next).toBe(null)

    const yes = await call('POST', `/admin/approvals/${approved.id}/approve`)
    expect(yes.status).toBe(200)
    const yesBody = (await yes.json()) as { activity: { status: string; votes: { userName: string; selection: string }[] } }
    expect([yesBody.activity.status, yesBody.activity.votes.map((vote) => [vote.userName, vote.selection])]).toEqual([
      'ACTIVITY_STATUS_COMPLETED',
      [
        ['bot', 'VOTE_SELECTION_APPROVED'],
        ['backend', 'VOTE_SELECTION_APPROVED'],
      ],
    ])
    const no = await call('POST', `/admin/approvals/${rejected.id}/reject`)
    expect(((await no.json()) as { activity: { status: string } }).activity.status).toBe('ACTIVITY_STATUS_REJECTED')
    const ids = await pendingIds()
    expect([ids.includes(approved.id), ids.includes(rejected.id)]).toEqual([false, false])
    expect((await bot.getWallets({ organizationId: t.parentOrganizationId })).wallets.map((wallet) => wallet.walletName)).toContain('approved by the operator')

    // Voting again: 409, and the kms is not asked.
    expect(await answer(await call('POST', `/admin/approvals/${approved.id}/reject`))).toEqual([
      409,
      { error: { code: 'not_pending', message: 'This activity is not waiting for approval: it is ACTIVITY_STATUS_COMPLETED' } },
    ])
    expect(await audited()).toEqual([
      { action: `POST /admin/approvals/${approved.id}/approve`, outcome: 'completed', reason: null },
      { action: `POST /admin/approvals/${rejected.id}/reject`, outcome: 'completed', reason: null },
      {
        action: `POST /admin/approvals/${approved.id}/reject`,
        outcome: 'refused',
        reason: '409 not_pending: This activity is not waiting for approval: it is ACTIVITY_STATUS_COMPLETED',
      },
    ])
  })

  test('behavior: 40 approvals of one activity at once run it once; the others are 409 not_pending', async () => {
    const pending = await pendingApproval('approved once')
    const responses = await Promise.all(Array.from({ length: 40 }, () => call('POST', `/admin/approvals/${pending.id}/approve`)))
    expect(responses.map((response) => response.status).sort()).toEqual([200, ...Array<number>(39).fill(409)])
    const refusals = await Promise.all(responses.filter((response) => response.status === 409).map((response) => response.json()))
    expect(new Set(refusals.map((refusal) => JSON.stringify(refusal)))).toEqual(
      new Set([JSON.stringify({ error: { code: 'not_pending', message: 'This activity is not waiting for approval: it is ACTIVITY_STATUS_COMPLETED' } })]),
    )
    const wallets = (await bot.getWallets({ organizationId: t.parentOrganizationId })).wallets.filter((wallet) => wallet.walletName === 'approved once')
    expect(wallets.length).toBe(1)
  })

  test('error: an unknown or malformed activity id is refused with nothing voted', async () => {
    const pending = await pendingApproval('left pending')
    expect(await answer(await call('POST', '/admin/approvals/00000000-0000-4000-8000-000000000000/approve'))).toEqual([
      404,
      { error: { code: 'unknown_approval', message: 'The parent organization has no activity with this id' } },
    ])
    expect(await answer(await call('POST', '/admin/approvals/not-an-id/approve'))).toEqual([
      400,
      { error: { code: 'invalid_query', message: 'id: must be an activity id' } },
    ])
    expect(await answer(await call('POST', `/admin/approvals/${pending.id}/approve`, 'wrong'))).toEqual([401, UNAUTHORIZED])
    expect(await pendingIds()).toContain(pending.id)
    expect((await audited()).map((row) => [row.outcome, row.reason?.slice(0, 3)])).toEqual([
      ['refused', '404'],
      ['refused', '400'],
      ['refused', '401'],
    ])
  })
})

test('default: policies of the parent organization, a page at a time', async () => {
  const first = await get('/admin/policies?limit=1')
  expect(first).toEqual({
    organizationId: t.parentOrganizationId,
    policies: [
      {
        policyId: expect.any(String),
        policyName: 'the backend approves the bot’s wallets',
        effect: 'EFFECT_ALLOW',
        condition: "activity.resource == 'WALLET' && activity.action == 'CREATE'",
        consensus: `approvers.any(user, user.id == '${backendUserId}')`,
        notes: '',
        createdAt: expect.any(Number),
      },
    ],
    next: null,
  })
  const policyId = (first.policies as { policyId: string }[])[0]!.policyId
  expect(await answer(await call('GET', `/admin/policies?after=${policyId.replace(/^.{8}/, '00000000')}`))).toEqual([
    400,
    { error: { code: 'invalid_query', message: 'after: names nothing on this list' } },
  ])
})

describe('webhook deliveries', () => {
  async function deliveries() {
    const { id: endpointId } = await t.store.webhooks.createEndpoint({ url: 'http://127.0.0.1:9/hooks', eventTypes: null, at: t.clock })
    await signedInByEmail(newEmail())
    const claimed = await t.store.webhooks.claim(t.clock + 10, 60_000, 10)
    expect(claimed.length).toBe(3)
    const [delivered, givenUp] = claimed
    await t.store.webhooks.settle(delivered!, { at: t.clock + 11, delivered: true, status: 204 })
    await t.store.webhooks.settle(givenUp!, { at: t.clock + 11, delivered: false, status: 500 })
    return { endpointId, delivered: delivered!, givenUp: givenUp!, pending: claimed[2]! }
  }
  const idOf = (delivery: { event_id: string; endpoint_id: string }) => `${delivery.event_id}.${delivery.endpoint_id}`

  test('default: listed newest first by status, and a delivered or given-up one replayed once; audited', async () => {
    const { delivered, givenUp, pending } = await deliveries()
    const all = (await get('/admin/webhooks/deliveries')) as { deliveries: { id: string; status: string }[]; next: null }
    expect(all.deliveries.map((delivery) => [delivery.id, delivery.status]).sort()).toEqual(
      [
        [idOf(delivered), 'delivered'],
        [idOf(givenUp), 'given_up'],
        [idOf(pending), 'pending'],
      ].sort(),
    )
    expect(await get('/admin/webhooks/deliveries?status=given_up')).toEqual({
      deliveries: [
        {
          id: idOf(givenUp),
          eventId: givenUp.event_id,
          endpointId: givenUp.endpoint_id,
          url: 'http://127.0.0.1:9/hooks',
          type: (JSON.parse(givenUp.body) as { type: string }).type,
          createdAt: givenUp.created_at,
          attempts: 1,
          status: 'given_up',
          lastStatus: 500,
          lastError: null,
        },
      ],
      next: null,
    })
    const page = (await get('/admin/webhooks/deliveries?limit=2')) as { deliveries: { id: string }[]; next: string }
    expect(page.next).toBe(page.deliveries[1]!.id)
    const rest = (await get(`/admin/webhooks/deliveries?limit=2&after=${page.next}`)) as { deliveries: { id: string }[]; next: null }
    expect([...page.deliveries, ...rest.deliveries].map((delivery) => delivery.id)).toEqual(all.deliveries.map((delivery) => delivery.id))
    expect(rest.next).toBe(null)

    let nudged = 0
    t.store.onWebhooksQueued(() => nudged++)
    expect(await answer(await call('POST', `/admin/webhooks/deliveries/${idOf(givenUp)}/replay`))).toEqual([200, { id: idOf(givenUp), status: 'pending' }])
    expect(nudged).toBe(1)
    const replayed = (await get('/admin/webhooks/deliveries?status=pending')) as { deliveries: { id: string; attempts: number; lastStatus: null }[] }
    expect(replayed.deliveries.find((delivery) => delivery.id === idOf(givenUp))).toMatchObject({ attempts: 0, lastStatus: null })
    expect(await answer(await call('POST', `/admin/webhooks/deliveries/${idOf(givenUp)}/replay`))).toEqual([
      409,
      { error: { code: 'delivery_pending', message: 'This delivery is still being tried: only a delivered or given-up one is replayed' } },
    ])
    expect(await audited()).toEqual([
      { action: `POST /admin/webhooks/deliveries/${idOf(givenUp)}/replay`, outcome: 'completed', reason: null },
      {
        action: `POST /admin/webhooks/deliveries/${idOf(givenUp)}/replay`,
        outcome: 'refused',
        reason: '409 delivery_pending: This delivery is still being tried: only a delivered or given-up one is replayed',
      },
    ])
  })

  test('behavior: 40 replays of one delivery at once on two instances of one database: one replays it, the others are 409', async () => {
    const url = await freshDatabaseUrl()
    const stores = [await openStore(url), await openStore(url)] as const
    try {
      const [one, two] = stores.map((store) => createServerApp({ ...t.options, store, adminToken: token }))
      const { id: endpointId } = await stores[0].webhooks.createEndpoint({ url: 'http://127.0.0.1:9/hooks', eventTypes: ['user.authenticated'], at: t.clock })
      await stores[0].insertSession({
        id: 'session-of-the-replay',
        email: null,
        organization_id: null,
        user_id: null,
        address: `0x${'b'.repeat(40)}`,
        kind: 'siwe',
        chain_id: 31337,
        wallet_kind: 'injected',
        session_public_key: null,
        expires_at: t.clock + 3_600_000,
        created_at: t.clock,
      })
      const [delivery] = await stores[1].webhooks.claim(t.clock + 10, 60_000, 10)
      expect(delivery!.endpoint_id).toBe(endpointId)
      await stores[1].webhooks.settle(delivery!, { at: t.clock + 11, delivered: true, status: 204 })
      const path = `/admin/webhooks/deliveries/${idOf(delivery!)}/replay`
      const responses = await Promise.all(
        Array.from({ length: 40 }, (_, index) => (index % 2 ? one! : two!).request(path, { method: 'POST', headers: { authorization: `Bearer ${token}` } })),
      )
      expect(responses.map((response) => response.status).sort()).toEqual([200, ...Array<number>(39).fill(409)])
      expect((await stores[0].webhooks.allDeliveries({ limit: 10 }))!.map((row) => [row.delivered_at, Number(row.attempts)])).toEqual([[null, 0]])
    } finally {
      for (const store of stores) await store.close()
    }
  })

  test('error: an unknown or malformed delivery, or no token: nothing replayed', async () => {
    const { delivered } = await deliveries()
    const before = await get('/admin/webhooks/deliveries')
    expect(await answer(await call('POST', '/admin/webhooks/deliveries/msg_nothing.ep_nothing/replay'))).toEqual([
      404,
      { error: { code: 'unknown_delivery', message: 'No webhook delivery has this id' } },
    ])
    expect(await answer(await call('POST', '/admin/webhooks/deliveries/nothing/replay'))).toEqual([
      400,
      { error: { code: 'invalid_query', message: 'id: must be a delivery id' } },
    ])
    expect(await answer(await call('POST', `/admin/webhooks/deliveries/${idOf(delivered)}/replay`, null))).toEqual([401, UNAUTHORIZED])
    expect(await get('/admin/webhooks/deliveries')).toEqual(before)
  })
})

test('default: sponsorship budgets per chain and day, spent and reserved', async () => {
  const database = t.store.database as unknown as Database<PaymasterSchema>
  const base = { perUser: 10n ** 18n, global: 10n ** 19n, validUntil: 0, paymaster: `0x${'1'.repeat(40)}`, at: t.clock }
  const sender = `0x${'a'.repeat(40)}`
  for (const [chainId, day, nonce, amount] of [
    [31337, '2026-11-28', 1n, 100n],
    [31337, '2026-11-29', 2n, 250n],
    [31337, '2026-11-29', 3n, 50n],
    [8453, '2026-11-29', 1n, 7n],
  ] as const)
    expect(await reserve(database, { ...base, chainId, sender, nonce, day, amount })).toBe(true)
  expect(await endReservation(database, { chainId: 31337, sender, nonce: 2n }, t.clock, 200n)).toBe(true)
  expect(await endReservation(database, { chainId: 31337, sender, nonce: 1n }, t.clock)).toBe(true)
  const day29 = (chainId: number, spent: string, reserved: string, operations: object) => ({ chainId, day: '2026-11-29', spent, reserved, operations })
  const all = [
    day29(31337, '250', '50', { reserved: 1, settled: 1, released: 0 }),
    day29(8453, '7', '7', { reserved: 1, settled: 0, released: 0 }),
    { chainId: 31337, day: '2026-11-28', spent: '0', reserved: '0', operations: { reserved: 0, settled: 0, released: 1 } },
  ]
  expect(await get('/admin/sponsorship/budgets')).toEqual({ budgets: all, next: null })
  const first = await get('/admin/sponsorship/budgets?limit=2')
  expect(first).toEqual({ budgets: all.slice(0, 2), next: '2026-11-29:8453' })
  expect(await get(`/admin/sponsorship/budgets?limit=2&after=${first.next}`)).toEqual({ budgets: all.slice(2), next: null })
  expect(await get('/admin/sponsorship/budgets?day=2026-11-28')).toEqual({ budgets: all.slice(2), next: null })
  expect(await get('/admin/sponsorship/budgets?chain=8453')).toEqual({ budgets: [all[1]], next: null })
})

describe('the token and the query', () => {
  const reads = [
    '/admin/users',
    '/admin/users/00000000-0000-4000-8000-000000000000',
    '/admin/activities?org=00000000-0000-4000-8000-000000000000',
    '/admin/approvals',
    '/admin/policies',
    '/admin/webhooks/deliveries',
    '/admin/sponsorship/budgets',
  ]
  test('error: every route is 401 without the token or with a wrong one', async () => {
    for (const path of reads)
      for (const bearer of [null, `${token}x`]) {
        const response = await call('GET', path, bearer)
        expect([path, response.status, await response.json()]).toEqual([path, 401, UNAUTHORIZED])
      }
  })

  test('error: a malformed query is 400 invalid_query', async () => {
    const refusals: [string, string][] = [
      ['/admin/users?limit=0', 'limit: must be between 1 and 100'],
      ['/admin/users?limit=101', 'limit: must be between 1 and 100'],
      ['/admin/users?limit=ten', 'limit: must be a whole number'],
      ['/admin/users?after=nope', 'after: must be a sub-organization id'],
      [`/admin/users?query=${'a'.repeat(321)}`, 'query: Too big: expected string to have <=320 characters'],
      ['/admin/users?email=a%40b.c', 'Unrecognized key: "email"'],
      ['/admin/users/not-an-org', 'org: must be a sub-organization id'],
      ['/admin/activities', 'org: Invalid input: expected string, received undefined'],
      [
        '/admin/activities?org=00000000-0000-4000-8000-000000000000&status=DONE',
        expect.stringMatching(/^status: Invalid option: expected one of /) as unknown as string,
      ],
      ['/admin/approvals?after=1', 'after: must be a activity id'],
      ['/admin/policies?org=parent', 'org: must be a organization id'],
      ['/admin/webhooks/deliveries?status=failed', 'status: Invalid option: expected one of "delivered"|"pending"|"given_up"'],
      ['/admin/webhooks/deliveries?after=msg_a', 'after: must be a delivery id'],
      ['/admin/webhooks/deliveries?after=msg_a.ep_b', 'after: names nothing on this list'],
      ['/admin/sponsorship/budgets?day=yesterday', 'day: must be a day, YYYY-MM-DD'],
      ['/admin/sponsorship/budgets?chain=0', 'chain: must be a chain id'],
      ['/admin/sponsorship/budgets?after=2026-11-29', 'after: must be a day and a chain id, YYYY-MM-DD:chain'],
    ]
    for (const [path, message] of refusals)
      expect([path, ...(await answer(await call('GET', path)))]).toEqual([path, 400, { error: { code: 'invalid_query', message } }])
    expect(await audited()).toEqual([])
  })

  test('default: the page, its script and stylesheet under a strict CSP, without the token', async () => {
    const page = await call('GET', '/admin', null)
    expect([page.status, page.headers.get('content-type'), page.headers.get('content-security-policy')]).toEqual([
      200,
      'text/html; charset=UTF-8',
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'",
    ])
    expect([page.headers.get('x-frame-options'), page.headers.get('referrer-policy'), page.headers.get('cache-control')]).toEqual([
      'DENY',
      'no-referrer',
      'no-store',
    ])
    const html = await page.text()
    expect(html).toContain('<script type="module" src="/admin/console.js"></script>')
    expect(html).not.toMatch(/<script>|<style|\son[a-z]+=/)
    const script = await call('GET', '/admin/console.js', null)
    expect([script.status, script.headers.get('content-type'), script.headers.get('x-content-type-options')]).toEqual([
      200,
      'text/javascript; charset=utf-8',
      'nosniff',
    ])
    expect((await call('GET', '/admin/console.css', null)).headers.get('content-type')).toBe('text/css; charset=utf-8')
    expect((await createServerApp(t.options).request('/admin')).status).toBe(404)
  })
})
