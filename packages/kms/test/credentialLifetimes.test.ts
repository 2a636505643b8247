import { generateP256KeyPair } from '@turnkey/crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair } from '../src/index.js'
import { startKms } from './harness.js'

// No credential outlives the kms's maximum lifetime (86400 s by default), and no key in a
// sub-organization lives for ever (security review H1); `invalidateExisting` ends a user's earlier
// sign-ins of the same kind (L5).

let harness: Awaited<ReturnType<typeof startKms>>
beforeAll(async () => {
  harness = await startKms()
})
afterAll(() => harness.kms.stop())

const tooLong = (max: number, field = 'expirationSeconds') =>
  `Turnkey error 3: invalid parameters: ${field}: must be at most ${max} seconds, the longest lifetime this kms gives a credential`

async function keysOf(organizationId: string, userId: string) {
  return (await harness.backend.getApiKeys({ organizationId, userId })).apiKeys
}

/** A sub-organization whose root user has an email (for the sign-ins the parent starts). */
async function userWithEmail() {
  const email = `user.${generateApiKeyPair().apiPublicKey.slice(2, 14)}@example.test`
  return { ...(await harness.subOrganization({ email })), email }
}

type Inbox = { messages: { to: string; text: string }[] }
async function codeMailedTo(email: string) {
  const inbox = (await (await fetch(`${harness.kms.url}/dev/mailbox.json`)).json()) as Inbox
  return /sign-in code is (\w+)\./.exec(inbox.messages.find((message) => message.to === email)!.text)![1]!
}

const stampLogin = (sub: Awaited<ReturnType<typeof harness.subOrganization>>, expirationSeconds?: string, invalidateExisting?: boolean) =>
  sub.client.stampLogin({
    type: 'ACTIVITY_TYPE_STAMP_LOGIN',
    timestampMs: harness.timestampMs(),
    organizationId: sub.organizationId,
    parameters: {
      publicKey: generateApiKeyPair().apiPublicKey,
      ...(expirationSeconds ? { expirationSeconds } : {}),
      ...(invalidateExisting === undefined ? {} : { invalidateExisting }),
    },
  })

const createApiKeys = (sub: Awaited<ReturnType<typeof harness.subOrganization>>, expirationSeconds?: string) =>
  sub.client.createApiKeys({
    type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
    timestampMs: harness.timestampMs(),
    organizationId: sub.organizationId,
    parameters: {
      userId: sub.userId,
      apiKeys: [
        {
          apiKeyName: 'extra',
          publicKey: generateApiKeyPair().apiPublicKey,
          curveType: 'API_KEY_CURVE_P256',
          ...(expirationSeconds ? { expirationSeconds } : {}),
        },
      ],
    },
  })

