import { randomBytes } from 'node:crypto'
import { generateP256KeyPair } from '@turnkey/crypto'
import { createPublicClient, http, parseEther, verifyMessage, verifyTypedData } from 'viem'
import { beforeAll, describe, expect, test } from 'vitest'
import { softwareAuthenticator } from '../../kms/test/authenticator.js'
import { type ActivityStatusError, completed, createEmbeddedWallet, type KeyValueStorage, KmsRequestError, MfaRequiredError } from '../src/index.js'
import { memoryKeys, memoryStorage, useEmbeddedStack } from './harness.js'

// The embedded wallet's logic in Node against a real kms and a real app backend, with an anvil
// chain: the browser-only parts (IndexedDB keys, passkeys, frames) are covered in e2e/embedded.

const stack = useEmbeddedStack()
const chain = stack.chain
let people = 0

function newWallet(overrides: { storage?: KeyValueStorage; keys?: ReturnType<typeof memoryKeys>; browser?: ReturnType<typeof stack.browserFetch> } = {}) {
  const browser = overrides.browser ?? stack.browserFetch()
  const keys = overrides.keys ?? memoryKeys()
  const storage = overrides.storage ?? memoryStorage()
  const wallet = createEmbeddedWallet({
    appName: 'Embedded test',
    backendUrl: stack.backendUrl,
    kmsUrl: stack.kms.url,
    organizationId: stack.organizationId,
    chains: [chain],
    storage,
    testOnlySessionKeys: keys,
    now: stack.now,
    fetch: browser.fetchFn,
  })
  return { wallet, browser, keys, storage }
}

async function signedIn(): Promise<ReturnType<typeof newWallet> & { email: string }> {
  const setup = newWallet()
  const email = `embedded${++people}.${stack.clock}@example.test`
  const sent = await setup.wallet.startEmail(email)
  await setup.wallet.verifyEmail(sent)
  return { ...setup, email }
}

describe('email sign-in', () => {
  test('default: a code from the inbox gives a wallet whose credential matches SPEC §3', async () => {
    const { wallet, keys } = await signedIn()
    const current = wallet.current!
    expect(current.credential).toMatchObject({
      chain: 'eip155:31337',
      walletName: 'Turnkey HD',
      walletProperties: { turnkeySubOrganizationId: current.organizationId, isSessionKeyCompatible: true },
    })
    expect(current.credential.address).toMatch(/^0x[0-9a-fA-F]{40}$/)
    expect(current.session.publicKey).toBe(await keys.publicKey())
    expect(Date.parse(current.session.expirationDate)).toBe(stack.clock + 43_200_000)
  })

  test('error: a wrong code is "The code is invalid or expired." and signs nobody in', async () => {
    const { wallet, keys } = newWallet()
    const email = `wrong${++people}@example.test`
    const sent = await wallet.startEmail(email)
    const right = await stack.codeFor(email)
    keys.typeNext(right === '000000' ? '111111' : '000000')
    await expect(wallet.verifyEmail(sent)).rejects.toMatchObject({
      shortMessage: 'The code is invalid or expired.',
      code: 'invalid_code',
    })
    expect(wallet.current).toBeUndefined()
  })

  test('error: no appName is refused up front (SPEC §5)', () => {
    expect(() => createEmbeddedWallet({ appName: '', backendUrl: stack.backendUrl, chains: [chain] })).toThrow('The embedded wallet needs an appName')
  })
})

describe('guest', () => {
  test('default: a guest wallet signs, links an email, and the email signs in to the same address', async () => {
    const { wallet } = newWallet()
    const credential = await wallet.continueAsGuest()
    expect(wallet.current!.kind).toBe('guest')
    const signature = await wallet.signMessage({ message: 'a guest signs' })
    expect(await verifyMessage({ address: credential.address, message: 'a guest signs', signature })).toBe(true)
    // Linking an email, as the account modal does: the code typed in the frame, then the email
    // approved there and set by the guest's own key (here, the test's keys do both).
    const email = `guest${++people}.${stack.clock}@example.test`
    expect(await wallet.linkEmail(email)).toEqual({ id: expect.stringMatching(/^lg_/), kind: 'email', label: email, linkedAt: expect.any(String) })
    const again = newWallet().wallet
    await again.verifyEmail(await again.startEmail(email))
    expect([again.current!.organizationId, again.current!.credential.address]).toEqual([wallet.current!.organizationId, credential.address])
  })
})

