import { createHash, randomBytes } from 'node:crypto'
import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { verifySessionJwtSignature } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { WebauthnStamper } from '@turnkey/webauthn-stamper'
import { hashMessage, recoverAddress, serializeSignature, toPrefixedMessage } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair as apiKeyPair, createKms, type Kms } from '../src/index.js'
import { rpId, softwareAuthenticator, useAuthenticator } from './authenticator.js'
import { testDatabase } from './database.js'

// Passkeys with the official @turnkey/webauthn-stamper and a software authenticator (authenticator.ts).

let kms: Kms
const clock = Date.now()
/** Moves the kms's clock on without changing what the tests stamp (`clock`). */
let later = 0
const parentKey = apiKeyPair()
let parentOrganizationId: string
let backend: TurnkeyClient

beforeAll(async () => {
  kms = createKms({
    port: await getFreePort(),
    now: () => clock + later,
    ...(await testDatabase()),
    webauthn: { rpIds: [rpId], origins: ['http://localhost:5173'] },
  })
  await kms.start()
  parentOrganizationId = (await kms.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey })).organizationId
  backend = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(parentKey))
})
afterAll(() => kms.stop())

/** The passkey sign-up the backend performs: a sub-organization whose root user is this passkey. */
function signUp(attestation: ReturnType<ReturnType<typeof softwareAuthenticator>['register']>, challenge: string, name = 'passkey user') {
  return backend.createSubOrganization({
    type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
    timestampMs: String(clock),
    organizationId: parentOrganizationId,
    parameters: {
      subOrganizationName: `${name} ${attestation.credentialId}`,
      rootQuorumThreshold: 1,
      rootUsers: [{ userName: name, apiKeys: [], authenticators: [{ authenticatorName: 'Passkey', challenge, attestation }], oauthProviders: [] }],
      wallet: {
        walletName: 'Turnkey HD',
        accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
      },
    },
  })
}

