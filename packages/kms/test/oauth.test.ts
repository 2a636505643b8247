import { createHash, randomBytes } from 'node:crypto'
import { getFreePort, oidcInstance } from '@latchkey/devnet'
import { decryptCredentialBundle, generateP256KeyPair, getPublicKey, verifySessionJwtSignature } from '@turnkey/crypto'
import { Turnkey } from '@turnkey/sdk-server'
import type { JWTPayload } from 'jose'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createKms, generateApiKeyPair } from '../src/index.js'
import { startKms } from './harness.js'
import { startTestIssuer } from './oidcIssuer.js'

// OAuth: OIDC identities registered for users, and sign-in with a token of one of them (oauth for a
// credential bundle, oauth_login for a session JWT), as an app backend drives them. The kms trusts
// two issuers by configuration: the devnet's real OpenID provider (oidc-provider) playing Google,
// and a small issuer whose tokens jose signs here, for the tokens a real provider will not issue
// (expired, for another audience, any nonce, forged). Every token is verified against its
// issuer's JWKS.

const AUDIENCE = 'latchkey-client-id'
const CLIENT_ID = 'latchkey-demo'
const REDIRECT_URI = 'http://localhost:5173/oauth/callback'
let harness: Awaited<ReturnType<typeof startKms>>
let issuer: Awaited<ReturnType<typeof startTestIssuer>>
let provider: ReturnType<typeof oidcInstance>
let ISSUER: string
beforeAll(async () => {
  issuer = await startTestIssuer()
  ISSUER = issuer.issuer
  provider = oidcInstance({ port: await getFreePort(), clientId: CLIENT_ID, redirectUris: [REDIRECT_URI] })
  await provider.start()
  harness = await startKms({
    oidcIssuers: [
      { issuer: ISSUER, audiences: [AUDIENCE] },
      { issuer: provider.issuers.google.issuer, audiences: [CLIENT_ID] },
    ],
  })
})
afterAll(async () => {
  await harness.kms.stop()
  await Promise.all([issuer.stop(), provider.stop()])
})

const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
/** An ID token of the test issuer, for the kms's clock: `claims` over its defaults. */
const oidcToken = (claims: JWTPayload & { sub: string }) => issuer.sign(claims, { audience: AUDIENCE, now: harness.clock.now })
const nonceFor = (publicKey: string) => createHash('sha256').update(publicKey).digest('hex')

/** A sub-organization whose root user has the test issuer's identity `subject`. */
async function withGoogleUser(subject = randomBytes(8).toString('hex')) {
  const sub = await harness.subOrganization()
  const { activity } = await sub.client.createOauthProviders({
    type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
    timestampMs: harness.timestampMs(),
    organizationId: sub.organizationId,
    parameters: { userId: sub.userId, oauthProviders: [{ providerName: 'Google', oidcToken: await oidcToken({ sub: subject }) }] },
  })
  return { ...sub, subject, providerId: activity.result.createOauthProvidersResultV2!.providerIds[0]! }
}

const oauth = (organizationId: string, parameters: { oidcToken: string; targetPublicKey: string; invalidateExisting?: boolean }) =>
  harness.backend.oauth({ type: 'ACTIVITY_TYPE_OAUTH', timestampMs: harness.timestampMs(), organizationId, parameters })

