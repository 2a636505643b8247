import { generateKeyPairSync } from 'node:crypto'
import { getFreePort, testSubject } from '@latchkey/devnet'
import { toPrefixedMessage } from 'viem'
import { afterEach, describe, expect, test } from 'vitest'
import { freshDatabaseUrl, testEngine } from '../../service/test/testDatabase.js'
import { createAppServer, createServerApp, openStore, type Store } from '../src/index.js'
import { answer, cookieOf, newEmail, origin, useBackend } from './backend.js'

// Pregenerated wallets (issue 28 item 4): the admin API creates a user and wallet for an identity
// before its person signs in; the first sign-in by that identity claims it.

const { t, signedInByEmail, oauthSignIn, withKey } = useBackend({ oidc: true })
const token = 'admin-token-of-the-tests-0123456789abcdef'
const adminApp = () => createServerApp({ ...t.options, adminToken: token })
const admin = (
  app: { request: (path: string, init: RequestInit) => Response | Promise<Response> },
  path: string,
  body: unknown,
  bearer: string | null = token,
) =>
  app.request(path, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...(bearer === null ? {} : { authorization: `Bearer ${bearer}` }) },
  })
type Created = { userId: string; organizationId: string; address: string; created: boolean }

/** The events of `type` the outbox holds for the sub-organization. */
async function eventsOf(store: Store, type: string, organizationId: string) {
  const rows = await store.database.db.selectFrom('webhook_events').select('body').where('type', '=', type).execute()
  return rows.map((row) => JSON.parse(row.body) as { data: Record<string, unknown> }).filter((event) => event.data['organizationId'] === organizationId)
}

/** The sub-organizations the kms has under this name (a pregenerated one is named by its identity). */
const subOrganizationsNamed = async (name: string) =>
  (await t.backend.getSubOrgIds({ organizationId: t.parentOrganizationId, filterType: 'NAME', filterValue: name })).organizationIds

/** Signs a payload with the wallet, as the embedded wallet's session key. */
const signs = async (client: ReturnType<typeof withKey>, account: { organizationId: string; address: string }) => {
  const { activity } = await client.signRawPayload({
    type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
    timestampMs: String(t.clock),
    organizationId: account.organizationId,
    parameters: {
      signWith: account.address,
      payload: toPrefixedMessage('hello'),
      encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
      hashFunction: 'HASH_FUNCTION_KECCAK256',
    },
  })
  return activity.status
}

