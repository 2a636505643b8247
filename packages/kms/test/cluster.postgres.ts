import { randomBytes } from 'node:crypto'
import { getFreePort } from '@latchkey/devnet'
import { p256 } from '@noble/curves/p256'
import { sha256 } from '@noble/hashes/sha2'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { encryptOtpCodeToBundle, generateP256KeyPair } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { listening, startCli } from '../../service/test/cliProcess.js'
import { createKms, generateApiKeyPair, type Kms } from '../src/index.js'
import { connect, type TestDatabase, testDatabase } from './database.js'
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
    // Instances of one database share its master key: it wraps the data keys they all seal with.
    const database = { ...(await testDatabase()), masterKey: randomBytes(32) }
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
  let database: TestDatabase
  beforeAll(async () => {
    database = await testDatabase()
    // One deployment: one master key, one signer key (a token one instance signs, the other reads).
    const masterKey = randomBytes(32)
    const signerPrivateKey = Buffer.from(p256.utils.randomPrivateKey()).toString('hex')
    kmsA = createKms({ port: await getFreePort(), ...database, masterKey, signerPrivateKey })
    kmsB = createKms({ port: await getFreePort(), ...database, masterKey, signerPrivateKey })
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

  test('behavior: approvals of one waiting activity on both instances at once run it exactly once', async () => {
    const keys = [generateApiKeyPair(), generateApiKeyPair(), generateApiKeyPair()] as const
    const on = (kms: Kms, key: (typeof keys)[number]) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(key))
    const created = await on(kmsA, parentKey).createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: {
        subOrganizationName: 'two of three',
        rootQuorumThreshold: 2,
        rootUsers: keys.map((key, index) => ({
          userName: `root ${index}`,
          apiKeys: [{ apiKeyName: `root ${index}`, publicKey: key.apiPublicKey, curveType: 'API_KEY_CURVE_P256' as const }],
          authenticators: [],
          oauthProviders: [],
        })),
      },
    })
    const subOrganizationId = created.activity.result.createSubOrganizationResultV8!.subOrganizationId!
    // A user: nothing unique about one, so a second run would show as a second user.
    const { activity } = await on(kmsA, keys[0]).createUsers({
      type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
      timestampMs: String(Date.now()),
      organizationId: subOrganizationId,
      parameters: { users: [{ userName: 'approved once', apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }] },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED')
    // Each of the other two roots is enough on its own; they approve at the same moment, on different instances.
    const answers = await Promise.allSettled(
      (
        [
          [kmsA, keys[1]],
          [kmsB, keys[2]],
        ] as const
      ).map(([kms, key]) =>
        on(kms, key).approveActivity({
          type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY',
          timestampMs: String(Date.now()),
          organizationId: subOrganizationId,
          parameters: { fingerprint: activity.fingerprint },
        }),
      ),
    )
    for (const answer of answers)
      if (answer.status === 'fulfilled') expect(answer.value.activity).toMatchObject({ id: activity.id, status: 'ACTIVITY_STATUS_COMPLETED' })
      // Counted after the first approval had run it.
      else expect(String(answer.reason)).toContain(`activity ${activity.id} is ACTIVITY_STATUS_COMPLETED, not waiting for consensus`)
    expect(answers.some((answer) => answer.status === 'fulfilled')).toBe(true)
    const users = (await on(kmsB, keys[0]).getUsers({ organizationId: subOrganizationId })).users
    expect(users.filter((user) => user.userName === 'approved once')).toHaveLength(1)
  })

  test('behavior: forty refusals at once on both instances append one audit chain, without gaps or forks', async () => {
    const before = await kmsA.verifyAudit()
    if (!before.intact) throw new Error(`the audit trail was altered before the test, at row ${before.seq}`)
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        postRaw(
          (index % 2 ? kmsA : kmsB).url,
          parentKey,
          '/public/v1/submit/sign_raw_payload',
          JSON.stringify({
            type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
            timestampMs: String(Date.now()),
            organizationId,
            parameters: {
              signWith: `0x${index.toString(16).padStart(40, '0')}`,
              payload: `0x${'11'.repeat(32)}`,
              encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
              hashFunction: 'HASH_FUNCTION_KECCAK256',
            },
          }),
        ),
      ),
    )
    expect(answers.map((answer) => answer.status)).toEqual(Array(40).fill(404))
    // verify walks seq 1, 2, 3 … with each row linked to the one before: a gap or a fork fails it.
    for (const kms of [kmsA, kmsB]) expect(await kms.verifyAudit()).toMatchObject({ intact: true, count: before.count + 40 })
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

  test('error: forty wrong guesses at one code over both instances compare three; the right code after them is refused', async () => {
    const backend = (kms: Kms) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(parentKey))
    const email = `guessed-${randomBytes(4).toString('hex')}@example.test`
    const created = await backend(kmsA).createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: {
        subOrganizationName: email,
        rootQuorumThreshold: 1,
        rootUsers: [{ userName: email, userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] }],
      },
    })
    const subOrganizationId = created.activity.result.createSubOrganizationResultV8!.subOrganizationId!
    const sent = await backend(kmsA).initOtpAuth({
      type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
      timestampMs: String(Date.now()),
      organizationId: subOrganizationId,
      parameters: { otpType: 'OTP_TYPE_EMAIL', contact: email, appName: 'Latchkey Demo' },
    })
    const otpId = sent.activity.result.initOtpAuthResultV2!.otpId
    const inbox = (await (await fetch(`${kmsA.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
    const code = /code is (\d{6})\./.exec(inbox.messages.find((message) => message.to === email)!.text)![1]!
    const wrong = code === '000000' ? '111111' : '000000'
    const guess = (kms: Kms, otpCode: string, index: number) =>
      backend(kms).otpAuth({
        type: 'ACTIVITY_TYPE_OTP_AUTH',
        // Distinct bodies: a repeated body would be the same activity.
        timestampMs: String(Date.now() + index),
        organizationId: subOrganizationId,
        parameters: { otpId, otpCode, targetPublicKey: generateP256KeyPair().publicKeyUncompressed },
      })
    const answers = await Promise.allSettled(Array.from({ length: 40 }, (_, index) => guess(index % 2 ? kmsA : kmsB, wrong, index)))
    const messages = answers.map((answer) => (answer.status === 'rejected' ? String((answer.reason as Error).message) : 'accepted'))
    const count = (text: string) => messages.filter((message) => message.includes(text)).length
    // Without the reservation, each instance's pool let several through at once.
    expect([count('Turnkey error 3: invalid code: '), count('Turnkey error 8: too many wrong codes: request a new one')]).toEqual([3, 37])
    const store = connect(database)
    try {
      const rows = await sql<{ attempts: number }>`select attempts from otps where id = ${otpId}`.execute(store.kysely)
      expect(rows.rows.map((row) => Number(row.attempts))).toEqual([3])
    } finally {
      await store.close()
    }
    await expect(guess(kmsB, code, 41)).rejects.toThrow('Turnkey error 8: too many wrong codes: request a new one')
  })

  test('error: one verification token sent to otp_login forty times at once over both instances registers one session key', async () => {
    const backend = (kms: Kms) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(parentKey))
    const email = `login-${randomBytes(4).toString('hex')}@example.test`
    const created = await backend(kmsA).createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(Date.now()),
      organizationId,
      parameters: {
        subOrganizationName: email,
        rootQuorumThreshold: 1,
        rootUsers: [{ userName: email, userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] }],
      },
    })
    const { subOrganizationId, rootUserIds } = created.activity.result.createSubOrganizationResultV8!
    const sent = (
      await backend(kmsA).initOtp({
        type: 'ACTIVITY_TYPE_INIT_OTP_V3',
        timestampMs: String(Date.now()),
        organizationId: subOrganizationId!,
        parameters: { otpType: 'OTP_TYPE_EMAIL', contact: email, appName: 'Latchkey Demo' },
      })
    ).activity.result.initOtpResultV2!
    const inbox = (await (await fetch(`${kmsA.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
    const code = /sign-in code is ([0-9A-Z]{6})\./.exec(inbox.messages.find((message) => message.to === email)!.text)![1]!
    // The frame's key: the token binds it, and it signs each login.
    const key = generateApiKeyPair()
    const token = (
      await backend(kmsB).verifyOtp({
        type: 'ACTIVITY_TYPE_VERIFY_OTP_V2',
        timestampMs: String(Date.now()),
        organizationId: subOrganizationId!,
        parameters: {
          otpId: sent.otpId,
          encryptedOtpBundle: await encryptOtpCodeToBundle(code, sent.otpEncryptionTargetBundle, key.apiPublicKey, kmsB.signerPublicKey),
        },
      })
    ).activity.result.verifyOtpResult!.verificationToken
    // Each login a session key of its own, so no two are one activity; all signed by the bound key.
    const sessionKeys = Array.from({ length: 40 }, () => generateApiKeyPair())
    const answers = await Promise.allSettled(
      sessionKeys.map((session, index) => {
        const message = JSON.stringify({ login: { publicKey: session.apiPublicKey }, tokenId: sent.otpId, type: 'USAGE_TYPE_LOGIN' })
        const signature = p256.sign(sha256(new TextEncoder().encode(message)), key.apiPrivateKey).toCompactHex()
        return backend(index % 2 ? kmsA : kmsB).otpLogin({
          type: 'ACTIVITY_TYPE_OTP_LOGIN_V2',
          timestampMs: String(Date.now()),
          organizationId: subOrganizationId!,
          parameters: {
            verificationToken: token,
            publicKey: session.apiPublicKey,
            clientSignature: { publicKey: key.apiPublicKey, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256', message, signature },
          },
        })
      }),
    )
    const messages = answers.map((answer) => (answer.status === 'rejected' ? String((answer.reason as Error).message) : 'accepted'))
    expect([
      messages.filter((message) => message === 'accepted').length,
      messages.filter((message) => message.includes('Turnkey error 9: this verification token has already been used')).length,
    ]).toEqual([1, 39])
    // Exactly the winner's key is registered, and the token is spent.
    const winner = sessionKeys[messages.indexOf('accepted')]!
    const store = connect(database)
    try {
      const keys = await sql<{ public_key: string }>`select public_key from api_keys where user_id = ${rootUserIds![0]!}`.execute(store.kysely)
      expect(keys.rows.map((row) => row.public_key)).toEqual([winner.apiPublicKey])
      const otps = await sql<{ used: number }>`select used from otps where id = ${sent.otpId}`.execute(store.kysely)
      expect(otps.rows.map((row) => Number(row.used))).toEqual([3])
    } finally {
      await store.close()
    }
  })
})

describe('an instance killed mid-load', () => {
  test('behavior: SIGKILL on one of two instances loses nothing acknowledged, runs nothing twice, answers no 500', async () => {
    const database = await testDatabase()
    if (!('databaseUrl' in database)) throw new Error('this suite runs on PostgreSQL')
    const masterKey = randomBytes(32)
    const signerPrivateKey = Buffer.from(p256.utils.randomPrivateKey()).toString('hex')
    // Instance A in this process; instance B a process of its own, to be killed.
    const kmsA = createKms({ port: await getFreePort(), ...database, masterKey, signerPrivateKey })
    await kmsA.start()
    const parentKey = generateApiKeyPair()
    const { organizationId } = await kmsA.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })
    const portB = await getFreePort()
    const kmsB = startCli('packages/kms/src/cli.ts', ['--port', String(portB)], {
      DATABASE_URL: database.databaseUrl,
      LATCHKEY_KMS_MASTER_KEY: masterKey.toString('hex'),
      LATCHKEY_KMS_SIGNER_KEY: signerPrivateKey,
    })
    await kmsB.waitForLog(listening)
    const urlB = `http://127.0.0.1:${portB}`
    try {
      const bodies = Array.from({ length: 60 }, (_, index) =>
        JSON.stringify({
          type: 'ACTIVITY_TYPE_CREATE_WALLET',
          timestampMs: String(Date.now()),
          organizationId,
          parameters: { walletName: `load ${index}`, accounts: [ethereumAccount] },
        }),
      )
      let answeredByB = 0
      let killed = false
      // Spread over both; B is killed once it has acknowledged five, with the rest in flight or to come.
      const first = await Promise.all(
        bodies.map(async (body, index) => {
          const url = index % 2 ? urlB : kmsA.url
          try {
            const answer = await postRaw(url, parentKey, '/public/v1/submit/create_wallet', body)
            if (url === urlB && ++answeredByB === 5 && !killed) {
              killed = true
              kmsB.child.kill('SIGKILL')
            }
            return { body, status: answer.status, activity: answer.body.activity }
          } catch {
            // The connection died with B: not acknowledged.
            return { body, status: 0, activity: undefined }
          }
        }),
      )
      expect(killed).toBe(true)
      expect((await kmsB.exited).signal).toBe('SIGKILL')
      expect(first.filter((answer) => answer.status !== 200 && answer.status !== 0)).toEqual([])
      expect(first.filter((answer) => answer.status === 0).length).toBeGreaterThan(0)
      // The client retries what was not acknowledged, with the same bytes, on the instance left.
      const statuses = await Promise.all(
        first.map(async (answer) =>
          answer.status === 200 ? answer.status : (await postRaw(kmsA.url, parentKey, '/public/v1/submit/create_wallet', answer.body)).status,
        ),
      )
      expect(statuses).toEqual(Array(60).fill(200))
      const client = new TurnkeyClient({ baseUrl: kmsA.url }, new ApiKeyStamper(parentKey))
      const names = (await client.getWallets({ organizationId })).wallets.map((wallet) => wallet.walletName).sort()
      // Every wallet once: nothing acknowledged lost, nothing run twice (a retry of one B had committed answered B's activity).
      expect(names).toEqual(bodies.map((_, index) => `load ${index}`).sort())
      for (const answer of first.filter((answer) => answer.status === 200)) {
        const { activity } = await client.getActivity({ organizationId, activityId: answer.activity!.id })
        expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      }
    } finally {
      kmsB.child.kill('SIGKILL')
      await kmsA.stop()
    }
    // A process of its own to start, under whatever else this machine runs.
  }, 180_000)
})