const oauthLogin = (organizationId: string, parameters: { oidcToken: string; publicKey: string; expirationSeconds?: string }) =>
  harness.backend.oauthLogin({ type: 'ACTIVITY_TYPE_OAUTH_LOGIN', timestampMs: harness.timestampMs(), organizationId, parameters })

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
        oidcToken: await oidcToken({ sub: sub.subject, nonce: nonceFor(target.publicKeyUncompressed) }),
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
    const token = await oidcToken({ sub: sub.subject, nonce: nonceFor(embedded.publicKeyUncompressed) })
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

  test('error: list_suborgs by OIDC_TOKEN verifies the token as oauth_login does, without the nonce: a forged, expired, wrong-audience or untrusted one finds nothing', async () => {
    const { backend, parent } = harness
    const sub = await withGoogleUser()
    const find = async (token: string | Promise<string>) =>
      (await backend.getSubOrgIds({ organizationId: parent.organizationId, filterType: 'OIDC_TOKEN', filterValue: await token })).organizationIds
    // Any nonce, or none: finding an identity's sub-organization signs no one in.
    expect(await find(oidcToken({ sub: sub.subject }))).toEqual([sub.organizationId])
    expect(await find(oidcToken({ sub: sub.subject, nonce: nonceFor(generateP256KeyPair().publicKey) }))).toEqual([sub.organizationId])
    const forged = issuer.sign({ sub: sub.subject }, { audience: AUDIENCE, now: harness.clock.now }, await issuer.otherKey())
    await expect(find(forged)).rejects.toThrow(`Turnkey error 3: the OIDC token is not signed by ${ISSUER}: signature verification failed`)
    const [header, , signature] = (await oidcToken({ sub: 'someone-else' })).split('.')
    const tampered = `${header}.${encode({ iss: ISSUER, aud: AUDIENCE, sub: sub.subject, exp: Math.floor(harness.clock.now / 1000) + 600 })}.${signature}`
    await expect(find(tampered)).rejects.toThrow(`Turnkey error 3: the OIDC token is not signed by ${ISSUER}: signature verification failed`)
    const expired = Math.floor(harness.clock.now / 1000) - 1
    await expect(find(oidcToken({ sub: sub.subject, exp: expired }))).rejects.toThrow(
      `Turnkey error 3: the OIDC token expired at ${new Date(expired * 1000).toISOString()}`,
    )
    await expect(find(oidcToken({ sub: sub.subject, aud: 'another-app' }))).rejects.toThrow(
      `Turnkey error 3: the OIDC token is for "another-app", not for a client of ${ISSUER} this service trusts (${AUDIENCE})`,
    )
    await expect(find(oidcToken({ sub: sub.subject, iss: 'https://accounts.google.com' }))).rejects.toThrow(
      "Turnkey error 3: the OIDC token's issuer https://accounts.google.com is not trusted by this service",
    )
    await expect(find('not-a-jwt')).rejects.toThrow('Turnkey error 3: oidcToken is not a JWT: expected three base64url parts')
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
      const token = await oidcToken({ sub: sub.subject, nonce: nonceFor(embedded.publicKeyUncompressed) })
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
        oidcToken: await oidcToken({ sub: sub.subject, nonce: nonceFor(session.apiPublicKey) }),
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

  test('error: a forged, expired, wrong-audience, wrong-nonce, untrusted or malformed token is refused and registers no credential', async () => {
    const sub = await withGoogleUser()
    const target = generateP256KeyPair()
    const nonce = nonceFor(target.publicKeyUncompressed)
    const attempt = async (token: string | Promise<string>) =>
      oauth(sub.organizationId, { oidcToken: await token, targetPublicKey: target.publicKeyUncompressed })
    const login = async (token: string | Promise<string>) => oauthLogin(sub.organizationId, { oidcToken: await token, publicKey: target.publicKey })
    const before = await keyCount(sub.organizationId, sub.userId)
    // Forged: the issuer's claims and key id, signed by another key.
    const forged = issuer.sign({ sub: sub.subject, nonce }, { audience: AUDIENCE, now: harness.clock.now }, await issuer.otherKey())
    await expect(attempt(forged)).rejects.toThrow(`Turnkey error 3: the OIDC token is not signed by ${ISSUER}: signature verification failed`)
    // Its claims changed after signing: the same.
    const [header, , signature] = (await oidcToken({ sub: sub.subject, nonce })).split('.')
    const tampered = `${header}.${encode({ iss: ISSUER, aud: AUDIENCE, sub: sub.subject, nonce, exp: Math.floor(harness.clock.now / 1000) + 7200 })}.${signature}`
    await expect(attempt(tampered)).rejects.toThrow(`Turnkey error 3: the OIDC token is not signed by ${ISSUER}: signature verification failed`)
    const expired = Math.floor(harness.clock.now / 1000) - 1
    await expect(attempt(oidcToken({ sub: sub.subject, nonce, exp: expired }))).rejects.toThrow(
      `Turnkey error 3: the OIDC token expired at ${new Date(expired * 1000).toISOString()}`,
    )
    await expect(attempt(oidcToken({ sub: sub.subject, nonce, aud: 'another-app' }))).rejects.toThrow(
      `Turnkey error 3: the OIDC token is for "another-app", not for a client of ${ISSUER} this service trusts (${AUDIENCE})`,
    )
    await expect(attempt(oidcToken({ sub: sub.subject, nonce: nonceFor(generateP256KeyPair().publicKeyUncompressed) }))).rejects.toThrow(
      'Turnkey error 3: the OIDC token nonce must be the hex SHA-256 of the public key the credential is for',
    )
    await expect(attempt(oidcToken({ sub: sub.subject }))).rejects.toThrow(
      'Turnkey error 3: the OIDC token nonce must be the hex SHA-256 of the public key the credential is for',
    )
    await expect(attempt(oidcToken({ sub: sub.subject, nonce, iss: 'https://accounts.google.com' }))).rejects.toThrow(
      `Turnkey error 3: the OIDC token's issuer https://accounts.google.com is not trusted by this service (trusted: ${ISSUER}, ${provider.issuers.google.issuer})`,
    )
    await expect(attempt(`${encode({ alg: 'RS256' })}.${encode({ aud: AUDIENCE })}.c2ln`)).rejects.toThrow(
      'Turnkey error 3: oidcToken claims name no issuer (iss)',
    )
    await expect(attempt('not-a-jwt')).rejects.toThrow('Turnkey error 3: oidcToken is not a JWT: expected three base64url parts')
    // oauth_login checks the same, against the session key.
    await expect(login(forged)).rejects.toThrow(`Turnkey error 3: the OIDC token is not signed by ${ISSUER}: signature verification failed`)
    await expect(login(oidcToken({ sub: sub.subject, nonce: nonceFor(target.publicKey), exp: expired }))).rejects.toThrow(
      `Turnkey error 3: the OIDC token expired at ${new Date(expired * 1000).toISOString()}`,
    )
    await expect(login(oidcToken({ sub: sub.subject, nonce: nonceFor(target.publicKey), aud: 'another-app' }))).rejects.toThrow(
      `Turnkey error 3: the OIDC token is for "another-app", not for a client of ${ISSUER} this service trusts (${AUDIENCE})`,
    )
    await expect(login(oidcToken({ sub: sub.subject, nonce }))).rejects.toThrow(
      'Turnkey error 3: the OIDC token nonce must be the hex SHA-256 of the public key the credential is for',
    )
    expect(await keyCount(sub.organizationId, sub.userId)).toBe(before)
    // The same token, valid, is accepted; and an audience list naming a trusted one.
    expect((await attempt(oidcToken({ sub: sub.subject, nonce, aud: ['another-app', AUDIENCE] }))).activity.result.oauthResult!.userId).toBe(sub.userId)
  })

  test('error: a forged or expired token registers no OAuth provider, by create_oauth_providers or with a new sub-organization', async () => {
    const sub = await harness.subOrganization()
    const register = async (token: Promise<string>) =>
      sub.client.createOauthProviders({
        type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: { userId: sub.userId, oauthProviders: [{ providerName: 'Google', oidcToken: await token }] },
      })
    const subject = randomBytes(8).toString('hex')
    await expect(register(issuer.sign({ sub: subject }, { audience: AUDIENCE, now: harness.clock.now }, await issuer.otherKey()))).rejects.toThrow(
      `Turnkey error 3: the OIDC token is not signed by ${ISSUER}: signature verification failed`,
    )
    const expired = Math.floor(harness.clock.now / 1000) - 1
    await expect(register(oidcToken({ sub: subject, exp: expired }))).rejects.toThrow(
      `Turnkey error 3: the OIDC token expired at ${new Date(expired * 1000).toISOString()}`,
    )
    expect((await sub.client.getOauthProviders({ organizationId: sub.organizationId, userId: sub.userId })).oauthProviders).toEqual([])

    // With a new sub-organization: a forged token creates nothing; a good one registers the identity.
    const createSub = async (token: Promise<string>) =>
      harness.backend.createSubOrganization({
        type: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8',
        timestampMs: harness.timestampMs(),
        organizationId: harness.parent.organizationId,
        parameters: {
          subOrganizationName: `oauth ${subject}`,
          rootQuorumThreshold: 1,
          rootUsers: [
            {
              userName: 'root',
              apiKeys: [{ apiKeyName: 'root key', publicKey: generateApiKeyPair().apiPublicKey, curveType: 'API_KEY_CURVE_P256' }],
              authenticators: [],
              oauthProviders: [{ providerName: 'Google', oidcToken: await token }],
            },
          ],
        },
      })
    const { organizationIds: before } = await harness.backend.getSubOrgIds({ organizationId: harness.parent.organizationId })
    await expect(createSub(issuer.sign({ sub: subject }, { audience: AUDIENCE, now: harness.clock.now }, await issuer.otherKey()))).rejects.toThrow(
      `Turnkey error 3: the OIDC token is not signed by ${ISSUER}: signature verification failed`,
    )
    expect((await harness.backend.getSubOrgIds({ organizationId: harness.parent.organizationId })).organizationIds).toEqual(before)
    const created = (await createSub(oidcToken({ sub: subject }))).activity.result.createSubOrganizationResultV8!
    const { oauthProviders } = await harness.backend.getOauthProviders({ organizationId: created.subOrganizationId!, userId: created.rootUserIds![0]! })
    expect(oauthProviders.map((entry) => [entry.issuer, entry.audience, entry.subject])).toEqual([[ISSUER, AUDIENCE, subject]])
  })
})

