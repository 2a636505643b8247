import { randomBytes } from 'node:crypto'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { decryptCredentialBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { WebauthnStamper } from '@turnkey/webauthn-stamper'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair } from '../src/index.js'
import { rpId, softwareAuthenticator, useAuthenticator } from './authenticator.js'
import { startKms } from './harness.js'

// In a sub-organization, export and every new credential or session need the user: a passkey
// stamp, or a credential from an email code at most 900 s old. A session key alone is refused, and
// the refusal writes nothing (security review H1, fix 3). A key registered by a credential from an
// email code, or by a passkey stamp, carries that moment of verification, never renewed.

let harness: Awaited<ReturnType<typeof startKms>>
beforeAll(async () => {
  harness = await startKms()
})
afterAll(() => harness.kms.stop())

type Sub = Awaited<ReturnType<typeof harness.subOrganization>>

/** Submits `body` as `op` stamped by `keys`, for the activities the typed client has not: its status and message. */
async function fetchSubmit(keys: { apiPublicKey: string; apiPrivateKey: string }, op: string, body: unknown) {
  const text = JSON.stringify(body)
  const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(keys).stamp(text)
  const response = await fetch(`${harness.kms.url}/public/v1/submit/${op}`, { method: 'POST', body: text, headers: { [stampHeaderName]: stampHeaderValue } })
  return { status: response.status, message: ((await response.json()) as { message: string }).message }
}

const refused = (type: string, seconds = 900) =>
  `Turnkey error 7: fresh verification required: ${type} from a session credential needs a passkey stamp (X-Stamp-Webauthn) or a credential from an email code less than ${seconds} seconds old`

/** A session key (15 minutes unless told) of the sub-organization's root user, registered by the root's own key (as a backend registers a browser's). */
async function sessionKeyOf(sub: Sub, by: TurnkeyClient = sub.client, expirationSeconds = '900') {
  const keys = generateApiKeyPair()
  await by.createApiKeys({
    type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
    timestampMs: harness.timestampMs(),
    organizationId: sub.organizationId,
    parameters: {
      userId: sub.userId,
      apiKeys: [{ apiKeyName: 'session', publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds }],
    },
  })
  return harness.client(keys)
}