describe('passkeys', () => {
  test('default: sign-up with a passkey, then the passkey alone stamps whoami and a signature', async () => {
    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const { activity } = await signUp(authenticator.register(challenge), challenge)
    const result = activity.result.createSubOrganizationResultV8!
    useAuthenticator(authenticator)
    const user = new TurnkeyClient({ baseUrl: kms.url }, new WebauthnStamper({ rpId }))
    expect(await user.getWhoami({ organizationId: result.subOrganizationId! })).toMatchObject({ userId: result.rootUserIds![0], username: 'passkey user' })

    const address = result.wallet!.addresses[0] as `0x${string}`
    const hash = hashMessage('signed with a passkey')
    const signed = await user.signRawPayload({
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: String(clock),
      organizationId: result.subOrganizationId!,
      // The message's EIP-191 preimage, hashed by the kms (a sub-organization signs no opaque hash).
      parameters: {
        signWith: address,
        payload: toPrefixedMessage('signed with a passkey'),
        encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
        hashFunction: 'HASH_FUNCTION_KECCAK256',
      },
    })
    const { r, s, v } = signed.activity.result.signRawPayloadResult!
    expect(await recoverAddress({ hash, signature: serializeSignature({ r: `0x${r}`, s: `0x${s}`, yParity: Number(v) }) })).toBe(address)
    expect(authenticator.state.counter).toBe(2)
  })

  test('behavior: a vote cast with a passkey lists its stamp: the COSE key, the whole assertion, and the request it signed', async () => {
    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const opsKey = apiKeyPair()
    const { activity: created } = await backend.createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(clock),
      organizationId: parentOrganizationId,
      parameters: {
        subOrganizationName: `two roots ${authenticator.credentialId}`,
        rootQuorumThreshold: 2,
        rootUsers: [
          {
            userName: 'passkey user',
            apiKeys: [],
            authenticators: [{ authenticatorName: 'Passkey', challenge, attestation: authenticator.register(challenge) }],
            oauthProviders: [],
          },
          {
            userName: 'ops',
            apiKeys: [{ apiKeyName: 'ops', publicKey: opsKey.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
            authenticators: [],
            oauthProviders: [],
          },
        ],
      },
    })
    const organizationId = created.result.createSubOrganizationResultV8!.subOrganizationId!
    const [passkeyUserId] = created.result.createSubOrganizationResultV8!.rootUserIds! as [string]
    const ops = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(opsKey))
    const { activity } = await ops.createWallet({
      type: 'ACTIVITY_TYPE_CREATE_WALLET',
      timestampMs: String(clock),
      organizationId,
      parameters: { walletName: 'Both', accounts: [] },
    })
    expect(activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED')
    useAuthenticator(authenticator)
    const user = new TurnkeyClient({ baseUrl: kms.url }, new WebauthnStamper({ rpId }))
    const approval = {
      type: 'ACTIVITY_TYPE_APPROVE_ACTIVITY' as const,
      timestampMs: String(clock),
      organizationId,
      parameters: { fingerprint: activity.fingerprint },
    }
    const approved = await user.approveActivity(approval)
    expect(approved.activity.status).toBe('ACTIVITY_STATUS_COMPLETED')
    const vote = approved.activity.votes.find((cast) => cast.userId === passkeyUserId)!
    const { authenticators } = await user.getAuthenticators({ organizationId, userId: passkeyUserId })
    const assertion = JSON.parse(vote.signature) as { credentialId: string; clientDataJson: string }
    expect([vote.scheme, vote.publicKey, assertion.credentialId, JSON.parse(vote.message)]).toEqual([
      'SIGNATURE_SCHEME_TK_WEBAUTHN',
      authenticators[0]!.credential.publicKey,
      authenticator.credentialId,
      approval,
    ])
    // The assertion's challenge is the message's hash, so the vote can be checked again from what it lists.
    const clientData = JSON.parse(Buffer.from(assertion.clientDataJson, 'base64url').toString('utf8')) as { challenge: string }
    expect(clientData.challenge).toBe(Buffer.from(createHash('sha256').update(vote.message).digest('hex')).toString('base64url'))
  })

  test('error: an attestation for another challenge is refused and nothing is registered', async () => {
    const authenticator = softwareAuthenticator()
    const attestation = authenticator.register(randomBytes(32).toString('base64url'))
    await expect(signUp(attestation, randomBytes(32).toString('base64url'))).rejects.toThrow(/^Turnkey error 3: the passkey attestation does not verify: /)
    useAuthenticator(authenticator)
    await expect(new TurnkeyClient({ baseUrl: kms.url }, new WebauthnStamper({ rpId })).getWhoami({ organizationId: parentOrganizationId })).rejects.toThrow(
      `Turnkey error 16: could not find credential ${authenticator.credentialId} in organization or its parent organization`,
    )
  })

  test('error: an attestation from another origin is refused', async () => {
    const authenticator = softwareAuthenticator({ origin: 'https://phishing.test' })
    const challenge = randomBytes(32).toString('base64url')
    await expect(signUp(authenticator.register(challenge), challenge)).rejects.toThrow(
      /^Turnkey error 3: the passkey attestation does not verify: .*phishing\.test/,
    )
  })

  test('error: a stamp whose signature counter went back (a cloned authenticator) is refused', async () => {
    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const organizationId = (await signUp(authenticator.register(challenge), challenge)).activity.result.createSubOrganizationResultV8!.subOrganizationId!
    useAuthenticator(authenticator)
    const user = new TurnkeyClient({ baseUrl: kms.url }, new WebauthnStamper({ rpId }))
    await user.getWhoami({ organizationId })
    await user.getWhoami({ organizationId })
    authenticator.state.counter = 0
    await expect(user.getWhoami({ organizationId })).rejects.toThrow(/^Turnkey error 16: invalid passkey stamp: .*counter/)
  })
})

