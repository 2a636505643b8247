import { randomBytes } from 'node:crypto'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { decryptExportBundle, generateP256KeyPair } from '@turnkey/crypto'
import { TurnkeyClient } from '@turnkey/http'
import { verifyMessage } from 'viem'
import { mnemonicToAccount } from 'viem/accounts'
import { afterEach, describe, expect, test } from 'vitest'
import { softwareAuthenticator, useAuthenticator } from '../../kms/test/authenticator.js'
import { memoryKeys, memoryStorage, useEmbeddedStack } from '../test/harness.js'
import { createBackend } from './backend.js'
import { ProviderRpcError } from './errors.js'
import { linkingFlows } from './linking.js'
import { REVERIFY_CODE_TRIES } from './reverify.js'
import { createEmbeddedWallet } from './wallet.js'

// Re-verification against a real kms and app backend whose clock the test moves past the kms's
// fresh-verification window (900 s): export and a new passkey, refused to a session key that old,
// run after the user re-verifies: by an emailed code typed in the consent frame (here the test
// keys' collectOtp, the frame's COLLECT_OTP), or by a passkey (a software authenticator).

const stack = useEmbeddedStack()
const WINDOW_MS = 900_000
const original = Object.getOwnPropertyDescriptor(globalThis, 'navigator')
afterEach(() => {
  if (original) Object.defineProperty(globalThis, 'navigator', original)
})

/** The backend's own key: reads any sub-organization, as the assertions need. */
const parent = () => new TurnkeyClient({ baseUrl: stack.kms.url }, new ApiKeyStamper(stack.parentKey))

type Setup = ReturnType<typeof newWallet>
type Intercept = (input: Parameters<typeof fetch>[0], init: RequestInit | undefined, next: typeof fetch) => Promise<Response>

/** A wallet in a browser (its own cookie jar unless given one) whose backend calls the test may intercept. */
function newWallet(browser = stack.browserFetch()) {
  const keys = memoryKeys()
  let intercept: Intercept | undefined
  const wallet = createEmbeddedWallet({
    appName: 'Embedded test',
    backendUrl: stack.backendUrl,
    kmsUrl: stack.kms.url,
    organizationId: stack.organizationId,
    chains: [stack.chain],
    storage: memoryStorage(),
    testOnlySessionKeys: keys,
    rpId: 'localhost',
    now: stack.now,
    fetch: (input, init) => (intercept ? intercept(input, init, browser.fetchFn) : browser.fetchFn(input, init)),
  })
  return { wallet, keys, browser, intercept: (next: Intercept) => void (intercept = next) }
}

const newEmail = () => `reverify.${randomBytes(6).toString('hex')}@example.test`

async function signedIn(setup: Setup = newWallet(), email = newEmail()) {
  await setup.wallet.verifyEmail(await setup.wallet.startEmail(email))
  return { ...setup, email, user: setup.wallet.current! }
}

