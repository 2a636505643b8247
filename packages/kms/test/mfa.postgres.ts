import { randomBytes } from 'node:crypto'
import { getFreePort } from '@latchkey/devnet'
import { p256 } from '@noble/curves/p256'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { decryptCredentialBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { sql } from 'kysely'
import { generateSync } from 'otplib'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createKms, generateApiKeyPair, type Kms } from '../src/index.js'
import { connect, type TestDatabase, testDatabase } from './database.js'

// Wrong second-factor codes on two kms instances over one PostgreSQL: each is counted once, the
// fifth locks the factor, and no attempt after it is judged (vitest.postgres.config.ts runs it).

type Keys = ReturnType<typeof generateApiKeyPair>

/** Submits a Latchkey activity stamped by `keys` to `kms`. */
async function submit(kms: Kms, keys: Keys, op: string, type: string, organizationId: string, parameters: unknown, timestampMs = String(Date.now())) {
  const text = JSON.stringify({ type, timestampMs, organizationId, parameters })
  const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(keys).stamp(text)
  const response = await fetch(`${kms.url}/public/v1/submit/${op}`, { method: 'POST', body: text, headers: { [stampHeaderName]: stampHeaderValue } })
  return {
    status: response.status,
    body: (await response.json()) as {
      activity: { result: { createTotpFactorResult: { factorId: string; secret: string } } }
      message: string
      details?: { reason: string }[]
    },
  }
}