describe('passkey sign-up', () => {
  /** What passkeys.signUp hands the wallet once the browser made the passkey. */
  const registration = (authenticator = softwareAuthenticator()) => {
    const challenge = randomBytes(32).toString('base64url')
    return { authenticator, challenge, attestation: authenticator.register(challenge) }
  }

  test('behavior: an email is proven by the code typed where the key is; it is then the account’s, where an email sign-in lands', async () => {
    const { wallet, browser } = newWallet()
    const email = `passkey${++people}@example.test`
    const { challenge, attestation } = registration()
    const { address } = await wallet.signUpWithAttestation({ email, challenge, attestation })
    expect(browser.calls).toEqual(['/auth/passkey/signup/start', '/auth/passkey/signup'])
    const signedUp = wallet.current!
    expect([signedUp.kind, signedUp.credential.address]).toEqual(['passkey', address])
    const again = newWallet().wallet
    await again.verifyEmail(await again.startEmail(email))
    expect([again.current!.organizationId, again.current!.credential.address]).toEqual([signedUp.organizationId, address])
  })

  test('error: a wrong code is "The code is invalid or expired." and signs nothing up; the same passkey then signs up with the right one', async () => {
    const { wallet, keys } = newWallet()
    const email = `passkeywrong${++people}@example.test`
    const { authenticator, challenge, attestation } = registration()
    keys.typeNext((sent) => (sent === '000000' ? '111111' : '000000'))
    await expect(wallet.signUpWithAttestation({ email, challenge, attestation })).rejects.toMatchObject({
      shortMessage: 'The code is invalid or expired.',
      details: 'invalid code: 2 attempts left',
    })
    expect(wallet.current).toBeUndefined()
    const retry = registration(authenticator)
    const { address } = await wallet.signUpWithAttestation({ email, challenge: retry.challenge, attestation: retry.attestation })
    expect(wallet.current!.credential.address).toBe(address)
  })
})

