import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { getFreePort } from '@latchkey/devnet'
import { createKms, generateApiKeyPair, type Kms } from '@latchkey/kms'
import { createServerApp, openStore } from '@latchkey/server'
import { createPublicClient, defineChain, http, parseEther, verifyMessage, verifyTypedData } from 'viem'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import {
  type ActivityStatusError,
  completed,
  createEmbeddedWallet,
  type KeyValueStorage,
  type SessionKeyStore,
} from '../src/index.js'

// The embedded wallet's logic in Node against a real kms and a real app backend, with an anvil
// chain: the browser-only parts (IndexedDB keys, passkeys, frames) are covered in e2e/embedded.

let kms: Kms
let clock = Date.now()
const now = () => clock
const backendKey = generateApiKeyPair()
let organizationId: string
let backendUrl: string
let stopBackend: () => void
const chain = defineChain({ id: 31337, name: 'Anvil A', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [inject('chainARpc')] } } })

beforeAll(async () => {
  kms = createKms({ port: await getFreePort(), now })
  await kms.start()
  organizationId = kms.createParentOrganization({ name: 'Demo', userName: 'backend', publicKey: backendKey.apiPublicKey }).organizationId
  const store = openStore(':memory:')
  const app = createServerApp({ store, kmsUrl: kms.url, organizationId, ...backendKey, sessionSignerPublicKey: kms.signerPublicKey, appName: 'Embedded test', allowedOrigins: [], now, ipOf: () => '127.0.0.1' })
  const { serve } = await import('@hono/node-server')
  const port = await getFreePort()
  const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' })
  backendUrl = `http://127.0.0.1:${port}`
  stopBackend = () => (server.close(), store.close())
})
afterAll(async () => {
  stopBackend()
  await kms.stop()
})

/** A browser's cookie jar for one user, and a log of the backend paths it called. */
function browserFetch() {
  let cookie: string | undefined
  const calls: string[] = []
  const fetchFn: typeof fetch = async (input, init) => {
    const url = new URL(String(input))
    if (url.origin === backendUrl) calls.push(url.pathname)
    const response = await fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...(cookie ? { cookie } : {}) } })
    const set = response.headers.getSetCookie().find((line) => line.startsWith('latchkey_session='))
    if (set) cookie = set.split(';')[0]
    return response
  }
  return { fetchFn, calls, forget: () => (cookie = undefined) }
}

/** Session keys in memory (Node has no IndexedDB): same contract, the private key in a closure. */
function memoryKeys(): SessionKeyStore & { privateKey(): string | undefined } {
  let key: { apiPublicKey: string; apiPrivateKey: string } | undefined
  return {
    async create() {
      key = generateApiKeyPair()
      return key.apiPublicKey
    },
    async publicKey() {
      return key?.apiPublicKey
    },
    stamper: { stamp: (payload) => new ApiKeyStamper(key!).stamp(payload) },
    async clear() {
      key = undefined
    },
    privateKey: () => key?.apiPrivateKey,
  }
}

function memoryStorage(): KeyValueStorage {
  const values = new Map<string, string>()
  return { getItem: (k) => values.get(k) ?? null, setItem: (k, v) => void values.set(k, v), removeItem: (k) => void values.delete(k) }
}

let people = 0
async function codeFor(email: string): Promise<string> {
  const inbox = (await (await fetch(`${kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
  const message = inbox.messages.filter((candidate) => candidate.to === email).at(-1)
  return /code is (\d{6})/.exec(message!.text)![1]!
}

function newWallet(overrides: { storage?: KeyValueStorage; keys?: ReturnType<typeof memoryKeys>; browser?: ReturnType<typeof browserFetch> } = {}) {
  const browser = overrides.browser ?? browserFetch()
  const keys = overrides.keys ?? memoryKeys()
  const storage = overrides.storage ?? memoryStorage()
  const wallet = createEmbeddedWallet({ appName: 'Embedded test', backendUrl, kmsUrl: kms.url, organizationId, chains: [chain], storage, sessionKeys: keys, now, fetch: browser.fetchFn })
  return { wallet, browser, keys, storage }
}

async function signedIn(): Promise<ReturnType<typeof newWallet> & { email: string }> {
  const setup = newWallet()
  const email = `embedded${++people}.${clock}@example.test`
  const { otpId } = await setup.wallet.startEmail(email)
  await setup.wallet.verifyEmail({ otpId, code: await codeFor(email) })
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
    expect(Date.parse(current.session.expirationDate)).toBe(clock + 900_000)
  })

  test('error: a wrong code is "The code is invalid or expired." and signs nobody in', async () => {
    const { wallet } = newWallet()
    const email = `wrong${++people}@example.test`
    const { otpId } = await wallet.startEmail(email)
    const right = await codeFor(email)
    await expect(wallet.verifyEmail({ otpId, code: right === '000000' ? '111111' : '000000' })).rejects.toMatchObject({ shortMessage: 'The code is invalid or expired.', code: 'invalid_code' })
    expect(wallet.current).toBeUndefined()
  })

  test('error: no appName is refused up front (SPEC §5)', () => {
    expect(() => createEmbeddedWallet({ appName: '', backendUrl, chains: [chain] })).toThrow('The embedded wallet needs an appName')
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
    clock += 901_000
    const signature = await wallet.signMessage({ message: 'after expiry' })
    expect(await verifyMessage({ address: wallet.current!.credential.address, message: 'after expiry', signature })).toBe(true)
    expect(browser.calls.filter((path) => path === '/auth/session-key')).toHaveLength(1)
    expect(await keys.publicKey()).not.toBe(first)
    expect(wallet.current!.session.publicKey).toBe(await keys.publicKey())
  })

  test('error: without a backend session the refresh fails with "Cannot register session key to init provider"', async () => {
    const { wallet, browser } = await signedIn()
    browser.forget()
    clock += 901_000
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
