import { randomBytes } from 'node:crypto'
import { getFreePort, oidcInstance } from '@latchkey/devnet'
import { createKms, generateApiKeyPair, type Kms } from '@latchkey/kms'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { WebauthnStamper } from '@turnkey/webauthn-stamper'
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest'
import { rpId, softwareAuthenticator, useAuthenticator } from '../../kms/test/authenticator.js'
import { freshDatabaseUrl } from '../../service/test/testDatabase.js'
import { createServerApp, oauthNonce, openStore, type ServerAppOptions, type SiweChain, type Store } from '../src/index.js'
import { sealCode } from './consentFrameCode.js'

// The app backend against a real kms on loopback (passkeys accepted from http://localhost:5173,
// rp id localhost, as the software authenticator presents them). Each test gets a fresh store and
// app; the kms and its clock live for the file.

export const origin = 'http://localhost:5173'
export { generateApiKeyPair, rpId, softwareAuthenticator, useAuthenticator }
export type Authenticator = ReturnType<typeof softwareAuthenticator>
type Keys = { apiPublicKey: string; apiPrivateKey: string }
type SignupFields = { email?: string; passkeyIdentifier?: string; sessionSeconds?: number; otpId?: string; encryptedOtpBundle?: string }

/** The client id the apps use with the local OpenID issuers, and the app page the issuers send the browser back to. */
export const oauthClientId = 'latchkey-demo'
export const oauthRedirectUri = `${origin}/oauth/callback`

/**
 * Registers the hooks for a file and returns what its tests use; `chains` are the SIWE chains;
 * `oidc` runs the devnet's OpenID provider as Google and Apple, trusted by the kms and the app.
 */