describe('signing', () => {
  let user: Awaited<ReturnType<typeof signedIn>>
  beforeAll(async () => {
    user = await signedIn()
  })

  test('default: personal_sign through sign_raw_payload verifies with viem', async () => {
    const address = user.wallet.current!.credential.address
    const signature = await user.wallet.signMessage({ message: 'hello from an embedded wallet' })
    expect(await verifyMessage({ address, message: 'hello from an embedded wallet', signature })).toBe(true)
  })

  test('default: typed data verifies with viem', async () => {
    const address = user.wallet.current!.credential.address
    const typedData = {
      domain: { name: 'Latchkey', version: '1', chainId: 31337 },
      types: { Greeting: [{ name: 'text', type: 'string' }] },
      primaryType: 'Greeting',
      message: { text: 'gm' },
    } as const
    const signature = await user.wallet.signTypedData({ typedData })
    expect(await verifyTypedData({ address, signature, ...typedData })).toBe(true)
  })

  test('default: a transaction is signed by the kms, broadcast, and mined', async () => {
    const address = user.wallet.current!.credential.address
    const client = createPublicClient({ chain, transport: http() })
    await client.request({ method: 'anvil_setBalance' as never, params: [address, '0xDE0B6B3A7640000'] as never })
    const to = '0x000000000000000000000000000000000000dEaD'
    const before = await client.getBalance({ address: to })
    const hash = await user.wallet.sendTransaction({ to, value: parseEther('0.01') })
    const receipt = await client.waitForTransactionReceipt({ hash })
    expect(receipt.status).toBe('success')
    expect(receipt.from.toLowerCase()).toBe(address.toLowerCase())
    expect((await client.getBalance({ address: to })) - before).toBe(parseEther('0.01'))
  })

  test('behavior: a second account is derived, switched to, signs as itself, and the first can be picked again', async () => {
    const { wallet } = await signedIn()
    const first = wallet.current!.credential.address
    const changes: string[] = []
    wallet.subscribe((record) => changes.push(record?.credential.address ?? ''))
    const second = await wallet.addAccount()
    expect(second.address).not.toBe(first)
    expect(second.signerRefId).toBe(wallet.current!.credential.signerRefId)
    expect(await wallet.accounts()).toEqual([first, second.address])
    const signature = await wallet.signMessage({ message: 'second account' })
    expect(await verifyMessage({ address: second.address, message: 'second account', signature })).toBe(true)
    await wallet.selectAccount(first)
    expect(changes).toEqual([second.address, first])
    await expect(wallet.selectAccount('0x000000000000000000000000000000000000dEaD')).rejects.toMatchObject({ shortMessage: 'Account not found' })
  })

  test('error: no signWith is "Missing signWith parameter"', async () => {
    await expect(user.wallet.signMessage({ message: 'x', signWith: '' })).rejects.toMatchObject({ shortMessage: 'Missing signWith parameter' })
  })

  test('error: a key-management refusal reads "Turnkey error {code}: {message}"', async () => {
    await expect(user.wallet.signMessage({ message: 'x', signWith: '0x000000000000000000000000000000000000bEEF' })).rejects.toMatchObject({
      code: 'kms_request',
      shortMessage: expect.stringMatching(/^Turnkey error 5: /),
    })
  })
})

describe('session keys', () => {
  test('error: an expired session key ends the sign-in: "sign in again", and no key is registered on the page’s word', async () => {
    const { wallet, browser } = await signedIn()
    stack.clock += 43_201_000
    try {
      await expect(wallet.signMessage({ message: 'after expiry' })).rejects.toMatchObject({
        shortMessage: 'Failed to create or restore session',
        details: 'The session key has expired or was revoked; sign in again.',
      })
    } finally {
      stack.clock -= 43_201_000
    }
    expect(wallet.current).toBeUndefined()
    expect(browser.calls).not.toContain('/auth/session-key')
  })

  test('behavior: a reload restores the sign-in from storage and the stored key, without a new session', async () => {
    const { wallet, storage, keys, browser } = await signedIn()
    const reloaded = newWallet({ storage, keys, browser })
    const calls = browser.calls.length
    expect((await reloaded.wallet.restore())?.credential).toEqual(wallet.current!.credential)
    expect(browser.calls.length).toBe(calls)
    expect(await reloaded.wallet.signMessage({ message: 'still me' })).toMatch(/^0x/)
  })

  test('behavior: a reload whose key is not the recorded one, or has expired, signs out', async () => {
    const { storage, browser } = await signedIn()
    expect(await newWallet({ storage, browser }).wallet.restore()).toBeUndefined()
    expect(storage.getItem('latchkey.embedded.wallet')).toBeNull()

    const again = await signedIn()
    stack.clock += 43_200_000
    try {
      const reloaded = newWallet({ storage: again.storage, keys: again.keys, browser: again.browser })
      expect(await reloaded.wallet.restore()).toBeUndefined()
      expect(reloaded.wallet.current).toBeUndefined()
    } finally {
      stack.clock -= 43_200_000
    }
  })

  test('behavior: a sign-in started while the sign-out still runs keeps its new key (the late reset forgets only the old one)', async () => {
    const { wallet, keys } = await signedIn()
    const old = await keys.publicKey()
    // The wallet reads as signed out at once; the user starts the next sign-in before the backend answered.
    const signingOut = wallet.signOut()
    expect(wallet.current).toBeUndefined()
    const key = await wallet.newSessionKey()
    await signingOut
    expect(key).not.toBe(old)
    expect(await keys.publicKey()).toBe(key)
  })

  test('behavior: sign-out deletes the key in the kms: a stamp by it is refused afterwards', async () => {
    const { wallet, keys } = await signedIn()
    const { organizationId } = wallet.current!
    // A stamp made before sign-out, kept aside, as a script that had used the key would.
    const stolen = await keys.stamper.stamp(JSON.stringify({ organizationId }))
    await wallet.signOut()
    expect(wallet.current).toBeUndefined()
    const response = await fetch(`${stack.kms.url}/public/v1/query/whoami`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [stolen.stampHeaderName]: stolen.stampHeaderValue },
      body: JSON.stringify({ organizationId }),
    })
    expect([response.status, ((await response.json()) as { message: string }).message]).toEqual([
      401,
      'could not find public key in organization or its parent organization',
    ])
  })
})