describe('credential lifetimes', () => {
  test('error: refuses a 100-year stamp_login, and registers nothing', async () => {
    const sub = await harness.subOrganization()
    const before = await keysOf(sub.organizationId, sub.userId)
    await expect(stampLogin(sub, '3153600000')).rejects.toThrow(tooLong(86_400))
    expect(await keysOf(sub.organizationId, sub.userId)).toEqual(before)
  })

  test('behavior: the maximum itself is given; one second more is refused (stamp_login, read-write session, API key)', async () => {
    const sub = await harness.subOrganization()
    expect((await stampLogin(sub, '86400')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    await expect(stampLogin(sub, '86401')).rejects.toThrow(tooLong(86_400))
    const session = (expirationSeconds: string) =>
      sub.client.createReadWriteSession({
        type: 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { targetPublicKey: generateP256KeyPair().publicKeyUncompressed, expirationSeconds },
      })
    expect((await session('86400')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    await expect(session('86401')).rejects.toThrow(tooLong(86_400))
    expect((await createApiKeys(sub, '86400')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    await expect(createApiKeys(sub, '86401')).rejects.toThrow(tooLong(86_400, 'apiKeys.0.expirationSeconds'))
    expect((await keysOf(sub.organizationId, sub.userId)).map((key) => key.expirationSeconds ?? 'never').sort()).toEqual(['86400', '86400', '86400', 'never'])
  })

  test('error: a sub-organization’s create_api_keys without an expiry is refused; the parent organization’s own key may have none', async () => {
    const sub = await harness.subOrganization()
    const before = await keysOf(sub.organizationId, sub.userId)
    await expect(createApiKeys(sub)).rejects.toThrow(
      'Turnkey error 3: invalid parameters: apiKeys.0.expirationSeconds: is required in a sub-organization, where no key may live for ever',
    )
    expect(await keysOf(sub.organizationId, sub.userId)).toEqual(before)
    const { activity } = await harness.backend.createApiKeys({
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      timestampMs: harness.timestampMs(),
      organizationId: harness.parent.organizationId,
      parameters: {
        userId: harness.parent.userId,
        apiKeys: [{ apiKeyName: 'second backend key', publicKey: generateApiKeyPair().apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
      },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  })

  test('error: a sub-organization’s create_users and create_api_only_users refuse a key without an expiry, and add no user; the parent organization’s may', async () => {
    const sub = await harness.subOrganization()
    const usersBefore = (await sub.client.getUsers({ organizationId: sub.organizationId })).users.length
    const key = (expirationSeconds?: string) => ({
      apiKeyName: 'added',
      publicKey: generateApiKeyPair().apiPublicKey,
      curveType: 'API_KEY_CURVE_P256' as const,
      ...(expirationSeconds ? { expirationSeconds } : {}),
    })
    const createUsers = (client: typeof sub.client, organizationId: string, expirationSeconds?: string) =>
      client.createUsers({
        type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
        timestampMs: harness.timestampMs(),
        organizationId,
        parameters: { users: [{ userName: 'added', apiKeys: [key(expirationSeconds)], authenticators: [], oauthProviders: [], userTags: [] }] },
      })
    const createApiOnlyUsers = (client: typeof sub.client, organizationId: string, expirationSeconds?: string) =>
      client.createApiOnlyUsers({
        type: 'ACTIVITY_TYPE_CREATE_API_ONLY_USERS',
        timestampMs: harness.timestampMs(),
        organizationId,
        parameters: { apiOnlyUsers: [{ userName: 'added', userTags: [], apiKeys: [key(expirationSeconds)] }] },
      })
    await expect(createUsers(sub.client, sub.organizationId)).rejects.toThrow(
      'Turnkey error 3: invalid parameters: users.0.apiKeys.0.expirationSeconds: is required in a sub-organization, where no key may live for ever',
    )
    await expect(createApiOnlyUsers(sub.client, sub.organizationId)).rejects.toThrow(
      'Turnkey error 3: invalid parameters: apiOnlyUsers.0.apiKeys.0.expirationSeconds: is required in a sub-organization, where no key may live for ever',
    )
    await expect(createUsers(sub.client, sub.organizationId, '86401')).rejects.toThrow(tooLong(86_400, 'users.0.apiKeys.0.expirationSeconds'))
    expect((await sub.client.getUsers({ organizationId: sub.organizationId })).users).toHaveLength(usersBefore)
    expect((await createUsers(sub.client, sub.organizationId, '86400')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect((await createApiOnlyUsers(sub.client, sub.organizationId, '3600')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect((await createUsers(harness.backend, harness.parent.organizationId)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect((await createApiOnlyUsers(harness.backend, harness.parent.organizationId)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  })

  test('error: the sign-ins a parent starts are capped too (email_auth, otp_auth, oauth, oauth_login), before anything is checked or written', async () => {
    const user = await userWithEmail()
    const target = generateP256KeyPair().publicKeyUncompressed
    const common = { timestampMs: harness.timestampMs(), organizationId: user.organizationId }
    await expect(
      harness.backend.emailAuth({
        ...common,
        type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3',
        parameters: { email: user.email, targetPublicKey: target, expirationSeconds: '86401', emailCustomization: { appName: 'x' } },
      }),
    ).rejects.toThrow(tooLong(86_400))
    await expect(
      harness.backend.otpAuth({
        ...common,
        type: 'ACTIVITY_TYPE_OTP_AUTH',
        parameters: { otpId: 'no-such-code', otpCode: '000000', targetPublicKey: target, expirationSeconds: '86401' },
      }),
    ).rejects.toThrow(tooLong(86_400))
    await expect(
      harness.backend.oauth({
        ...common,
        type: 'ACTIVITY_TYPE_OAUTH',
        parameters: { oidcToken: 'not.a.token', targetPublicKey: target, expirationSeconds: '86401' },
      }),
    ).rejects.toThrow(tooLong(86_400))
    await expect(
      harness.backend.oauthLogin({
        ...common,
        type: 'ACTIVITY_TYPE_OAUTH_LOGIN',
        parameters: { oidcToken: 'not.a.token', publicKey: generateApiKeyPair().apiPublicKey, expirationSeconds: '86401' },
      }),
    ).rejects.toThrow(tooLong(86_400))
    expect(await keysOf(user.organizationId, user.userId)).toHaveLength(1)
  })

  test('behavior: the maximum is a setting', async () => {
    const short = await startKms({ maxCredentialSeconds: 3600 })
    try {
      const sub = await short.subOrganization()
      const login = (expirationSeconds: string) =>
        sub.client.stampLogin({
          type: 'ACTIVITY_TYPE_STAMP_LOGIN',
          timestampMs: short.timestampMs(),
          organizationId: sub.organizationId,
          parameters: { publicKey: generateApiKeyPair().apiPublicKey, expirationSeconds },
        })
      expect((await login('3600')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      await expect(login('3601')).rejects.toThrow(tooLong(3600))
    } finally {
      await short.kms.stop()
    }
  })
})

describe('invalidateExisting', () => {
  test('behavior: stamp_login with invalidateExisting deletes the user’s earlier login keys, and only those', async () => {
    const sub = await harness.subOrganization()
    await stampLogin(sub)
    await stampLogin(sub)
    const loginKeys = async () => (await keysOf(sub.organizationId, sub.userId)).filter((key) => key.credential.type === 'CREDENTIAL_TYPE_LOGIN')
    expect(await loginKeys()).toHaveLength(2)
    const { activity } = await stampLogin(sub, undefined, true)
    const kept = await keysOf(sub.organizationId, sub.userId)
    expect(kept.map((key) => [key.credential.type, key.credential.publicKey]).sort()).toEqual([
      ['CREDENTIAL_TYPE_API_KEY_P256', sub.keys.apiPublicKey],
      ['CREDENTIAL_TYPE_LOGIN', activity.intent.stampLoginIntent!.publicKey],
    ])
    // Without it, earlier logins stay.
    await stampLogin(sub, undefined, false)
    expect(await loginKeys()).toHaveLength(2)
  })

  test('behavior: otp_auth with invalidateExisting deletes the user’s earlier OTP credentials', async () => {
    const user = await userWithEmail()
    const signIn = async (invalidateExisting: boolean) => {
      const { activity } = await harness.backend.initOtpAuth({
        type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
        timestampMs: harness.timestampMs(),
        organizationId: user.organizationId,
        parameters: { otpType: 'OTP_TYPE_EMAIL', contact: user.email, appName: 'Latchkey Demo' },
      })
      const otpId = activity.result.initOtpAuthResultV2!.otpId
      const signedIn = await harness.backend.otpAuth({
        type: 'ACTIVITY_TYPE_OTP_AUTH',
        timestampMs: harness.timestampMs(),
        organizationId: user.organizationId,
        parameters: { otpId, otpCode: await codeMailedTo(user.email), targetPublicKey: generateP256KeyPair().publicKeyUncompressed, invalidateExisting },
      })
      return signedIn.activity.result.otpAuthResult!.apiKeyId
    }
    const otpKeys = async () =>
      (await keysOf(user.organizationId, user.userId))
        .filter((key) => key.credential.type === 'CREDENTIAL_TYPE_OTP_AUTH_KEY_P256')
        .map((key) => key.apiKeyId)
        .sort()
    const first = await signIn(false)
    const second = await signIn(false)
    expect(await otpKeys()).toEqual([first, second].sort())
    const third = await signIn(true)
    expect(await otpKeys()).toEqual([third])
  })
})