/** How many emails the kms's dev inbox holds for `email`. */
async function mails(email: string): Promise<number> {
  const inbox = (await (await fetch(`${stack.kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string }[] }
  return inbox.messages.filter((message) => message.to === email).length
}

async function exported(user: { organizationId: string; credential: { signerRefId: string } }): Promise<boolean> {
  return (await parent().getWallet({ organizationId: user.organizationId, walletId: user.credential.signerRefId })).wallet.exported
}

async function apiKeysOf(user: { organizationId: string; userId: string }): Promise<string[]> {
  const { apiKeys } = await parent().getApiKeys({ organizationId: user.organizationId, userId: user.userId })
  return apiKeys.map((key) => key.credential.publicKey)
}

/** An export bundle to a fresh target, opened: the phrase's first account. */
async function exportedAccount(setup: Setup) {
  const target = generateP256KeyPair()
  const bundle = await setup.wallet.exportBundle(target.publicKeyUncompressed)
  const mnemonic = await decryptExportBundle({
    exportBundle: bundle,
    embeddedKey: target.privateKey,
    organizationId: setup.wallet.current!.organizationId,
    returnMnemonic: true,
    dangerouslyOverrideSignerPublicKey: stack.kms.signerPublicKey,
  })
  return mnemonicToAccount(mnemonic).address
}

const cancelledOtp = (keys: ReturnType<typeof memoryKeys>) => {
  keys.collectOtp = async () => {
    throw new ProviderRpcError(4001, 'User rejected the request.')
  }
}

const REFUSED = (type: string) =>
  `Turnkey error 7: fresh verification required: ${type} from a session credential needs a passkey stamp (X-Stamp-Webauthn) or a credential from an email code less than 900 seconds old`

describe('by an emailed code', () => {
  test('default: past the window, export emails a code, the code typed in the frame re-verifies the wallet’s key, and the export runs with it', async () => {
    const setup = await signedIn()
    const key = setup.user.session.publicKey
    stack.clock += WINDOW_MS + 1000
    expect(await exportedAccount(setup)).toBe(setup.user.credential.address)
    expect(await mails(setup.email)).toBe(2)
    // The same key, its expiry unchanged: the code re-verified it, nothing was replaced.
    expect(await setup.keys.publicKey()).toBe(key)
    expect(setup.wallet.current).toEqual(setup.user)
    expect(await apiKeysOf(setup.user)).toEqual([key])
    // Still fresh: a second export asks for nothing.
    await exportedAccount(setup)
    expect(await mails(setup.email)).toBe(2)
  })

  test('behavior: a new passkey past the window is the same retry: a code, then create_authenticators with the new key', async () => {
    const setup = await signedIn()
    stack.clock += WINDOW_MS + 1000
    const passkey = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    const id = await setup.wallet.addAuthenticator({ authenticatorName: 'Laptop', challenge, attestation: passkey.register(challenge) })
    const { authenticators } = await parent().getAuthenticators({ organizationId: setup.user.organizationId, userId: setup.user.userId })
    expect(authenticators.map((authenticator) => [authenticator.authenticatorId, authenticator.credentialId])).toEqual([[id, passkey.credentialId]])
    expect(await mails(setup.email)).toBe(2)
  })

  test('behavior: a wrong code is asked for again, and the right one then exports', async () => {
    const setup = await signedIn()
    stack.clock += WINDOW_MS + 1000
    let asked = 0
    const collect = setup.keys.collectOtp!.bind(setup.keys)
    setup.keys.collectOtp = async (value) => {
      if (++asked === 1) setup.keys.typeNext((await stack.codeFor(setup.email)) === '000000' ? '111111' : '000000')
      return collect(value)
    }
    expect(await exportedAccount(setup)).toBe(setup.user.credential.address)
    expect(asked).toBe(2)
  })

  test('behavior: two exports refused at once share one code', async () => {
    const setup = await signedIn()
    stack.clock += WINDOW_MS + 1000
    const [first, second] = await Promise.all([exportedAccount(setup), exportedAccount(setup)])
    expect([first, second]).toEqual([setup.user.credential.address, setup.user.credential.address])
    expect(await mails(setup.email)).toBe(2)
  })

  test('behavior: a signature asked for while the code is typed is signed with the same key, and the wallet stays signed in', async () => {
    const setup = await signedIn()
    stack.clock += WINDOW_MS + 1000
    const collect = setup.keys.collectOtp!.bind(setup.keys)
    let signing: Promise<`0x${string}`> | undefined
    setup.keys.collectOtp = async (value) => {
      // The key stays the kms's while the user types: nothing waits for the code.
      signing = setup.wallet.signMessage({ message: 'while typing' })
      return collect(value)
    }
    await exportedAccount(setup)
    const signature = await signing!
    expect(await verifyMessage({ address: setup.user.credential.address, message: 'while typing', signature })).toBe(true)
    expect(setup.wallet.current?.session.publicKey).toBe(await setup.keys.publicKey())
  })

  test('error: cancelling the code is 4001 and exports nothing; the wallet stays signed in with its key', async () => {
    const setup = await signedIn()
    const key = setup.user.session.publicKey
    stack.clock += WINDOW_MS + 1000
    cancelledOtp(setup.keys)
    await expect(setup.wallet.exportBundle(generateP256KeyPair().publicKeyUncompressed)).rejects.toMatchObject({
      code: 4001,
      message: 'User rejected the request.',
    })
    expect(await exported(setup.user)).toBe(false)
    expect(setup.wallet.current).toEqual(setup.user)
    expect(await setup.keys.publicKey()).toBe(key)
    expect(await apiKeysOf(setup.user)).toEqual([key])
    // Still signed in: what needs no fresh verification signs as before.
    const signature = await setup.wallet.signMessage({ message: 'after cancel' })
    expect(await verifyMessage({ address: setup.user.credential.address, message: 'after cancel', signature })).toBe(true)
  })

  test(`error: ${REVERIFY_CODE_TRIES} wrong codes end the export as "The code is invalid or expired.", export nothing and keep the sign-in`, async () => {
    const setup = await signedIn()
    stack.clock += WINDOW_MS + 1000
    let asked = 0
    const collect = setup.keys.collectOtp!.bind(setup.keys)
    setup.keys.collectOtp = async (value) => {
      asked++
      setup.keys.typeNext((await stack.codeFor(setup.email)) === '000000' ? '111111' : '000000')
      return collect(value)
    }
    await expect(setup.wallet.exportBundle(generateP256KeyPair().publicKeyUncompressed)).rejects.toMatchObject({ code: 'invalid_code' })
    expect(asked).toBe(REVERIFY_CODE_TRIES)
    expect(await exported(setup.user)).toBe(false)
    expect(setup.wallet.current).toEqual(setup.user)
  })

  test('error: a code from another user’s mailbox logs in no key: nothing exported, that user’s keys unchanged, the wallet still signed in', async () => {
    const other = await signedIn()
    const setup = await signedIn()
    stack.clock += WINDOW_MS + 1000
    // The code goes to the other user's mailbox (a backend or a network that swapped the address),
    // and the user types that code.
    setup.intercept(async (input, init, next) => {
      if (!String(input).endsWith('/auth/email/start')) return next(input, init)
      const response = await next(input, { ...init, body: JSON.stringify({ email: other.email }) })
      setup.keys.typeNext(await stack.codeFor(other.email))
      return response
    })
    await expect(setup.wallet.exportBundle(generateP256KeyPair().publicKeyUncompressed)).rejects.toMatchObject({ code: 'invalid_code' })
    expect(await mails(other.email)).toBe(2)
    expect(await exported(setup.user)).toBe(false)
    expect(await exported(other.user)).toBe(false)
    expect(await apiKeysOf(other.user)).toEqual([other.user.session.publicKey])
    expect(await apiKeysOf(setup.user)).toEqual([setup.user.session.publicKey])
    expect(setup.wallet.current).toEqual(setup.user)
  })

  test('error: a sign-out while the code is verified ends the export; the key the code registered is deleted', async () => {
    const setup = await signedIn()
    stack.clock += WINDOW_MS + 1000
    let registered: string | undefined
    setup.intercept(async (input, init, next) => {
      const response = await next(input, init)
      if (String(input).endsWith('/auth/email/verify')) {
        registered = await setup.keys.publicKey()
        await setup.wallet.signOut()
      }
      return response
    })
    await expect(setup.wallet.exportBundle(generateP256KeyPair().publicKeyUncompressed)).rejects.toMatchObject({
      code: 'session_failed',
      details: 'The wallet signed out during the re-verification.',
    })
    expect(registered).toMatch(/^0[23][0-9a-f]{64}$/)
    expect(await apiKeysOf(setup.user)).not.toContain(registered)
    expect(await exported(setup.user)).toBe(false)
  })

  test('error: a backend signed in as another user in this browser is refused before any code is sent; the wallet stays signed in', async () => {
    const setup = await signedIn()
    const other = await signedIn(newWallet(setup.browser))
    stack.clock += WINDOW_MS + 1000
    await expect(setup.wallet.exportBundle(generateP256KeyPair().publicKeyUncompressed)).rejects.toMatchObject({
      code: 'session_failed',
      details: 'The app backend is signed out, or signed in as another user: sign in again to confirm it is you.',
    })
    expect([await mails(setup.email), await mails(other.email)]).toEqual([1, 1])
    expect(await exported(setup.user)).toBe(false)
    expect(setup.wallet.current).toEqual(setup.user)
  })

  test('error: past the window the session key alone is refused export (what the retry answers)', async () => {
    const setup = await signedIn()
    stack.clock += WINDOW_MS + 1000
    const kms = await setup.wallet.client()
    await expect(
      kms.exportWallet({
        type: 'ACTIVITY_TYPE_EXPORT_WALLET',
        timestampMs: String(stack.clock),
        organizationId: setup.user.organizationId,
        parameters: { walletId: setup.user.credential.signerRefId, targetPublicKey: generateP256KeyPair().publicKeyUncompressed },
      }),
    ).rejects.toThrow(REFUSED('ACTIVITY_TYPE_EXPORT_WALLET'))
  })
})

describe('by a passkey', () => {
  /** An email user who added a passkey while fresh. */
  async function withPasskey() {
    const setup = await signedIn()
    const passkey = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    await setup.wallet.addAuthenticator({ authenticatorName: 'Laptop', challenge, attestation: passkey.register(challenge) })
    return { ...setup, passkey }
  }

  test('default: past the window, a user with a passkey confirms with it: the export is stamped by the passkey, no code, the same session key', async () => {
    const setup = await withPasskey()
    stack.clock += WINDOW_MS + 1000
    useAuthenticator(setup.passkey)
    expect(await exportedAccount(setup)).toBe(setup.user.credential.address)
    expect(setup.passkey.state.counter).toBe(1)
    expect(await mails(setup.email)).toBe(1)
    expect(setup.wallet.current).toEqual(setup.user)
  })

  test('behavior: past the window, linking an email asks for the passkey and links with a new code (the refused link spent the first); the kms user has that email', async () => {
    const setup = await signedIn()
    const passkey = softwareAuthenticator()
    const challenge = randomBytes(32).toString('base64url')
    await setup.wallet.linkPasskey({ passkeyName: 'Laptop', challenge, attestation: passkey.register(challenge) })
    const linking = linkingFlows(
      setup.wallet,
      { backend: createBackend(stack.backendUrl, setup.browser.fetchFn) },
      { rpId: 'localhost', appName: 'Embedded test' },
    )
    await linking.unlink((await linking.getUser())!.logins.find((login) => login.kind === 'email')!.id)
    stack.clock += WINDOW_MS + 1000
    useAuthenticator(passkey)
    const next = newEmail()
    // The user answers the passkey prompt a second after the refusal (the kms answers a code start
    // identical to the first, in the same millisecond, with the first activity).
    setup.intercept(async (input, init, fetchNext) => {
      const response = await fetchNext(input, init)
      if (response.status === 403) stack.clock += 1000
      return response
    })
    const login = await linking.linkEmail(next)
    expect([login.kind, login.label]).toEqual(['email', next])
    expect((await parent().getUser({ organizationId: setup.user.organizationId, userId: setup.user.userId })).user.userEmail).toBe(next)
    expect(await mails(next)).toBe(2)
    expect(passkey.state.counter).toBe(1)
    expect(setup.wallet.current).toEqual(setup.user)
  })

  test('error: closing the passkey prompt is 4001, exports nothing, and keeps the sign-in', async () => {
    const setup = await withPasskey()
    stack.clock += WINDOW_MS + 1000
    const get = async () => {
      throw new DOMException('The operation either timed out or was not allowed.', 'NotAllowedError')
    }
    Object.defineProperty(globalThis, 'navigator', { value: { credentials: { get } }, configurable: true, writable: true })
    await expect(setup.wallet.exportBundle(generateP256KeyPair().publicKeyUncompressed)).rejects.toMatchObject({
      code: 4001,
      message: 'User rejected the request.',
    })
    expect(await exported(setup.user)).toBe(false)
    expect(await mails(setup.email)).toBe(1)
    expect(setup.wallet.current).toEqual(setup.user)
  })
})
