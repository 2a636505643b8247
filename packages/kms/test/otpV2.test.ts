import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { p256 } from '@noble/curves/p256'
import { sha256 } from '@noble/hashes/sha2'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { encryptOtpCodeToBundle, generateP256KeyPair, verifyOtpVerificationToken, verifySessionJwtSignature } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair as apiKeyPair, createKms, type Kms } from '../src/index.js'
import { connect, type TestDatabase, testDatabase } from './database.js'

// Turnkey's OTP flow B, as the official clients drive it: init_otp answers a target key signed by
// the kms's signer key; the code goes to verify_otp encrypted with @turnkey/crypto's
// encryptOtpCodeToBundle (given our signer key); the verification token it answers binds the
// client's key, which signs the otp_login that turns it into a session, once.

let kms: Kms
let database: TestDatabase
const dir = mkdtempSync(join(tmpdir(), 'latchkey-kms-otp-v2-'))
let clock = Date.now()
const parentKey = apiKeyPair()
let backend: TurnkeyClient
let parentOrganizationId: string
let nonce = 0
const client = (keys: { apiPrivateKey: string; apiPublicKey: string }) => new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(keys))
const timestampMs = () => String(clock + ++nonce)

beforeAll(async () => {
  database = await testDatabase(join(dir, 'kms.db'))
  kms = createKms({ port: await getFreePort(), now: () => clock, maxCredentialSeconds: 86_400, ...database })
  await kms.start()
  parentOrganizationId = (await kms.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })).organizationId
  backend = client(parentKey)
})
afterAll(async () => {
  await kms.stop()
  rmSync(dir, { recursive: true, force: true })
})

