import { createHash, randomBytes } from 'node:crypto'
import { decryptCredentialBundle, generateP256KeyPair, getPublicKey, verifySessionJwtSignature } from '@turnkey/crypto'
import { Turnkey } from '@turnkey/sdk-server'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateApiKeyPair } from '../src/index.js'
import { startKms } from './harness.js'

// OAuth: OIDC identities registered for users, and sign-in with a token of one of them (oauth for a
// credential bundle, oauth_login for a session JWT), as an app backend drives them. The tokens are
// made here; the service checks their shape, expiry, nonce and registered identity, not their
// issuer's signature (see the kms README).

let harness: Awaited<ReturnType<typeof startKms>>
beforeAll(async () => {
  harness = await startKms()
})
afterAll(() => harness.kms.stop())

const ISSUER = 'https://accounts.google.com'
const AUDIENCE = 'latchkey-client-id'
const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
/** An OIDC token as a provider issues it (the signature is not checked by the service). */
function oidcToken(claims: { sub: string; nonce?: string; exp?: number; iss?: string; aud?: string | string[] }) {
  return `${encode({ alg: 'RS256', kid: 'test', typ: 'JWT' })}.${encode({ iss: ISSUER, aud: AUDIENCE, exp: Math.floor(harness.clock.now / 1000) + 600, ...claims })}.${randomBytes(64).toString('base64url')}`
}
const nonceFor = (publicKey: string) => createHash('sha256').update(publicKey).digest('hex')

/** A sub-organization whose root user has the Google identity `subject`. */
async function withGoogleUser(subject = randomBytes(8).toString('hex')) {
  const sub = await harness.subOrganization()
  const { activity } = await sub.client.createOauthProviders({
    type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
    timestampMs: harness.timestampMs(),
    organizationId: sub.organizationId,
    parameters: { userId: sub.userId, oauthProviders: [{ providerName: 'Google', oidcToken: oidcToken({ sub: subject }) }] },
  })
  return { ...sub, subject, providerId: activity.result.createOauthProvidersResultV2!.providerIds[0]! }
}

const oauth = (organizationId: string, parameters: { oidcToken: string; targetPublicKey: string; invalidateExisting?: boolean }) =>
  harness.backend.oauth({ type: 'ACTIVITY_TYPE_OAUTH', timestampMs: harness.timestampMs(), organizationId, parameters })

const keyCount = async (organizationId: string, userId: string) => (await harness.backend.getApiKeys({ organizationId, userId })).apiKeys.length

