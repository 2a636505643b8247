import { createPublicClient, http, parseEther, verifyMessage, verifyTypedData } from 'viem'
import { beforeAll, describe, expect, test } from 'vitest'
import { type ActivityStatusError, completed, createEmbeddedWallet, type KeyValueStorage } from '../src/index.js'
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
    sessionKeys: keys,
    now: stack.now,
    fetch: browser.fetchFn,
  })
  return { wallet, browser, keys, storage }
}

async function signedIn(): Promise<ReturnType<typeof newWallet> & { email: string }> {
  const setup = newWallet()
  const email = `embedded${++people}.${stack.clock}@example.test`
  const { otpId } = await setup.wallet.startEmail(email)
  await setup.wallet.verifyEmail({ otpId, code: await stack.codeFor(email) })
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
    expect(Date.parse(current.session.expirationDate)).toBe(stack.clock + 900_000)
  })

  test('error: a wrong code is "The code is invalid or expired." and signs nobody in', async () => {
    const { wallet } = newWallet()
    const email = `wrong${++people}@example.test`
    const { otpId } = await wallet.startEmail(email)
    const right = await stack.codeFor(email)
    await expect(wallet.verifyEmail({ otpId, code: right === '000000' ? '111111' : '000000' })).rejects.toMatchObject({
      shortMessage: 'The code is invalid or expired.',
      code: 'invalid_code',
    })
    expect(wallet.current).toBeUndefined()
  })

  test('error: no appName is refused up front (SPEC §5)', () => {
    expect(() => createEmbeddedWallet({ appName: '', backendUrl: stack.backendUrl, chains: [chain] })).toThrow('The embedded wallet needs an appName')
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
  test('behavior: an expired session key is replaced through the backend and the signature retried once', async () => {
    const { wallet, browser, keys } = await signedIn()
    const first = await keys.publicKey()
    stack.clock += 901_000
    const signature = await wallet.signMessage({ message: 'after expiry' })
    expect(await verifyMessage({ address: wallet.current!.credential.address, message: 'after expiry', signature })).toBe(true)
    expect(browser.calls.filter((path) => path === '/auth/session-key')).toHaveLength(1)
    expect(await keys.publicKey()).not.toBe(first)
    expect(wallet.current!.session.publicKey).toBe(await keys.publicKey())
  })

  test('error: without a backend session the refresh fails with "Cannot register session key to init provider"', async () => {
    const { wallet, browser } = await signedIn()
    browser.forget()
    stack.clock += 901_000
    await expect(wallet.signMessage({ message: 'x' })).rejects.toMatchObject({ shortMessage: 'Cannot register session key to init provider' })
  })

  test('behavior: a reload restores the sign-in from storage and the stored key, without a new session', async () => {
    const { wallet, storage, keys, browser } = await signedIn()
    const reloaded = newWallet({ storage, keys, browser })
    const calls = browser.calls.length
    expect((await reloaded.wallet.restore())?.credential).toEqual(wallet.current!.credential)
    expect(browser.calls.length).toBe(calls)
    expect(await reloaded.wallet.signMessage({ message: 'still me' })).toMatch(/^0x/)
  })

  test('behavior: a reload without the stored key and without a backend session signs out', async () => {
    const { storage, browser } = await signedIn()
    browser.forget()
    const reloaded = newWallet({ storage, browser })
    expect(await reloaded.wallet.restore()).toBeUndefined()
    expect(reloaded.wallet.current).toBeUndefined()
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
