import { decryptCredentialBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto'
import { describe, expect, test } from 'vitest'
import { answer, cookieOf, generateApiKeyPair, newEmail, useBackend } from './backend.js'

// The server, not the client, decides a login's session (security review L1): a passkey's
// stamp_login is a full session; a recovery credential's or a session key's lasts no longer
// than its JWT, whatever `kind` the client claims.

const { t, post, mailTo, signedInByEmail, signedUpWithPasskey, stampLogin, withKey, withPasskey, session } = useBackend()

const expOf = (jwt: string) => (JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp

/** The emailed recovery credential of `email`'s account, opened as the recovery frame opens it. */
async function recoveryCredential(email: string) {
  const embedded = generateP256KeyPair()
  expect((await post('/auth/recovery/start', { email, targetPublicKey: embedded.publicKeyUncompressed })).status).toBe(200)
  const [mail] = await mailTo(email) // the newest: the recovery mail
  const apiPrivateKey = decryptCredentialBundle(mail!.text.split('\n')[2]!, embedded.privateKey)
  return withKey({ apiPrivateKey, apiPublicKey: Buffer.from(getPublicKey(apiPrivateKey, true)).toString('hex') })
}

describe('POST /auth/login decides the kind', () => {
  test('error: the review’s script: a recovery JWT sent with kind passkey is a recovery session ending with its JWT, not 7 days', async () => {
    const email = newEmail()
    // An account of a verified email: only those recover by email (a passkey sign-up's email binds nothing).
    const account = await signedInByEmail(email)
    const jwt = await stampLogin(await recoveryCredential(email), generateApiKeyPair().apiPublicKey)
    const login = await post('/auth/login', { session: jwt, kind: 'passkey' })
    const at = t.clock
    expect(await answer(login)).toEqual([200, { organizationId: account.organizationId, userId: account.userId, address: account.address }])
    expect(login.headers.get('set-cookie')).toBe(
      `${cookieOf(login)}; Max-Age=${Math.floor((expOf(jwt) * 1000 - at) / 1000)}; Path=/; HttpOnly; Secure; SameSite=Strict`,
    )
    expect((await answer(await session(cookieOf(login))))[1]).toMatchObject({ kind: 'recovery', expiresAt: new Date(expOf(jwt) * 1000).toISOString() })
  })

  test('error: a short-lived session key cannot stamp a login at all: the kms asks for a fresh verification', async () => {
    const account = await signedUpWithPasskey({ email: newEmail() })
    await expect(stampLogin(withKey(account.sessionKey), generateApiKeyPair().apiPublicKey)).rejects.toThrow(
      'fresh verification required: ACTIVITY_TYPE_STAMP_LOGIN from a session credential needs a passkey stamp (X-Stamp-Webauthn) or a credential from an email code less than 900 seconds old',
    )
  })

  test('default: a passkey’s JWT is a full passkey session, whatever kind the client claims', async () => {
    const account = await signedUpWithPasskey({ email: newEmail() })
    const jwt = await stampLogin(withPasskey(account.authenticator), generateApiKeyPair().apiPublicKey)
    const login = await post('/auth/login', { session: jwt, kind: 'recovery' })
    expect(login.headers.get('set-cookie')).toMatch(/^__Host-latchkey_session=[\w-]{43}; Max-Age=604800; /)
    expect((await answer(await session(cookieOf(login))))[1]).toMatchObject({ kind: 'passkey' })
  })
})