describe('OAuth providers', () => {
  test('default: providers come from a token or from claims; get_oauth_providers and get_user list them', async () => {
    const sub = await withGoogleUser('google-subject')
    const added = await sub.client.createOauthProviders({
      type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        userId: sub.userId,
        oauthProviders: [{ providerName: 'Apple', oidcClaims: { iss: 'https://appleid.apple.com', aud: 'apple-app', sub: 'apple-subject' } }],
      },
    })
    const appleId = added.activity.result.createOauthProvidersResultV2!.providerIds[0]
    const { oauthProviders } = await sub.client.getOauthProviders({ organizationId: sub.organizationId, userId: sub.userId })
    expect(oauthProviders.map((provider) => [provider.providerId, provider.providerName, provider.issuer, provider.audience, provider.subject])).toEqual([
      [sub.providerId, 'Google', ISSUER, AUDIENCE, 'google-subject'],
      [appleId, 'Apple', 'https://appleid.apple.com', 'apple-app', 'apple-subject'],
    ])
    expect((await sub.client.getUser({ organizationId: sub.organizationId, userId: sub.userId })).user.oauthProviders).toEqual(oauthProviders)
  })

  test('error: an identity registered twice is 6; a provider with both or neither of token and claims is 3; nothing is added', async () => {
    const sub = await withGoogleUser()
    const create = (oauthProviders: { providerName: string; oidcToken?: string; oidcClaims?: { iss: string; aud: string; sub: string } }[]) =>
      sub.client.createOauthProviders({
        type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { userId: sub.userId, oauthProviders },
      })
    await expect(
      create([
        { providerName: 'Other', oidcClaims: { iss: 'https://other', aud: 'a', sub: 'b' } },
        { providerName: 'Again', oidcClaims: { iss: ISSUER, aud: AUDIENCE, sub: sub.subject } },
      ]),
    ).rejects.toThrow(`Turnkey error 6: the OAuth identity ${sub.subject} of ${ISSUER} is already registered in organization ${sub.organizationId}`)
    await expect(create([{ providerName: 'Neither' }])).rejects.toThrow(
      'Turnkey error 3: invalid parameters: oauthProviders.0: give either oidcToken or oidcClaims',
    )
    await expect(create([{ providerName: 'Broken', oidcToken: 'a.b' }])).rejects.toThrow(
      'Turnkey error 3: oidcToken is not a JWT: expected three base64url parts',
    )
    expect((await sub.client.getOauthProviders({ organizationId: sub.organizationId })).oauthProviders.map((provider) => provider.providerName)).toEqual([
      'Google',
    ])
  })

  test('behavior: delete_oauth_providers removes the identity, which then signs no one in', async () => {
    const sub = await withGoogleUser()
    const { activity } = await sub.client.deleteOauthProviders({
      type: 'ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId, providerIds: [sub.providerId] },
    })
    expect(activity.result.deleteOauthProvidersResult).toEqual({ providerIds: [sub.providerId] })
    const target = generateP256KeyPair()
    await expect(
      oauth(sub.organizationId, {
        oidcToken: oidcToken({ sub: sub.subject, nonce: nonceFor(target.publicKeyUncompressed) }),
        targetPublicKey: target.publicKeyUncompressed,
      }),
    ).rejects.toThrow(`Turnkey error 5: no user in organization ${sub.organizationId} has the OAuth identity ${sub.subject} of ${ISSUER}`)
  })
})