describe('POST /admin/users', () => {
  test('default', async () => {
    const app = adminApp()
    const email = newEmail()
    const response = await admin(app, '/admin/users', { email: email.toUpperCase() })
    expect(response.status).toBe(201)
    const created = (await response.json()) as Created
    expect(created).toEqual({
      userId: expect.any(String),
      organizationId: expect.any(String),
      address: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/),
      created: true,
    })
    // The user holds no credential yet; its email is the one codes go to.
    const { user } = await t.backend.getUser({ organizationId: created.organizationId, userId: created.userId })
    expect([user.userEmail, user.apiKeys, user.authenticators, user.oauthProviders]).toEqual([email, [], [], []])
    expect(await answer(await admin(app, '/admin/users', { email }))).toEqual([200, { ...created, created: false }])
    expect((await t.store.login('email', email))?.organization_id).toBe(created.organizationId)
    expect((await t.store.account(email))?.address).toBe(created.address)
    expect((await eventsOf(t.store, 'user.created', created.organizationId)).map((event) => event.data)).toEqual([
      { userId: created.userId, organizationId: created.organizationId, address: created.address, email, loginMethod: 'pregenerated' },
    ])
    expect(await eventsOf(t.store, 'wallet.created', created.organizationId)).toHaveLength(1)
  })

  test('behavior: an email sign-in claims the wallet: same address, its key signs, no second user.created', async () => {
    const app = adminApp()
    const email = newEmail()
    const created = (await (await admin(app, '/admin/users', { email })).json()) as Created
    const signedIn = await signedInByEmail(email)
    expect([signedIn.organizationId, signedIn.userId, signedIn.address]).toEqual([created.organizationId, created.userId, created.address])
    expect(await signs(signedIn.user, created)).toBe('ACTIVITY_STATUS_COMPLETED')
    expect(await eventsOf(t.store, 'user.created', created.organizationId)).toHaveLength(1)
    expect(await eventsOf(t.store, 'wallet.created', created.organizationId)).toHaveLength(1)
    expect(await eventsOf(t.store, 'user.authenticated', created.organizationId)).toHaveLength(1)
  })

  test('behavior: a provider’s ID token claims the wallet of its subject: same address, its key signs, the identity is the user’s', async () => {
    const app = adminApp()
    const email = newEmail()
    const created = (await (await admin(app, '/admin/users', { provider: 'github', subject: testSubject('github', email) })).json()) as Created
    const { user: before } = await t.backend.getUser({ organizationId: created.organizationId, userId: created.userId })
    expect([before.userEmail, before.oauthProviders]).toEqual([undefined, []])
    const { response, sessionKey } = await oauthSignIn(email, 'github')
    expect(response.status).toBe(200)
    expect((await response.json()) as Created).toEqual({
      organizationId: created.organizationId,
      userId: created.userId,
      address: created.address,
      sessionExpiresAt: expect.any(String),
    })
    expect(await signs(withKey(sessionKey), created)).toBe('ACTIVITY_STATUS_COMPLETED')
    const { user: after } = await t.backend.getUser({ organizationId: created.organizationId, userId: created.userId })
    expect(after.oauthProviders.map((provider) => provider.subject)).toEqual([testSubject('github', email)])
    const user = await (await t.app.request('/auth/user', { headers: { cookie: cookieOf(response) } })).json()
    expect(user.logins.map((login: { kind: string; label: string }) => [login.kind, login.label])).toEqual([['oauth:github', `GitHub · ${email}`]])
    // Signing in again: the kms has the identity, nothing is added.
    const again = await oauthSignIn(email, 'github')
    expect(again.response.status).toBe(200)
    expect((await t.backend.getUser({ organizationId: created.organizationId, userId: created.userId })).user.oauthProviders).toHaveLength(1)
    expect(await eventsOf(t.store, 'user.created', created.organizationId)).toHaveLength(1)
  })

  test('behavior: an externalId is the same user each time, and no login the user sees', async () => {
    const app = adminApp()
    const first = (await (await admin(app, '/admin/users', { externalId: 'customer-42' })).json()) as Created
    expect(first.created).toBe(true)
    expect(await answer(await admin(app, '/admin/users', { externalId: 'customer-42' }))).toEqual([200, { ...first, created: false }])
    expect(await t.store.loginsOf(first.organizationId)).toEqual([])
    expect((await t.store.login('external', 'customer-42'))?.address).toBe(first.address)
  })

  test('error: without the admin token, 401 and nothing created', async () => {
    const app = adminApp()
    const email = newEmail()
    for (const bearer of [null, 'wrong-token'])
      expect(await answer(await admin(app, '/admin/users', { email }, bearer))).toEqual([
        401,
        { error: { code: 'admin_unauthorized', message: 'The admin API needs the admin token as a bearer token' } },
      ])
    expect(await answer(await admin(app, '/admin/users:batch', { users: [{ email }] }, null))).toEqual([
      401,
      { error: { code: 'admin_unauthorized', message: 'The admin API needs the admin token as a bearer token' } },
    ])
    expect(await subOrganizationsNamed(email)).toEqual([])
    expect([await t.store.login('email', email), await t.store.account(email)]).toEqual([undefined, undefined])
  })

  test('error: a malformed identity is 400 and creates nothing', async () => {
    const app = adminApp()
    const email = newEmail()
    const refused = async (body: unknown) => answer(await admin(app, '/admin/users', body))
    const invalid = (message: string) => [400, { error: { code: 'invalid_request', message } }]
    expect(await refused({})).toEqual(invalid('body: send exactly one of email, provider with subject, or externalId'))
    expect(await refused({ email, externalId: 'x' })).toEqual(invalid('body: send exactly one of email, provider with subject, or externalId'))
    expect(await refused({ provider: 'github' })).toEqual(invalid('body: provider and subject go together'))
    expect(await refused({ email: 'not an email' })).toEqual(invalid('email: Invalid email address'))
    expect(await refused({ externalId: 'has space' })).toEqual(invalid('externalId: must be 1 to 255 printable ASCII characters without spaces'))
    expect(await refused({ externalId: 'a', extra: 1 })).toEqual(invalid('body: Unrecognized key: "extra"'))
    expect(await refused({ provider: 'myspace', subject: '1' })).toEqual([
      400,
      { error: { code: 'unknown_provider', message: 'myspace sign-in is not configured' } },
    ])
    expect([await subOrganizationsNamed(email), await subOrganizationsNamed('x'), await subOrganizationsNamed('a')]).toEqual([[], [], []])
  })
})

