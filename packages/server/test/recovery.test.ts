import { decryptCredentialBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto'
import { describe, expect, test } from 'vitest'
import { LIMITS, RECOVERY_CODE_SECONDS } from '../src/index.js'
import { answer, cookieOf, generateApiKeyPair, newEmail, useBackend } from './backend.js'

// Email recovery as the recovery frame drives it: the backend asks the kms to email a recovery
// credential encrypted to the frame's key; the frame opens it (here @turnkey/crypto, as the frame
// does), stamps stamp_login with it naming the parent organization, and the JWT signs the browser in.

const { t, post, mailTo, passkeySignup, signedUpWithPasskey, signedInByEmail, stampLogin, withKey, session } = useBackend()

/**
 * The recovery frame's side: opens the emailed bundle with its embedded key into a stamping client.
 * Email recovery mails an API key (email_auth: "Sign in to …"), passkey recovery a recover-user key.
 */
async function recoveryCredential(email: string, embeddedPrivateKey: string, subject = 'Sign in to Latchkey Demo') {
  const [mail] = await mailTo(email)
  expect(mail!.subject).toBe(subject)
  const apiPrivateKey = decryptCredentialBundle(mail!.text.split('\n')[2]!, embeddedPrivateKey)
  return withKey({ apiPrivateKey, apiPublicKey: Buffer.from(getPublicKey(apiPrivateKey, true)).toString('hex') })
}

describe('POST /auth/recovery/start', () => {
  test('default: the emailed credential stamps stamp_login; /auth/login with kind recovery signs in until the JWT expires', async () => {
    const email = newEmail()
    const account = await signedInByEmail(email)
    const embedded = generateP256KeyPair()
    const start = await post('/auth/recovery/start', { email, targetPublicKey: embedded.publicKeyUncompressed })
    expect(await answer(start)).toEqual([200, {}])

    const recovery = await recoveryCredential(email, embedded.privateKey)
    // The credential names its user: the browser learns the ids from the kms, not from the backend.
    expect(await recovery.getWhoami({ organizationId: t.parentOrganizationId })).toMatchObject({
      organizationId: account.organizationId,
      userId: account.userId,
    })
    const sessionKey = generateApiKeyPair()
    const jwt = await stampLogin(recovery, sessionKey.apiPublicKey)
    const login = await post('/auth/login', { session: jwt, kind: 'recovery' })
    const at = t.clock
    expect(await answer(login)).toEqual([200, { organizationId: account.organizationId, userId: account.userId, address: account.address }])
    // A recovery session lasts as long as its JWT (900 s here), not the 7 days of a sign-in.
    const { exp } = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as { exp: number }
    expect(login.headers.get('set-cookie')).toMatch(
      new RegExp(`^__Host-latchkey_session=[\\w-]{43}; Max-Age=${Math.floor((exp * 1000 - at) / 1000)}; Path=/; HttpOnly; Secure; SameSite=Strict$`),
    )
    expect(await answer(await session(cookieOf(login)))).toEqual([
      200,
      {
        email,
        organizationId: account.organizationId,
        userId: account.userId,
        address: account.address,
        kind: 'recovery',
        expiresAt: new Date(exp * 1000).toISOString(),
      },
    ])
    expect(await withKey(sessionKey).getWhoami({ organizationId: account.organizationId })).toMatchObject({ userId: account.userId })
  })

  test('behavior: an email account recovers too, with a compressed target key; the credential works 900 seconds', async () => {
    const email = newEmail()
    const account = await signedInByEmail(email)
    const embedded = generateP256KeyPair()
    expect(await answer(await post('/auth/recovery/start', { email: email.toUpperCase(), targetPublicKey: embedded.publicKey }))).toEqual([200, {}])
    const recovery = await recoveryCredential(email, embedded.privateKey)
    t.clock += (RECOVERY_CODE_SECONDS - 1) * 1000
    try {
      const jwt = await stampLogin(recovery, generateApiKeyPair().apiPublicKey)
      expect(await answer(await post('/auth/login', { session: jwt, kind: 'recovery' }))).toEqual([
        200,
        { organizationId: account.organizationId, userId: account.userId, address: account.address },
      ])
      t.clock += 2000
      await expect(stampLogin(recovery, generateApiKeyPair().apiPublicKey)).rejects.toThrow('expired api key publicKey')
    } finally {
      t.clock -= (RECOVERY_CODE_SECONDS + 1) * 1000
    }
  })

  test('behavior: recoveryType picks the credential (SPEC §5): an API key for email, a recover-user key for passkey, each valid 900 s', async () => {
    const email = newEmail()
    const account = await signedInByEmail(email)
    const recoveryKeys = async (recovery: Awaited<ReturnType<typeof recoveryCredential>>) =>
      (await recovery.getApiKeys({ organizationId: account.organizationId, userId: account.userId })).apiKeys
        .filter((key) => ['CREDENTIAL_TYPE_EMAIL_AUTH_KEY_P256', 'CREDENTIAL_TYPE_RECOVER_USER_KEY_P256'].includes(key.credential.type))
        .map((key) => [key.credential.type, Number(key.expirationSeconds)])
    let types: (string | number)[][] = []
    for (const [recoveryType, subject] of [
      ['email', 'Sign in to Latchkey Demo'],
      ['passkey', 'Recover your Latchkey Demo account'],
    ] as const) {
      const embedded = generateP256KeyPair()
      const start = await post('/auth/recovery/start', { email, targetPublicKey: embedded.publicKeyUncompressed, recoveryType })
      expect(await answer(start)).toEqual([200, {}])
      types = await recoveryKeys(await recoveryCredential(email, embedded.privateKey, subject))
    }
    expect(types).toEqual([
      ['CREDENTIAL_TYPE_EMAIL_AUTH_KEY_P256', RECOVERY_CODE_SECONDS],
      ['CREDENTIAL_TYPE_RECOVER_USER_KEY_P256', RECOVERY_CODE_SECONDS],
    ])
  })

  test('behavior: an email with no account is answered as a known one, and nothing is sent', async () => {
    const known = newEmail()
    await signedInByEmail(known)
    const unknown = newEmail()
    for (const recoveryType of ['email', 'passkey'] as const) {
      const answers = []
      for (const email of [known, unknown]) {
        const response = await post('/auth/recovery/start', { email, targetPublicKey: generateP256KeyPair().publicKeyUncompressed, recoveryType })
        answers.push([response.status, response.headers.get('content-type'), await response.text()])
      }
      expect(answers[1]).toEqual(answers[0])
      expect(answers[0]).toEqual([200, 'application/json', '{}'])
    }
    expect(await mailTo(unknown)).toEqual([])
    // A passkey-only account has no email to recover by; a sign-up naming an email without its code makes no account.
    const passkeyOnly = newEmail()
    await signedUpWithPasskey({ passkeyIdentifier: passkeyOnly })
    expect((await passkeySignup({ email: passkeyOnly })).response.status).toBe(400)
    expect(await answer(await post('/auth/recovery/start', { email: passkeyOnly, targetPublicKey: generateP256KeyPair().publicKeyUncompressed }))).toEqual([
      200,
      {},
    ])
    expect(await mailTo(passkeyOnly)).toEqual([])
  })

  test('error: bad input is refused and nothing is sent', async () => {
    const email = newEmail()
    await signedUpWithPasskey({ email })
    const cases: [object, string][] = [
      [{ email, targetPublicKey: 'abc' }, 'targetPublicKey: must be a P-256 public key in hex'],
      [{ email, targetPublicKey: `04${'11'.repeat(64)}` }, 'targetPublicKey: is not a point on P-256'],
      [{ email: 'nobody', targetPublicKey: generateP256KeyPair().publicKey }, 'email: Invalid email address'],
      [{ email, targetPublicKey: generateP256KeyPair().publicKey, recoveryType: 'sms' }, 'recoveryType: Invalid option: expected one of "email"|"passkey"'],
    ]
    for (const [body, message] of cases)
      expect(await answer(await post('/auth/recovery/start', body))).toEqual([400, { error: { code: 'invalid_request', message } }])
    // The sign-up's code only.
    expect((await mailTo(email)).map((mail) => mail.subject)).toEqual(['Your Latchkey Demo sign-in code'])
  })

  test(`error: more than ${LIMITS.perEmail} recovery emails per email in ten minutes`, async () => {
    const email = newEmail()
    await signedInByEmail(email)
    const targetPublicKey = generateP256KeyPair().publicKeyUncompressed
    for (let i = 0; i < LIMITS.perEmail; i++)
      expect((await post('/auth/recovery/start', { email, targetPublicKey }, { 'x-test-ip': `10.1.0.${i}` })).status).toBe(200)
    const limited = await post('/auth/recovery/start', { email, targetPublicKey }, { 'x-test-ip': '10.1.1.1' })
    expect(await answer(limited)).toEqual([
      429,
      { error: { code: 'rate_limited', message: 'Too many recovery emails sent to this email; try again in 10 minutes' } },
    ])
    expect(limited.headers.get('retry-after')).toBe('600')
    // The sign-in code, and one recovery email per allowed request.
    expect(await mailTo(email)).toHaveLength(LIMITS.perEmail + 1)
  })
})