describe('passkeys of a signed-in user', () => {
  test('behavior: "Add a passkey" (create_authenticators), then it alone signs in with stamp_login', async () => {
    // A user who signed in some other way holds an API key.
    const keys = apiKeyPair()
    const { activity } = await backend.createSubOrganization({
      type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
      timestampMs: String(clock),
      organizationId: parentOrganizationId,
      parameters: {
        subOrganizationName: `api key user ${keys.apiPublicKey}`,
        rootQuorumThreshold: 1,
        rootUsers: [
          {
            userName: 'api key user',
            apiKeys: [{ apiKeyName: 'session', publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
            authenticators: [],
            oauthProviders: [],
          },
        ],
      },
    })
    const organizationId = activity.result.createSubOrganizationResultV8!.subOrganizationId!
    const userId = activity.result.createSubOrganizationResultV8!.rootUserIds![0]!
    const withKey = new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(keys))
    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const added = await withKey.createAuthenticators({
      type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
      timestampMs: String(clock),
      organizationId,
      parameters: { userId, authenticators: [{ authenticatorName: 'Laptop', challenge, attestation: authenticator.register(challenge) }] },
    })
    const [authenticatorId] = added.activity.result.createAuthenticatorsResult!.authenticatorIds
    const { authenticators } = await withKey.getAuthenticators({ organizationId, userId })
    expect(authenticators.map((a) => [a.authenticatorId, a.authenticatorName, a.credentialId, a.transports])).toEqual([
      [authenticatorId, 'Laptop', authenticator.credentialId, ['AUTHENTICATOR_TRANSPORT_INTERNAL']],
    ])

    // The passkey alone: stamp_login registers a fresh session key and returns the session JWT.
    useAuthenticator(authenticator)
    const sessionKey = apiKeyPair()
    const login = await new TurnkeyClient({ baseUrl: kms.url }, new WebauthnStamper({ rpId })).stampLogin({
      type: 'ACTIVITY_TYPE_STAMP_LOGIN',
      timestampMs: String(clock),
      organizationId,
      parameters: { publicKey: sessionKey.apiPublicKey, expirationSeconds: '3600' },
    })
    const jwt = login.activity.result.stampLoginResult!.session
    expect(await verifySessionJwtSignature(jwt, kms.signerPublicKey)).toBe(true)
    expect(JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString())).toEqual({
      exp: Math.floor(clock / 1000) + 3600,
      public_key: sessionKey.apiPublicKey,
      session_type: 'SESSION_TYPE_READ_WRITE',
      user_id: userId,
      organization_id: organizationId,
      credential_type: 'CREDENTIAL_TYPE_WEBAUTHN_AUTHENTICATOR',
    })
    expect(await new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(sessionKey)).getWhoami({ organizationId })).toMatchObject({ userId })
    // Stamped by that login key instead of the passkey: it carries the passkey's moment, so past the
    // freshness window a session may not log in again on its own.
    later = 901_000
    try {
      await expect(
        new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(sessionKey)).stampLogin({
          type: 'ACTIVITY_TYPE_STAMP_LOGIN',
          timestampMs: String(clock + later),
          organizationId,
          parameters: { publicKey: apiKeyPair().apiPublicKey, expirationSeconds: '60' },
        }),
      ).rejects.toThrow(
        'Turnkey error 7: fresh verification required: ACTIVITY_TYPE_STAMP_LOGIN from a session credential needs a passkey stamp (X-Stamp-Webauthn) or a credential from an email code less than 900 seconds old',
      )
    } finally {
      later = 0
    }
  })

  test('behavior: a passkey that does not know its sub-organization signs in by naming the parent (sub-organization look-up)', async () => {
    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const { activity } = await signUp(authenticator.register(challenge), challenge, 'returning user')
    const { subOrganizationId, rootUserIds } = activity.result.createSubOrganizationResultV8!
    useAuthenticator(authenticator)
    const user = new TurnkeyClient({ baseUrl: kms.url }, new WebauthnStamper({ rpId }))
    expect(await user.getWhoami({ organizationId: parentOrganizationId })).toMatchObject({ organizationId: subOrganizationId, userId: rootUserIds![0] })
    const sessionKey = apiKeyPair()
    const login = await user.stampLogin({
      type: 'ACTIVITY_TYPE_STAMP_LOGIN',
      timestampMs: String(clock),
      organizationId: parentOrganizationId,
      parameters: { publicKey: sessionKey.apiPublicKey, expirationSeconds: '900' },
    })
    expect(login.activity.organizationId).toBe(subOrganizationId)
    const claims = JSON.parse(Buffer.from(login.activity.result.stampLoginResult!.session.split('.')[1]!, 'base64url').toString())
    expect(claims).toMatchObject({ organization_id: subOrganizationId, user_id: rootUserIds![0] })
    // Only those two: anything else naming the parent is refused, and nothing is written there.
    await expect(
      user.createWallet({
        type: 'ACTIVITY_TYPE_CREATE_WALLET',
        timestampMs: String(clock),
        organizationId: parentOrganizationId,
        parameters: { walletName: 'sneaky', accounts: [] },
      }),
    ).rejects.toThrow('Turnkey error 16: could not find public key in organization or its parent organization')
    expect((await backend.getWallets({ organizationId: parentOrganizationId })).wallets.map((w) => w.walletName)).not.toContain('sneaky')
  })
})