describe('POST /admin/users/logins', () => {
  test('error: an email is not vouched for: only its user adds it, signed in, with their own key; nothing is written', async () => {
    const app = adminApp()
    const created = (await (await admin(app, '/admin/users', { externalId: 'customer-7' })).json()) as Created
    const email = newEmail()
    expect(await answer(await admin(app, '/admin/users/logins', { externalId: 'customer-7', email }))).toEqual([
      400,
      {
        error: {
          code: 'email_by_user',
          message: 'An email is linked by its user, signed in; pregenerate by email (POST /admin/users {email}) or vouch for a provider subject',
        },
      },
    ])
    expect(await t.store.loginsOf(created.organizationId)).toEqual([])
    expect(await t.store.account(email)).toBeUndefined()
  })

  test('behavior: a provider’s subject vouched for opens the wallet at its first sign-in', async () => {
    const app = adminApp()
    const created = (await (await admin(app, '/admin/users', { externalId: 'customer-8' })).json()) as Created
    const email = newEmail()
    expect((await admin(app, '/admin/users/logins', { externalId: 'customer-8', provider: 'discord', subject: testSubject('discord', email) })).status).toBe(
      201,
    )
    const { response, sessionKey } = await oauthSignIn(email, 'discord')
    expect(response.status).toBe(200)
    expect(((await response.json()) as Created).address).toBe(created.address)
    expect(await signs(withKey(sessionKey), created)).toBe('ACTIVITY_STATUS_COMPLETED')
  })

  test('error: an unknown externalId, another user’s login, two identities at once: refused, nothing changed', async () => {
    const app = adminApp()
    const subject = testSubject('discord', newEmail())
    expect(await answer(await admin(app, '/admin/users/logins', { externalId: 'nobody', provider: 'discord', subject }))).toEqual([
      404,
      { error: { code: 'unknown_user', message: 'No user has this externalId; create it with POST /admin/users first' } },
    ])
    const other = (await (await admin(app, '/admin/users', { provider: 'discord', subject })).json()) as Created
    const created = (await (await admin(app, '/admin/users', { externalId: 'customer-9' })).json()) as Created
    expect(await answer(await admin(app, '/admin/users/logins', { externalId: 'customer-9', provider: 'discord', subject }))).toEqual([
      409,
      {
        error: {
          code: 'account_already_linked',
          message: 'This login belongs to another user; sign in with it, or unlink it from that account first',
        },
      },
    ])
    expect(await answer(await admin(app, '/admin/users/logins', { externalId: 'customer-9', email: newEmail(), provider: 'github', subject }))).toEqual([
      400,
      { error: { code: 'invalid_request', message: 'body: send either email, or provider with subject' } },
    ])
    expect(await t.store.loginsOf(created.organizationId)).toEqual([])
    expect(other.organizationId).not.toBe(created.organizationId)
  })
})

