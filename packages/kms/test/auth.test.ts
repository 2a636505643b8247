import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { decryptCredentialBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { WebauthnStamper } from '@turnkey/webauthn-stamper'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair as apiKeyPair, createKms, type Kms } from '../src/index.js'
import { rpId, softwareAuthenticator, useAuthenticator } from './authenticator.js'
import { connect, type TestDatabase, testDatabase } from './database.js'

// Email sign-in as the app backend drives it: the parent organization's key starts email_auth or
// init_otp_auth in the user's sub-organization, the message lands in the dev inbox, and the
// credential bundle opened with @turnkey/crypto is a working key for the user.

let kms: Kms
let database: TestDatabase
// A file, not :memory:, so a second connection can read the stored guesses.
const dir = mkdtempSync(join(tmpdir(), 'latchkey-kms-auth-'))
let clock = Date.now()
const parentKey = apiKeyPair()
let backend: TurnkeyClient
let parentOrganizationId: string
const client = (keys: { apiPrivateKey: string; apiPublicKey: string }) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(keys))
const fromBundle = (bundle: string, embeddedKey: string) => {
  const apiPrivateKey = decryptCredentialBundle(bundle, embeddedKey)
  return client({ apiPrivateKey, apiPublicKey: Buffer.from(getPublicKey(apiPrivateKey, true)).toString('hex') })
}

beforeAll(async () => {
  database = await testDatabase(join(dir, 'kms.db'))
  kms = createKms({ port: await getFreePort(), now: () => clock, ...database })
  await kms.start()
  parentOrganizationId = (await kms.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })).organizationId
  backend = client(parentKey)
})
afterAll(async () => {
  await kms.stop()
  rmSync(dir, { recursive: true, force: true })
})

let users = 0
/** A sub-organization whose root user has `email` and no key of its own yet. */
async function userWithEmail(email = `user${++users}@example.test`) {
  const { activity } = await backend.createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: String(clock),
    organizationId: parentOrganizationId,
    parameters: {
      subOrganizationName: email,
      rootQuorumThreshold: 1,
      rootUsers: [{ userName: email, userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] }],
    },
  })
  const result = activity.result.createSubOrganizationResultV8!
  return { email, organizationId: result.subOrganizationId!, userId: result.rootUserIds![0]! }
}

type Inbox = { messages: { to: string; subject: string; text: string }[] }
async function latestMailTo(email: string) {
  const inbox = (await (await fetch(`${kms.url}/dev/mailbox.json`)).json()) as Inbox
  const mail = inbox.messages.find((message) => message.to === email)
  if (!mail) throw new Error(`no mail to ${email}`)
  return mail
}

describe('email_auth', () => {
  test('default: the bundle arrives by email only and signs the user in', async () => {
    const user = await userWithEmail()
    const embedded = generateP256KeyPair()
    const { activity } = await backend.emailAuth({
      type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3',
      timestampMs: String(clock),
      organizationId: user.organizationId,
      parameters: { email: user.email, targetPublicKey: embedded.publicKeyUncompressed, emailCustomization: { appName: 'Latchkey Demo' } },
    })
    const result = activity.result.emailAuthResult!
    expect(result.userId).toBe(user.userId)
    expect(Object.keys(result).sort()).toEqual(['apiKeyId', 'userId'])
    const mail = await latestMailTo(user.email)
    expect(mail.subject).toBe('Sign in to Latchkey Demo')
    expect(mail.text.split('\n')[6]).toBe('Only enter it on http://localhost:5173. No one will ask you for it by phone, chat or email.')
    const bundle = mail.text.split('\n')[2]!
    expect(await fromBundle(bundle, embedded.privateKey).getWhoami({ organizationId: user.organizationId })).toMatchObject({ userId: user.userId })
    expect(await (await fetch(`${kms.url}/dev/mailbox`)).text()).toContain('Sign in to Latchkey Demo')
  })

  test('error: an email with no user in the organization', async () => {
    const user = await userWithEmail()
    await expect(
      backend.emailAuth({
        type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3',
        timestampMs: String(clock),
        organizationId: user.organizationId,
        parameters: { email: 'nobody@example.test', targetPublicKey: generateP256KeyPair().publicKeyUncompressed, emailCustomization: { appName: 'x' } },
      }),
    ).rejects.toThrow(`Turnkey error 5: no user with email nobody@example.test in organization ${user.organizationId}`)
  })
})