/** A credential from an email code (init_otp_auth and otp_auth, as a backend runs them), opened as the browser would. */
async function otpCredentialOf(sub: Sub & { email: string }) {
  const init = await harness.backend.initOtpAuth({
    type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
    timestampMs: harness.timestampMs(),
    organizationId: sub.organizationId,
    parameters: { otpType: 'OTP_TYPE_EMAIL', contact: sub.email, appName: 'Demo' },
  })
  const inbox = (await (await fetch(`${harness.kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
  const mail = inbox.messages.filter((message) => message.to === sub.email).at(-1)!
  const target = generateP256KeyPair()
  const { activity } = await harness.backend.otpAuth({
    type: 'ACTIVITY_TYPE_OTP_AUTH',
    timestampMs: harness.timestampMs(),
    organizationId: sub.organizationId,
    parameters: {
      otpId: init.activity.result.initOtpAuthResultV2!.otpId,
      otpCode: /sign-in code is (\w+)\./.exec(mail.text)![1]!,
      targetPublicKey: target.publicKeyUncompressed,
      // Outlives the freshness window: past it the credential is a plain session, not an expired one.
      expirationSeconds: '3600',
    },
  })
  const apiPrivateKey = decryptCredentialBundle(activity.result.otpAuthResult!.credentialBundle!, target.privateKey)
  return harness.client({ apiPrivateKey, apiPublicKey: Buffer.from(getPublicKey(apiPrivateKey, true)).toString('hex') })
}

async function userWithEmail() {
  const email = `fresh.${randomBytes(6).toString('hex')}@example.test`
  return { ...(await harness.subOrganization({ email })), email }
}

/** The six activities the rule covers, each as `client` would submit it for `sub`'s root user. */
function guarded(sub: Sub, client: TurnkeyClient) {
  const common = () => ({ timestampMs: harness.timestampMs(), organizationId: sub.organizationId })
  const target = () => generateP256KeyPair().publicKeyUncompressed
  const challenge = randomBytes(32).toString('base64url')
  return {
    ACTIVITY_TYPE_EXPORT_WALLET: () =>
      client.exportWallet({ ...common(), type: 'ACTIVITY_TYPE_EXPORT_WALLET', parameters: { walletId: sub.walletId, targetPublicKey: target() } }),
    ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT: () =>
      client.exportWalletAccount({
        ...common(),
        type: 'ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT',
        parameters: { address: sub.address, targetPublicKey: target() },
      }),
    ACTIVITY_TYPE_CREATE_API_KEYS_V2: () =>
      client.createApiKeys({
        ...common(),
        type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
        parameters: {
          userId: sub.userId,
          apiKeys: [{ apiKeyName: 'attacker', publicKey: generateApiKeyPair().apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '900' }],
        },
      }),
    ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2: () =>
      client.createAuthenticators({
        ...common(),
        type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
        parameters: {
          userId: sub.userId,
          authenticators: [{ authenticatorName: 'attacker', challenge, attestation: softwareAuthenticator().register(challenge) }],
        },
      }),
    ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2: () =>
      client.createReadWriteSession({
        ...common(),
        type: 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2',
        parameters: { targetPublicKey: target(), expirationSeconds: '900' },
      }),
    ACTIVITY_TYPE_STAMP_LOGIN: () =>
      client.stampLogin({
        ...common(),
        type: 'ACTIVITY_TYPE_STAMP_LOGIN',
        parameters: { publicKey: generateApiKeyPair().apiPublicKey, expirationSeconds: '900' },
      }),
  }
}

/** What a refused activity must not have changed: the organization's activities, the user's keys and passkeys, the wallet's export flag. */
async function stateOf(sub: Sub) {
  const query = { organizationId: sub.organizationId }
  return {
    activities: (await harness.backend.getActivities(query)).activities.length,
    apiKeys: (await harness.backend.getApiKeys({ ...query, userId: sub.userId })).apiKeys.length,
    authenticators: (await harness.backend.getAuthenticators({ ...query, userId: sub.userId })).authenticators.length,
    exported: (await harness.backend.getWallet({ ...query, walletId: sub.walletId })).wallet.exported,
  }
}

describe('fresh verification', () => {
  test('error: a session key alone may not export, add a credential, open a session or log in; each refusal writes nothing', async () => {
    const sub = await userWithEmail()
    const session = await sessionKeyOf(sub)
    const before = await stateOf(sub)
    for (const [type, submit] of Object.entries(guarded(sub, session))) await expect(submit(), type).rejects.toThrow(refused(type))
    expect(await stateOf(sub)).toEqual(before)
  })

  test('behavior: the key of a user with no other way in (a guest: no passkey, OAuth identity or email) runs each of them; once an email is linked it may not', async () => {
    // Each on a guest of its own: a passkey or a key one of them adds is another way in.
    for (const type of Object.keys(guarded(await harness.subOrganization(), harness.backend))) {
      const guest = await harness.subOrganization()
      const submit = guarded(guest, await sessionKeyOf(guest))[type as keyof ReturnType<typeof guarded>]
      expect((await submit()).activity.status, type).toBe('ACTIVITY_STATUS_COMPLETED')
    }
    const sub = await harness.subOrganization()
    const session = await sessionKeyOf(sub)
    await sub.client.updateUserEmail({
      type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId, userEmail: `linked.${randomBytes(6).toString('hex')}@example.test` },
    })
    const exportWallet = guarded(sub, session).ACTIVITY_TYPE_EXPORT_WALLET
    await expect(exportWallet()).rejects.toThrow(refused('ACTIVITY_TYPE_EXPORT_WALLET'))
  })

  test('error: a user added without a way in, to an organization whose user has one, is no guest: its key may not export, add a credential or enrol a factor', async () => {
    const sub = await userWithEmail()
    // Added by the root key (a key without an expiry, which the rule does not ask) and made a root
    // user: what a stolen session did before create_users and update_root_quorum needed the user.
    const attacker = generateApiKeyPair()
    const { activity } = await sub.client.createUsers({
      type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        users: [
          {
            userName: 'helper',
            apiKeys: [{ apiKeyName: 'helper key', publicKey: attacker.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '900' }],
            authenticators: [],
            oauthProviders: [],
            userTags: [],
          },
        ],
      },
    })
    const addedUserId = activity.result.createUsersResult!.userIds[0]!
    await sub.client.updateRootQuorum({
      type: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { threshold: 1, userIds: [sub.userId, addedUserId] },
    })
    const added = guarded({ ...sub, userId: addedUserId }, harness.client(attacker))
    await expect(added.ACTIVITY_TYPE_EXPORT_WALLET()).rejects.toThrow(refused('ACTIVITY_TYPE_EXPORT_WALLET'))
    await expect(added.ACTIVITY_TYPE_CREATE_API_KEYS_V2()).rejects.toThrow(refused('ACTIVITY_TYPE_CREATE_API_KEYS_V2'))
    const enrol = await fetchSubmit(attacker, 'create_totp_factor', {
      type: 'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: addedUserId },
    })
    expect(enrol).toEqual({ status: 403, message: refused('ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR').replace('Turnkey error 7: ', '') })
    expect((await harness.backend.getWallet({ organizationId: sub.organizationId, walletId: sub.walletId })).wallet.exported).toBe(false)
  })

  test("behavior: an organization of two users is a guest's while neither has a way in; another user's passkey ends the exemption for both", async () => {
    const guest = await harness.subOrganization()
    const keys = generateApiKeyPair()
    const { activity } = await (await sessionKeyOf(guest)).createUsers({
      type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
      timestampMs: harness.timestampMs(),
      organizationId: guest.organizationId,
      parameters: {
        users: [
          {
            userName: 'second',
            apiKeys: [{ apiKeyName: 'second key', publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '900' }],
            authenticators: [],
            oauthProviders: [],
            userTags: [],
          },
        ],
      },
    })
    const second = { ...guest, userId: activity.result.createUsersResult!.userIds[0]! }
    const rootSession = await sessionKeyOf(guest)
    expect((await guarded(second, harness.client(keys)).ACTIVITY_TYPE_CREATE_API_KEYS_V2()).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    const challenge = randomBytes(32).toString('base64url')
    await guest.client.createAuthenticators({
      type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
      timestampMs: harness.timestampMs(),
      organizationId: guest.organizationId,
      parameters: {
        userId: guest.userId,
        authenticators: [{ authenticatorName: 'Passkey', challenge, attestation: softwareAuthenticator().register(challenge) }],
      },
    })
    await expect(guarded(second, harness.client(keys)).ACTIVITY_TYPE_CREATE_API_KEYS_V2()).rejects.toThrow(refused('ACTIVITY_TYPE_CREATE_API_KEYS_V2'))
    await expect(guarded(guest, rootSession).ACTIVITY_TYPE_EXPORT_WALLET()).rejects.toThrow(refused('ACTIVITY_TYPE_EXPORT_WALLET'))
  })

  test('behavior: a passkey stamp of the user runs each of them', async () => {
    const sub = await harness.subOrganization()
    const passkey = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    await sub.client.createAuthenticators({
      type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId, authenticators: [{ authenticatorName: 'Passkey', challenge, attestation: passkey.register(challenge) }] },
    })
    useAuthenticator(passkey)
    const stamped = new TurnkeyClient({ baseUrl: harness.kms.url }, new WebauthnStamper({ rpId }))
    for (const [type, submit] of Object.entries(guarded(sub, stamped))) expect((await submit()).activity.status, type).toBe('ACTIVITY_STATUS_COMPLETED')
  })

  test('behavior: a credential from an email code exports within 900 s of the code; at 901 s it is refused like any session key', async () => {
    const sub = await userWithEmail()
    const credential = await otpCredentialOf(sub)
    const exportWallet = guarded(sub, credential).ACTIVITY_TYPE_EXPORT_WALLET
    harness.clock.now += 900_000
    try {
      expect((await exportWallet()).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      harness.clock.now += 1000
      await expect(exportWallet()).rejects.toThrow(refused('ACTIVITY_TYPE_EXPORT_WALLET'))
      // Still a working session for everything else.
      expect((await credential.getWhoami({ organizationId: sub.organizationId })).userId).toBe(sub.userId)
    } finally {
      harness.clock.now -= 901_000
    }
  })

  test('error: 40 concurrent exports with one stale credential are all refused; the wallet is never exported (PostgreSQL in its run)', async () => {
    const sub = await userWithEmail()
    const credential = await otpCredentialOf(sub)
    const before = await stateOf(sub)
    harness.clock.now += 901_000
    try {
      const exports = guarded(sub, credential).ACTIVITY_TYPE_EXPORT_WALLET
      const outcomes = await Promise.allSettled(Array.from({ length: 40 }, () => exports()))
      expect(outcomes.map((outcome) => (outcome.status === 'rejected' ? (outcome.reason as Error).message : 'exported'))).toEqual(
        Array(40).fill(`${refused('ACTIVITY_TYPE_EXPORT_WALLET')} (Details: [])`),
      )
    } finally {
      harness.clock.now -= 901_000
    }
    expect(await stateOf(sub)).toEqual(before)
  })

  test("behavior: a key an email credential registers exports until 900 s after the code, not after the key's creation", async () => {
    const sub = await userWithEmail()
    const credential = await otpCredentialOf(sub)
    try {
      // Registered 600 s after the code, as a backend registers the browser's key after a sign-in.
      harness.clock.now += 600_000
      const session = await sessionKeyOf(sub, credential)
      const exportWallet = guarded(sub, session).ACTIVITY_TYPE_EXPORT_WALLET
      harness.clock.now += 300_000
      expect((await exportWallet()).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      harness.clock.now += 1000
      await expect(exportWallet()).rejects.toThrow(refused('ACTIVITY_TYPE_EXPORT_WALLET'))
    } finally {
      harness.clock.now -= 901_000
    }
  })

  test('error: a chain of keys renews nothing: a key registered by an inheriting key is fresh only until the same instant', async () => {
    const sub = await userWithEmail()
    const credential = await otpCredentialOf(sub)
    try {
      harness.clock.now += 300_000
      const first = await sessionKeyOf(sub, credential)
      harness.clock.now += 300_000
      const second = await sessionKeyOf(sub, first)
      // A login the second key opens inherits the same moment too.
      const loginKeys = generateApiKeyPair()
      await second.stampLogin({
        type: 'ACTIVITY_TYPE_STAMP_LOGIN',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { publicKey: loginKeys.apiPublicKey, expirationSeconds: '900' },
      })
      const login = harness.client(loginKeys)
      harness.clock.now += 300_000
      for (const client of [second, login]) expect((await guarded(sub, client).ACTIVITY_TYPE_EXPORT_WALLET()).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      harness.clock.now += 1000
      for (const client of [first, second, login])
        await expect(guarded(sub, client).ACTIVITY_TYPE_CREATE_API_KEYS_V2()).rejects.toThrow(refused('ACTIVITY_TYPE_CREATE_API_KEYS_V2'))
    } finally {
      harness.clock.now -= 901_000
    }
  })

  test('behavior: a key a passkey stamp registers is fresh for 900 s from that stamp', async () => {
    const sub = await harness.subOrganization()
    const passkey = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    await sub.client.createAuthenticators({
      type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId, authenticators: [{ authenticatorName: 'Passkey', challenge, attestation: passkey.register(challenge) }] },
    })
    useAuthenticator(passkey)
    // It outlives the window: past it the key is a plain session, not an expired one.
    const session = await sessionKeyOf(sub, new TurnkeyClient({ baseUrl: harness.kms.url }, new WebauthnStamper({ rpId })), '3600')
    const exportWallet = guarded(sub, session).ACTIVITY_TYPE_EXPORT_WALLET
    harness.clock.now += 900_000
    try {
      expect((await exportWallet()).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      harness.clock.now += 1000
      await expect(exportWallet()).rejects.toThrow(refused('ACTIVITY_TYPE_EXPORT_WALLET'))
    } finally {
      harness.clock.now -= 901_000
    }
  })

  test('error: a stale session key may not give the user a new email (update_user_email, update_user); nothing changes, and a code to the new address opens nothing', async () => {
    const sub = await userWithEmail()
    const stale = await sessionKeyOf(sub)
    const attacker = `attacker.${randomBytes(6).toString('hex')}@example.test`
    const common = () => ({ timestampMs: harness.timestampMs(), organizationId: sub.organizationId })
    const before = await stateOf(sub)
    await expect(
      stale.updateUserEmail({ ...common(), type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL', parameters: { userId: sub.userId, userEmail: attacker } }),
    ).rejects.toThrow(refused('ACTIVITY_TYPE_UPDATE_USER_EMAIL'))
    await expect(stale.updateUser({ ...common(), type: 'ACTIVITY_TYPE_UPDATE_USER', parameters: { userId: sub.userId, userEmail: attacker } })).rejects.toThrow(
      refused('ACTIVITY_TYPE_UPDATE_USER'),
    )
    expect(await stateOf(sub)).toEqual(before)
    expect((await harness.backend.getUser({ organizationId: sub.organizationId, userId: sub.userId })).user.userEmail).toBe(sub.email)
    await expect(
      harness.backend.initOtpAuth({
        ...common(),
        type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
        parameters: { otpType: 'OTP_TYPE_EMAIL', contact: attacker, appName: 'Demo' },
      }),
    ).rejects.toThrow(`Turnkey error 5: no user with email ${attacker} in organization ${sub.organizationId}`)
    // What adds no way in still runs from the stale key: the email it has (in another case), and a name.
    for (const parameters of [
      { userId: sub.userId, userEmail: sub.email.toUpperCase() },
      { userId: sub.userId, userName: 'renamed' },
    ])
      expect((await stale.updateUser({ ...common(), type: 'ACTIVITY_TYPE_UPDATE_USER', parameters })).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  })

  test("behavior: a credential from an email code sets a new email within 900 s; the key the organization was created with (never expiring, as the app backend's delegated user's) clears it", async () => {
    const sub = await userWithEmail()
    const credential = await otpCredentialOf(sub)
    const next = `next.${randomBytes(6).toString('hex')}@example.test`
    const setEmail = (client: TurnkeyClient, userEmail: string) =>
      client.updateUserEmail({
        type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { userId: sub.userId, userEmail },
      })
    const emailOf = async () => (await harness.backend.getUser({ organizationId: sub.organizationId, userId: sub.userId })).user.userEmail
    harness.clock.now += 900_000
    try {
      expect((await setEmail(credential, next)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      expect(await emailOf()).toBe(next)
      harness.clock.now += 1000
      await expect(setEmail(credential, sub.email)).rejects.toThrow(refused('ACTIVITY_TYPE_UPDATE_USER_EMAIL'))
      expect(await emailOf()).toBe(next)
      expect((await setEmail(sub.client, '')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      expect(await emailOf()).toBeUndefined()
    } finally {
      harness.clock.now -= 901_000
    }
  })

  test("behavior: a guest's stale key links the guest's first email (no other way in to verify by); then a new one needs a fresh verification", async () => {
    const guest = await harness.subOrganization()
    const stale = await sessionKeyOf(guest)
    const setEmail = (userEmail: string) =>
      stale.updateUserEmail({
        type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
        timestampMs: harness.timestampMs(),
        organizationId: guest.organizationId,
        parameters: { userId: guest.userId, userEmail },
      })
    const first = `guest.${randomBytes(6).toString('hex')}@example.test`
    expect((await setEmail(first)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect((await harness.backend.getUser({ organizationId: guest.organizationId, userId: guest.userId })).user.userEmail).toBe(first)
    await expect(setEmail(`second.${first}`)).rejects.toThrow(refused('ACTIVITY_TYPE_UPDATE_USER_EMAIL'))
  })

  test('behavior: the window is a setting; an emailed credential (email_auth) counts as an email code', async () => {
    const short = await startKms({ freshVerificationSeconds: 60 })
    try {
      const email = `fresh.${randomBytes(6).toString('hex')}@example.test`
      const withEmail = await short.subOrganization({ email })
      const target = generateP256KeyPair()
      await short.backend.emailAuth({
        type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3',
        timestampMs: short.timestampMs(),
        organizationId: withEmail.organizationId,
        parameters: { email, targetPublicKey: target.publicKeyUncompressed, emailCustomization: { appName: 'Demo' } },
      })
      const inbox = (await (await fetch(`${short.kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
      const bundle = /for Demo:\n\n(\S+)\n/.exec(inbox.messages.find((message) => message.to === email)!.text)![1]!
      const apiPrivateKey = decryptCredentialBundle(bundle, target.privateKey)
      const emailed = new TurnkeyClient(
        { baseUrl: short.kms.url },
        new ApiKeyStamper({ apiPrivateKey, apiPublicKey: Buffer.from(getPublicKey(apiPrivateKey, true)).toString('hex') }),
      )
      const login = () =>
        emailed.stampLogin({
          type: 'ACTIVITY_TYPE_STAMP_LOGIN',
          timestampMs: short.timestampMs(),
          organizationId: withEmail.organizationId,
          parameters: { publicKey: generateApiKeyPair().apiPublicKey, expirationSeconds: '900' },
        })
      short.clock.now += 60_000
      expect((await login()).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      short.clock.now += 1000
      await expect(login()).rejects.toThrow(refused('ACTIVITY_TYPE_STAMP_LOGIN', 60))
    } finally {
      await short.kms.stop()
    }
  })
})
