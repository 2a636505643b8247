import { randomBytes } from 'node:crypto'
import { describe, expect, test } from 'vitest'
import { createServerApp, openStore } from '../src/index.js'
import { answer, cookieOf, generateApiKeyPair, jwtSigner, newEmail, origin, softwareAuthenticator, useBackend } from './backend.js'

// Passkey sign-up and sign-in as the browser drives them: a software authenticator answers
// @turnkey/webauthn-stamper, the kms verifies the attestation and the stamps, the session JWT comes
// from the kms's own stamp_login.

const {
  t,
  post,
  mailTo,
  frameAnswer,
  passkeySignup,
  emailProof,
  signedInByEmail,
  signedUpWithPasskey,
  oauthSignIn,
  stampLogin,
  withKey,
  withPasskey,
  session,
} = useBackend({ oidc: true })
const UNKNOWN_KEY = 'Turnkey error 16: could not find public key in organization or its parent organization'

/** Nothing of a refused sign-up exists: no account, the session key and the passkey unknown to the kms. */
async function expectNothingRegistered(authenticator: ReturnType<typeof softwareAuthenticator>, sessionKey: { apiPublicKey: string; apiPrivateKey: string }) {
  expect(await t.store.passkeyAccount(authenticator.credentialId)).toBeUndefined()
  await expect(withKey(sessionKey).getWhoami({ organizationId: t.parentOrganizationId })).rejects.toThrow(UNKNOWN_KEY)
  await expect(withPasskey(authenticator).getWhoami({ organizationId: t.parentOrganizationId })).rejects.toThrow(
    `Turnkey error 16: could not find credential ${authenticator.credentialId} in organization or its parent organization`,
  )
}