describe('one-time codes', () => {
  let nonce = 0
  async function sendCode(user: Awaited<ReturnType<typeof userWithEmail>>) {
    const { activity } = await backend.initOtpAuth({
      type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
      timestampMs: String(clock + ++nonce),
      organizationId: user.organizationId,
      parameters: { otpType: 'OTP_TYPE_EMAIL', contact: user.email, appName: 'Latchkey Demo' },
    })
    const otpId = activity.result.initOtpAuthResultV2!.otpId
    const code = /sign-in code is (\d{6})\./.exec((await latestMailTo(user.email)).text)![1]!
    return { otpId, code }
  }
  const verify = (user: { organizationId: string }, otpId: string, otpCode: string, target = generateP256KeyPair()) =>
    backend.otpAuth({
      type: 'ACTIVITY_TYPE_OTP_AUTH',
      // Distinct bodies: a repeated body would be the same activity.
      timestampMs: String(clock + ++nonce),
      organizationId: user.organizationId,
      parameters: { otpId, otpCode, targetPublicKey: target.publicKeyUncompressed },
    })

  test('default: a six-digit code by email; the right code gives a working credential, once', async () => {
    const user = await userWithEmail()
    const { otpId, code } = await sendCode(user)
    const mail = await latestMailTo(user.email)
    // The code stays out of the subject; the mail names where it belongs (the passkey origins).
    expect([mail.subject, mail.text]).toEqual([
      'Your Latchkey Demo sign-in code',
      `Your Latchkey Demo sign-in code is ${code}. It expires in 5 minutes.\n\nOnly enter it on http://localhost:5173. No one will ask you for it by phone, chat or email.`,
    ])
    const embedded = generateP256KeyPair()
    const { activity } = await verify(user, otpId, code, embedded)
    const result = activity.result.otpAuthResult!
    expect(result.userId).toBe(user.userId)
    expect(await fromBundle(result.credentialBundle!, embedded.privateKey).getWhoami({ organizationId: user.organizationId })).toMatchObject({
      userId: user.userId,
    })
    await expect(verify(user, otpId, code)).rejects.toThrow('Turnkey error 9: this code has already been used')
  })

  test('error: three wrong codes end the code, even for the right one after', async () => {
    const user = await userWithEmail()
    const { otpId, code } = await sendCode(user)
    const wrong = code === '000000' ? '111111' : '000000'
    await expect(verify(user, otpId, wrong)).rejects.toThrow('Turnkey error 3: invalid code: 2 attempts left')
    await expect(verify(user, otpId, wrong)).rejects.toThrow('Turnkey error 3: invalid code: 1 attempt left')
    await expect(verify(user, otpId, wrong)).rejects.toThrow('Turnkey error 3: invalid code: no attempts left, request a new one')
    await expect(verify(user, otpId, code)).rejects.toThrow('Turnkey error 8: too many wrong codes: request a new one')
  })

  test('error: forty wrong guesses at once compare three, and the right code after them is refused', async () => {
    const user = await userWithEmail()
    const { otpId, code } = await sendCode(user)
    const wrong = code === '000000' ? '111111' : '000000'
    const answers = await Promise.allSettled(Array.from({ length: 40 }, () => verify(user, otpId, wrong)))
    const messages = answers.map((answer) => (answer.status === 'rejected' ? String((answer.reason as Error).message) : 'accepted'))
    const count = (text: string) => messages.filter((message) => message.includes(text)).length
    // On PostgreSQL without the reservation, 4 to 17 of them were compared.
    expect([count('Turnkey error 3: invalid code: '), count('Turnkey error 8: too many wrong codes: request a new one')]).toEqual([3, 37])
    expect(messages.filter((message) => message.includes('invalid code')).sort()).toEqual([
      'Turnkey error 3: invalid code: 1 attempt left (Details: [])',
      'Turnkey error 3: invalid code: 2 attempts left (Details: [])',
      'Turnkey error 3: invalid code: no attempts left, request a new one (Details: [])',
    ])
    const store = connect(database)
    try {
      const rows = await sql<{ attempts: number }>`select attempts from otps where id = ${otpId}`.execute(store.kysely)
      expect(rows.rows.map((row) => Number(row.attempts))).toEqual([3])
    } finally {
      await store.close()
    }
    await expect(verify(user, otpId, code)).rejects.toThrow('Turnkey error 8: too many wrong codes: request a new one')
  })

  test('error: a new code replaces the older one, which no longer signs in', async () => {
    const user = await userWithEmail()
    const first = await sendCode(user)
    const second = await sendCode(user)
    await expect(verify(user, first.otpId, first.code)).rejects.toThrow('Turnkey error 9: a newer code was sent: use the latest one')
    expect((await verify(user, second.otpId, second.code)).activity.result.otpAuthResult!.userId).toBe(user.userId)
  })

  test('error: a code past its five minutes', async () => {
    const user = await userWithEmail()
    const { otpId, code } = await sendCode(user)
    clock += 301_000
    try {
      await expect(verify(user, otpId, code)).rejects.toThrow('Turnkey error 9: this code has expired')
    } finally {
      clock -= 301_000
    }
  })
})