describe('sign-in with an OIDC token', () => {
  test('default: the backend finds the sub-organization by token, and oauth returns a credential bundle that signs the user in', async () => {
    const { backend, parent } = harness
    const sub = await withGoogleUser()
    const embedded = generateP256KeyPair()
    const token = oidcToken({ sub: sub.subject, nonce: nonceFor(embedded.publicKeyUncompressed) })
    const { organizationIds } = await backend.getSubOrgIds({ organizationId: parent.organizationId, filterType: 'OIDC_TOKEN', filterValue: token })
    expect(organizationIds).toEqual([sub.organizationId])
    const { activity } = await oauth(sub.organizationId, { oidcToken: token, targetPublicKey: embedded.publicKeyUncompressed })
    const result = activity.result.oauthResult!
    expect(result.userId).toBe(sub.userId)
    const apiPrivateKey = decryptCredentialBundle(result.credentialBundle, embedded.privateKey)
    const user = harness.client({ apiPrivateKey, apiPublicKey: Buffer.from(getPublicKey(apiPrivateKey, true)).toString('hex') })
    expect(await user.getWhoami({ organizationId: sub.organizationId })).toMatchObject({ userId: sub.userId })
    expect((await backend.getApiKey({ organizationId: sub.organizationId, apiKeyId: result.apiKeyId })).apiKey).toMatchObject({
      credential: { type: 'CREDENTIAL_TYPE_OAUTH_KEY_P256' },
      expirationSeconds: '900',
    })
  })

  test('behavior: through @turnkey/sdk-server, with invalidateExisting dropping the earlier OAuth credential', async () => {
    const { kms, parentKey } = harness
    const sub = await withGoogleUser()
    const sdk = new Turnkey({
      apiBaseUrl: kms.url,
      apiPublicKey: parentKey.apiPublicKey,
      apiPrivateKey: parentKey.apiPrivateKey,
      defaultOrganizationId: harness.parent.organizationId,
    }).apiClient()
    const signIn = async (invalidateExisting: boolean) => {
      const embedded = generateP256KeyPair()
      const token = oidcToken({ sub: sub.subject, nonce: nonceFor(embedded.publicKeyUncompressed) })
      return sdk.oauth({ organizationId: sub.organizationId, oidcToken: token, targetPublicKey: embedded.publicKeyUncompressed, invalidateExisting })
    }
    const first = await signIn(false)
    const second = await signIn(true)
    expect([first.userId, second.userId]).toEqual([sub.userId, sub.userId])
    const { apiKeys } = await sdk.getApiKeys({ organizationId: sub.organizationId, userId: sub.userId })
    const ofType = (type: string) => apiKeys.filter((key) => key.credential.type === type).map((key) => key.apiKeyId)
    expect([ofType('CREDENTIAL_TYPE_OAUTH_KEY_P256'), ofType('CREDENTIAL_TYPE_API_KEY_P256').length, apiKeys.length]).toEqual([[second.apiKeyId], 1, 2])
  })

  test('behavior: oauth_login registers the public key and returns a session JWT the signer key verifies', async () => {
    const sub = await withGoogleUser()
    const session = generateApiKeyPair()
    const { activity } = await harness.backend.oauthLogin({
      type: 'ACTIVITY_TYPE_OAUTH_LOGIN',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: {
        oidcToken: oidcToken({ sub: sub.subject, nonce: nonceFor(session.apiPublicKey) }),
        publicKey: session.apiPublicKey,
        expirationSeconds: '600',
      },
    })
    const jwt = activity.result.oauthLoginResult!.session
    expect(await verifySessionJwtSignature(jwt, harness.kms.signerPublicKey)).toBe(true)
    expect(JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString())).toEqual({
      exp: Math.floor(harness.clock.now / 1000) + 600,
      public_key: session.apiPublicKey,
      session_type: 'SESSION_TYPE_READ_WRITE',
      user_id: sub.userId,
      organization_id: sub.organizationId,
    })
    expect(await harness.client(session).getWhoami({ organizationId: sub.organizationId })).toMatchObject({ userId: sub.userId })
  })

  test('error: a wrong nonce, an expired token, another audience or a malformed token registers no credential', async () => {
    const sub = await withGoogleUser()
    const target = generateP256KeyPair()
    const nonce = nonceFor(target.publicKeyUncompressed)
    const attempt = (oidcToken: string) => oauth(sub.organizationId, { oidcToken, targetPublicKey: target.publicKeyUncompressed })
    const before = await keyCount(sub.organizationId, sub.userId)
    await expect(attempt(oidcToken({ sub: sub.subject, nonce: nonceFor(generateP256KeyPair().publicKeyUncompressed) }))).rejects.toThrow(
      'Turnkey error 3: the OIDC token nonce must be the hex SHA-256 of the public key the credential is for',
    )
    await expect(attempt(oidcToken({ sub: sub.subject }))).rejects.toThrow(
      'Turnkey error 3: the OIDC token nonce must be the hex SHA-256 of the public key the credential is for',
    )
    const expired = Math.floor(harness.clock.now / 1000) - 1
    await expect(attempt(oidcToken({ sub: sub.subject, nonce, exp: expired }))).rejects.toThrow(
      `Turnkey error 3: the OIDC token expired at ${new Date(expired * 1000).toISOString()}`,
    )
    await expect(attempt(oidcToken({ sub: sub.subject, nonce, aud: 'another-app' }))).rejects.toThrow(
      `Turnkey error 5: no user in organization ${sub.organizationId} has the OAuth identity ${sub.subject} of ${ISSUER}`,
    )
    await expect(attempt(`${encode({ alg: 'RS256' })}.${encode({ iss: ISSUER, aud: AUDIENCE })}.c2ln`)).rejects.toThrow(
      'Turnkey error 3: oidcToken claims are incomplete: sub: Invalid input',
    )
    await expect(attempt('not-a-jwt')).rejects.toThrow('Turnkey error 3: oidcToken is not a JWT: expected three base64url parts')
    expect(await keyCount(sub.organizationId, sub.userId)).toBe(before)
    // An audience list naming the registered one is accepted.
    expect((await attempt(oidcToken({ sub: sub.subject, nonce, aud: ['another-app', AUDIENCE] }))).activity.result.oauthResult!.userId).toBe(sub.userId)
  })
})
