import {
  type Address,
  createTestClient,
  getContractAddress,
  type Hex,
  http,
  publicActions,
  serializeErc6492Signature,
  serializeSignature,
  toPrefixedMessage,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from 'viem/accounts'
import { type CreateSiweMessageParameters, createSiweMessage } from 'viem/siwe'
import { describe, expect, inject, test } from 'vitest'
import { anvilKeys } from '../../../test/chains.js'
import { createServerApp, LIMITS } from '../src/index.js'
import { answer, cookieOf, newEmail, origin, useBackend } from './backend.js'

// Sign-In with Ethereum against the real anvil chains of the run. Keys sign only: nothing here
// sends a transaction (contracts are placed with anvil_setCode), so no file races on a nonce.

const chainARpc = inject('chainARpc')
const { t, post, session, signedInByEmail } = useBackend({
  chains: [
    { id: 31337, rpcUrl: chainARpc },
    { id: 31338, rpcUrl: inject('chainBRpc') },
  ],
})
const alice = privateKeyToAccount(anvilKeys[6])
const mallory = privateKeyToAccount(anvilKeys[7])
const anvilA = createTestClient({ mode: 'anvil', transport: http(chainARpc) }).extend(publicActions)

/** GET /auth/nonce as a browser holding `cookie` (its pre-session cookie) or none. */
async function nonceFor(cookie?: string) {
  const response = await t.app.request('/auth/nonce', { headers: { origin, ...(cookie ? { cookie } : {}) } })
  expect(response.status).toBe(200)
  const { nonce } = (await response.json()) as { nonce: string }
  return { nonce, cookie: cookieOf(response), response }
}

/** The EIP-4361 message the app's page would build for `fields` (viem's createSiweMessage). */
const messageFor = (fields: Partial<CreateSiweMessageParameters> & { nonce: string }) =>
  createSiweMessage({
    address: alice.address,
    chainId: 31337,
    domain: 'localhost:5173',
    uri: origin,
    version: '1',
    statement: 'Sign in to Latchkey Demo.',
    issuedAt: new Date(t.clock),
    ...fields,
  })

const signIn = (body: { message: string; signature: Hex; walletKind?: string }, cookie?: string) => post('/auth/siwe', body, cookie ? { cookie } : {})

/** A browser about to sign in: its nonce and cookie, and the message for `signer` (default alice) signed by `signer`. */
async function signedIn(fields: Partial<CreateSiweMessageParameters> = {}, signer = alice) {
  const browser = await nonceFor()
  const message = messageFor({ nonce: browser.nonce, address: signer.address, ...fields })
  const signature = await signer.signMessage({ message })
  return { ...browser, message, signature }
}

/** A refusal: exactly this status and error, and neither a session cookie nor any other. */
async function expectRefused(response: Response, status: number, code: string, message: string) {
  expect(await answer(response)).toEqual([status, { error: { code, message } }])
  expect(response.headers.get('set-cookie')).toBeNull()
}

const iso = (ms: number) => new Date(ms).toISOString()

describe('GET /auth/nonce', () => {
  test('default: 128 random bits in hex, bound to an httpOnly pre-session cookie that a second request keeps', async () => {
    const first = await nonceFor()
    expect(first.nonce).toMatch(/^[0-9a-f]{32}$/)
    expect(first.response.headers.get('set-cookie')).toMatch(/^__Host-latchkey_siwe=[\w-]{43}; Max-Age=600; Path=\/; HttpOnly; Secure; SameSite=Strict$/)
    expect(first.response.headers.get('cache-control')).toBe('no-store')
    expect(first.response.headers.get('access-control-allow-origin')).toBe(origin)
    const second = await nonceFor(first.cookie)
    expect(second.cookie).toBe(first.cookie)
    expect(second.nonce).not.toBe(first.nonce)
    // Both nonces stay usable in this browser (two tabs signing in at once).
    for (const nonce of [second.nonce, first.nonce]) {
      const message = messageFor({ nonce })
      expect((await signIn({ message, signature: await alice.signMessage({ message }) }, first.cookie)).status).toBe(200)
    }
  })

  test('error: more than 60 nonces from one IP in ten minutes are refused; another IP is not', async () => {
    for (let index = 0; index < LIMITS.noncesPerIp; index++) await nonceFor()
    const refused = await t.app.request('/auth/nonce')
    expect(await answer(refused)).toEqual([
      429,
      { error: { code: 'rate_limited', message: 'Too many sign-in attempts from this network; try again in 10 minutes' } },
    ])
    expect(refused.headers.get('retry-after')).toMatch(/^(?:599|600)$/)
    expect(refused.headers.get('set-cookie')).toBeNull()
    expect((await t.app.request('/auth/nonce', { headers: { 'x-test-ip': '10.0.0.2' } })).status).toBe(200)
  })
})

describe('POST /auth/siwe', () => {
  test('default: an EOA signs in: the session cookie, the session with chain and wallet kind, until the message expires', async () => {
    const expirationTime = new Date(t.clock + 3_600_000)
    const { message, signature, cookie } = await signedIn({ expirationTime })
    const response = await signIn({ message, signature, walletKind: 'injected' }, cookie)
    const expected = {
      email: null,
      address: alice.address,
      organizationId: null,
      userId: null,
      kind: 'siwe',
      chainId: 31337,
      walletKind: 'injected',
      expiresAt: expirationTime.toISOString(),
    }
    expect(await answer(response)).toEqual([200, expected])
    expect(response.headers.get('access-control-allow-credentials')).toBe('true')
    const sessionCookie = response.headers.get('set-cookie')!
    expect(sessionCookie).toMatch(/^__Host-latchkey_session=[\w-]{43}; Max-Age=(?:3599|3600); Path=\/; HttpOnly; Secure; SameSite=Strict$/)
    expect(await answer(await session(cookieOf(response)))).toEqual([200, expected])

    expect((await post('/auth/signout', {}, { cookie: cookieOf(response) })).status).toBe(204)
    expect(await answer(await session(cookieOf(response)))).toEqual([200, null])
  })

  test('behavior: on chain B, without a statement, an expiration or a wallet kind: seven days, walletKind null', async () => {
    const { message, signature, cookie } = await signedIn({ chainId: 31338, statement: undefined })
    expect(message).toContain(`${alice.address}\n\n\nURI: `)
    const response = await signIn({ message, signature }, cookie)
    const at = t.clock
    const body = (await response.json()) as Record<string, unknown>
    expect(body).toEqual({
      email: null,
      address: alice.address,
      organizationId: null,
      userId: null,
      kind: 'siwe',
      chainId: 31338,
      walletKind: null,
      expiresAt: expect.any(String),
    })
    expect(Date.parse(body['expiresAt'] as string) - at).toBe(7 * 86_400_000)
  })

  test('behavior: signing in again replaces the session this browser had', async () => {
    const first = await signedIn()
    const before = cookieOf(await signIn(first, first.cookie))
    const second = await signedIn({}, mallory)
    const after = await signIn(second, `${second.cookie}; ${before}`)
    expect(after.status).toBe(200)
    expect(await answer(await session(before))).toEqual([200, null])
    expect(await answer(await session(cookieOf(after)))).toMatchObject([200, { address: mallory.address }])
  })

  test('behavior: an embedded wallet this backend created signs in to its account; the session can start session keys', async () => {
    const email = newEmail()
    const account = await signedInByEmail(email)
    const address = account.address as Address
    const browser = await nonceFor()
    const message = messageFor({ nonce: browser.nonce, address })
    const { activity } = await account.user.signRawPayload({
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      timestampMs: String(t.clock),
      organizationId: account.organizationId,
      // The EIP-191 preimage, hashed by the kms: an embedded sub-organization signs no opaque hash.
      parameters: { signWith: address, payload: toPrefixedMessage(message), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_KECCAK256' },
    })
    const { r, s, v } = activity.result.signRawPayloadResult!
    const signature = serializeSignature({ r: `0x${r}`, s: `0x${s}`, yParity: Number(v) })
    const response = await signIn({ message, signature, walletKind: 'embedded' }, browser.cookie)
    expect(await answer(response)).toEqual([
      200,
      {
        email,
        address,
        organizationId: account.organizationId,
        userId: account.userId,
        kind: 'siwe',
        chainId: 31337,
        walletKind: 'embedded',
        expiresAt: expect.any(String),
      },
    ])
  })

  test('behavior: two requests racing with one nonce sign in once', async () => {
    const { message, signature, cookie } = await signedIn()
    const results = await Promise.all([signIn({ message, signature }, cookie), signIn({ message, signature }, cookie)])
    expect(results.map((response) => response.status).sort()).toEqual([200, 401])
  })

  test('behavior: a nonce is spent by the first attempt that reaches the signature check, not by a refusal before it', async () => {
    const { nonce, cookie } = await nonceFor()
    const expired = messageFor({ nonce, issuedAt: new Date(t.clock - 120_000), expirationTime: new Date(t.clock - 60_000) })
    expect((await signIn({ message: expired, signature: await alice.signMessage({ message: expired }) }, cookie)).status).toBe(401)
    const message = messageFor({ nonce })
    const forged = await mallory.signMessage({ message })
    await expectRefused(
      await signIn({ message, signature: forged }, cookie),
      401,
      'invalid_signature',
      `The signature is not ${alice.address}'s signature of this message`,
    )
    // The genuine signature comes too late: the nonce verified a signature already.
    await expectRefused(
      await signIn({ message, signature: await alice.signMessage({ message }) }, cookie),
      401,
      'invalid_nonce',
      'This nonce has been used; ask for a new one',
    )
  })
})

describe('POST /auth/siwe refusals', () => {
  test('error: invalid_message: not an EIP-4361 message', async () => {
    const { cookie } = await nonceFor()
    const message = 'Sign in to Latchkey please'
    await expectRefused(
      await signIn({ message, signature: await alice.signMessage({ message }) }, cookie),
      400,
      'invalid_message',
      'The message is not an EIP-4361 sign-in message',
    )
  })

  test('error: invalid_message: a line the parser skips (signed, so only the check refuses it)', async () => {
    const { nonce, cookie } = await nonceFor()
    // viem reads fields in order: an Expiration Time after the Request ID would be ignored.
    const message = `${messageFor({ nonce, requestId: 'r1' })}\nExpiration Time: ${iso(t.clock - 1000)}`
    await expectRefused(
      await signIn({ message, signature: await alice.signMessage({ message }) }, cookie),
      400,
      'invalid_message',
      'The message is not an EIP-4361 sign-in message',
    )
  })

  test('error: invalid_message: an address with a broken checksum', async () => {
    const { nonce, cookie } = await nonceFor()
    const message = messageFor({ nonce }).replace(
      alice.address,
      alice.address.replace(/[a-f]/, (letter) => letter.toUpperCase()),
    )
    await expectRefused(
      await signIn({ message, signature: await alice.signMessage({ message }) }, cookie),
      400,
      'invalid_message',
      'The message is not an EIP-4361 sign-in message',
    )
  })

  test('error: invalid_request: a signature that is not hex, a wallet kind we do not know', async () => {
    const { message, signature, cookie } = await signedIn()
    await expectRefused(await signIn({ message, signature: 'signed' as Hex }, cookie), 400, 'invalid_request', 'signature: must be 0x-prefixed hex bytes')
    await expectRefused(
      await signIn({ message, signature, walletKind: 'ledger' }, cookie),
      400,
      'invalid_request',
      'walletKind: Invalid option: expected one of "injected"|"walletConnect"|"embedded"',
    )
  })

  test('error: wrong_domain: another site, or our host under another scheme', async () => {
    const other = await signedIn({ domain: 'evil.example' })
    await expectRefused(await signIn(other, other.cookie), 400, 'wrong_domain', 'The message is for evil.example, not this app')
    const https = await signedIn({ scheme: 'https' })
    await expectRefused(await signIn(https, https.cookie), 400, 'wrong_domain', 'The message is for https://localhost:5173, not this app')
  })

  test('error: wrong_uri: a uri of another origin', async () => {
    const { message, signature, cookie } = await signedIn({ uri: 'https://evil.example/login' })
    await expectRefused(await signIn({ message, signature }, cookie), 400, 'wrong_uri', "The message's URI https://evil.example/login is not this app's")
  })

  test('error: unsupported_chain: a chain the backend has no RPC for', async () => {
    const { message, signature, cookie } = await signedIn({ chainId: 1 })
    await expectRefused(await signIn({ message, signature }, cookie), 400, 'unsupported_chain', 'Chain 1 is not supported for sign-in here')
  })

  test('error: invalid_nonce: no pre-session cookie', async () => {
    const { message, signature } = await signedIn()
    await expectRefused(await signIn({ message, signature }), 401, 'invalid_nonce', 'No nonce was issued to this browser; ask for one first (GET /auth/nonce)')
  })

  test('error: invalid_nonce: a nonce this backend never issued', async () => {
    const { cookie } = await nonceFor()
    const message = messageFor({ nonce: 'a'.repeat(32) })
    await expectRefused(
      await signIn({ message, signature: await alice.signMessage({ message }) }, cookie),
      401,
      'invalid_nonce',
      'This nonce was not issued here; ask for a new one',
    )
  })

  test("error: invalid_nonce: another browser's nonce", async () => {
    const victim = await signedIn()
    const attacker = await nonceFor()
    await expectRefused(await signIn(victim, attacker.cookie), 401, 'invalid_nonce', 'This nonce was issued to another browser')
    // The nonce stays the victim's.
    expect((await signIn(victim, victim.cookie)).status).toBe(200)
  })

  test('error: invalid_nonce: a replayed message and signature', async () => {
    const { message, signature, cookie } = await signedIn()
    expect((await signIn({ message, signature }, cookie)).status).toBe(200)
    await expectRefused(await signIn({ message, signature }, cookie), 401, 'invalid_nonce', 'This nonce has been used; ask for a new one')
  })

  test('error: invalid_nonce: a nonce older than ten minutes', async () => {
    const { message, signature, cookie } = await signedIn()
    t.clock += 600_000
    await expectRefused(await signIn({ message, signature }, cookie), 401, 'invalid_nonce', 'This nonce has expired; ask for a new one')
  })

  test('error: issued_in_future: issued more than five minutes ahead of the server', async () => {
    const issuedAt = t.clock + 301_000
    const { message, signature, cookie } = await signedIn({ issuedAt: new Date(issuedAt) })
    await expectRefused(
      await signIn({ message, signature }, cookie),
      401,
      'issued_in_future',
      `The message says it was issued at ${iso(issuedAt)}, in the future; check the device's clock`,
    )
    // Within the skew a browser's clock may run ahead.
    const ahead = await signedIn({ issuedAt: new Date(t.clock + 240_000) })
    expect((await signIn(ahead, ahead.cookie)).status).toBe(200)
  })

  test('error: message_expired: past its expiration time', async () => {
    const expirationTime = t.clock - 1
    const { message, signature, cookie } = await signedIn({ issuedAt: new Date(t.clock - 60_000), expirationTime: new Date(expirationTime) })
    await expectRefused(await signIn({ message, signature }, cookie), 401, 'message_expired', `The message expired at ${iso(expirationTime)}; sign in again`)
  })

  test('error: not_yet_valid: before its not-before time', async () => {
    const notBefore = t.clock + 3_600_000
    const { message, signature, cookie } = await signedIn({ notBefore: new Date(notBefore) })
    await expectRefused(await signIn({ message, signature }, cookie), 401, 'not_yet_valid', `The message is not valid before ${iso(notBefore)}`)
  })

  test('error: invalid_signature: signed by someone else', async () => {
    const { message, signature, cookie } = await signedIn({ address: alice.address }, mallory)
    await expectRefused(
      await signIn({ message, signature }, cookie),
      401,
      'invalid_signature',
      `The signature is not ${alice.address}'s signature of this message`,
    )
  })

  test('error: invalid_signature: the address changed after signing', async () => {
    const { message, signature, cookie } = await signedIn()
    const tampered = message.replace(alice.address, mallory.address)
    await expectRefused(
      await signIn({ message: tampered, signature }, cookie),
      401,
      'invalid_signature',
      `The signature is not ${mallory.address}'s signature of this message`,
    )
  })

  test('error: invalid_signature: the statement changed after signing', async () => {
    const { message, signature, cookie } = await signedIn()
    const tampered = message.replace('Sign in to Latchkey Demo.', 'Sign in to Latchkey Demo and transfer everything.')
    expect(tampered).not.toBe(message)
    await expectRefused(
      await signIn({ message: tampered, signature }, cookie),
      401,
      'invalid_signature',
      `The signature is not ${alice.address}'s signature of this message`,
    )
  })

  test('error: invalid_signature: a byte of the signature changed', async () => {
    const { message, signature, cookie } = await signedIn()
    const tampered = `${signature.slice(0, 40)}${signature[40] === '0' ? '1' : '0'}${signature.slice(41)}` as Hex
    await expectRefused(
      await signIn({ message, signature: tampered }, cookie),
      401,
      'invalid_signature',
      `The signature is not ${alice.address}'s signature of this message`,
    )
  })

  test('error: chain_unavailable: the chain does not answer a check only it can make', async () => {
    const app = createServerApp({ ...t.options, chains: [{ id: 31337, rpcUrl: 'http://127.0.0.1:9/' }] })
    const nonce = await app.request('/auth/nonce')
    const cookie = cookieOf(nonce)
    const message = messageFor({ nonce: ((await nonce.json()) as { nonce: string }).nonce })
    const response = await app.request('/auth/siwe', {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin, cookie },
      body: JSON.stringify({ message, signature: await mallory.signMessage({ message }) }),
    })
    await expectRefused(response, 502, 'chain_unavailable', 'Chain 31337 did not answer the signature check; sign in again')
  })
})

// Hand-assembled EVM code, so the test needs no compiler. The wallet answers
// isValidSignature(bytes32 hash, bytes signature) with the EIP-1271 magic value 0x1626ba7e when
// ecrecover(hash, signature) is its owner (compiled into the code), else 0xffffffff.
const walletRuntime = (owner: Address): Hex =>
  `0x${[
    '600035',
    '60e01c',
    '631626ba7e',
    '14',
    '601357',
    '600080fd', // selector must be isValidSignature, else revert
    '5b',
    '600435600052', // 0x13: mem[0x00] = hash
    '60243560040180', // base = 4 + the bytes' offset (their length word), twice
    '60200135604052', // mem[0x40] = r = calldata[base + 0x20]
    '8060400135606052', // mem[0x60] = s = calldata[base + 0x40]
    '6060013560f81c602052', // mem[0x20] = v = the byte at calldata[base + 0x60]
    '6020608060806000',
    '60015afa50', // staticcall ecrecover(mem[0x00..0x80]) into mem[0x80..0xa0]
    '608051',
    `73${owner.slice(2).toLowerCase()}`,
    '14',
    '607357', // owner? jump to 0x73
    '63ffffffff60e01b60005260206000f3', // return 0xffffffff
    '5b',
    '631626ba7e60e01b60005260206000f3', // 0x73: return the magic value
  ].join('')}`
// Init code returning the runtime that follows it (11 bytes of prefix).
const walletInitCode = (owner: Address): Hex => {
  const runtime = walletRuntime(owner)
  const length = (runtime.length - 2) / 2
  return `0x60${length.toString(16).padStart(2, '0')}80600b6000396000f3${runtime.slice(2)}`
}
// A factory that CREATE2-deploys its calldata as init code (salt 0) and returns the address.
const factoryRuntime: Hex = '0x366000600037600036600034f58015601a5760005260206000f35b600080fd'

describe('contract wallets', () => {
  test('behavior: EIP-1271: a contract wallet signs in through its owner; a signature by someone else is refused', async () => {
    expect(walletRuntime(alice.address).length).toBe(2 + 0x84 * 2)
    const wallet = privateKeyToAddress(generatePrivateKey())
    const owner = privateKeyToAccount(anvilKeys[8])
    await anvilA.setCode({ address: wallet, bytecode: walletRuntime(owner.address) })

    const good = await signedIn({ address: wallet }, owner)
    expect(await answer(await signIn(good, good.cookie))).toEqual([
      200,
      { email: null, address: wallet, organizationId: null, userId: null, kind: 'siwe', chainId: 31337, walletKind: null, expiresAt: expect.any(String) },
    ])
    const forged = await signedIn({ address: wallet }, mallory)
    await expectRefused(await signIn(forged, forged.cookie), 401, 'invalid_signature', `The signature is not ${wallet}'s signature of this message`)
    // On chain B the contract does not exist: the owner's signature is not the wallet's there.
    const elsewhere = await signedIn({ address: wallet, chainId: 31338 }, owner)
    await expectRefused(await signIn(elsewhere, elsewhere.cookie), 401, 'invalid_signature', `The signature is not ${wallet}'s signature of this message`)
  })

  test('behavior: EIP-6492: a wallet not yet deployed signs in with its factory call wrapped around the signature, and stays undeployed', async () => {
    const factory = privateKeyToAddress(generatePrivateKey())
    await anvilA.setCode({ address: factory, bytecode: factoryRuntime })
    const owner = privateKeyToAccount(anvilKeys[8])
    const initCode = walletInitCode(owner.address)
    const wallet = getContractAddress({ opcode: 'CREATE2', from: factory, salt: `0x${'00'.repeat(32)}`, bytecode: initCode })
    expect(await anvilA.getCode({ address: wallet })).toBeUndefined()

    const browser = await nonceFor()
    const message = messageFor({ nonce: browser.nonce, address: wallet })
    const signature = serializeErc6492Signature({ address: factory, data: initCode, signature: await owner.signMessage({ message }) })
    expect(await answer(await signIn({ message, signature }, browser.cookie))).toMatchObject([200, { address: wallet, kind: 'siwe' }])
    expect(await anvilA.getCode({ address: wallet })).toBeUndefined()

    const forged = await nonceFor()
    const forgedMessage = messageFor({ nonce: forged.nonce, address: wallet })
    const forgedSignature = serializeErc6492Signature({ address: factory, data: initCode, signature: await mallory.signMessage({ message: forgedMessage }) })
    await expectRefused(
      await signIn({ message: forgedMessage, signature: forgedSignature }, forged.cookie),
      401,
      'invalid_signature',
      `The signature is not ${wallet}'s signature of this message`,
    )
  })
})