describe('activity status (SPEC §4)', () => {
  const activity = (status: string) => ({ activity: { status, result: { signRawPayloadResult: { r: '1' } } } })
  test('default: COMPLETED gives the result', () => {
    expect(completed(activity('ACTIVITY_STATUS_COMPLETED'))).toEqual({ signRawPayloadResult: { r: '1' } })
  })
  test('error: CONSENSUS_NEEDED is "Activity requires consensus"; any other status names itself', () => {
    expect(() => completed(activity('ACTIVITY_STATUS_CONSENSUS_NEEDED'))).toThrow('Activity requires consensus')
    expect(() => completed(activity('ACTIVITY_STATUS_FAILED'))).toThrow('Expected COMPLETED status, got ACTIVITY_STATUS_FAILED')
    const rejected = (() => {
      try {
        completed(activity('ACTIVITY_STATUS_REJECTED'))
      } catch (error) {
        return error as ActivityStatusError
      }
      return undefined
    })()
    expect(rejected?.status).toBe('ACTIVITY_STATUS_REJECTED')
  })
})

describe('second factor (MFA)', () => {
  test('default: enrolTotp answers only the factor id; another session’s export is refused with MfaRequiredError until verifyMfa', async () => {
    const first = await signedIn()
    const enrolled = await first.wallet.enrollTotp()
    expect(Object.keys(enrolled)).toEqual(['factorId'])
    expect(first.keys.totp.recoveryCodes).toHaveLength(10)
    // The session that enrolled verified the factor with its first code: its export proceeds.
    expect(await first.wallet.exportBundle(generateP256KeyPair().publicKeyUncompressed)).toMatch(/^\{/)

    // The same user signed in elsewhere a minute later (a new code may be sent then): a new
    // session key, no factor verified on it.
    stack.clock += 60_000
    const second = newWallet()
    await second.wallet.verifyEmail(await second.wallet.startEmail(first.email))
    const refusal = await second.wallet.exportBundle(generateP256KeyPair().publicKeyUncompressed).catch((error: unknown) => error)
    expect(refusal).toBeInstanceOf(MfaRequiredError)
    expect(refusal).toBeInstanceOf(KmsRequestError)
    expect([
      (refusal as MfaRequiredError).code,
      (refusal as MfaRequiredError).reason,
      (refusal as MfaRequiredError).activityType,
      (refusal as MfaRequiredError).shortMessage,
    ]).toEqual([
      'mfa_required',
      'MFA_REQUIRED',
      'ACTIVITY_TYPE_EXPORT_WALLET',
      'Turnkey error 7: second factor required: ACTIVITY_TYPE_EXPORT_WALLET from a session key needs a second factor verified in the last 900 seconds (verify_mfa_factor)',
    ])
    // The user's authenticator app (the step is two after the one the enrolment spent).
    second.keys.totp.secret = first.keys.totp.secret!
    expect(await second.wallet.verifyMfa(enrolled.factorId)).toEqual({ verified: true })
    expect(await second.wallet.exportBundle(generateP256KeyPair().publicKeyUncompressed)).toMatch(/^\{/)
  })
})
