import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { parseSiweMessage } from 'viem/siwe'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { testChains } from '../../../../../test/chains.js'
import { createRecordingLogger } from '../../../../../test/setup.js'
import { memoryKeys, memoryStorage, useEmbeddedStack } from '../../../../embedded/test/harness.js'
import { embedded, isEmbeddedConnector } from '../../connectors/embedded.js'
import { injected } from '../../connectors/injected.js'
import { createClient } from '../../createClient.js'
import { createDevWallet } from '../../dev/index.js'
import { ConnectorNotFoundError } from '../../errors/connection.js'
import { AccountAlreadyLinkedError, LastLoginError } from '../../errors/embedded.js'
import { createMemoryStorage } from '../../storage.js'
import { connect } from '../connect.js'
import { getUser, linkAccount, unlinkAccount } from './linking.js'

// Core's linking actions over the embedded connector, against a real kms and backend: the user,
// an external wallet (an injected dev wallet) linked by the SIWE message this action writes,
// unlinking, and the backend's refusals as core's typed errors.

const stack = useEmbeddedStack()
const page = Object.getOwnPropertyDescriptor(globalThis, 'location')
// The app page's origin, which the backend's SIWE domains are made of.
beforeAll(() => Object.defineProperty(globalThis, 'location', { value: { host: 'localhost:5173', origin: 'http://localhost:5173' }, configurable: true }))
afterAll(() => (page ? Object.defineProperty(globalThis, 'location', page) : Reflect.deleteProperty(globalThis, 'location')))

let people = 0

/** A client with the embedded connector, signed in by email and connected, and an external dev wallet of `key`. */
async function signedIn(key = generatePrivateKey()) {
  const chains = testChains()
  const browser = stack.browserFetch()
  const messages: string[] = []
  const wallet = createDevWallet({
    privateKey: key,
    chains,
    approve: async (prompt) => {
      if (prompt.method === 'personal_sign') messages.push(prompt.summary)
      return true
    },
  })
  const logger = createRecordingLogger()
  const client = createClient({
    chains,
    storage: createMemoryStorage(),
    logger,
    window: new EventTarget(),
    connectors: [
      embedded({
        appName: 'Linking test',
        backendUrl: stack.backendUrl,
        kmsUrl: stack.kms.url,
        organizationId: stack.organizationId,
        walletOptions: { storage: memoryStorage(), testOnlySessionKeys: memoryKeys(), fetch: browser.fetchFn, now: stack.now },
      }),
      injected({ id: 'dev', name: 'Dev Wallet', provider: wallet }),
    ],
  })
  client.mount()
  const connector = client.getConnectors().find(isEmbeddedConnector)!
  const email = `linking${++people}.${Date.now()}@example.test`
  const { wallet: embeddedWallet } = await connector.getFlows()
  await embeddedWallet.verifyEmail(await embeddedWallet.startEmail(email))
  await connect(client, { connector })
  return { client, email, messages, logger, external: privateKeyToAddress(key) }
}

const kinds = async (client: Awaited<ReturnType<typeof signedIn>>['client']) => (await getUser(client))?.logins.map((login) => [login.kind, login.label])

test('default: an external wallet signs the SIWE message linkAccount writes, and is a second login; unlinkAccount removes it', async () => {
  const { client, email, messages, external } = await signedIn()
  expect(await kinds(client)).toEqual([['email', email]])
  stack.clock += 1000
  const login = await linkAccount(client, { kind: 'wallet', wallet: 'dev' })
  expect([login.kind, login.label]).toEqual(['wallet', external])
  // One message, for the external wallet's address, this page's domain and the connected chain.
  expect(messages).toHaveLength(1)
  expect(parseSiweMessage(messages[0]!)).toMatchObject({
    address: external,
    chainId: 31337,
    domain: 'localhost:5173',
    uri: 'http://localhost:5173',
    statement: 'Link this wallet to your account.',
    version: '1',
  })
  expect(await kinds(client)).toEqual([
    ['email', email],
    ['wallet', external],
  ])
  await unlinkAccount(client, { id: login.id })
  expect(await kinds(client)).toEqual([['email', email]])
})

test('error: unlinking the last login is LastLoginError, and it stays', async () => {
  const { client, email, logger } = await signedIn()
  const [only] = (await getUser(client))?.logins ?? []
  const refused = await unlinkAccount(client, { id: only!.id }).catch((error: unknown) => error)
  expect(refused).toBeInstanceOf(LastLoginError)
  expect(refused).toMatchObject({
    code: 'last_login',
    shortMessage: 'The last sign-in method cannot be removed.',
    details: 'This is the last way to sign in to this account; link another before removing it',
  })
  expect(await kinds(client)).toEqual([['email', email]])
  // The user's to act on, shown by the app: not logged as a failure.
  expect([logger.errors, logger.warnings]).toEqual([[], []])
})

test('error: a wallet linked to another user is AccountAlreadyLinkedError, and nothing changes', async () => {
  const key = generatePrivateKey()
  const other = await signedIn(key)
  stack.clock += 1000
  await linkAccount(other.client, { kind: 'wallet', wallet: 'dev' })
  const { client, email } = await signedIn(key)
  const refused = await linkAccount(client, { kind: 'wallet', wallet: 'dev' }).catch((error: unknown) => error)
  expect(refused).toBeInstanceOf(AccountAlreadyLinkedError)
  expect(refused).toMatchObject({ code: 'account_already_linked', shortMessage: 'This login belongs to another account.' })
  expect(await kinds(client)).toEqual([['email', email]])
  expect(await kinds(other.client)).toEqual([
    ['email', other.email],
    ['wallet', other.external],
  ])
})

test('error: the embedded wallet itself is no external wallet to link', async () => {
  const { client, email } = await signedIn()
  await expect(linkAccount(client, { kind: 'wallet', wallet: 'embedded' })).rejects.toBeInstanceOf(ConnectorNotFoundError)
  expect(await kinds(client)).toEqual([['email', email]])
})