describe('POST /auth/passkey/signup', () => {
  test('default: an email proven by its code; a sub-organization with the passkey, the session key and the wallet; the session cookie', async () => {
    const email = newEmail()
    const { response, authenticator, sessionKey } = await passkeySignup({ email, ...(await emailProof(email)) })
    expect(response.status).toBe(200)
    expect(response.headers.get('access-control-allow-origin')).toBe(origin)
    const account = (await response.json()) as { organizationId: string; userId: string; address: string }
    expect(account).toEqual({ organizationId: expect.any(String), userId: expect.any(String), address: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/) })
    expect(response.headers.get('set-cookie')).toMatch(/^__Host-latchkey_session=[\w-]{43}; Max-Age=604800; Path=\/; HttpOnly; Secure; SameSite=Strict$/)
    // The email was proven: it is the session's, the account's and the kms user's.
    expect(await answer(await session(cookieOf(response)))).toEqual([200, { email, ...account, kind: 'passkey', expiresAt: expect.any(String) }])
    const createdAt = expect.any(Number)
    expect(await t.store.passkeyAccount(authenticator.credentialId)).toEqual({
      credential_id: authenticator.credentialId,
      organization_id: account.organizationId,
      user_id: account.userId,
      address: account.address,
      unverified_email: null,
      passkey_identifier: null,
      created_at: createdAt,
    })
    expect(await t.store.account(email)).toEqual({
      email,
      organization_id: account.organizationId,
      user_id: account.userId,
      address: account.address,
      created_at: createdAt,
    })

    // The browser's session key works at once, as the root user, for 900 seconds.
    const user = withKey(sessionKey)
    expect(await user.getWhoami({ organizationId: account.organizationId })).toMatchObject({ userId: account.userId, username: email })
    const { apiKeys } = await user.getApiKeys({ organizationId: account.organizationId, userId: account.userId })
    expect(apiKeys.map((key) => [key.apiKeyName, key.credential.publicKey, key.expirationSeconds])).toEqual([['session', sessionKey.apiPublicKey, '900']])
    const { user: root } = await user.getUser({ organizationId: account.organizationId, userId: account.userId })
    expect([root.userName, root.userEmail]).toEqual([email, email])
    const { authenticators } = await user.getAuthenticators({ organizationId: account.organizationId, userId: account.userId })
    expect(authenticators.map((a) => [a.authenticatorName, a.credentialId, a.transports])).toEqual([
      ['Passkey', authenticator.credentialId, ['AUTHENTICATOR_TRANSPORT_INTERNAL']],
    ])
    const { wallets } = await user.getWallets({ organizationId: account.organizationId })
    expect(wallets.map((wallet) => wallet.walletName)).toEqual(['Turnkey HD'])
    const { accounts } = await user.getWalletAccounts({ organizationId: account.organizationId, walletId: wallets[0]!.walletId })
    expect(accounts.map((a) => [a.path, a.addressFormat, a.address])).toEqual([["m/44'/60'/0'/0/0", 'ADDRESS_FORMAT_ETHEREUM', account.address]])
    t.clock += 900_000
    try {
      await expect(user.getWhoami({ organizationId: account.organizationId })).rejects.toThrow(`expired api key publicKey: ${sessionKey.apiPublicKey}`)
    } finally {
      t.clock -= 900_000
    }
  })

  test('behavior: a passkeyIdentifier alone names the user; the session has no email; sessionSeconds sets the key’s lifetime', async () => {
    const { response, sessionKey } = await passkeySignup({ passkeyIdentifier: 'Ada’s laptop', sessionSeconds: 120 })
    const account = (await response.json()) as { organizationId: string; userId: string; address: string }
    expect(await answer(await session(cookieOf(response)))).toEqual([200, { email: null, ...account, kind: 'passkey', expiresAt: expect.any(String) }])
    const user = withKey(sessionKey)
    expect(await user.getWhoami({ organizationId: account.organizationId })).toMatchObject({ username: 'Ada’s laptop' })
    t.clock += 120_000
    try {
      await expect(user.getWhoami({ organizationId: account.organizationId })).rejects.toThrow('expired api key')
    } finally {
      t.clock -= 120_000
    }
  })

  test('error: a passkey sign-up with someone else’s email and no code is refused and writes nothing (security review H2)', async () => {
    const victim = newEmail()
    const { response, authenticator, sessionKey } = await passkeySignup({ email: victim })
    expect(await answer(response)).toEqual([
      400,
      {
        error: {
          code: 'email_unverified',
          message: 'An email needs its code: send the otpId of /auth/passkey/signup/start and the encryptedOtpBundle the consent frame sealed',
        },
      },
    ])
    expect(response.headers.get('set-cookie')).toBeNull()
    await expectNothingRegistered(authenticator, sessionKey)
    expect(await t.store.account(victim)).toBeUndefined()
    // The victim's own sign-ins make the victim's account, which the attacker's passkey never reaches.
    const byEmail = await signedInByEmail(victim)
    const byGoogle = (await (await oauthSignIn(victim)).response.json()) as { organizationId: string }
    expect(byGoogle.organizationId).toBe(byEmail.organizationId)
    const { users } = await t.backend.getUsers({ organizationId: byEmail.organizationId })
    expect(users.flatMap((user) => user.authenticators.map((authenticator) => authenticator.credentialId))).toEqual([])
  })

  test('error: a code sent to another email, a wrong, spent or expired code, an email sign-in’s code: refused, nothing written', async () => {
    const victim = newEmail()
    const attempt = async (proof: { otpId: string; encryptedOtpBundle: string }, email = victim) => {
      const { response, authenticator, sessionKey } = await passkeySignup({ email, ...proof })
      expect(response.headers.get('set-cookie')).toBeNull()
      await expectNothingRegistered(authenticator, sessionKey)
      return answer(response)
    }
    // The attacker proves their own address, and sends that proof with the victim's.
    expect(await attempt(await emailProof(newEmail()))).toEqual([400, { error: { code: 'email_mismatch', message: 'This code was sent to another email' } }])
    expect(await attempt(await emailProof(victim, '000000'))).toEqual([400, { error: { code: 'invalid_code', message: 'invalid code: 2 attempts left' } }])
    const expiring = await emailProof(victim)
    t.clock += 300_000
    try {
      expect(await attempt(expiring)).toEqual([400, { error: { code: 'invalid_code', message: 'this code has expired' } }])
    } finally {
      t.clock -= 300_000
    }
    // An email sign-in's code is a sub-organization's: it proves nothing here.
    const start = await post('/auth/email/start', { email: victim })
    const sent = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
    const code = /sign-in code is (\d{6})\./.exec((await mailTo(victim))[0]!.text)![1]!
    const { otpId, encryptedOtpBundle } = await frameAnswer(sent, code)
    const unknown = [400, { error: { code: 'unknown_code', message: 'This code was not sent, or has been used; ask for a new one' } }]
    expect(await attempt({ otpId, encryptedOtpBundle })).toEqual(unknown)
    expect(await t.store.account(victim)).toMatchObject({ email: victim })
    // A proof signs up once; the same again is refused.
    const owner = newEmail()
    const proof = await emailProof(owner)
    expect((await passkeySignup({ email: owner, ...proof })).response.status).toBe(200)
    expect(await attempt(proof, owner)).toEqual(unknown)
    // And a sign-up's code signs nobody in by email.
    const signupCode = await post('/auth/passkey/signup/start', { email: owner })
    const signupSent = (await signupCode.json()) as { otpId: string; otpEncryptionTargetBundle: string }
    const ownerCode = /sign-in code is (\d{6})\./.exec((await mailTo(owner))[0]!.text)![1]!
    expect(await answer(await post('/auth/email/verify', await frameAnswer(signupSent, ownerCode)))).toEqual(unknown)
  })

  test('behavior: a proven email is one account: email and Google sign-ins of it land in the passkey’s sub-organization', async () => {
    const email = newEmail()
    const account = await signedUpWithPasskey({ email: email.toUpperCase() })
    const byEmail = await signedInByEmail(email)
    const byGoogle = (await (await oauthSignIn(email)).response.json()) as { organizationId: string; userId: string; address: string }
    expect(byEmail).toMatchObject({ organizationId: account.organizationId, userId: account.userId, address: account.address })
    expect(byGoogle).toEqual({ organizationId: account.organizationId, userId: account.userId, address: account.address, sessionExpiresAt: expect.any(String) })
    // A later passkey sign-in knows the email too.
    const jwt = await stampLogin(withPasskey(account.authenticator), generateApiKeyPair().apiPublicKey)
    expect(await answer(await session(cookieOf(await post('/auth/login', { session: jwt }))))).toMatchObject([200, { email, kind: 'passkey' }])
  })

  test('error: an email that has an account already is told so, after its code, and nothing is written', async () => {
    const email = newEmail()
    const byEmail = await signedInByEmail(email)
    // The start answers alike for an email with an account and one without (review L2).
    const fresh = await post('/auth/passkey/signup/start', { email: newEmail() })
    expect(Object.keys((await fresh.json()) as object).sort()).toEqual(['otpEncryptionTargetBundle', 'otpId'])
    const { response, authenticator, sessionKey } = await passkeySignup({ email, ...(await emailProof(email)) })
    expect(await answer(response)).toEqual([409, { error: { code: 'email_exists', message: 'This email has an account already; sign in with it by email' } }])
    await expectNothingRegistered(authenticator, sessionKey)
    expect(await signedInByEmail(email)).toMatchObject({ organizationId: byEmail.organizationId })
  })

  test('error: forty sign-ups at once with one proof make one account', async () => {
    const email = newEmail()
    const proof = await emailProof(email)
    const attempts = await Promise.all(Array.from({ length: 40 }, () => passkeySignup({ email, ...proof })))
    const statuses = attempts.map(({ response }) => response.status)
    expect(statuses.filter((status) => status === 200)).toHaveLength(1)
    expect(statuses.filter((status) => status !== 200 && (status < 400 || status >= 500))).toEqual([])
    const winner = attempts.find(({ response }) => response.status === 200)!
    const { users } = await t.backend.getUsers({ organizationId: (await t.store.account(email))!.organization_id })
    expect(users.flatMap((user) => user.authenticators.map((authenticator) => authenticator.credentialId))).toEqual([winner.authenticator.credentialId])
    for (const { authenticator, sessionKey } of attempts.filter((attempt) => attempt !== winner)) await expectNothingRegistered(authenticator, sessionKey)
  })

  test('error: neither an email nor a passkeyIdentifier; nothing is registered', async () => {
    const { response, authenticator, sessionKey } = await passkeySignup({})
    expect(await answer(response)).toEqual([
      400,
      { error: { code: 'missing_identifier', message: 'Registering a passkey needs an email or a passkeyIdentifier' } },
    ])
    expect(response.headers.get('set-cookie')).toBeNull()
    await expectNothingRegistered(authenticator, sessionKey)
  })

  test('error: an attestation for another challenge is refused by the kms; nothing is registered', async () => {
    const authenticator = softwareAuthenticator()
    const sessionKey = generateApiKeyPair()
    const response = await post('/auth/passkey/signup', {
      passkeyIdentifier: 'x',
      challenge: randomBytes(32).toString('base64url'),
      attestation: authenticator.register(randomBytes(32).toString('base64url')),
      sessionPublicKey: sessionKey.apiPublicKey,
    })
    const [status, body] = await answer(response)
    expect([status, (body as { error: { code: string } }).error.code]).toEqual([400, 'kms_refused'])
    expect((body as { error: { message: string } }).error.message).toMatch(/^the passkey attestation does not verify: /)
    expect(response.headers.get('set-cookie')).toBeNull()
    await expectNothingRegistered(authenticator, sessionKey)
  })

  test('error: the same passkey twice', async () => {
    const { authenticator } = await signedUpWithPasskey()
    const challenge = randomBytes(32).toString('base64url')
    const sessionKey = generateApiKeyPair()
    const again = await post('/auth/passkey/signup', {
      passkeyIdentifier: 'again',
      challenge,
      attestation: authenticator.register(challenge),
      sessionPublicKey: sessionKey.apiPublicKey,
    })
    expect(await answer(again)).toEqual([409, { error: { code: 'passkey_exists', message: 'This passkey is already registered; sign in with it' } }])
    await expect(withKey(sessionKey).getWhoami({ organizationId: t.parentOrganizationId })).rejects.toThrow(UNKNOWN_KEY)
  })

  test('error: malformed fields are refused before anything is created', async () => {
    const authenticator = softwareAuthenticator()
    const sessionKey = generateApiKeyPair()
    const challenge = randomBytes(32).toString('base64url')
    const valid = { passkeyIdentifier: 'x', challenge, attestation: authenticator.register(challenge), sessionPublicKey: sessionKey.apiPublicKey }
    const uncompressed = `04${'11'.repeat(64)}`
    const cases: [object, string][] = [
      [{ ...valid, sessionPublicKey: uncompressed }, 'sessionPublicKey: must be a compressed P-256 public key in lowercase hex'],
      [{ ...valid, sessionPublicKey: sessionKey.apiPublicKey.toUpperCase() }, 'sessionPublicKey: must be a compressed P-256 public key in lowercase hex'],
      [{ ...valid, sessionPublicKey: `02${'ff'.repeat(32)}` }, 'sessionPublicKey: is not a point on P-256'],
      [{ ...valid, challenge: randomBytes(16).toString('base64url') }, 'challenge: must be the base64url of 32 random bytes'],
      [{ ...valid, attestation: { ...valid.attestation, clientDataJson: 'not base64url!' } }, 'attestation.clientDataJson: must be base64url'],
      [
        { ...valid, attestation: { ...valid.attestation, transports: ['usb'] } },
        expect.stringMatching(/^attestation\.transports\.0: Invalid option: expected one of "AUTHENTICATOR_TRANSPORT_BLE"/),
      ],
      [{ ...valid, email: 'not-an-email' }, 'email: Invalid email address'],
      [{ ...valid, otpId: 'x', encryptedOtpBundle: '{}' }, 'otpId and encryptedOtpBundle prove an email: send the email too'],
      [{ ...valid, sessionSeconds: 10 }, 'sessionSeconds: must be at least 60 seconds'],
      [{ ...valid, sessionSeconds: 86_401 }, 'sessionSeconds: must be at most 86400 seconds'],
    ]
    for (const [body, message] of cases)
      expect(await answer(await post('/auth/passkey/signup', body))).toEqual([400, { error: { code: 'invalid_request', message } }])
    await expectNothingRegistered(authenticator, sessionKey)
  })
})