export function useBackend(options: { chains?: readonly SiweChain[]; oidc?: boolean } = {}) {
  const backendKey = generateApiKeyPair()
  const t = {
    kms: undefined as unknown as Kms,
    store: undefined as unknown as Store,
    app: undefined as unknown as ReturnType<typeof createServerApp>,
    parentOrganizationId: '',
    /** The parent organization's own client, to look at what the backend did. */
    backend: undefined as unknown as TurnkeyClient,
    /** The kms's clock (unix ms); the app reads it a millisecond on each time, as real time would move. */
    clock: Date.now(),
    backendKey,
    /** The options each test's app is created with, for a test that needs another app over the same store. */
    options: undefined as unknown as ServerAppOptions,
    /** The local OpenID provider, with `oidc`. */
    oidc: undefined as ReturnType<typeof oidcInstance> | undefined,
  }
  beforeAll(async () => {
    if (options.oidc) {
      t.oidc = oidcInstance({ port: await getFreePort(), clientId: oauthClientId, redirectUris: [oauthRedirectUri] })
      await t.oidc.start()
    }
    const oidcIssuers = t.oidc ? Object.values(t.oidc.issuers).map(({ issuer }) => ({ issuer, audiences: [oauthClientId] })) : undefined
    t.kms = createKms({ port: await getFreePort(), now: () => t.clock, ...(oidcIssuers ? { oidcIssuers } : {}) })
    await t.kms.start()
    t.parentOrganizationId = (await t.kms.createParentOrganization({ name: 'Demo', userName: 'backend', publicKey: backendKey.apiPublicKey })).organizationId
    t.backend = new TurnkeyClient({ baseUrl: t.kms.url }, new ApiKeyStamper(backendKey))
  })
  afterAll(async () => {
    await t.kms.stop()
    await t.oidc?.stop()
  })
  beforeEach(async () => {
    t.store = await openStore(await freshDatabaseUrl({ memory: true }))
    t.options = {
      store: t.store,
      kmsUrl: t.kms.url,
      organizationId: t.parentOrganizationId,
      ...backendKey,
      sessionSignerPublicKey: t.kms.signerPublicKey,
      appName: 'Latchkey Demo',
      allowedOrigins: [origin],
      now: () => ++t.clock,
      ipOf: (request) => request.headers.get('x-test-ip') ?? '127.0.0.1',
      chains: options.chains,
      guests: true,
      ...(t.oidc
        ? {
            oauth: {
              google: { issuer: t.oidc.issuers.google.issuer, clientId: oauthClientId },
              apple: { issuer: t.oidc.issuers.apple.issuer, clientId: oauthClientId },
              // Providers the operator configures, played by the same local issuer.
              github: { issuer: t.oidc.issuers.github.issuer, clientId: oauthClientId, displayName: 'GitHub' },
              discord: { issuer: t.oidc.issuers.discord.issuer, clientId: oauthClientId, displayName: 'Discord' },
            },
          }
        : {}),
    }
    t.app = createServerApp(t.options)
  })
  afterEach(() => t.store.close())

  const post = (path: string, json: unknown, headers: Record<string, string> = {}) =>
    t.app.request(path, { method: 'POST', body: JSON.stringify(json), headers: { 'content-type': 'application/json', origin, ...headers } })

  /**
   * The proof of `email` a passkey sign-up sends: the code /auth/passkey/signup/start emailed, typed
   * (`code`, default the emailed one) and sealed as the consent frame does.
   */
  async function emailProof(email: string, code?: string) {
    const start = await post('/auth/passkey/signup/start', { email })
    expect(start.status).toBe(200)
    const sent = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
    const [mail] = await mailTo(email.toLowerCase())
    const { otpId, encryptedOtpBundle } = await frameAnswer(sent, code ?? /sign-in code is (\d{6})\./.exec(mail!.text)![1]!)
    return { otpId, encryptedOtpBundle }
  }

  /** The browser's side of a passkey sign-up: a passkey, a session key, and the request (an email's proof is the caller's). */
  async function passkeySignup(fields: SignupFields = {}) {
    const authenticator = softwareAuthenticator()
    const sessionKey = generateApiKeyPair()
    const challenge = randomBytes(32).toString('base64url')
    const response = await post('/auth/passkey/signup', {
      ...fields,
      challenge,
      attestation: authenticator.register(challenge),
      sessionPublicKey: sessionKey.apiPublicKey,
    })
    return { response, authenticator, sessionKey }
  }

  /** A passkey sign-up that must succeed (an email proven by its code): its account and the `cookie` header of its session. */
  async function signedUpWithPasskey(fields: SignupFields = { passkeyIdentifier: 'my passkey' }) {
    const proof = fields.email !== undefined && fields.otpId === undefined ? await emailProof(fields.email) : {}
    const { response, authenticator, sessionKey } = await passkeySignup({ ...fields, ...proof })
    expect(response.status).toBe(200)
    const account = (await response.json()) as { organizationId: string; userId: string; address: string }
    return { ...account, authenticator, sessionKey, cookie: cookieOf(response) }
  }

  /** stamp_login as the browser calls it, naming the parent organization: the session JWT. */
  async function stampLogin(client: TurnkeyClient, publicKey: string, organizationId = t.parentOrganizationId) {
    const { activity } = await client.stampLogin({
      type: 'ACTIVITY_TYPE_STAMP_LOGIN',
      timestampMs: String(t.clock),
      organizationId,
      parameters: { publicKey, expirationSeconds: '900' },
    })
    return activity.result.stampLoginResult!.session
  }

  /**
   * Email sign-in that must succeed, as the consent frame does it: the code sealed to the kms with
   * the frame's key (`sealCode`). The verify answer, the `cookie` header of its session, and
   * `user`, a client stamping with the key the code registered (as the embedded wallet's key).
   */
  async function signedInByEmail(email: string) {
    const start = await post('/auth/email/start', { email })
    expect(start.status).toBe(200)
    const { otpId, otpEncryptionTargetBundle } = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
    const [mail] = await mailTo(email)
    const code = /sign-in code is (\d{6})\./.exec(mail!.text)![1]!
    const key = generateApiKeyPair()
    const verify = await post('/auth/email/verify', await frameAnswer({ otpId, otpEncryptionTargetBundle }, code, key))
    expect(verify.status).toBe(200)
    const account = (await verify.json()) as { organizationId: string; userId: string; address: string; sessionExpiresAt: string }
    return { ...account, cookie: cookieOf(verify), sessionKey: key, user: new TurnkeyClient({ baseUrl: t.kms.url }, new ApiKeyStamper(key)) }
  }

  /**
   * "Continue with Google" (or Apple) with `oidc`: the local issuer's ID token for `email`, bound to a
   * new session key, posted to /auth/oauth. Answers the response and the session key.
   */
  async function oauthSignIn(email: string, provider: 'google' | 'apple' | 'github' | 'discord' = 'google') {
    const sessionKey = generateApiKeyPair()
    const idToken = await t.oidc!.idToken({ provider, email, nonce: oauthNonce(sessionKey.apiPublicKey), redirectUri: oauthRedirectUri })
    const response = await post('/auth/oauth', { provider, sessionPublicKey: sessionKey.apiPublicKey, idToken })
    return { response, sessionKey }
  }

  /** The /auth/email/verify body for `code`, as the consent frame holding `key` answers COLLECT_OTP. */
  async function frameAnswer(sent: { otpId: string; otpEncryptionTargetBundle: string }, code: string, key: Keys = generateApiKeyPair()) {
    return {
      otpId: sent.otpId,
      ...(await sealCode({ otpEncryptionTargetBundle: sent.otpEncryptionTargetBundle, code, key, signerPublicKey: t.kms.signerPublicKey })),
    }
  }

  /** Messages of the kms's dev inbox to `email`, newest first. */
  async function mailTo(email: string) {
    const inbox = (await (await fetch(`${t.kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; subject: string; text: string }[] }
    return inbox.messages.filter((message) => message.to === email)
  }

  return {
    t,
    post,
    mailTo,
    frameAnswer,
    signedInByEmail,
    passkeySignup,
    emailProof,
    signedUpWithPasskey,
    oauthSignIn,
    stampLogin,
    /** A client stamping with `keys` (a session key, a recovery credential). */
    withKey: (keys: Keys) => new TurnkeyClient({ baseUrl: t.kms.url }, new ApiKeyStamper(keys)),
    /** A client stamping with `authenticator`, as @turnkey/webauthn-stamper does in a browser. */
    withPasskey(authenticator: Authenticator) {
      useAuthenticator(authenticator)
      return new TurnkeyClient({ baseUrl: t.kms.url }, new WebauthnStamper({ rpId }))
    },
    session: (cookie: string) => t.app.request('/auth/session', { headers: { cookie } }),
    /**
     * `{activity, stamp}` as the consent frame hands the page an activity the user approved:
     * stamped by `by`, a session key, or a passkey (as a fresh verification stamps).
     */
    async userStamped(by: Keys | Authenticator, activity: object) {
      const body = JSON.stringify({ ...activity, timestampMs: String(++t.clock) })
      if ('apiPrivateKey' in by) return { activity: body, stamp: await new ApiKeyStamper(by).stamp(body) }
      useAuthenticator(by)
      return { activity: body, stamp: await new WebauthnStamper({ rpId }).stamp(body) }
    },
  }
}

/** The `cookie` request header that carries a response's session cookie. */
export const cookieOf = (response: Response) => response.headers.get('set-cookie')!.split(';')[0]!

let emails = 0
export const newEmail = () => `person${++emails}.${Date.now()}@example.test`

/** `[status, body]` of a response, for one exact assertion. */
export const answer = async (response: Response) => [response.status, await response.json()]

export { jwtSigner } from '../../../test/jwtSigner.js'