describe('second factors on two instances on one PostgreSQL', () => {
  let kmsA: Kms
  let kmsB: Kms
  let database: TestDatabase
  let backend: TurnkeyClient
  let parentOrganizationId: string
  let parentKey: Keys
  beforeAll(async () => {
    database = await testDatabase()
    const masterKey = randomBytes(32)
    const signerPrivateKey = Buffer.from(p256.utils.randomPrivateKey()).toString('hex')
    kmsA = createKms({ port: await getFreePort(), ...database, masterKey, signerPrivateKey })
    kmsB = createKms({ port: await getFreePort(), ...database, masterKey, signerPrivateKey })
    await Promise.all([kmsA.start(), kmsB.start()])
    parentKey = generateApiKeyPair()
    parentOrganizationId = (await kmsA.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })).organizationId
    backend = new TurnkeyClient({ baseUrl: kmsA.url }, new ApiKeyStamper(parentKey))
  })
  afterAll(() => Promise.all([kmsA.stop(), kmsB.stop()]))

  test('error: forty wrong codes at once over both instances judge five, and the fifth locks the factor; the right code after them is refused, and both instances list the factor locked', async () => {
    const email = `mfa-${randomBytes(4).toString('hex')}@example.test`
    const created = await backend.createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(Date.now()),
      organizationId: parentOrganizationId,
      parameters: {
        subOrganizationName: email,
        rootQuorumThreshold: 1,
        rootUsers: [{ userName: email, userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] }],
      },
    })
    const organizationId = created.activity.result.createSubOrganizationResultV8!.subOrganizationId!
    const userId = created.activity.result.createSubOrganizationResultV8!.rootUserIds![0]!
    // The user's session, from an email code.
    const sent = await backend.initOtpAuth({
      type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: { otpType: 'OTP_TYPE_EMAIL', contact: email, appName: 'Demo' },
    })
    const inbox = (await (await fetch(`${kmsA.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
    const target = generateP256KeyPair()
    const signedIn = await backend.otpAuth({
      type: 'ACTIVITY_TYPE_OTP_AUTH',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: {
        otpId: sent.activity.result.initOtpAuthResultV2!.otpId,
        otpCode: /code is (\d{6})\./.exec(inbox.messages.find((message) => message.to === email)!.text)![1]!,
        targetPublicKey: target.publicKeyUncompressed,
      },
    })
    const apiPrivateKey = decryptCredentialBundle(signedIn.activity.result.otpAuthResult!.credentialBundle!, target.privateKey)
    const session = { apiPrivateKey, apiPublicKey: Buffer.from(getPublicKey(apiPrivateKey, true)).toString('hex') }

    const enrolment = await submit(kmsA, session, 'create_totp_factor', 'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR', organizationId, { userId })
    const { factorId, secret } = enrolment.body.activity.result.createTotpFactorResult
    const verify = (kms: Kms, code: string, index: number) =>
      submit(kms, session, 'verify_mfa_factor', 'ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR', organizationId, { factorId, code }, String(Date.now() + index))
    expect((await verify(kmsB, generateSync({ secret }), 0)).status).toBe(200)

    const right = () => generateSync({ secret })
    // A wrong code for every step the kms accepts (the one before, now, the one after).
    const wrong = ['000000', '111111', '222222'].find((code) =>
      [-30, 0, 30].every((offset) => generateSync({ secret, epoch: Date.now() / 1000 + offset }) !== code),
    )!
    const answers = await Promise.all(Array.from({ length: 40 }, (_, index) => verify(index % 2 ? kmsA : kmsB, wrong, index + 1)))
    const reasons = answers.map((answer) => `${answer.status} ${answer.body['details']?.[0]?.reason}`)
    expect([
      reasons.filter((reason) => reason === '400 MFA_INVALID_CODE').length,
      reasons.filter((reason) => reason === '429 MFA_FACTOR_LOCKED').length,
    ]).toEqual([5, 35])
    const judged = answers.map((answer) => String(answer.body['message'])).filter((message) => message.startsWith('invalid code: '))
    expect(judged.filter((message) => message.includes('attempt')).sort()).toEqual([
      'invalid code: 1 attempt left before the factor locks for 15 minutes',
      'invalid code: 2 attempts left before the factor locks for 15 minutes',
      'invalid code: 3 attempts left before the factor locks for 15 minutes',
      'invalid code: 4 attempts left before the factor locks for 15 minutes',
    ])
    let lockedUntil = 0
    const store = connect(database)
    try {
      const rows = await sql<{
        failures: number
        locked_until: string | number
      }>`select failures, locked_until from mfa_factors where id = ${factorId}`.execute(store.kysely)
      expect(rows.rows.map((row) => Number(row.failures))).toEqual([5])
      lockedUntil = Number(rows.rows[0]!.locked_until)
      expect(lockedUntil).toBeGreaterThan(Date.now() + 800_000)
    } finally {
      await store.close()
    }
    expect(await verify(kmsA, right(), 50)).toMatchObject({ status: 429, body: { details: [{ reason: 'MFA_FACTOR_LOCKED' }] } })
    // Both instances read the factor as the parent organization's backend: verified, and locked.
    const listed = await Promise.all(
      [kmsA, kmsB].map((kms) =>
        new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(parentKey)).request('/public/v1/query/list_mfa_factors', { organizationId, userId }),
      ),
    )
    for (const answer of listed)
      expect(answer).toEqual({
        factors: [
          {
            factorId,
            type: 'totp',
            name: 'Authenticator app',
            createdAt: expect.objectContaining({ nanos: expect.any(String) }),
            verified: true,
            lockedUntil: { seconds: String(Math.floor(lockedUntil / 1000)), nanos: String((lockedUntil % 1000) * 1_000_000) },
          },
        ],
      })
    // The backend's trail of kms events reads on PostgreSQL: from the start, the enrolment (the
    // only verification that completed); after its cursor, nothing.
    const trail = new TurnkeyClient({ baseUrl: kmsB.url }, new ApiKeyStamper(parentKey))
    const read = (afterCursor?: string) =>
      trail.request('/public/v1/query/list_suborganization_activities', {
        organizationId: parentOrganizationId,
        filterByType: ['ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR'],
        ...(afterCursor ? { afterCursor } : {}),
      }) as Promise<{ activities: { organizationId: string; type: string; result: unknown }[]; cursor: string | null }>
    const page = await read()
    // Listed once settled (2 s after it completed): the page is the enrolment, or empty before then.
    expect(page.activities.map((activity) => [activity.organizationId, activity.result])).toEqual(
      page.activities.length ? [[organizationId, { verifyMfaFactorResult: { factorId, enrolled: true, mfaVerifiedAt: expect.any(String) } }]] : [],
    )
    if (page.cursor) expect(await read(page.cursor)).toEqual({ activities: [], cursor: page.cursor })
    // Where a follower starting now begins (startAtNewest): after the newest settled one, the enrolment.
    if (page.cursor)
      expect(
        await trail.request('/public/v1/query/list_suborganization_activities', {
          organizationId: parentOrganizationId,
          filterByType: ['ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR'],
          startAtNewest: true,
        }),
      ).toEqual({ activities: [], cursor: page.cursor })
  })
})
