import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { verifySessionJwtSignature } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { WebauthnStamper } from '@turnkey/webauthn-stamper'
import { getFreePort } from '@latchkey/devnet'
import { hashMessage, recoverAddress, serializeSignature } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createKms, type Kms } from '../src/index.js'

// Passkeys with the official @turnkey/webauthn-stamper. Node has no authenticator, so a software
// one stands in for the hardware (browsers' are covered by Chromium's virtual authenticator in
// e2e): an ES256 key that answers navigator.credentials.get as a platform authenticator would.

const rpId = 'localhost'
const origin = 'http://localhost:5173'

/** Minimal CBOR: unsigned and negative integers, byte and text strings, maps. */
function cbor(value: unknown): Buffer {
  const head = (major: number, length: number) =>
    length < 24 ? Buffer.from([(major << 5) | length]) : length < 256 ? Buffer.from([(major << 5) | 24, length]) : Buffer.from([(major << 5) | 25, length >> 8, length & 255])
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value)
  if (typeof value === 'string') return Buffer.concat([head(3, Buffer.byteLength(value)), Buffer.from(value)])
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), value])
  const entries = value instanceof Map ? [...value.entries()] : Object.entries(value as object)
  return Buffer.concat([head(5, entries.length), ...entries.flatMap(([key, item]) => [cbor(key), cbor(item)])])
}

const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest()
const toArrayBuffer = (bytes: Buffer) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)

function softwareAuthenticator(options: { origin?: string } = {}) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const jwk = publicKey.export({ format: 'jwk' })
  const credentialId = randomBytes(16)
  const state = { counter: 0 }
  const clientOrigin = options.origin ?? origin
  return {
    state,
    credentialId: credentialId.toString('base64url'),
    /** A "none" attestation for `challenge` (base64url), as the clients send it. */
    register(challenge: string) {
      const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.create', challenge, origin: clientOrigin, crossOrigin: false }))
      const coseKey = cbor(new Map<number, unknown>([[1, 2], [3, -7], [-1, 1], [-2, Buffer.from(jwk.x!, 'base64url')], [-3, Buffer.from(jwk.y!, 'base64url')]]))
      const length = Buffer.from([credentialId.length >> 8, credentialId.length & 255])
      const authData = Buffer.concat([sha256(rpId), Buffer.from([0x45]), Buffer.alloc(4), Buffer.alloc(16), length, credentialId, coseKey])
      return {
        credentialId: credentialId.toString('base64url'),
        clientDataJson: clientData.toString('base64url'),
        attestationObject: cbor({ fmt: 'none', attStmt: {}, authData }).toString('base64url'),
        transports: ['AUTHENTICATOR_TRANSPORT_INTERNAL' as const],
      }
    },
    /** navigator.credentials, for the stamper. */
    credentials: {
      async get({ publicKey: request }: { publicKey: { challenge: ArrayBuffer; rpId: string } }) {
        state.counter++
        const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: Buffer.from(request.challenge).toString('base64url'), origin: clientOrigin, crossOrigin: false }))
        const counter = Buffer.alloc(4)
        counter.writeUInt32BE(state.counter)
        const authenticatorData = Buffer.concat([sha256(request.rpId), Buffer.from([0x05]), counter])
        const signature = sign('sha256', Buffer.concat([authenticatorData, sha256(clientData)]), privateKey)
        return {
          id: credentialId.toString('base64url'),
          rawId: toArrayBuffer(credentialId),
          type: 'public-key',
          authenticatorAttachment: 'platform',
          response: { clientDataJSON: toArrayBuffer(clientData), authenticatorData: toArrayBuffer(authenticatorData), signature: toArrayBuffer(signature), userHandle: null },
          getClientExtensionResults: () => ({}),
        }
      },
    },
  }
}

function apiKeyPair() {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const jwk = privateKey.export({ format: 'jwk' })
  const y = Buffer.from(jwk.y!, 'base64url')
  return { apiPrivateKey: Buffer.from(jwk.d!, 'base64url').toString('hex'), apiPublicKey: `${y[31]! % 2 === 0 ? '02' : '03'}${Buffer.from(jwk.x!, 'base64url').toString('hex')}` }
}

let kms: Kms
const clock = Date.now()
const parentKey = apiKeyPair()
let parentOrganizationId: string
let backend: TurnkeyClient

beforeAll(async () => {
  kms = createKms({ port: await getFreePort(), now: () => clock, webauthn: { rpIds: [rpId], origins: [origin] } })
  await kms.start()
  parentOrganizationId = kms.createParentOrganization({ name: 'App', userName: 'backend', publicKey: parentKey.apiPublicKey }).organizationId
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
      wallet: { walletName: 'Turnkey HD', accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }] },
    },
  })
}

/** Makes `authenticator` the one navigator.credentials answers with. */
function useAuthenticator(authenticator: ReturnType<typeof softwareAuthenticator>) {
  Object.defineProperty(globalThis, 'navigator', { value: { credentials: authenticator.credentials }, configurable: true, writable: true })
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
      parameters: { signWith: address, payload: hash, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' },
    })
    const { r, s, v } = signed.activity.result.signRawPayloadResult!
    expect(await recoverAddress({ hash, signature: serializeSignature({ r: `0x${r}`, s: `0x${s}`, yParity: Number(v) }) })).toBe(address)
    expect(authenticator.state.counter).toBe(2)
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
    await expect(signUp(authenticator.register(challenge), challenge)).rejects.toThrow(/^Turnkey error 3: the passkey attestation does not verify: .*phishing\.test/)
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
        rootUsers: [{ userName: 'api key user', apiKeys: [{ apiKeyName: 'session', publicKey: keys.apiPublicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }],
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
    expect(authenticators.map((a) => [a.authenticatorId, a.authenticatorName, a.credentialId, a.transports])).toEqual([[authenticatorId, 'Laptop', authenticator.credentialId, ['AUTHENTICATOR_TRANSPORT_INTERNAL']]])

    // The passkey alone: stamp_login registers a fresh session key and returns the session JWT.
    useAuthenticator(authenticator)
    const sessionKey = apiKeyPair()
    const login = await new TurnkeyClient({ baseUrl: kms.url }, new WebauthnStamper({ rpId })).stampLogin({
      type: 'ACTIVITY_TYPE_STAMP_LOGIN',
      timestampMs: String(clock),
      organizationId,
      parameters: { publicKey: sessionKey.apiPublicKey, expirationSeconds: '900' },
    })
    const jwt = login.activity.result.stampLoginResult!.session
    expect(await verifySessionJwtSignature(jwt, kms.signerPublicKey)).toBe(true)
    expect(JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString())).toEqual({
      exp: Math.floor(clock / 1000) + 900,
      public_key: sessionKey.apiPublicKey,
      session_type: 'SESSION_TYPE_READ_WRITE',
      user_id: userId,
      organization_id: organizationId,
    })
    expect(await new TurnkeyClient({ baseUrl: kms.url }, new ApiKeyStamper(sessionKey)).getWhoami({ organizationId })).toMatchObject({ userId })
  })
})