describe('POST /admin/users:batch', () => {
  test('default', async () => {
    const app = adminApp()
    const emails = Array.from({ length: 12 }, () => newEmail())
    const response = await admin(app, '/admin/users:batch', {
      users: [...emails.map((email) => ({ email })), { email: 'nope' }, { email: emails[0] }, { externalId: 'batch-1' }, { provider: 'myspace', subject: 'a' }],
    })
    expect(response.status).toBe(200)
    const { results } = (await response.json()) as { results: (Created & { index: number; ok: boolean; error?: unknown })[] }
    expect(results.map((row) => [row.index, row.ok, row.created ?? row.error])).toEqual([
      ...emails.map((_, index) => [index, true, true]),
      [12, false, { code: 'invalid_request', message: 'email: Invalid email address' }],
      [13, true, false],
      [14, true, true],
      [15, false, { code: 'unknown_provider', message: 'myspace sign-in is not configured' }],
    ])
    expect(results[13]!.address).toBe(results[0]!.address)
    expect(new Set(results.slice(0, 12).map((row) => row.address)).size).toBe(12)
    for (const [index, email] of emails.entries()) expect((await t.store.account(email))?.address).toBe(results[index]!.address)
  })

  test('error: over 1,000 rows is 400 and nothing is created', async () => {
    const app = adminApp()
    const users = Array.from({ length: 1001 }, (_, index) => ({ externalId: `over-${index}` }))
    expect(await answer(await admin(app, '/admin/users:batch', { users }))).toEqual([
      400,
      { error: { code: 'invalid_request', message: 'users: at most 1,000 rows' } },
    ])
    expect(await answer(await admin(app, '/admin/users:batch', { users: [] }))).toEqual([
      400,
      { error: { code: 'invalid_request', message: 'users: Too small: expected array to have >=1 items' } },
    ])
    expect([await subOrganizationsNamed('over-0'), await t.store.login('external', 'over-0')]).toEqual([[], undefined])
  })
})

describe('two instances', () => {
  const started: ReturnType<typeof createAppServer>[] = []
  afterEach(async () => {
    for (const server of started.splice(0)) await server.stop()
  })

  test('behavior: forty calls at once for one identity over two instances make one user', async () => {
    const url = await freshDatabaseUrl()
    // SQLite: one store for both (the kms is called inside the transaction; see instances.test.ts).
    const shared = testEngine === 'sqlite' ? await openStore(url) : undefined
    const sessionJwtKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
    const bases: string[] = []
    for (const _ of [0, 1]) {
      const server = createAppServer({ ...t.options, store: shared ?? (await openStore(url)), port: await getFreePort(), sessionJwtKey, adminToken: token })
      await server.start()
      started.push(server)
      bases.push(server.url)
    }
    const email = newEmail()
    const answers = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const response = await fetch(`${bases[i % 2]}/admin/users`, {
          method: 'POST',
          body: JSON.stringify({ email }),
          headers: { origin, 'content-type': 'application/json', authorization: `Bearer ${token}` },
        })
        return [response.status, (await response.json()) as Created] as const
      }),
    )
    expect(answers.filter(([status]) => status === 201)).toHaveLength(1)
    expect(answers.filter(([status]) => status === 200)).toHaveLength(39)
    expect(new Set(answers.map(([, body]) => `${body.organizationId} ${body.userId} ${body.address}`)).size).toBe(1)
    expect(await subOrganizationsNamed(email)).toEqual([answers[0]![1].organizationId])
    const store = await openStore(url)
    try {
      const organizationId = answers[0]![1].organizationId
      expect(await eventsOf(store, 'user.created', organizationId)).toHaveLength(1)
      expect(await eventsOf(store, 'wallet.created', organizationId)).toHaveLength(1)
      expect(await store.database.db.selectFrom('logins').select('organization_id').where('subject', '=', email).execute()).toEqual([
        { organization_id: organizationId },
      ])
    } finally {
      await store.close()
    }
  })
})