describe('POST /auth/login', () => {
  test('default: the passkey stamps stamp_login naming the parent organization; the JWT signs the browser in', async () => {
    const account = await signedUpWithPasskey({ passkeyIdentifier: 'my passkey' })
    // A later visit: the browser knows neither its sub-organization nor a live session key.
    const sessionKey = generateApiKeyPair()
    const jwt = await stampLogin(withPasskey(account.authenticator), sessionKey.apiPublicKey)
    const response = await post('/auth/login', { session: jwt })
    expect(await answer(response)).toEqual([200, { organizationId: account.organizationId, userId: account.userId, address: account.address }])
    expect(response.headers.get('set-cookie')).toMatch(/^__Host-latchkey_session=[\w-]{43}; Max-Age=604800; Path=\/; HttpOnly; Secure; SameSite=Strict$/)
    expect(await answer(await session(cookieOf(response)))).toEqual([
      200,
      { email: null, organizationId: account.organizationId, userId: account.userId, address: account.address, kind: 'passkey', expiresAt: expect.any(String) },
    ])
    expect(await withKey(sessionKey).getWhoami({ organizationId: account.organizationId })).toMatchObject({ userId: account.userId })
  })

  test('error: a session JWT signs a browser in once, even with its signature rewritten (s → n − s)', async () => {
    const account = await signedUpWithPasskey()
    const jwt = await stampLogin(withPasskey(account.authenticator), generateApiKeyPair().apiPublicKey)
    expect((await post('/auth/login', { session: jwt })).status).toBe(200)
    const again = await post('/auth/login', { session: jwt })
    expect(await answer(again)).toEqual([401, { error: { code: 'invalid_session', message: 'This session token has already signed in; sign in again' } }])
    expect(again.headers.get('set-cookie')).toBeNull()
    const [header, payload, signature] = jwt.split('.')
    const raw = Buffer.from(signature!, 'base64url')
    const n = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n
    const s = BigInt(`0x${raw.subarray(32).toString('hex')}`)
    const rewritten = Buffer.concat([raw.subarray(0, 32), Buffer.from((n - s).toString(16).padStart(64, '0'), 'hex')]).toString('base64url')
    expect(await answer(await post('/auth/login', { session: `${header}.${payload}.${rewritten}` }))).toEqual([
      401,
      { error: { code: 'invalid_session', message: 'This session token has already signed in; sign in again' } },
    ])
  })

  test('behavior: a sub-organization the backend did not record is looked up with the parent key', async () => {
    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const { activity } = await t.backend.createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(t.clock),
      organizationId: t.parentOrganizationId,
      parameters: {
        subOrganizationName: 'made elsewhere',
        rootQuorumThreshold: 1,
        rootUsers: [
          {
            userName: 'elsewhere',
            userEmail: 'elsewhere@example.test',
            apiKeys: [],
            authenticators: [{ authenticatorName: 'Passkey', challenge, attestation: authenticator.register(challenge) }],
            oauthProviders: [],
          },
        ],
        wallet: {
          walletName: 'Turnkey HD',
          accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
        },
      },
    })
    const created = activity.result.createSubOrganizationResultV8!
    const jwt = await stampLogin(withPasskey(authenticator), generateApiKeyPair().apiPublicKey)
    const response = await post('/auth/login', { session: jwt })
    expect(await answer(response)).toEqual([
      200,
      { organizationId: created.subOrganizationId, userId: created.rootUserIds![0], address: created.wallet!.addresses[0] },
    ])
    expect(await answer(await session(cookieOf(response)))).toMatchObject([200, { email: 'elsewhere@example.test', kind: 'passkey' }])
  })

  test('error: a tampered JWT is refused and sets no cookie', async () => {
    const account = await signedUpWithPasskey()
    const other = await signedUpWithPasskey({ passkeyIdentifier: 'someone else' })
    const [header, payload, signature] = (await stampLogin(withPasskey(account.authenticator), generateApiKeyPair().apiPublicKey)).split('.')
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString())
    const forged = Buffer.from(JSON.stringify({ ...claims, organization_id: other.organizationId, user_id: other.userId })).toString('base64url')
    const response = await post('/auth/login', { session: `${header}.${forged}.${signature}` })
    expect(await answer(response)).toEqual([
      401,
      { error: { code: 'invalid_session', message: 'The session token is not signed by the key-management service' } },
    ])
    expect(response.headers.get('set-cookie')).toBeNull()
    const truncated = await post('/auth/login', { session: `${header}.${payload}.${signature!.slice(0, 20)}` })
    expect(await answer(truncated)).toEqual([
      401,
      { error: { code: 'invalid_session', message: 'The session token is not signed by the key-management service' } },
    ])
  })

  test('error: an expired JWT', async () => {
    const account = await signedUpWithPasskey()
    const jwt = await stampLogin(withPasskey(account.authenticator), generateApiKeyPair().apiPublicKey)
    t.clock += 900_000
    try {
      const response = await post('/auth/login', { session: jwt })
      expect(await answer(response)).toEqual([401, { error: { code: 'session_expired', message: 'The session token has expired; sign in again' } }])
      expect(response.headers.get('set-cookie')).toBeNull()
    } finally {
      t.clock -= 900_000
    }
  })

  test('error: a JWT from another signer key, with the right claims', async () => {
    const account = await signedUpWithPasskey()
    const claims = {
      exp: Math.floor(t.clock / 1000) + 900,
      public_key: generateApiKeyPair().apiPublicKey,
      session_type: 'SESSION_TYPE_READ_WRITE',
      user_id: account.userId,
      organization_id: account.organizationId,
    }
    const response = await post('/auth/login', { session: jwtSigner().sign(claims) })
    expect(await answer(response)).toEqual([
      401,
      { error: { code: 'invalid_session', message: 'The session token is not signed by the key-management service' } },
    ])
    expect(response.headers.get('set-cookie')).toBeNull()
  })

  test('error: a JWT for an organization this app does not manage (another app on the kms, or the parent itself)', async () => {
    // Another app's backend and its user, on the same kms: the JWT is genuinely signed.
    const otherKey = generateApiKeyPair()
    const otherParent = (await t.kms.createParentOrganization({ name: 'Other app', userName: 'other backend', publicKey: otherKey.apiPublicKey }))
      .organizationId
    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    await withKey(otherKey).createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(t.clock),
      organizationId: otherParent,
      parameters: {
        subOrganizationName: 'theirs',
        rootQuorumThreshold: 1,
        rootUsers: [
          {
            userName: 'theirs',
            apiKeys: [],
            authenticators: [{ authenticatorName: 'Passkey', challenge, attestation: authenticator.register(challenge) }],
            oauthProviders: [],
          },
        ],
        wallet: {
          walletName: 'Turnkey HD',
          accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
        },
      },
    })
    const theirs = await stampLogin(withPasskey(authenticator), generateApiKeyPair().apiPublicKey, otherParent)
    const foreign = await post('/auth/login', { session: theirs })
    expect(await answer(foreign)).toEqual([
      401,
      { error: { code: 'unknown_organization', message: 'The session token is for an organization this app does not manage' } },
    ])
    expect(foreign.headers.get('set-cookie')).toBeNull()

    const parent = await stampLogin(withKey(t.backendKey), generateApiKeyPair().apiPublicKey)
    expect(await answer(await post('/auth/login', { session: parent }))).toEqual([
      401,
      { error: { code: 'unknown_organization', message: 'The session token is for an organization this app does not manage' } },
    ])
  })

  test('error: a sub-organization without an Ethereum account', async () => {
    const keys = generateApiKeyPair()
    await t.backend.createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(t.clock),
      organizationId: t.parentOrganizationId,
      parameters: {
        subOrganizationName: 'no wallet',
        rootQuorumThreshold: 1,
        rootUsers: [
          {
            userName: 'no wallet',
            apiKeys: [{ apiKeyName: 'k', publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
            authenticators: [],
            oauthProviders: [],
          },
        ],
      },
    })
    const jwt = await stampLogin(withKey(keys), generateApiKeyPair().apiPublicKey)
    expect(await answer(await post('/auth/login', { session: jwt }))).toEqual([
      404,
      { error: { code: 'account_not_found', message: 'Account not found: the organization has no Ethereum wallet account' } },
    ])
  })

  test('behavior: while the kms’s signer rotates, a backend pinning the signer and its next key accepts the kms’s JWTs; pinning only the other key, it refuses them', async () => {
    const account = await signedUpWithPasskey()
    const next = jwtSigner()
    const login = (sessionSignerPublicKey: readonly string[], session: string) =>
      createServerApp({ ...t.options, sessionSignerPublicKey }).request('/auth/login', {
        method: 'POST',
        body: JSON.stringify({ session, kind: 'passkey' }),
        headers: { 'content-type': 'application/json', origin },
      })
    const jwt = await stampLogin(withPasskey(account.authenticator), generateApiKeyPair().apiPublicKey, account.organizationId)
    expect((await login([next.publicKey, t.kms.signerPublicKey], jwt)).status).toBe(200)
    expect(await answer(await login([next.publicKey], jwt))).toEqual([
      401,
      { error: { code: 'invalid_session', message: 'The session token is not signed by the key-management service' } },
    ])
  })

  test('error: read-only or claim-less tokens from the right signer, and malformed bodies', async () => {
    // A backend that trusts a signer of our own, to sign what the kms never would.
    const signer = jwtSigner()
    const store = await openStore(':memory:')
    const app = createServerApp({
      store,
      kmsUrl: t.kms.url,
      organizationId: t.parentOrganizationId,
      ...t.backendKey,
      sessionSignerPublicKey: signer.publicKey,
      appName: 'x',
      allowedOrigins: [origin],
    })
    const login = (json: unknown) =>
      app.request('/auth/login', { method: 'POST', body: JSON.stringify(json), headers: { 'content-type': 'application/json', origin } })
    const account = await signedUpWithPasskey()
    const claims = {
      exp: Math.floor(t.clock / 1000) + 900,
      public_key: generateApiKeyPair().apiPublicKey,
      session_type: 'SESSION_TYPE_READ_WRITE',
      user_id: account.userId,
      organization_id: account.organizationId,
    }
    try {
      expect(await answer(await login({ session: signer.sign({ ...claims, session_type: 'SESSION_TYPE_READ_ONLY' }) }))).toEqual([
        401,
        { error: { code: 'invalid_session', message: 'The session token is read-only; sign in with a read-write session' } },
      ])
      expect(await answer(await login({ session: signer.sign({ ...claims, organization_id: undefined }) }))).toEqual([
        401,
        { error: { code: 'invalid_session', message: 'The session token does not carry session claims' } },
      ])
      // The same claims, signed right, are accepted (the account is looked up in the kms).
      expect((await login({ session: signer.sign(claims) })).status).toBe(200)
      expect(await answer(await login({ session: 'not a jwt' }))).toEqual([
        400,
        { error: { code: 'invalid_request', message: 'session: must be a session JWT' } },
      ])
    } finally {
      await store.close()
    }
  })
})
