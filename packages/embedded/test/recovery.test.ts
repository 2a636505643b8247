import { randomBytes } from 'node:crypto'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { decryptCredentialBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { verifyMessage } from 'viem'
import { afterEach, describe, expect, test } from 'vitest'
import { softwareAuthenticator, useAuthenticator } from '../../kms/test/authenticator.js'
import {
  createEmbeddedWallet,
  InvalidCodeError,
  passkeyFlows,
  RECOVERY_CODE_SECONDS,
  RECOVERY_SESSION_SECONDS,
  SessionError,
  type Stamper,
} from '../src/index.js'
import { memoryKeys, memoryStorage, useEmbeddedStack } from './harness.js'

// SPEC §4–§5 recovery against a real kms and backend, under the stack's clock. The recovery frame
// is stood in for by what it does: it opens the emailed bundle with its key and stamps with it.

const stack = useEmbeddedStack()
let people = 0
const start = stack.clock
afterEach(() => {
  stack.clock = start
})

function newWallet() {
  const browser = stack.browserFetch()
  return createEmbeddedWallet({
    appName: 'Embedded test',
    backendUrl: stack.backendUrl,
    kmsUrl: stack.kms.url,
    organizationId: stack.organizationId,
    chains: [stack.chain],
    storage: memoryStorage(),
    testOnlySessionKeys: memoryKeys(),
    now: stack.now,
    fetch: browser.fetchFn,
  })
}

async function signedUp() {
  const wallet = newWallet()
  const email = `recovery${++people}.${stack.clock}@example.test`
  const sent = await wallet.startEmail(email)
  const credential = await wallet.verifyEmail(sent)
  return { email, credential, organizationId: wallet.current!.organizationId, userId: wallet.current!.userId }
}

/** The newest mail to `email`: its credential bundle, opened with `privateKey` as the recovery frame does, as a stamper. */
async function emailedStamper(email: string, privateKey: string): Promise<Stamper> {
  const inbox = (await (await fetch(`${stack.kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
  const bundle = /\n\n(\S+)\n\n/.exec(inbox.messages.find((message) => message.to === email)!.text)![1]!
  const apiPrivateKey = decryptCredentialBundle(bundle, privateKey)
  return new ApiKeyStamper({ apiPrivateKey, apiPublicKey: Buffer.from(getPublicKey(apiPrivateKey, true)).toString('hex') })
}

/** The parent organization's view of a user's credentials: what a refused recovery must leave as it was. */
async function credentialsOf(organizationId: string, userId: string) {
  const parent = new TurnkeyClient({ baseUrl: stack.kms.url }, new ApiKeyStamper(stack.parentKey))
  const [{ apiKeys }, { authenticators }] = await Promise.all([
    parent.getApiKeys({ organizationId, userId }),
    parent.getAuthenticators({ organizationId, userId }),
  ])
  return { apiKeys: apiKeys.map((key) => key.credential.publicKey).sort(), authenticators: authenticators.map((item) => item.credentialId).sort() }
}

describe('email recovery (SPEC §5: an API key, at most 900 s old)', () => {
  test('default: the emailed API key opens a recovery session of 1800 s, active only while unexpired', async () => {
    const user = await signedUp()
    const wallet = newWallet()
    const frameKey = generateP256KeyPair()
    const started = await wallet.startRecovery(user.email, frameKey.publicKeyUncompressed)
    // The backend names no ids: the emailed credential tells the kms whose it is.
    expect(started).toEqual({ recoveryType: 'email' })
    const stamper = await emailedStamper(user.email, frameKey.privateKey)
    const parent = new TurnkeyClient({ baseUrl: stack.kms.url }, new ApiKeyStamper(stack.parentKey))
    const { apiKeys } = await parent.getApiKeys({ organizationId: user.organizationId, userId: user.userId })
    expect(apiKeys.map((key) => key.credential.type)).toContain('CREDENTIAL_TYPE_EMAIL_AUTH_KEY_P256')

    const credential = await wallet.finishRecovery(stamper, started)
    expect(credential.address).toBe(user.credential.address)
    const recovered = wallet.current!
    expect(recovered.kind).toBe('recovery')
    expect(recovered.recovery).toEqual({
      recoveryType: 'email',
      recoveryUserId: user.userId,
      createdAt: new Date(stack.clock).toISOString(),
      sessionExpiration: new Date(stack.clock + RECOVERY_SESSION_SECONDS * 1000).toISOString(),
    })
    expect(RECOVERY_SESSION_SECONDS).toBe(1800)
    expect(Date.parse(recovered.session.expirationDate)).toBe(stack.clock + 1_800_000)
    const signature = await wallet.signMessage({ message: 'recovered' })
    expect(await verifyMessage({ address: credential.address, message: 'recovered', signature })).toBe(true)

    stack.clock += 1_800_000 - 1
    expect(wallet.isRecoverySessionActive()).toBe(true)
    stack.clock += 1
    expect(wallet.isRecoverySessionActive()).toBe(false)
    // Expired: the kms refuses the session key, and an expired recovery session is not renewed.
    await expect(wallet.signMessage({ message: 'too late' })).rejects.toBeInstanceOf(SessionError)
    expect(wallet.current).toBeUndefined()
  })

  test(`error: a code older than ${RECOVERY_CODE_SECONDS} s is refused with "The code is invalid or expired." and nothing is written`, async () => {
    const user = await signedUp()
    // Two credentials the kms would honour for an hour: only the 900 s rule stands between them and a session.
    const parent = new TurnkeyClient({ baseUrl: stack.kms.url }, new ApiKeyStamper(stack.parentKey))
    const stampers: Stamper[] = []
    for (let i = 0; i < 2; i++) {
      const frameKey = generateP256KeyPair()
      await parent.emailAuth({
        type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3',
        timestampMs: String(stack.clock),
        organizationId: user.organizationId,
        parameters: {
          email: user.email,
          targetPublicKey: frameKey.publicKeyUncompressed,
          expirationSeconds: '3600',
          emailCustomization: { appName: 'Embedded test' },
        },
      })
      stampers.push(await emailedStamper(user.email, frameKey.privateKey))
    }
    const recovery = { recoveryType: 'email' as const }

    stack.clock += RECOVERY_CODE_SECONDS * 1000
    const onTime = newWallet()
    expect((await onTime.finishRecovery(stampers[0]!, recovery)).address).toBe(user.credential.address)

    stack.clock += 1
    const late = newWallet()
    const before = await credentialsOf(user.organizationId, user.userId)
    const error = await late.finishRecovery(stampers[1]!, recovery).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(InvalidCodeError)
    expect(error).toMatchObject({ shortMessage: 'The code is invalid or expired.', details: 'The code is older than 900 s' })
    expect(late.current).toBeUndefined()
    expect(await credentialsOf(user.organizationId, user.userId)).toEqual(before)
  })

  test('error: a recover-user key, or a key the user does not have, is no email recovery code', async () => {
    const user = await signedUp()
    const wallet = newWallet()
    const frameKey = generateP256KeyPair()
    const started = await wallet.startRecovery(user.email, frameKey.publicKeyUncompressed, 'passkey')
    const recoverUserKey = await emailedStamper(user.email, frameKey.privateKey)
    const before = await credentialsOf(user.organizationId, user.userId)
    await expect(wallet.finishRecovery(recoverUserKey, { ...started, recoveryType: 'email' })).rejects.toMatchObject({
      code: 'invalid_code',
      details: 'The code is a CREDENTIAL_TYPE_RECOVER_USER_KEY_P256, not a CREDENTIAL_TYPE_EMAIL_AUTH_KEY_P256',
    })
    const stranger = generateP256KeyPair()
    const unknown = new ApiKeyStamper({ apiPrivateKey: stranger.privateKey, apiPublicKey: stranger.publicKey })
    const asEmail = { ...started, recoveryType: 'email' as const }
    await expect(wallet.finishRecovery(unknown, asEmail)).rejects.toBeInstanceOf(InvalidCodeError)
    // A key the kms knows that is no recovery code (the parent organization's own).
    await expect(wallet.finishRecovery(new ApiKeyStamper(stack.parentKey), asEmail)).rejects.toMatchObject({
      code: 'invalid_code',
      details: 'The code is a CREDENTIAL_TYPE_API_KEY_P256, not a CREDENTIAL_TYPE_EMAIL_AUTH_KEY_P256',
    })
    expect(wallet.current).toBeUndefined()
    expect(await credentialsOf(user.organizationId, user.userId)).toEqual(before)
  })
})

describe('passkey recovery (SPEC §5: a recover-user key, then recover_user)', () => {
  test('default: recover_user registers the new passkey (authenticator, userId) and the user signs in with it; recoveryType is passkey', async () => {
    const user = await signedUp()
    const wallet = newWallet()
    const frameKey = generateP256KeyPair()
    const started = await wallet.startRecovery(user.email, frameKey.publicKeyUncompressed, 'passkey')
    expect(started.recoveryType).toBe('passkey')
    const stamper = await emailedStamper(user.email, frameKey.privateKey)
    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const recovered = await wallet.recoverUser(stamper, {
      authenticatorName: 'New phone',
      challenge,
      attestation: authenticator.register(challenge),
    })
    expect((await credentialsOf(user.organizationId, user.userId)).authenticators).toEqual([authenticator.credentialId])
    expect(recovered).toEqual({ authenticatorId: expect.stringMatching(/^[0-9a-f-]{36}$/), userId: user.userId })

    // The new passkey alone signs in (Node has no WebAuthn: the software authenticator answers).
    useAuthenticator(authenticator)
    Object.assign(globalThis, { PublicKeyCredential: class {} })
    try {
      const credential = await passkeyFlows(wallet, { rpId: 'localhost', appName: 'Embedded test' }).signIn()
      wallet.markPasskeyRecovery(recovered.userId)
      expect(credential.address).toBe(user.credential.address)
      expect(wallet.current!.kind).toBe('passkey')
      expect(wallet.current!.recovery).toMatchObject({ recoveryType: 'passkey', recoveryUserId: user.userId })
      // SPEC §4: recovery sessions are active only for email recovery.
      expect(wallet.isRecoverySessionActive()).toBe(false)
    } finally {
      Reflect.deleteProperty(globalThis, 'PublicKeyCredential')
    }
  })

  test(`error: an email recovery code cannot register a passkey, nor a recover-user key past ${RECOVERY_CODE_SECONDS} s; nothing is written`, async () => {
    const user = await signedUp()
    const wallet = newWallet()
    const emailKey = generateP256KeyPair()
    await wallet.startRecovery(user.email, emailKey.publicKeyUncompressed, 'email')
    const apiKey = await emailedStamper(user.email, emailKey.privateKey)
    const passkeyKey = generateP256KeyPair()
    await wallet.startRecovery(user.email, passkeyKey.publicKeyUncompressed, 'passkey')
    const recoverUserKey = await emailedStamper(user.email, passkeyKey.privateKey)
    const before = await credentialsOf(user.organizationId, user.userId)
    const authenticator = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const parameters = { authenticatorName: 'New phone', challenge, attestation: authenticator.register(challenge) }
    await expect(wallet.recoverUser(apiKey, parameters)).rejects.toMatchObject({
      code: 'invalid_code',
      details: 'The code is a CREDENTIAL_TYPE_EMAIL_AUTH_KEY_P256, not a CREDENTIAL_TYPE_RECOVER_USER_KEY_P256',
    })
    stack.clock += RECOVERY_CODE_SECONDS * 1000 + 1
    await expect(wallet.recoverUser(recoverUserKey, parameters)).rejects.toBeInstanceOf(InvalidCodeError)
    expect(await credentialsOf(user.organizationId, user.userId)).toEqual(before)
  })
})