let users = 0
async function userWithEmail(email = `otp${++users}@example.test`) {
  const { activity } = await backend.createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: timestampMs(),
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
type User = Awaited<ReturnType<typeof userWithEmail>>

async function latestCode(email: string) {
  const inbox = (await (await fetch(`${kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
  return /sign-in code is ([0-9A-Z]{6})\./.exec(inbox.messages.find((message) => message.to === email)!.text)![1]!
}

async function sendCode(user: User) {
  const { activity } = await backend.initOtp({
    type: 'ACTIVITY_TYPE_INIT_OTP_V3',
    timestampMs: timestampMs(),
    organizationId: user.organizationId,
    parameters: { otpType: 'OTP_TYPE_EMAIL', contact: user.email, appName: 'Latchkey Demo' },
  })
  const result = activity.result.initOtpResultV2!
  return { ...result, code: await latestCode(user.email) }
}

/** The client's key: a P-256 API key pair (compressed public key), as the frame's signing key is. */
const clientKey = () => apiKeyPair()

const verify = async (user: User, sent: { otpId: string; otpEncryptionTargetBundle: string }, code: string, key = clientKey()) =>
  backend.verifyOtp({
    type: 'ACTIVITY_TYPE_VERIFY_OTP_V2',
    timestampMs: timestampMs(),
    organizationId: user.organizationId,
    parameters: {
      otpId: sent.otpId,
      encryptedOtpBundle: await encryptOtpCodeToBundle(code, sent.otpEncryptionTargetBundle, key.apiPublicKey, kms.signerPublicKey),
    },
  })

/** What @turnkey/core signs for a login: raw r‖s over SHA-256 of the message. */
function clientSignature(token: string, key: { apiPrivateKey: string; apiPublicKey: string }, sessionPublicKey = key.apiPublicKey) {
  const tokenId = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).id as string
  const message = JSON.stringify({ login: { publicKey: sessionPublicKey }, tokenId, type: 'USAGE_TYPE_LOGIN' })
  const signature = p256.sign(sha256(new TextEncoder().encode(message)), key.apiPrivateKey).toCompactHex()
  return { publicKey: key.apiPublicKey, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256' as const, message, signature }
}

const login = (user: User, token: string, key: { apiPrivateKey: string; apiPublicKey: string }, extra: Record<string, unknown> = {}) =>
  backend.otpLogin({
    type: 'ACTIVITY_TYPE_OTP_LOGIN_V2',
    timestampMs: timestampMs(),
    organizationId: user.organizationId,
    parameters: { verificationToken: token, publicKey: key.apiPublicKey, clientSignature: clientSignature(token, key), ...extra },
  })

describe('otp flow B', () => {
  test('default: init_otp, verify_otp and otp_login with the official clients give a session of the client key', async () => {
    const user = await userWithEmail()
    const sent = await sendCode(user)
    expect(Object.keys(sent).sort()).toEqual(['code', 'otpEncryptionTargetBundle', 'otpId'])
    const key = clientKey()
    const { activity } = await verify(user, sent, sent.code, key)
    const token = activity.result.verifyOtpResult!.verificationToken
    const claims = await verifyOtpVerificationToken(token, kms.signerPublicKey)
    expect(claims).toEqual({
      id: sent.otpId,
      verification_type: 'OTP_TYPE_EMAIL',
      contact: user.email,
      organization_id: user.organizationId,
      public_key: key.apiPublicKey,
      exp: String(clock + 120_000),
    })
    const session = (await login(user, token, key)).activity.result.otpLoginResult!.session
    expect(await verifySessionJwtSignature(session, kms.signerPublicKey)).toBe(true)
    expect(JSON.parse(Buffer.from(session.split('.')[1]!, 'base64url').toString())).toMatchObject({
      public_key: key.apiPublicKey,
      user_id: user.userId,
      organization_id: user.organizationId,
      credential_type: 'CREDENTIAL_TYPE_OTP_AUTH_KEY_P256',
    })
    expect(await client(key).getWhoami({ organizationId: user.organizationId })).toMatchObject({ userId: user.userId })
  })

  test('behavior: otp_login of a key the user holds re-verifies it: fresh again, its expiry kept; another user’s key is refused', async () => {
    const user = await userWithEmail()
    const key = clientKey()
    const first = await sendCode(user)
    const token = (await verify(user, first, first.code, key)).activity.result.verifyOtpResult!.verificationToken
    await login(user, token, key, { expirationSeconds: '3600' })
    const expiresAt = clock + 3_600_000
    const newKey = (stamper: { apiPublicKey: string; apiPrivateKey: string }) =>
      client(stamper).createApiKeys({
        type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
        timestampMs: timestampMs(),
        organizationId: user.organizationId,
        parameters: {
          userId: user.userId,
          apiKeys: [{ apiKeyName: 'more', publicKey: clientKey().apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '600' }],
        },
      })
    clock += 901_000
    await expect(newKey(key)).rejects.toThrow('fresh verification required')
    // A new code, sealed and signed with the same key: the login re-verifies it.
    const again = await sendCode(user)
    const second = (await verify(user, again, again.code, key)).activity.result.verifyOtpResult!.verificationToken
    const session = (await login(user, second, key, { expirationSeconds: '86400' })).activity.result.otpLoginResult!.session
    expect(JSON.parse(Buffer.from(session.split('.')[1]!, 'base64url').toString()).exp).toBe(Math.floor(expiresAt / 1000))
    expect((await newKey(key)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    const { apiKeys } = await backend.getApiKeys({ organizationId: user.organizationId, userId: user.userId })
    expect(apiKeys.filter((apiKey) => apiKey.credential.publicKey === key.apiPublicKey)).toHaveLength(1)

    // Another user's code cannot log in (or re-verify) this user's key.
    const other = await userWithEmail()
    const theirs = await sendCode(other)
    const otherToken = (await verify(other, theirs, theirs.code, key)).activity.result.verifyOtpResult!.verificationToken
    await expect(login(other, otherToken, key)).rejects.toThrow(`api key ${key.apiPublicKey} is already registered`)
    expect((await backend.getApiKeys({ organizationId: other.organizationId, userId: other.userId })).apiKeys).toEqual([])
  })

  test('error: a wrong code counts, three end the code, and the right one after them is refused', async () => {
    const user = await userWithEmail()
    const sent = await sendCode(user)
    const wrong = sent.code === '000000' ? '111111' : '000000'
    await expect(verify(user, sent, wrong)).rejects.toThrow('Turnkey error 3: invalid code: 2 attempts left')
    await expect(verify(user, sent, wrong)).rejects.toThrow('Turnkey error 3: invalid code: 1 attempt left')
    await expect(verify(user, sent, wrong)).rejects.toThrow('Turnkey error 3: invalid code: no attempts left, request a new one')
    await expect(verify(user, sent, sent.code)).rejects.toThrow('Turnkey error 8: too many wrong codes: request a new one')
  })

  test('error: forty wrong codes at once compare three', async () => {
    const user = await userWithEmail()
    const sent = await sendCode(user)
    const wrong = sent.code === '000000' ? '111111' : '000000'
    const answers = await Promise.allSettled(Array.from({ length: 40 }, () => verify(user, sent, wrong)))
    const messages = answers.map((answer) => (answer.status === 'rejected' ? String((answer.reason as Error).message) : 'accepted'))
    const count = (text: string) => messages.filter((message) => message.includes(text)).length
    expect([count('Turnkey error 3: invalid code: '), count('Turnkey error 8: too many wrong codes: request a new one')]).toEqual([3, 37])
    const store = connect(database)
    try {
      const rows = await sql<{ attempts: number }>`select attempts from otps where id = ${sent.otpId}`.execute(store.kysely)
      expect(rows.rows.map((row) => Number(row.attempts))).toEqual([3])
    } finally {
      await store.close()
    }
  })

  test('error: forty otp_login at once with one token make exactly one session', async () => {
    const user = await userWithEmail()
    const sent = await sendCode(user)
    const key = clientKey()
    const token = (await verify(user, sent, sent.code, key)).activity.result.verifyOtpResult!.verificationToken
    // Each login its own session key, all signed by the key the token binds.
    const answers = await Promise.allSettled(
      Array.from({ length: 40 }, () => {
        const session = clientKey()
        return backend.otpLogin({
          type: 'ACTIVITY_TYPE_OTP_LOGIN_V2',
          timestampMs: timestampMs(),
          organizationId: user.organizationId,
          parameters: { verificationToken: token, publicKey: session.apiPublicKey, clientSignature: clientSignature(token, key, session.apiPublicKey) },
        })
      }),
    )
    const messages = answers.map((answer) => (answer.status === 'rejected' ? String((answer.reason as Error).message) : 'accepted'))
    expect([
      messages.filter((message) => message === 'accepted').length,
      messages.filter((message) => message.includes('Turnkey error 9: this verification token has already been used')).length,
    ]).toEqual([1, 39])
    const store = connect(database)
    try {
      const rows = await sql<{ n: number }>`select count(*) as n from api_keys where user_id = ${user.userId}`.execute(store.kysely)
      expect(rows.rows.map((row) => Number(row.n))).toEqual([1])
    } finally {
      await store.close()
    }
  })

  test('error: the client signature must be by the key the token binds, over this login', async () => {
    const user = await userWithEmail()
    const sent = await sendCode(user)
    const key = clientKey()
    const token = (await verify(user, sent, sent.code, key)).activity.result.verifyOtpResult!.verificationToken
    const other = clientKey()
    // A page that relays the token signs with a key of its own: refused.
    await expect(login(user, token, other)).rejects.toThrow('Turnkey error 7: clientSignature.publicKey is not the public key bound in the verification token')
    const forged = { ...clientSignature(token, other), publicKey: key.apiPublicKey }
    await expect(
      backend.otpLogin({
        type: 'ACTIVITY_TYPE_OTP_LOGIN_V2',
        timestampMs: timestampMs(),
        organizationId: user.organizationId,
        parameters: { verificationToken: token, publicKey: other.apiPublicKey, clientSignature: forged },
      }),
    ).rejects.toThrow('Turnkey error 7: clientSignature does not verify with the public key bound in the verification token')
    // Signed for another session key than the one asked for.
    await expect(
      backend.otpLogin({
        type: 'ACTIVITY_TYPE_OTP_LOGIN_V2',
        timestampMs: timestampMs(),
        organizationId: user.organizationId,
        parameters: { verificationToken: token, publicKey: other.apiPublicKey, clientSignature: clientSignature(token, key) },
      }),
    ).rejects.toThrow(
      `Turnkey error 3: clientSignature.message must be {"login":{"publicKey":"${other.apiPublicKey}"},"tokenId":"${sent.otpId}","type":"USAGE_TYPE_LOGIN"}`,
    )
    // Refusals spent nothing: the right login still works.
    expect((await login(user, token, key)).activity.result.otpLoginResult!.session).toMatch(/^ey/)
  })

  test('error: a token past its lifetime, one from another organization, and a forged one', async () => {
    const user = await userWithEmail()
    const sent = await sendCode(user)
    const key = clientKey()
    const token = (await verify(user, sent, sent.code, key)).activity.result.verifyOtpResult!.verificationToken
    const other = await userWithEmail()
    await expect(login(other, token, key)).rejects.toThrow(
      `Turnkey error 7: the verification token belongs to organization ${user.organizationId}, not ${other.organizationId}`,
    )
    const [header, payload] = token.split('.')
    const stranger = generateP256KeyPair()
    const forged = `${header}.${payload}.${Buffer.from(p256.sign(sha256(new TextEncoder().encode(`${header}.${payload}`)), stranger.privateKey).toCompactRawBytes()).toString('base64url')}`
    await expect(login(user, forged, key)).rejects.toThrow('Turnkey error 7: the verification token is not one this kms issued')
    clock += 121_000
    try {
      await expect(login(user, token, key)).rejects.toThrow('Turnkey error 9: the verification token has expired: verify a new code')
    } finally {
      clock -= 121_000
    }
  })

  test('error: lifetimes above the caps are refused and write nothing', async () => {
    const user = await userWithEmail()
    await expect(
      backend.initOtp({
        type: 'ACTIVITY_TYPE_INIT_OTP_V3',
        timestampMs: timestampMs(),
        organizationId: user.organizationId,
        parameters: { otpType: 'OTP_TYPE_EMAIL', contact: user.email, appName: 'x', expirationSeconds: '601' },
      }),
    ).rejects.toThrow('Turnkey error 3: invalid parameters: expirationSeconds: must be at most 600 seconds')
    const sent = await sendCode(user)
    const key = clientKey()
    await expect(
      backend.verifyOtp({
        type: 'ACTIVITY_TYPE_VERIFY_OTP_V2',
        timestampMs: timestampMs(),
        organizationId: user.organizationId,
        parameters: {
          otpId: sent.otpId,
          encryptedOtpBundle: await encryptOtpCodeToBundle(sent.code, sent.otpEncryptionTargetBundle, key.apiPublicKey, kms.signerPublicKey),
          expirationSeconds: '86400',
        },
      }),
    ).rejects.toThrow('Turnkey error 3: invalid parameters: expirationSeconds: must be at most 600 seconds: a verification token is spent right away')
    const token = (await verify(user, sent, sent.code, key)).activity.result.verifyOtpResult!.verificationToken
    await expect(login(user, token, key, { expirationSeconds: '86401' })).rejects.toThrow(
      'Turnkey error 3: invalid parameters: expirationSeconds: must be at most 86400 seconds, the longest lifetime this kms gives a credential',
    )
    expect((await login(user, token, key, { expirationSeconds: '86400' })).activity.result.otpLoginResult!.session).toMatch(/^ey/)
  })

  test('error: a bundle not sealed to the code’s target, and a flow-A code, are refused without counting a guess', async () => {
    const user = await userWithEmail()
    const sent = await sendCode(user)
    const stranger = generateP256KeyPair()
    const { signBundle } = await import('../src/bundles.js')
    const elsewhere = signBundle(generateP256KeyPair().privateKey, { targetPublic: stranger.publicKeyUncompressed })
    await expect(
      backend.verifyOtp({
        type: 'ACTIVITY_TYPE_VERIFY_OTP_V2',
        timestampMs: timestampMs(),
        organizationId: user.organizationId,
        parameters: {
          otpId: sent.otpId,
          encryptedOtpBundle: await encryptOtpCodeToBundle(sent.code, elsewhere, clientKey().apiPublicKey, JSON.parse(elsewhere).enclaveQuorumPublic),
        },
      }),
    ).rejects.toThrow('Turnkey error 3: encryptedOtpBundle does not open with this code’s target key')
    const store = connect(database)
    try {
      const rows = await sql<{ attempts: number }>`select attempts from otps where id = ${sent.otpId}`.execute(store.kysely)
      expect(rows.rows.map((row) => Number(row.attempts))).toEqual([0])
    } finally {
      await store.close()
    }
    const { activity } = await backend.initOtpAuth({
      type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
      timestampMs: timestampMs(),
      organizationId: user.organizationId,
      parameters: { otpType: 'OTP_TYPE_EMAIL', contact: user.email, appName: 'x' },
    })
    await expect(
      verify(user, { otpId: activity.result.initOtpAuthResultV2!.otpId, otpEncryptionTargetBundle: sent.otpEncryptionTargetBundle }, '000000'),
    ).rejects.toThrow('Turnkey error 9: this code was sent by init_otp_auth: redeem it with otp_auth')
  })

  test('error: otp_auth refuses a code of init_otp: it is only redeemed encrypted', async () => {
    const user = await userWithEmail()
    const sent = await sendCode(user)
    await expect(
      backend.otpAuth({
        type: 'ACTIVITY_TYPE_OTP_AUTH',
        timestampMs: timestampMs(),
        organizationId: user.organizationId,
        parameters: { otpId: sent.otpId, otpCode: sent.code, targetPublicKey: generateP256KeyPair().publicKeyUncompressed },
      }),
    ).rejects.toThrow('Turnkey error 9: this code was sent by init_otp: redeem it encrypted with verify_otp')
  })

  test('behavior: the parent sends a code to an address no user has; verify_otp proves that address, and otp_login signs nobody in with it', async () => {
    const email = `Sign.Up${++users}@example.test`
    const contact = { email, organizationId: parentOrganizationId, userId: '' }
    const first = await sendCode(contact)
    const sent = await sendCode(contact)
    const key = clientKey()
    // Only the newest code to an address may be redeemed, as for a user.
    await expect(verify(contact, first, first.code, key)).rejects.toThrow('Turnkey error 9: a newer code was sent: use the latest one')
    const token = (await verify(contact, sent, sent.code, key)).activity.result.verifyOtpResult!.verificationToken
    expect(await verifyOtpVerificationToken(token, kms.signerPublicKey)).toEqual({
      id: sent.otpId,
      verification_type: 'OTP_TYPE_EMAIL',
      contact: email.toLowerCase(),
      organization_id: parentOrganizationId,
      public_key: key.apiPublicKey,
      exp: String(clock + 120_000),
    })
    await expect(login(contact, token, key)).rejects.toThrow('Turnkey error 9: this verification token proves an email no user has: it signs nobody in')
    const store = connect(database)
    try {
      const { rows } = await sql<{ user_id: string; contact: string; used: number }>`select user_id, contact, used from otps where id = ${sent.otpId}`.execute(
        store.kysely,
      )
      expect(rows.map((row) => ({ ...row, used: Number(row.used) }))).toEqual([{ user_id: '', contact: email.toLowerCase(), used: 1 }])
    } finally {
      await store.close()
    }
  })

  test('error: a sub-organization’s user cannot have the kms mail an address none of its users has', async () => {
    const keys = apiKeyPair()
    const { activity } = await backend.createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: timestampMs(),
      organizationId: parentOrganizationId,
      parameters: {
        subOrganizationName: 'mailer',
        rootQuorumThreshold: 1,
        rootUsers: [
          {
            userName: 'mailer',
            apiKeys: [{ apiKeyName: 'k', publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
            authenticators: [],
            oauthProviders: [],
          },
        ],
      },
    })
    const organizationId = activity.result.createSubOrganizationResultV8!.subOrganizationId!
    await expect(
      client(keys).initOtp({
        type: 'ACTIVITY_TYPE_INIT_OTP_V3',
        timestampMs: timestampMs(),
        organizationId,
        parameters: { otpType: 'OTP_TYPE_EMAIL', contact: 'victim@example.test', appName: 'Latchkey Demo' },
      }),
    ).rejects.toThrow(`Turnkey error 5: no user with email victim@example.test in organization ${organizationId}`)
  })
})