describe('the real OpenID provider', () => {
  test('default: an ID token of the local provider (oidc-provider) registers the identity and signs the session key in by oauth_login', async () => {
    const sub = await harness.subOrganization()
    const email = `kms.${randomBytes(4).toString('hex')}@example.test`
    const idToken = (nonce: string) => provider.idToken({ provider: 'google', email, nonce, redirectUri: REDIRECT_URI })
    await sub.client.createOauthProviders({
      type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2',
      timestampMs: harness.timestampMs(),
      organizationId: sub.organizationId,
      parameters: { userId: sub.userId, oauthProviders: [{ providerName: 'Google', oidcToken: await idToken('registration') }] },
    })
    const { oauthProviders } = await sub.client.getOauthProviders({ organizationId: sub.organizationId, userId: sub.userId })
    expect(oauthProviders.map((entry) => [entry.issuer, entry.audience])).toEqual([[provider.issuers.google.issuer, CLIENT_ID]])

    const session = generateApiKeyPair()
    // The kms's clock is the test's; the provider's is the machine's.
    harness.clock.now = Date.now()
    const { activity } = await oauthLogin(sub.organizationId, { oidcToken: await idToken(nonceFor(session.apiPublicKey)), publicKey: session.apiPublicKey })
    expect(await verifySessionJwtSignature(activity.result.oauthLoginResult!.session, harness.kms.signerPublicKey)).toBe(true)
    expect(await harness.client(session).getWhoami({ organizationId: sub.organizationId })).toMatchObject({ userId: sub.userId })

    // The provider's token for another session key signs nothing in.
    const other = generateApiKeyPair()
    await expect(oauthLogin(sub.organizationId, { oidcToken: await idToken(nonceFor(other.apiPublicKey)), publicKey: session.apiPublicKey })).rejects.toThrow(
      'Turnkey error 3: the OIDC token nonce must be the hex SHA-256 of the public key the credential is for',
    )
    // Over this whole file, the test issuer's discovery was fetched once: key sets are kept.
    expect(issuer.discoveries()).toBe(1)
  })

  test('error: a kms that trusts no issuer refuses every token', async () => {
    const kms = createKms({ port: await getFreePort() })
    await kms.start()
    try {
      const parentKey = generateApiKeyPair()
      const { organizationId } = await kms.createParentOrganization({ name: 'Bare', userName: 'backend', publicKey: parentKey.apiPublicKey })
      const sdk = new Turnkey({ apiBaseUrl: kms.url, ...parentKey, defaultOrganizationId: organizationId }).apiClient()
      const session = generateApiKeyPair()
      const token = await provider.idToken({ provider: 'google', email: 'bare@example.test', nonce: nonceFor(session.apiPublicKey), redirectUri: REDIRECT_URI })
      await expect(sdk.oauthLogin({ organizationId, oidcToken: token, publicKey: session.apiPublicKey })).rejects.toThrow(
        `Turnkey error 3: the OIDC token's issuer ${provider.issuers.google.issuer} is not trusted by this service: no issuer is configured`,
      )
    } finally {
      await kms.stop()
    }
  })
})