describe('email recovery', () => {
  test('default: a recovery credential by email lets the user register a new passkey, which then signs in alone', async () => {
    const user = await userWithEmail()
    const embedded = generateP256KeyPair()
    const { activity } = await backend.initUserEmailRecovery({
      type: 'ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2',
      timestampMs: String(clock),
      organizationId: user.organizationId,
      parameters: { email: user.email, targetPublicKey: embedded.publicKeyUncompressed, emailCustomization: { appName: 'Latchkey Demo' } },
    })
    expect(activity.result.initUserEmailRecoveryResult).toEqual({ userId: user.userId })
    const mail = await latestMailTo(user.email)
    expect(mail.subject).toBe('Recover your Latchkey Demo account')
    const recovery = fromBundle(mail.text.split('\n')[2]!, embedded.privateKey)

    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const recovered = await recovery.recoverUser({
      type: 'ACTIVITY_TYPE_RECOVER_USER',
      timestampMs: String(clock),
      organizationId: user.organizationId,
      parameters: { userId: user.userId, authenticator: { authenticatorName: 'New phone', challenge, attestation: authenticator.register(challenge) } },
    })
    expect(recovered.activity.result.recoverUserResult!.authenticatorId).toHaveLength(1)
    useAuthenticator(authenticator)
    expect(await new TurnkeyClient({ baseUrl: kms.url }, new WebauthnStamper({ rpId })).getWhoami({ organizationId: user.organizationId })).toMatchObject({
      userId: user.userId,
    })
  })

  test('error: the recovery credential stops working after 900 seconds', async () => {
    const user = await userWithEmail()
    const embedded = generateP256KeyPair()
    await backend.initUserEmailRecovery({
      type: 'ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2',
      timestampMs: String(clock),
      organizationId: user.organizationId,
      // Asking for longer than the rule allows is capped.
      parameters: { email: user.email, targetPublicKey: embedded.publicKeyUncompressed, expirationSeconds: '3600', emailCustomization: { appName: 'x' } },
    })
    const recovery = fromBundle((await latestMailTo(user.email)).text.split('\n')[2]!, embedded.privateKey)
    clock += 901_000
    try {
      await expect(recovery.getWhoami({ organizationId: user.organizationId })).rejects.toThrow('expired api key publicKey')
    } finally {
      clock -= 901_000
    }
  })
})