describe('rate limits on two instances', () => {
  test('behavior: two instances on one PostgreSQL share one count per API key: of 20 activities spread over both, 10 pass', async () => {
    const database = await testDatabase()
    const rateLimits = { perApiKey: 10, perOrganization: 0, windowMs: 60_000 }
    const masterKey = randomBytes(32)
    const [kmsA, kmsB] = [
      createKms({ port: await getFreePort(), ...database, rateLimits, masterKey }),
      createKms({ port: await getFreePort(), ...database, rateLimits, masterKey }),
    ]
    await Promise.all([kmsA.start(), kmsB.start()])
    try {
      const key = generateApiKeyPair()
      const { organizationId } = await kmsA.createParentOrganization({ name: 'App', userName: 'backend', publicKey: key.apiPublicKey })
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          postRaw(
            (index % 2 ? kmsA : kmsB).url,
            key,
            '/public/v1/submit/create_wallet',
            JSON.stringify({
              type: 'ACTIVITY_TYPE_CREATE_WALLET',
              timestampMs: String(Date.now()),
              organizationId,
              parameters: { walletName: `w${index}`, accounts: [] },
            }),
          ),
        ),
      )
      expect(answers.map((answer) => answer.status).sort()).toEqual([...Array(10).fill(200), ...Array(10).fill(429)])
      const wallets = (await new TurnkeyClient({ baseUrl: kmsB.url }, new ApiKeyStamper(key)).getWallets({ organizationId })).wallets
      expect(wallets).toHaveLength(10)
    } finally {
      await Promise.all([kmsA.stop(), kmsB.stop()])
    }
  })
})
