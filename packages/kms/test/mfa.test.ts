import { randomBytes } from 'node:crypto'
import { BATCH_CALLS_PARAMETERS, BATCH_EXECUTOR_ABI, BATCH_MODE } from '@latchkey/constants/batch-executor'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { decryptCredentialBundle, decryptExportBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { WebauthnStamper } from '@turnkey/webauthn-stamper'
import { generateSync } from 'otplib'
import { type Address, encodeAbiParameters, encodeFunctionData, type Hex, parseEther, parseGwei, serializeTransaction } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { hpkeSeal } from '../src/bundles.js'
import { generateApiKeyPair, type Kms } from '../src/index.js'
import { mfaCodePublicKey } from '../src/mfa/codeKey.js'
import { rpId, softwareAuthenticator, useAuthenticator } from './authenticator.js'
import { type ApiKeyPair, startKms } from './harness.js'

// Second factors the kms enforces (issue 28, item 2): a TOTP secret the kms makes, or a passkey
// marked as a factor; verify_mfa_factor marks the session key; then export, new logins and keys
// need it within the grace window. A stolen session key without the factor is refused, and the
// refusal writes nothing. Five wrong codes lock the factor for 15 minutes; a recovery code unlocks.

type Harness = Awaited<ReturnType<typeof startKms>>
/** The kms's signer key here: the key sealed codes go to is derived from it (mfa/codeKey.ts). */
const SIGNER_PRIVATE_KEY = randomBytes(32).toString('hex')
let harness: Harness
beforeAll(async () => {
  // Sessions from an email code stay freshly verified for a day here: what is tested is the factor.
  harness = await startKms({ freshVerificationSeconds: 86_400, signerPrivateKey: SIGNER_PRIVATE_KEY })
})
afterAll(() => harness.kms.stop())

/** A sub-organization's user and a session key from an email code (the credential a browser holds after sign-in). */
async function signedIn(on: Harness = harness, delegate?: ApiKeyPair) {
  const email = `mfa.${randomBytes(6).toString('hex')}@example.test`
  const sub = await on.subOrganization({ email, ...(delegate ? { delegate } : {}) })
  const init = await on.backend.initOtpAuth({
    type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3',
    timestampMs: on.timestampMs(),
    organizationId: sub.organizationId,
    parameters: { otpType: 'OTP_TYPE_EMAIL', contact: email, appName: 'Demo' },
  })
  const inbox = (await (await fetch(`${on.kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
  const mail = inbox.messages.filter((message) => message.to === email).at(-1)!
  const target = generateP256KeyPair()
  const { activity } = await on.backend.otpAuth({
    type: 'ACTIVITY_TYPE_OTP_AUTH',
    timestampMs: on.timestampMs(),
    organizationId: sub.organizationId,
    parameters: {
      otpId: init.activity.result.initOtpAuthResultV2!.otpId,
      otpCode: /sign-in code is (\w+)\./.exec(mail.text)![1]!,
      targetPublicKey: target.publicKeyUncompressed,
      expirationSeconds: '86400',
    },
  })
  const apiPrivateKey = decryptCredentialBundle(activity.result.otpAuthResult!.credentialBundle!, target.privateKey)
  const session: ApiKeyPair = { apiPrivateKey, apiPublicKey: Buffer.from(getPublicKey(apiPrivateKey, true)).toString('hex') }
  return { ...sub, email, session, sessionClient: on.client(session) }
}
type User = Awaited<ReturnType<typeof signedIn>>

/** What the activities answer, as far as these tests read it. */
type FactorResult = {
  factorId: string
  secret: string
  otpauthUri: string
  recoveryCodes: string[]
  mfaVerifiedAt: string
  recoveryCodesLeft: number
  secretBundle: string
  recoveryCodesBundle: string
}
type Answer = {
  status: number
  body: {
    activity: {
      id: string
      status: string
      result: Record<'createTotpFactorResult' | 'createPasskeyFactorResult' | 'verifyMfaFactorResult' | 'deleteMfaFactorResult', FactorResult>
    }
    code: number
    message: string
    details: unknown[]
  }
}

/** Submits a Latchkey activity (the typed client has none of them) with `headers` from a stamper. */
async function submitStamped(
  kms: Kms,
  stamp: (text: string) => Promise<{ stampHeaderName: string; stampHeaderValue: string }>,
  op: string,
  body: unknown,
): Promise<Answer> {
  const text = JSON.stringify(body)
  const { stampHeaderName, stampHeaderValue } = await stamp(text)
  const response = await fetch(`${kms.url}/public/v1/submit/${op}`, { method: 'POST', body: text, headers: { [stampHeaderName]: stampHeaderValue } })
  return { status: response.status, body: (await response.json()) as Answer['body'] }
}

const OPS: Record<string, string> = {
  create_totp_factor: 'ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR',
  create_passkey_factor: 'ACTIVITY_TYPE_LATCHKEY_CREATE_PASSKEY_FACTOR',
  verify_mfa_factor: 'ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR',
  delete_mfa_factor: 'ACTIVITY_TYPE_LATCHKEY_DELETE_MFA_FACTOR',
}

/** Submits `op` for `user`, stamped by `keys` (default: the user's session key). */
function submit(user: User, op: string, parameters: Record<string, unknown>, keys: ApiKeyPair = user.session, on: Harness = harness) {
  return submitStamped(on.kms, (text) => new ApiKeyStamper(keys).stamp(text), op, {
    type: OPS[op],
    timestampMs: on.timestampMs(),
    organizationId: user.organizationId,
    parameters,
  })
}

/** The TOTP code of `secret` at the harness's clock (plus `offsetSeconds`). */
const codeOf = (secret: string, on: Harness = harness, offsetSeconds = 0) => generateSync({ secret, epoch: Math.floor(on.clock.now / 1000) + offsetSeconds })

/** Enrols a TOTP factor for `user` and confirms it with a first code; its id, secret and recovery codes. */
async function enrolTotp(user: User, on: Harness = harness) {
  const created = await submit(user, 'create_totp_factor', { userId: user.userId }, user.session, on)
  expect(created.status).toBe(200)
  const { factorId, secret } = created.body['activity'].result.createTotpFactorResult as { factorId: string; secret: string }
  const verified = await submit(user, 'verify_mfa_factor', { factorId, code: codeOf(secret, on) }, user.session, on)
  expect(verified.status).toBe(200)
  // The next code is of the next step: the one just accepted is spent.
  on.clock.now += 30_000
  return { factorId, secret, recoveryCodes: verified.body['activity'].result.verifyMfaFactorResult.recoveryCodes as string[] }
}

const exportWallet = (user: User, client: TurnkeyClient = user.sessionClient, on: Harness = harness) =>
  client.exportWallet({
    type: 'ACTIVITY_TYPE_EXPORT_WALLET',
    timestampMs: on.timestampMs(),
    organizationId: user.organizationId,
    parameters: { walletId: user.walletId, targetPublicKey: generateP256KeyPair().publicKeyUncompressed },
  })

const mfaRequired = (type: string, seconds = 900) =>
  `Turnkey error 7: second factor required: ${type} from a session key needs a second factor verified in the last ${seconds} seconds (verify_mfa_factor)`
const errorInfo = (reason: string, metadata: Record<string, string>) => ({
  '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
  reason,
  domain: 'latchkey.mfa',
  metadata,
})

/** What a refused request must not have changed: activities, keys, passkeys, the export flag, the user's factors. */
async function stateOf(user: User) {
  const query = { organizationId: user.organizationId }
  return {
    activities: (await harness.backend.getActivities(query)).activities.length,
    apiKeys: (await harness.backend.getApiKeys({ ...query, userId: user.userId })).apiKeys.length,
    authenticators: (await harness.backend.getAuthenticators({ ...query, userId: user.userId })).authenticators.length,
    exported: (await harness.backend.getWallet({ ...query, walletId: user.walletId })).wallet.exported,
    factors: (await harness.kms.db.mfaFactorsOfUser(user.userId)).map((factor) => ({ id: factor.id, status: factor.status })),
  }
}

/** Registers a passkey for `user` (by their root key) and makes it the one navigator.credentials answers with. */
async function addPasskey(user: User) {
  const passkey = softwareAuthenticator()
  const challenge = randomBytes(32).toString('base64url')
  const { activity } = await user.client.createAuthenticators({
    type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
    timestampMs: harness.timestampMs(),
    organizationId: user.organizationId,
    parameters: { userId: user.userId, authenticators: [{ authenticatorName: 'Passkey', challenge, attestation: passkey.register(challenge) }] },
  })
  useAuthenticator(passkey)
  return activity.result.createAuthenticatorsResult!.authenticatorIds[0]!
}

/** Submits `op` stamped by the current passkey (X-Stamp-Webauthn). */
const submitWithPasskey = (user: User, op: string, parameters: Record<string, unknown>) =>
  submitStamped(harness.kms, (text) => new WebauthnStamper({ rpId }).stamp(text), op, {
    type: OPS[op],
    timestampMs: harness.timestampMs(),
    organizationId: user.organizationId,
    parameters,
  })

describe('TOTP factor', () => {
  test('default: the kms makes the secret, answers it once with an otpauth URI, and the factor counts once a first code is verified, which hands out 10 recovery codes', async () => {
    const user = await signedIn()
    const created = await submit(user, 'create_totp_factor', { userId: user.userId, issuer: 'Demo' })
    expect(created.status).toBe(200)
    const result = created.body['activity'].result.createTotpFactorResult
    expect(Object.keys(result).sort()).toEqual(['factorId', 'otpauthUri', 'secret'])
    expect(result.secret).toMatch(/^[A-Z2-7]{32}$/)
    expect(result.otpauthUri).toBe(
      // SHA-1, 6 digits and 30 s are the URI format's defaults: authenticator apps read them from its absence.
      `otpauth://totp/Demo:${encodeURIComponent(user.email)}?secret=${result.secret}&issuer=Demo`,
    )
    // Sealed at rest, never stored in clear, never in the activity's row.
    const [row] = await harness.kms.db.mfaFactorsOfUser(user.userId)
    expect(row).toMatchObject({ id: result.factorId, type: 'MFA_FACTOR_TYPE_TOTP', status: 'MFA_FACTOR_STATUS_PENDING' })
    expect(row!.sealed_secret).not.toContain(result.secret)
    const stored = await harness.backend.getActivity({ organizationId: user.organizationId, activityId: created.body['activity'].id })
    expect(stored.activity.result).toEqual({ createTotpFactorResult: { factorId: result.factorId } })
    // Pending: export still runs without a factor.
    expect((await exportWallet(user)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')

    const verified = await submit(user, 'verify_mfa_factor', { factorId: result.factorId, code: codeOf(result.secret) })
    expect(verified.status).toBe(200)
    const { recoveryCodes, ...rest } = verified.body['activity'].result.verifyMfaFactorResult
    expect(rest).toEqual({ factorId: result.factorId, enrolled: true, mfaVerifiedAt: String(harness.clock.now) })
    expect(recoveryCodes).toHaveLength(10)
    expect(new Set(recoveryCodes).size).toBe(10)
    for (const code of recoveryCodes) expect(code).toMatch(/^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$/)
    expect((await harness.kms.db.mfaFactorsOfUser(user.userId))[0]!.status).toBe('MFA_FACTOR_STATUS_ACTIVE')
    const storedVerification = await harness.backend.getActivity({ organizationId: user.organizationId, activityId: verified.body['activity'].id })
    expect(storedVerification.activity.result).toEqual({ verifyMfaFactorResult: rest })
  })

  test('behavior: with a frame’s targetPublicKey the secret and the recovery codes come sealed to it (export bundles), never in clear to the page that relays them', async () => {
    const user = await signedIn()
    const frame = generateP256KeyPair()
    const open = async (bundle: string) =>
      JSON.parse(
        await decryptExportBundle({
          exportBundle: bundle,
          embeddedKey: frame.privateKey,
          organizationId: user.organizationId,
          returnMnemonic: true,
          dangerouslyOverrideSignerPublicKey: harness.kms.signerPublicKey,
        }),
      )
    const created = await submit(user, 'create_totp_factor', { userId: user.userId, targetPublicKey: frame.publicKeyUncompressed })
    const result = created.body.activity.result.createTotpFactorResult
    expect(Object.keys(result).sort()).toEqual(['factorId', 'secretBundle'])
    const { secret, otpauthUri } = await open(result.secretBundle)
    expect(otpauthUri).toBe(`otpauth://totp/Latchkey:${encodeURIComponent(user.email)}?secret=${secret}&issuer=Latchkey`)
    const verified = await submit(user, 'verify_mfa_factor', { factorId: result.factorId, code: codeOf(secret), targetPublicKey: frame.publicKeyUncompressed })
    const verification = verified.body.activity.result.verifyMfaFactorResult
    expect(Object.keys(verification).sort()).toEqual(['enrolled', 'factorId', 'mfaVerifiedAt', 'recoveryCodesBundle'])
    const codes = (await open(verification.recoveryCodesBundle)) as string[]
    expect(codes).toHaveLength(10)
    // They are the user's codes: one of them verifies.
    harness.clock.now += 30_000
    expect((await submit(user, 'verify_mfa_factor', { recoveryCode: codes[0]! })).body.activity.result.verifyMfaFactorResult.recoveryCodesLeft).toBe(9)
    const stored = await harness.backend.getActivity({ organizationId: user.organizationId, activityId: created.body.activity.id })
    expect(stored.activity.result).toEqual({ createTotpFactorResult: { factorId: result.factorId } })
  })

  test('behavior: the kms reads codes by RFC 6238 (SHA-1, 6 digits, 30 s): the test vector secret at 59 s accepts 287082', async () => {
    const user = await signedIn()
    const created = await submit(user, 'create_totp_factor', { userId: user.userId })
    const { factorId } = created.body['activity'].result.createTotpFactorResult
    // RFC 6238 appendix B's SHA-1 secret ("12345678901234567890"), sealed in place of the generated one.
    const row = (await harness.kms.db.mfaFactor(factorId, user.organizationId))!
    const { seal } = await import('../src/secrets.js')
    const sealed = seal(harness.kms.keyring, `mfa-factor:${factorId}`, 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ')
    await harness.kms.db.deleteMfaFactor(factorId)
    await harness.kms.db.insertMfaFactor({ ...row, sealed_secret: sealed })
    const saved = harness.clock.now
    harness.clock.now = 59_000
    try {
      const body = { type: OPS['verify_mfa_factor'], timestampMs: '59000', organizationId: user.organizationId, parameters: { factorId, code: '287082' } }
      const verified = await submitStamped(harness.kms, (text) => new ApiKeyStamper(user.session).stamp(text), 'verify_mfa_factor', body)
      expect(verified.body['activity']?.status).toBe('ACTIVITY_STATUS_COMPLETED')
    } finally {
      harness.clock.now = saved
    }
  })

  test('error: a wrong code does not complete the enrolment and counts; a code of another user or for another factor is refused', async () => {
    const user = await signedIn()
    const created = await submit(user, 'create_totp_factor', { userId: user.userId })
    const { factorId, secret } = created.body['activity'].result.createTotpFactorResult
    const wrong = codeOf(secret) === '000000' ? '111111' : '000000'
    const answer = await submit(user, 'verify_mfa_factor', { factorId, code: wrong })
    expect(answer).toEqual({
      status: 400,
      body: { code: 3, message: 'invalid code: 4 attempts left before the factor locks for 15 minutes', details: [errorInfo('MFA_INVALID_CODE', {})] },
    })
    expect((await harness.kms.db.mfaFactorsOfUser(user.userId))[0]).toMatchObject({ status: 'MFA_FACTOR_STATUS_PENDING', failures: 1 })
    // Someone else's session may neither verify nor enrol for this user.
    const other = await signedIn()
    expect(await submit(other, 'verify_mfa_factor', { factorId, code: codeOf(secret) })).toMatchObject({
      status: 404,
      body: { message: `mfa factor ${factorId} not found in organization ${other.organizationId}` },
    })
    expect(await submit(user, 'create_totp_factor', { userId: user.userId }, other.session)).toMatchObject({ status: 401 })
    // The backend's key (the parent organization's) may not learn a secret for the user.
    expect(await submit(user, 'create_totp_factor', { userId: user.userId }, harness.parentKey)).toMatchObject({
      status: 403,
      body: { code: 7, message: expect.stringMatching(/^You don't have sufficient permissions to take this action/) },
    })
    expect(await harness.kms.db.mfaFactorsOfUser(user.userId)).toHaveLength(1)
  })

  test('error: a session key without a fresh verification (one the backend registered) may not enrol a factor: one the user does not hold would lock them out', async () => {
    const user = await signedIn()
    const registered = generateApiKeyPair()
    await user.client.createApiKeys({
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
      timestampMs: harness.timestampMs(),
      organizationId: user.organizationId,
      parameters: {
        userId: user.userId,
        apiKeys: [{ apiKeyName: 'session', publicKey: registered.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '900' }],
      },
    })
    expect(await submit(user, 'create_totp_factor', { userId: user.userId }, registered)).toEqual({
      status: 403,
      body: {
        code: 7,
        message:
          'fresh verification required: ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR from a session credential needs a passkey stamp (X-Stamp-Webauthn) or a credential from an email code less than 86400 seconds old',
        details: [],
      },
    })
    expect(await harness.kms.db.mfaFactorsOfUser(user.userId)).toEqual([])
  })

  test('error: a code is accepted once: the same code again is refused as wrong', async () => {
    const user = await signedIn()
    const created = await submit(user, 'create_totp_factor', { userId: user.userId })
    const { factorId, secret } = created.body['activity'].result.createTotpFactorResult
    const code = codeOf(secret)
    expect((await submit(user, 'verify_mfa_factor', { factorId, code })).status).toBe(200)
    expect(await submit(user, 'verify_mfa_factor', { factorId, code })).toMatchObject({
      status: 400,
      body: { message: 'invalid code: 4 attempts left before the factor locks for 15 minutes' },
    })
  })
})

describe('enforcement', () => {
  test('error: a stolen session key without the factor cannot export, add a key or a passkey, or remove the factor; each is refused 403 MFA_REQUIRED and writes nothing', async () => {
    const user = await signedIn()
    const { factorId } = await enrolTotp(user)
    // The thief copied the session key: past the grace window of the factor its user verified on it.
    harness.clock.now += 901_000
    const stolen = user.sessionClient
    const before = await stateOf(user)
    await expect(exportWallet(user, stolen)).rejects.toThrow(mfaRequired('ACTIVITY_TYPE_EXPORT_WALLET'))
    const raw = await submitStamped(harness.kms, (text) => new ApiKeyStamper(user.session).stamp(text), 'export_wallet', {
      type: 'ACTIVITY_TYPE_EXPORT_WALLET',
      timestampMs: harness.timestampMs(),
      organizationId: user.organizationId,
      parameters: { walletId: user.walletId, targetPublicKey: generateP256KeyPair().publicKeyUncompressed },
    })
    expect(raw).toEqual({
      status: 403,
      body: {
        code: 7,
        message: mfaRequired('ACTIVITY_TYPE_EXPORT_WALLET').replace('Turnkey error 7: ', ''),
        details: [errorInfo('MFA_REQUIRED', { activityType: 'ACTIVITY_TYPE_EXPORT_WALLET' })],
      },
    })
    await expect(
      stolen.createApiKeys({
        type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
        timestampMs: harness.timestampMs(),
        organizationId: user.organizationId,
        parameters: {
          userId: user.userId,
          apiKeys: [{ apiKeyName: 'thief', publicKey: generateApiKeyPair().apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '900' }],
        },
      }),
    ).rejects.toThrow(mfaRequired('ACTIVITY_TYPE_CREATE_API_KEYS_V2'))
    const challenge = randomBytes(32).toString('base64url')
    await expect(
      stolen.createAuthenticators({
        type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
        timestampMs: harness.timestampMs(),
        organizationId: user.organizationId,
        parameters: {
          userId: user.userId,
          authenticators: [{ authenticatorName: 'thief', challenge, attestation: softwareAuthenticator().register(challenge) }],
        },
      }),
    ).rejects.toThrow(mfaRequired('ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2'))
    await expect(
      stolen.updateUser({
        type: 'ACTIVITY_TYPE_UPDATE_USER',
        timestampMs: harness.timestampMs(),
        organizationId: user.organizationId,
        parameters: { userId: user.userId, userEmail: 'thief@example.test' },
      }),
    ).rejects.toThrow(mfaRequired('ACTIVITY_TYPE_UPDATE_USER'))
    expect(await submit(user, 'delete_mfa_factor', { factorId })).toMatchObject({
      status: 403,
      body: { message: mfaRequired('ACTIVITY_TYPE_LATCHKEY_DELETE_MFA_FACTOR').replace('Turnkey error 7: ', '') },
    })
    expect(await stateOf(user)).toEqual(before)
    // Renaming the user adds no login: that still runs.
    expect(
      (
        await stolen.updateUser({
          type: 'ACTIVITY_TYPE_UPDATE_USER',
          timestampMs: harness.timestampMs(),
          organizationId: user.organizationId,
          parameters: { userId: user.userId, userName: 'root' },
        })
      ).activity.status,
    ).toBe('ACTIVITY_STATUS_COMPLETED')
  })

  test('error: an email recovery may not add a passkey without the factor (a passkey stamp is not asked for it afterwards); with a recovery code it may', async () => {
    const user = await signedIn()
    const { recoveryCodes } = await enrolTotp(user)
    const embedded = generateP256KeyPair()
    await harness.backend.initUserEmailRecovery({
      type: 'ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2',
      timestampMs: harness.timestampMs(),
      organizationId: user.organizationId,
      parameters: { email: user.email, targetPublicKey: embedded.publicKeyUncompressed, emailCustomization: { appName: 'Demo' } },
    })
    const inbox = (await (await fetch(`${harness.kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; subject: string; text: string }[] }
    const mail = inbox.messages.find((message) => message.to === user.email && message.subject === 'Recover your Demo account')!
    const apiPrivateKey = decryptCredentialBundle(mail.text.split('\n')[2]!, embedded.privateKey)
    const recoveryKeys = { apiPrivateKey, apiPublicKey: Buffer.from(getPublicKey(apiPrivateKey, true)).toString('hex') }
    const recover = () => {
      const challenge = randomBytes(32).toString('base64url')
      return harness.client(recoveryKeys).recoverUser({
        type: 'ACTIVITY_TYPE_RECOVER_USER',
        timestampMs: harness.timestampMs(),
        organizationId: user.organizationId,
        parameters: { userId: user.userId, authenticator: { authenticatorName: 'thief', challenge, attestation: softwareAuthenticator().register(challenge) } },
      })
    }
    const before = await stateOf(user)
    await expect(recover()).rejects.toThrow(
      'Turnkey error 7: second factor required: ACTIVITY_TYPE_RECOVER_USER from a session key needs a second factor verified in the last 900 seconds (verify_mfa_factor)',
    )
    expect(await stateOf(user)).toEqual(before)
    expect((await submit(user, 'verify_mfa_factor', { recoveryCode: recoveryCodes[0]! }, recoveryKeys)).status).toBe(200)
    expect((await recover()).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  })

  test('behavior: a code verified on the session key lets it export for 900 s; at 901 s the grace window has expired and export is refused', async () => {
    const user = await signedIn()
    const { factorId, secret } = await enrolTotp(user)
    harness.clock.now += 901_000
    expect((await submit(user, 'verify_mfa_factor', { factorId, code: codeOf(secret) })).status).toBe(200)
    harness.clock.now += 900_000
    expect((await exportWallet(user)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    harness.clock.now += 1000
    await expect(exportWallet(user)).rejects.toThrow(mfaRequired('ACTIVITY_TYPE_EXPORT_WALLET'))
    // Everything else still runs: the session is not ended, only export waits for the factor.
    expect((await user.sessionClient.getWhoami({ organizationId: user.organizationId })).userId).toBe(user.userId)
  })

  test('behavior: removing the factor needs it; once removed, export needs no factor and the recovery codes are gone', async () => {
    const user = await signedIn()
    const { factorId, secret, recoveryCodes } = await enrolTotp(user)
    harness.clock.now += 901_000
    expect((await submit(user, 'verify_mfa_factor', { factorId, code: codeOf(secret) })).status).toBe(200)
    expect(await submit(user, 'delete_mfa_factor', { factorId })).toMatchObject({
      status: 200,
      body: { activity: { status: 'ACTIVITY_STATUS_COMPLETED', result: { deleteMfaFactorResult: { factorId } } } },
    })
    harness.clock.now += 901_000
    expect((await exportWallet(user)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect(await harness.kms.db.unusedRecoveryCodeCount(user.userId)).toBe(0)
    expect(recoveryCodes).toHaveLength(10)
  })

  test('behavior: the root key without an expiry (a backend-made user) and a passkey stamp are not session keys: neither is asked', async () => {
    const user = await signedIn()
    await enrolTotp(user)
    harness.clock.now += 901_000
    expect((await exportWallet(user, user.client)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    await addPasskey(user)
    const stamped = new TurnkeyClient({ baseUrl: harness.kms.url }, new WebauthnStamper({ rpId }))
    expect((await exportWallet(user, stamped)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  })
})

describe('another user acting for the user', () => {
  test("error: another user's key (an app backend's delegated user) cannot add or change a login of a user with a factor; it could before the factor", async () => {
    // As create_sub_organization makes it: its key never expires, so no fresh verification is asked of it.
    const delegateKeys = generateApiKeyPair()
    const user = await signedIn(harness, delegateKeys)
    const delegateId = user.delegateUserId!
    await user.client.createPolicies({
      type: 'ACTIVITY_TYPE_CREATE_POLICIES',
      timestampMs: harness.timestampMs(),
      organizationId: user.organizationId,
      parameters: {
        policies: [
          {
            policyName: 'the delegate sets the user’s email',
            effect: 'EFFECT_ALLOW',
            consensus: `approvers.any(user, user.id == '${delegateId}')`,
            condition: `activity.type == 'ACTIVITY_TYPE_UPDATE_USER_EMAIL' && activity.params.user_id == '${user.userId}'`,
            notes: '',
          },
        ],
      },
    })
    const setEmail = (userEmail: string) =>
      submitStamped(harness.kms, (text) => new ApiKeyStamper(delegateKeys).stamp(text), 'update_user_email', {
        type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
        timestampMs: harness.timestampMs(),
        organizationId: user.organizationId,
        parameters: { userId: user.userId, userEmail },
      })
    const emailOf = async () => (await user.client.getUser({ organizationId: user.organizationId, userId: user.userId })).user.userEmail
    expect((await setEmail(`before.${user.email}`)).status).toBe(200)
    expect(await emailOf()).toBe(`before.${user.email}`)

    await enrolTotp(user)
    const refused = await setEmail(`after.${user.email}`)

    expect([refused.status, refused.body.code, refused.body.message]).toEqual([
      403,
      7,
      "second factor required: ACTIVITY_TYPE_UPDATE_USER_EMAIL for a user with a second factor needs that user's own session key and factor (verify_mfa_factor); another user's key cannot give it",
    ])
    expect(await emailOf()).toBe(`before.${user.email}`)
  })
})

describe('failures', () => {
  test('error: five wrong codes lock the factor for 15 minutes: the right code is refused then; the lock expiring unlocks it', async () => {
    const user = await signedIn()
    const { factorId, secret } = await enrolTotp(user)
    const right = codeOf(secret)
    const wrong = right === '000000' ? '111111' : '000000'
    const messages: string[] = []
    for (let attempt = 0; attempt < 5; attempt++) messages.push((await submit(user, 'verify_mfa_factor', { factorId, code: wrong })).body['message'])
    const lockedUntil = harness.clock.now + 900_000
    expect(messages).toEqual([
      'invalid code: 4 attempts left before the factor locks for 15 minutes',
      'invalid code: 3 attempts left before the factor locks for 15 minutes',
      'invalid code: 2 attempts left before the factor locks for 15 minutes',
      'invalid code: 1 attempt left before the factor locks for 15 minutes',
      `invalid code: the factor is locked until ${new Date(lockedUntil).toISOString()}`,
    ])
    expect(await submit(user, 'verify_mfa_factor', { factorId, code: right })).toEqual({
      status: 429,
      body: {
        code: 8,
        message: `second factor locked after 5 wrong codes until ${new Date(lockedUntil).toISOString()}: a recovery code unlocks it sooner`,
        details: [errorInfo('MFA_FACTOR_LOCKED', { lockedUntil: String(lockedUntil) })],
      },
    })
    harness.clock.now += 899_000
    expect((await submit(user, 'verify_mfa_factor', { factorId, code: codeOf(secret) })).status).toBe(429)
    harness.clock.now += 1000
    const unlocked = await submit(user, 'verify_mfa_factor', { factorId, code: codeOf(secret) })
    expect(unlocked.body['activity'].status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect((await harness.kms.db.mfaFactor(factorId, user.organizationId))!).toMatchObject({ failures: 0, locked_until: null })
  })

  test('behavior: a recovery code unlocks a locked factor and verifies the session; the same code again is refused', async () => {
    const user = await signedIn()
    const { factorId, secret, recoveryCodes } = await enrolTotp(user)
    const wrong = codeOf(secret) === '000000' ? '111111' : '000000'
    for (let attempt = 0; attempt < 5; attempt++) await submit(user, 'verify_mfa_factor', { factorId, code: wrong })
    harness.clock.now += 901_000
    const recovered = await submit(user, 'verify_mfa_factor', { recoveryCode: recoveryCodes[3]!.toUpperCase() })
    expect(recovered.body['activity'].result.verifyMfaFactorResult).toEqual({ mfaVerifiedAt: String(harness.clock.now), recoveryCodesLeft: 9 })
    expect((await harness.kms.db.mfaFactor(factorId, user.organizationId))!).toMatchObject({ failures: 0, locked_until: null })
    expect((await exportWallet(user)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    const before = await harness.kms.db.mfaVerifiedAt((await harness.kms.db.apiKeyByPublicKey(user.session.apiPublicKey))!.id)
    harness.clock.now += 1000
    expect(await submit(user, 'verify_mfa_factor', { recoveryCode: recoveryCodes[3]! })).toEqual({
      status: 403,
      body: {
        code: 7,
        message: 'recovery code refused: it is not one of yours, or it was used already',
        details: [errorInfo('MFA_RECOVERY_CODE_REFUSED', {})],
      },
    })
    // Another user's code is not this user's either.
    const other = await signedIn()
    expect((await submit(other, 'verify_mfa_factor', { recoveryCode: recoveryCodes[4]! })).status).toBe(400)
    expect(await harness.kms.db.mfaVerifiedAt((await harness.kms.db.apiKeyByPublicKey(user.session.apiPublicKey))!.id)).toBe(before)
  })
})

describe('deletion', () => {
  test('behavior: deleting a sub-organization or a user takes their factors, recovery codes and verifications with them', async () => {
    const user = await signedIn()
    await enrolTotp(user)
    const other = await signedIn()
    await enrolTotp(other)
    const { activity } = await user.client.deleteSubOrganization({
      type: 'ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION',
      timestampMs: harness.timestampMs(),
      organizationId: user.organizationId,
      parameters: { deleteWithoutExport: true },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect([await harness.kms.db.mfaFactorsOfUser(user.userId), await harness.kms.db.unusedRecoveryCodeCount(user.userId)]).toEqual([[], 0])
    // A second root user, with a factor, deleted by the first.
    const created = await other.client.createUsers({
      type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
      timestampMs: harness.timestampMs(),
      organizationId: other.organizationId,
      parameters: {
        users: [
          {
            userName: 'second',
            apiKeys: [],
            authenticators: [],
            oauthProviders: [],
            userTags: [],
          },
        ],
      },
    })
    const secondId = created.activity.result.createUsersResult!.userIds[0]!
    await harness.kms.db.insertMfaFactor({
      id: 'factor-of-second',
      organization_id: other.organizationId,
      user_id: secondId,
      type: 'MFA_FACTOR_TYPE_TOTP',
      name: 'app',
      status: 'MFA_FACTOR_STATUS_ACTIVE',
      sealed_secret: null,
      authenticator_id: null,
      failures: 0,
      locked_until: null,
      last_time_step: null,
      created_at: harness.clock.now,
    })
    const removed = await other.client.deleteUsers({
      type: 'ACTIVITY_TYPE_DELETE_USERS',
      timestampMs: harness.timestampMs(),
      organizationId: other.organizationId,
      parameters: { userIds: [secondId] },
    })
    expect(removed.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    expect(await harness.kms.db.mfaFactorsOfUser(secondId)).toEqual([])
    expect((await harness.kms.db.mfaFactorsOfUser(other.userId)).map((factor) => factor.status)).toEqual(['MFA_FACTOR_STATUS_ACTIVE'])
  })
})

describe('passkey factor', () => {
  test('default: a passkey of the user, stamping its own enrolment, becomes a factor; its stamp naming the session key verifies that key', async () => {
    const user = await signedIn()
    const authenticatorId = await addPasskey(user)
    const enrolled = await submitWithPasskey(user, 'create_passkey_factor', { userId: user.userId, authenticatorId })
    expect(enrolled.status).toBe(200)
    const { factorId, recoveryCodes } = enrolled.body['activity'].result.createPasskeyFactorResult
    expect(recoveryCodes).toHaveLength(10)
    harness.clock.now += 901_000
    await expect(exportWallet(user)).rejects.toThrow(mfaRequired('ACTIVITY_TYPE_EXPORT_WALLET'))
    const verified = await submitWithPasskey(user, 'verify_mfa_factor', { factorId, apiKeyPublicKey: user.session.apiPublicKey })
    expect(verified.body['activity'].result.verifyMfaFactorResult).toEqual({ factorId, mfaVerifiedAt: String(harness.clock.now) })
    expect((await exportWallet(user)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  })

  test('behavior: a verification by a passkey factor unlocks a locked TOTP factor; a second factor hands out no new recovery codes', async () => {
    const user = await signedIn()
    const { factorId, secret } = await enrolTotp(user)
    const authenticatorId = await addPasskey(user)
    const enrolled = await submitWithPasskey(user, 'create_passkey_factor', { userId: user.userId, authenticatorId })
    const passkeyFactor = enrolled.body.activity.result.createPasskeyFactorResult
    expect(passkeyFactor.recoveryCodes).toEqual([])
    const wrong = codeOf(secret) === '000000' ? '111111' : '000000'
    for (let attempt = 0; attempt < 5; attempt++) await submit(user, 'verify_mfa_factor', { factorId, code: wrong })
    expect((await harness.kms.db.mfaFactor(factorId, user.organizationId))!.locked_until).toBe(harness.clock.now + 900_000)
    await submitWithPasskey(user, 'verify_mfa_factor', { factorId: passkeyFactor.factorId })
    expect((await harness.kms.db.mfaFactor(factorId, user.organizationId))!).toMatchObject({ failures: 0, locked_until: null })
  })

  test('error: a passkey factor is not enrolled or verified by a session key stamp; removing the passkey needs the factor', async () => {
    const user = await signedIn()
    const authenticatorId = await addPasskey(user)
    expect(await submit(user, 'create_passkey_factor', { userId: user.userId, authenticatorId })).toEqual({
      status: 403,
      body: { code: 7, message: 'create_passkey_factor must be stamped by that passkey (X-Stamp-Webauthn)', details: [] },
    })
    const enrolled = await submitWithPasskey(user, 'create_passkey_factor', { userId: user.userId, authenticatorId })
    const { factorId } = enrolled.body['activity'].result.createPasskeyFactorResult
    expect(await submit(user, 'verify_mfa_factor', { factorId, apiKeyPublicKey: user.session.apiPublicKey })).toMatchObject({
      status: 403,
      body: { message: 'verify_mfa_factor of a passkey factor must be stamped by that passkey (X-Stamp-Webauthn)' },
    })
    harness.clock.now += 901_000
    await expect(
      user.sessionClient.deleteAuthenticators({
        type: 'ACTIVITY_TYPE_DELETE_AUTHENTICATORS',
        timestampMs: harness.timestampMs(),
        organizationId: user.organizationId,
        parameters: { userId: user.userId, authenticatorIds: [authenticatorId] },
      }),
    ).rejects.toThrow(mfaRequired('ACTIVITY_TYPE_DELETE_AUTHENTICATORS'))
    expect((await harness.kms.db.mfaFactorsOfUser(user.userId)).map((factor) => factor.id)).toEqual([factorId])
  })
})

describe('operator settings', () => {
  test('error: with --mfa-required export,tx-over:<wei>, a user without a factor is told to enrol; a transaction over the value needs the factor, one at it does not', async () => {
    const strict = await startKms({ freshVerificationSeconds: 86_400, mfa: { required: ['export', `tx-over:${parseGwei('1000')}`], graceSeconds: 60 } })
    try {
      const user = await signedIn(strict)
      await expect(exportWallet(user, user.sessionClient, strict)).rejects.toThrow(
        'Turnkey error 7: second factor required: ACTIVITY_TYPE_EXPORT_WALLET needs a second factor, and this user has none: enrol one first (create_totp_factor or create_passkey_factor)',
      )
      const { factorId, secret } = await enrolTotp(user, strict)
      const sign = (value: bigint) =>
        user.sessionClient.signTransaction({
          type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2',
          timestampMs: strict.timestampMs(),
          organizationId: user.organizationId,
          parameters: {
            signWith: user.address,
            type: 'TRANSACTION_TYPE_ETHEREUM',
            unsignedTransaction: serializeTransaction({
              chainId: 1,
              nonce: 0,
              to: user.address,
              value,
              maxFeePerGas: 1n,
              maxPriorityFeePerGas: 1n,
              gas: 21_000n,
            }),
          },
        })
      strict.clock.now += 61_000
      expect((await sign(parseGwei('1000'))).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      await expect(sign(parseGwei('1000') + 1n)).rejects.toThrow(mfaRequired('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', 60))
      expect((await submit(user, 'verify_mfa_factor', { factorId, code: codeOf(secret, strict) }, user.session, strict)).status).toBe(200)
      expect((await sign(parseGwei('1000') + 1n)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    } finally {
      await strict.kms.stop()
    }
  })

  test('error: with sign-in required, a session that has not verified a factor runs nothing but the factor activities', async () => {
    const strict = await startKms({ freshVerificationSeconds: 86_400, mfa: { required: ['sign-in'] } })
    try {
      const user = await signedIn(strict)
      const createWallet = (client: TurnkeyClient) =>
        client.createWallet({
          type: 'ACTIVITY_TYPE_CREATE_WALLET',
          timestampMs: strict.timestampMs(),
          organizationId: user.organizationId,
          parameters: { walletName: `w ${strict.timestampMs()}`, accounts: [] },
        })
      await expect(createWallet(user.sessionClient)).rejects.toThrow(
        'Turnkey error 7: second factor required: ACTIVITY_TYPE_CREATE_WALLET needs a second factor, and this user has none: enrol one first (create_totp_factor or create_passkey_factor)',
      )
      const { factorId, secret } = await enrolTotp(user, strict)
      // The session that enrolled has verified the factor, for as long as it lives.
      strict.clock.now += 3_600_000
      expect((await createWallet(user.sessionClient)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      // A second session of the user (the backend registers it) has not.
      const second = generateApiKeyPair()
      await user.client.createApiKeys({
        type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2',
        timestampMs: strict.timestampMs(),
        organizationId: user.organizationId,
        parameters: {
          userId: user.userId,
          apiKeys: [{ apiKeyName: 'second', publicKey: second.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '900' }],
        },
      })
      await expect(createWallet(strict.client(second))).rejects.toThrow(
        'Turnkey error 7: second factor required: this session has not verified a second factor yet (verify_mfa_factor)',
      )
      expect((await submit(user, 'verify_mfa_factor', { factorId, code: codeOf(secret, strict) }, second, strict)).status).toBe(200)
      expect((await createWallet(strict.client(second))).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    } finally {
      await strict.kms.stop()
    }
  })

  test('error: an unknown action or a malformed tx-over is refused when the kms is created', async () => {
    await expect(startKms({ mfa: { required: ['withdraw'] } })).rejects.toThrow(
      'mfa: unknown action withdraw: one of sign-in, export, add-login, add-key, grant, or tx-over:<wei>',
    )
    await expect(startKms({ mfa: { required: ['tx-over:1e18'] } })).rejects.toThrow(
      'mfa: unknown action tx-over:1e18: one of sign-in, export, add-login, add-key, grant, or tx-over:<wei>',
    )
  })
})

describe('list_mfa_factors', () => {
  /** `POST /public/v1/query/list_mfa_factors` for `user`, stamped by `keys`. */
  async function listFactors(user: User, keys: ApiKeyPair | 'backend', userId = user.userId) {
    const text = JSON.stringify({ organizationId: user.organizationId, userId })
    const stamper = keys === 'backend' ? harness.parentKey : keys
    const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(stamper).stamp(text)
    const response = await fetch(`${harness.kms.url}/public/v1/query/list_mfa_factors`, {
      method: 'POST',
      body: text,
      headers: { [stampHeaderName]: stampHeaderValue },
    })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }
  const at = (ms: number) => ({ seconds: String(Math.floor(ms / 1000)), nanos: String((ms % 1000) * 1_000_000) })

  test('default: the user and the parent organization read the factors, verified or pending, with no secret; none before enrolment', async () => {
    const user = await signedIn()
    expect(await listFactors(user, user.session)).toEqual({ status: 200, body: { factors: [] } })
    const totpAt = harness.clock.now
    const { factorId } = await enrolTotp(user)
    const passkeyId = await addPasskey(user)
    const passkeyAt = harness.clock.now
    const passkeyFactor = await submitWithPasskey(user, 'create_passkey_factor', { userId: user.userId, authenticatorId: passkeyId, factorName: 'Laptop' })
    expect(passkeyFactor.status).toBe(200)
    const expected = {
      status: 200,
      body: {
        factors: [
          { factorId, type: 'totp', name: 'Authenticator app', createdAt: at(totpAt), verified: true },
          {
            factorId: passkeyFactor.body.activity.result.createPasskeyFactorResult.factorId,
            type: 'passkey',
            name: 'Laptop',
            createdAt: at(passkeyAt),
            verified: true,
          },
        ],
      },
    }
    expect(await listFactors(user, user.session)).toEqual(expected)
    expect(await listFactors(user, 'backend')).toEqual(expected)
  })

  test('behavior: a pending TOTP enrolment is listed unverified; a locked factor names when it unlocks, and no longer once the lock expires', async () => {
    const user = await signedIn()
    const createdAt = harness.clock.now
    const created = await submit(user, 'create_totp_factor', { userId: user.userId })
    const pending = created.body.activity.result.createTotpFactorResult
    expect((await listFactors(user, 'backend')).body).toEqual({
      factors: [{ factorId: pending.factorId, type: 'totp', name: 'Authenticator app', createdAt: at(createdAt), verified: false }],
    })
    const verified = await submit(user, 'verify_mfa_factor', { factorId: pending.factorId, code: codeOf(pending.secret) })
    expect(verified.status).toBe(200)
    harness.clock.now += 30_000
    const wrong = codeOf(pending.secret) === '000000' ? '111111' : '000000'
    for (let attempt = 0; attempt < 5; attempt++) await submit(user, 'verify_mfa_factor', { factorId: pending.factorId, code: wrong })
    const lockedUntil = harness.clock.now + 900_000
    expect((await listFactors(user, user.session)).body['factors']).toEqual([
      expect.objectContaining({ factorId: pending.factorId, verified: true, lockedUntil: at(lockedUntil) }),
    ])
    harness.clock.now += 900_000
    expect((await listFactors(user, user.session)).body).toEqual({
      factors: [{ factorId: pending.factorId, type: 'totp', name: 'Authenticator app', createdAt: at(createdAt), verified: true }],
    })
  })

  test("error: another user of the sub-organization and another sub-organization's user are refused; an unknown user is not found", async () => {
    const user = await signedIn()
    await enrolTotp(user)
    const stranger = await signedIn()
    const delegateKeys = generateApiKeyPair()
    await user.client.createUsers({
      type: 'ACTIVITY_TYPE_CREATE_USERS_V4',
      timestampMs: harness.timestampMs(),
      organizationId: user.organizationId,
      parameters: {
        users: [
          {
            userName: 'delegated access',
            apiKeys: [{ apiKeyName: 'backend', publicKey: delegateKeys.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '3600' }],
            authenticators: [],
            oauthProviders: [],
            userTags: [],
          },
        ],
      },
    })
    expect(await listFactors(user, delegateKeys)).toEqual({
      status: 403,
      body: { code: 7, message: "a user's second factors are read by that user or by the parent organization only", details: [] },
    })
    expect(await listFactors(user, stranger.session)).toEqual({
      status: 401,
      body: { code: 16, message: 'could not find public key in organization or its parent organization', details: [] },
    })
    expect(await listFactors(user, 'backend', stranger.userId)).toEqual({
      status: 404,
      body: { code: 5, message: `user ${stranger.userId} not found in organization ${user.organizationId}`, details: [] },
    })
  })
})

describe('sealed codes', () => {
  /** `inner` sealed as the consent frame seals a typed code (HPKE to `key`, default the kms's code key). */
  async function sealed(inner: object, key = mfaCodePublicKey(SIGNER_PRIVATE_KEY)) {
    const { enc, ciphertext } = await hpkeSeal(key, new TextEncoder().encode(JSON.stringify(inner)))
    return JSON.stringify({ encappedPublic: Buffer.from(enc).toString('hex'), ciphertext: Buffer.from(ciphertext).toString('hex') })
  }

  test('default: a code sealed to the kms’s code key, bound to the factor, the organization and the stamping key, verifies; the stored intent holds no code', async () => {
    const user = await signedIn()
    const { factorId, secret } = await enrolTotp(user)
    const code = codeOf(secret)
    const bound = { organizationId: user.organizationId, publicKey: user.session.apiPublicKey }
    const verified = await submit(user, 'verify_mfa_factor', { factorId, encryptedCodeBundle: await sealed({ code, factorId, ...bound }) })
    expect([verified.status, verified.body.activity.status]).toEqual([200, 'ACTIVITY_STATUS_COMPLETED'])
    const stored = await harness.backend.getActivity({ organizationId: user.organizationId, activityId: verified.body.activity.id })
    expect(JSON.stringify(stored.activity.intent)).not.toContain(code)
    expect((await exportWallet(user)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  })

  test('behavior: a recovery code sealed the same way verifies and is spent', async () => {
    const user = await signedIn()
    const { recoveryCodes } = await enrolTotp(user)
    const bound = { organizationId: user.organizationId, publicKey: user.session.apiPublicKey }
    const verified = await submit(user, 'verify_mfa_factor', { encryptedCodeBundle: await sealed({ recoveryCode: recoveryCodes[0], ...bound }) })
    expect(verified.body.activity.result.verifyMfaFactorResult.recoveryCodesLeft).toBe(9)
  })

  test('error: a sealed code moved to another session key, factor or organization, or sealed to another key, is refused and counts no attempt', async () => {
    const user = await signedIn()
    const { factorId, secret } = await enrolTotp(user)
    const code = codeOf(secret)
    const bound = { organizationId: user.organizationId, publicKey: user.session.apiPublicKey }
    const verify = async (encryptedCodeBundle: string, extra: Record<string, unknown> = {}) => {
      const answer = await submit(user, 'verify_mfa_factor', { factorId, encryptedCodeBundle, ...extra })
      return [answer.status, answer.body.message]
    }
    const moved = 'encryptedCodeBundle was sealed for another organization or session key than the one that stamps this request'
    expect(await verify(await sealed({ code, factorId, ...bound, publicKey: generateApiKeyPair().apiPublicKey }))).toEqual([403, moved])
    expect(await verify(await sealed({ code, factorId, ...bound, organizationId: harness.parent.organizationId }))).toEqual([403, moved])
    expect(await verify(await sealed({ code, factorId: 'another-factor', ...bound }))).toEqual([403, 'encryptedCodeBundle was sealed for another factor'])
    expect(await verify(await sealed({ code, factorId, ...bound }, generateP256KeyPair().publicKeyUncompressed))).toEqual([
      400,
      'encryptedCodeBundle does not open with the kms’s code key (latchkey-mfa-code-key): reload the frame',
    ])
    expect(await verify(await sealed({ code: '12345', factorId, ...bound }))).toEqual([
      400,
      'encryptedCodeBundle must hold {code, factorId} or {recoveryCode}, with organizationId and publicKey',
    ])
    expect(await verify(await sealed({ code, factorId, ...bound }), { code })).toEqual([
      400,
      'invalid parameters: (root): give one of code, recoveryCode and encryptedCodeBundle',
    ])
    // None was judged: the factor counts no failure, and the right code, sealed, still verifies.
    expect((await harness.kms.db.mfaFactor(factorId, user.organizationId))!.failures).toBe(0)
    expect((await verify(await sealed({ code, factorId, ...bound })))[0]).toBe(200)
  })
})

/** Submits any activity `type` as `op` in `user`'s organization, stamped by `keys`. */
const submitActivity = (on: Harness, keys: ApiKeyPair, user: User, op: string, type: string, parameters: unknown) =>
  submitStamped(on.kms, (text) => new ApiKeyStamper(keys).stamp(text), op, {
    type,
    timestampMs: on.timestampMs(),
    organizationId: user.organizationId,
    parameters,
  })

/** A user for create_users holding `keys` (an hour's key), with no email, passkey or OAuth identity. */
const userHolding = (keys: ApiKeyPair) => ({
  userName: 'helper',
  apiKeys: [{ apiKeyName: 'helper key', publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '3600' }],
  authenticators: [],
  oauthProviders: [],
  userTags: [],
})

/** Each activity that adds a way into the organization or power over it, as a stolen session would submit it (refused before its parameters are read). */
function organizationAccess(userId: string, attacker: ApiKeyPair) {
  return [
    ['create_users', 'ACTIVITY_TYPE_CREATE_USERS_V4', { users: [userHolding(attacker)] }],
    ['create_api_only_users', 'ACTIVITY_TYPE_CREATE_API_ONLY_USERS', { apiOnlyUsers: [{ userName: 'helper', apiKeys: userHolding(attacker).apiKeys }] }],
    [
      'create_invitations',
      'ACTIVITY_TYPE_CREATE_INVITATIONS',
      { invitations: [{ receiverUserName: 'helper', receiverUserEmail: 'helper@example.test', accessType: 'ACCESS_TYPE_ALL', senderUserId: userId }] },
    ],
    ['update_root_quorum', 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM', { threshold: 1, userIds: [userId] }],
  ] as const
}

/** A user of `sub`'s organization added by its root key (a key without an expiry, asked for nothing), made a root user, holding `keys`. */
async function addRootUser(on: Harness, user: User, keys: ApiKeyPair) {
  const added = await submitActivity(on, user.keys, user, 'create_users', 'ACTIVITY_TYPE_CREATE_USERS_V4', { users: [userHolding(keys)] })
  expect(added.body.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  const userId = (added.body.activity.result as unknown as { createUsersResult: { userIds: string[] } }).createUsersResult.userIds[0]!
  const quorum = await submitActivity(on, user.keys, user, 'update_root_quorum', 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM', {
    threshold: 1,
    userIds: [user.userId, userId],
  })
  expect(quorum.body.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
  return userId
}

describe('security review: ways around the factor', () => {
  test('error: a session of a user with a factor may not add a user, an invitation or a root user without it; stale, it is refused fresh verification; nothing is added', async () => {
    const on = await startKms({ mfa: { required: ['export'], graceSeconds: 60 } })
    try {
      const user = await signedIn(on)
      const { factorId, secret } = await enrolTotp(user, on)
      const attacker = generateApiKeyPair()
      const users = async () => (await on.backend.getUsers({ organizationId: user.organizationId })).users.length
      const before = await users()
      // Freshly verified by its email code, but past the factor's 60 s.
      on.clock.now += 120_000
      for (const [op, type, parameters] of organizationAccess(user.userId, attacker)) {
        const refused = await submitActivity(on, user.session, user, op, type, parameters)
        expect({ status: refused.status, message: refused.body.message }, type).toEqual({
          status: 403,
          message: `second factor required: ${type} from a session key needs a second factor verified in the last 60 seconds (verify_mfa_factor)`,
        })
      }
      // An hour on: neither fresh (900 s) nor within the factor's grace.
      on.clock.now += 3_600_000
      for (const [op, type, parameters] of organizationAccess(user.userId, attacker)) {
        const refused = await submitActivity(on, user.session, user, op, type, parameters)
        expect({ status: refused.status, message: refused.body.message }, type).toEqual({
          status: 403,
          message: `fresh verification required: ${type} from a session credential needs a passkey stamp (X-Stamp-Webauthn) or a credential from an email code less than 900 seconds old`,
        })
      }
      expect(await users()).toBe(before)
      // The key the organization was created with (as an app backend's delegated user's) is asked for neither.
      const [, type, parameters] = organizationAccess(user.userId, attacker)[3]
      expect((await submitActivity(on, user.keys, user, 'update_root_quorum', type, parameters)).body.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      expect((await submit(user, 'verify_mfa_factor', { factorId, code: codeOf(secret, on) }, user.session, on)).status).toBe(200)
      await expect(exportWallet(user, user.sessionClient, on)).rejects.toThrow(
        'Turnkey error 7: fresh verification required: ACTIVITY_TYPE_EXPORT_WALLET from a session credential needs a passkey stamp',
      )
    } finally {
      await on.kms.stop()
    }
  })

  test('error: a user without a factor, in an organization whose user has one, may not enrol its own nor export: the factor counts per organization', async () => {
    // A guest's organization (no email, passkey or OAuth identity anywhere): fresh verification asks its keys nothing.
    const on = await startKms({ mfa: { required: ['export'], graceSeconds: 60 } })
    try {
      const sub = await on.subOrganization()
      const guestKeys = generateApiKeyPair()
      const guest: User = { ...sub, email: '', session: guestKeys, sessionClient: on.client(guestKeys) }
      const registered = await submitActivity(on, sub.keys, guest, 'create_api_keys', 'ACTIVITY_TYPE_CREATE_API_KEYS_V2', {
        userId: sub.userId,
        apiKeys: userHolding(guestKeys).apiKeys,
      })
      expect(registered.body.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
      await enrolTotp(guest, on)
      // Another root user, whose key is the attacker's (added by a key the checks do not ask).
      const attacker = generateApiKeyPair()
      const addedUserId = await addRootUser(on, guest, attacker)
      const perOrganization = (type: string) => ({
        status: 403,
        message: `second factor required: ${type} needs a second factor, and another user of this organization has one: a user without one cannot run it from a session key`,
      })
      const own = await submitActivity(on, attacker, guest, 'create_totp_factor', OPS['create_totp_factor']!, { userId: addedUserId })
      expect({ status: own.status, message: own.body.message }).toEqual(perOrganization('ACTIVITY_TYPE_LATCHKEY_CREATE_TOTP_FACTOR'))
      await expect(exportWallet(guest, on.client(attacker), on)).rejects.toThrow(`Turnkey error 7: ${perOrganization('ACTIVITY_TYPE_EXPORT_WALLET').message}`)
      expect(await on.kms.db.mfaFactorsOfUser(addedUserId)).toEqual([])
    } finally {
      await on.kms.stop()
    }
  })

  describe('with --mfa-required tx-over:<wei>', () => {
    const THRESHOLD = parseGwei('1000')
    const recipient: Address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
    let on: Harness
    beforeAll(async () => {
      on = await startKms({ freshVerificationSeconds: 86_400, maxCredentialSeconds: 86_400, mfa: { required: [`tx-over:${THRESHOLD}`], graceSeconds: 60 } })
    })
    afterAll(() => on.kms.stop())

    /** A user with a factor whose 60 s of grace have passed. */
    async function enrolledAndLapsed() {
      const user = await signedIn(on)
      await enrolTotp(user, on)
      on.clock.now += 120_000
      return user
    }
    const batch = (calls: readonly { to: Address; value: bigint; data: Hex }[]) =>
      encodeFunctionData({ abi: BATCH_EXECUTOR_ABI, functionName: 'execute', args: [BATCH_MODE, encodeAbiParameters(BATCH_CALLS_PARAMETERS, [calls])] })
    const signTransaction = (user: User, to: Address, value: bigint, data: Hex) =>
      submitActivity(on, user.session, user, 'sign_transaction', 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2', {
        signWith: user.address,
        type: 'TRANSACTION_TYPE_ETHEREUM',
        unsignedTransaction: serializeTransaction({ chainId: 1, nonce: 0, to, value, data, gas: 100_000n, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n }).slice(
          2,
        ),
      })
    const outcome = (answer: Answer) => (answer.status === 200 ? answer.body.activity.status : { status: answer.status, message: answer.body.message })
    const over = (type: string) => ({
      status: 403,
      message: `second factor required: ${type} from a session key needs a second factor verified in the last 60 seconds (verify_mfa_factor)`,
    })

    test('error: value in a batch to the account itself counts: 1 ETH inside a 0-value batch needs the factor; a batch within the threshold does not', async () => {
      const user = await enrolledAndLapsed()
      const call = (value: bigint) => ({ to: recipient, value, data: '0x' as Hex })
      expect(outcome(await signTransaction(user, user.address, 0n, batch([call(parseEther('1'))])))).toEqual(over('ACTIVITY_TYPE_SIGN_TRANSACTION_V2'))
      // Calls that each stay under the threshold but together exceed it.
      expect(outcome(await signTransaction(user, user.address, 0n, batch([call(THRESHOLD), call(1n)])))).toEqual(over('ACTIVITY_TYPE_SIGN_TRANSACTION_V2'))
      // A batch inside a batch.
      const nested = { to: user.address, value: 0n, data: batch([call(parseEther('1'))]) }
      expect(outcome(await signTransaction(user, user.address, 0n, batch([nested])))).toEqual(over('ACTIVITY_TYPE_SIGN_TRANSACTION_V2'))
      expect(outcome(await signTransaction(user, user.address, 0n, batch([call(THRESHOLD / 2n), call(THRESHOLD / 2n)])))).toBe('ACTIVITY_STATUS_COMPLETED')
    })

    test('error: calldata to the account itself that is not a batch cannot be counted, so it needs the factor; calldata to another contract counts its value only', async () => {
      const user = await enrolledAndLapsed()
      expect(outcome(await signTransaction(user, user.address, 0n, '0xdeadbeef'))).toEqual(over('ACTIVITY_TYPE_SIGN_TRANSACTION_V2'))
      expect(outcome(await signTransaction(user, recipient, 0n, batch([{ to: recipient, value: parseEther('1'), data: '0x' }])))).toBe(
        'ACTIVITY_STATUS_COMPLETED',
      )
    })

    test('error: a grant whose native allowance exceeds the threshold needs the factor (its key is never asked); one within it does not', async () => {
      const user = await enrolledAndLapsed()
      const createGrant = (allowance: bigint) =>
        submitActivity(on, user.session, user, 'create_grant', 'ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT', {
          userId: user.userId,
          apiKey: { apiKeyName: 'grant', publicKey: generateApiKeyPair().apiPublicKey },
          grant: {
            chainId: '1',
            account: user.address,
            expiry: String(Math.floor(on.clock.now / 1000) + 3600),
            permissions: [{ type: 'native-token-recurring-allowance', data: { allowance: String(allowance), period: '86400' } }],
          },
        })
      expect(outcome(await createGrant(THRESHOLD + 1n))).toEqual(over('ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT'))
      expect(outcome(await createGrant(THRESHOLD))).toBe('ACTIVITY_STATUS_COMPLETED')
    })
  })
})
