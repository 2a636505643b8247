import { randomBytes } from 'node:crypto'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { expect, test } from 'vitest'
import { memoryKeys, memoryStorage, useEmbeddedStack } from '../test/harness.js'
import { createBackend } from './backend.js'
import { AccountAlreadyLinkedError, LastLoginError } from './errors.js'
import { linkingFlows } from './linking.js'
import { createEmbeddedWallet } from './wallet.js'

// Account linking from the browser's side, against a real kms and app backend: the user, an
// external wallet linked by SIWE, an email linked by the code typed in the consent frame (here the
// test keys' collectOtp), unlinking, and the refusals: another user's login, the last login.

const stack = useEmbeddedStack()

/** A signed-in email user in a browser of their own, with the linking flows. */
async function signedIn(email = `linking.${randomBytes(6).toString('hex')}@example.test`) {
  const browser = stack.browserFetch()
  const keys = memoryKeys()
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
    fetch: browser.fetchFn,
  })
  await wallet.verifyEmail(await wallet.startEmail(email))
  const linking = linkingFlows(wallet, { backend: createBackend(stack.backendUrl, browser.fetchFn) }, { rpId: 'localhost', appName: 'Embedded test' })
  return { wallet, linking, email, browser }
}

/** An external wallet's SIWE proof for `linkWallet`, with a nonce issued to the user's browser. */
async function walletProof(linking: Awaited<ReturnType<typeof signedIn>>['linking'], privateKey = generatePrivateKey()) {
  const account = privateKeyToAccount(privateKey)
  const message = createSiweMessage({
    address: account.address,
    chainId: stack.chain.id,
    domain: 'localhost:5173',
    uri: 'http://localhost:5173',
    nonce: await linking.walletNonce(),
    version: '1',
    issuedAt: new Date(stack.now()),
  })
  return { account, proof: { message, signature: await account.signMessage({ message }) } }
}

/** The user `getUser` reads; the test fails where the backend has no session for them. */
async function userOf(linking: Awaited<ReturnType<typeof signedIn>>['linking']) {
  const user = await linking.getUser()
  if (!user) throw new Error('getUser: the app backend has no session for this user')
  return user
}

const kindsAndLabels = (user: { logins: { kind: string; label: string }[] }) => user.logins.map((login) => [login.kind, login.label])

test('behavior: signed out at the app backend, getUser is null while the wallet stays signed in; nothing is refused', async () => {
  const { wallet, linking, browser } = await signedIn()
  expect((await userOf(linking)).logins).toHaveLength(1)
  await createBackend(stack.backendUrl, browser.fetchFn).post('/auth/signout', {})
  expect(await linking.getUser()).toBeNull()
  expect(wallet.current).toBeDefined()
})

test('default: the user lists their email; a wallet linked by SIWE is a second login and an external wallet; unlinking it leaves the email', async () => {
  const { wallet, linking, email } = await signedIn()
  const before = await userOf(linking)
  expect(before).toEqual({
    userId: wallet.current!.userId,
    organizationId: wallet.current!.organizationId,
    logins: [{ id: expect.any(String), kind: 'email', label: email, linkedAt: new Date(before.logins[0]!.linkedAt).toISOString() }],
    wallets: [{ address: wallet.current!.credential.address, kind: 'embedded' }],
    mfa: { enrolled: [] },
  })
  stack.clock += 1000
  const { account, proof } = await walletProof(linking)
  const login = await linking.linkWallet(proof)
  expect(login).toEqual({ id: expect.any(String), kind: 'wallet', label: account.address, linkedAt: new Date(stack.now()).toISOString() })
  const after = await userOf(linking)
  expect(kindsAndLabels(after)).toEqual([
    ['email', email],
    ['wallet', account.address],
  ])
  expect(after.wallets).toEqual([
    { address: wallet.current!.credential.address, kind: 'embedded' },
    { address: account.address, kind: 'external' },
  ])
  await linking.unlink(login.id)
  expect(kindsAndLabels(await userOf(linking))).toEqual([['email', email]])
})

test('behavior: an email is linked by the code typed in the consent frame, once the first email is unlinked', async () => {
  const { linking } = await signedIn()
  stack.clock += 1000
  const { proof } = await walletProof(linking)
  await linking.linkWallet(proof)
  stack.clock += 1000
  const first = (await userOf(linking)).logins[0]!
  await linking.unlink(first.id)
  const next = `linking.next.${randomBytes(6).toString('hex')}@example.test`
  const login = await linking.linkEmail(`  ${next} `)
  expect([login.kind, login.label]).toEqual(['email', next])
  expect(kindsAndLabels(await userOf(linking)).map(([kind]) => kind)).toEqual(['wallet', 'email'])
})

test('error: the last login cannot be unlinked (LastLoginError), and stays', async () => {
  const { linking, email } = await signedIn()
  const [only] = (await userOf(linking)).logins
  const refused = await linking.unlink(only!.id).catch((error: unknown) => error)
  expect(refused).toBeInstanceOf(LastLoginError)
  expect(refused).toMatchObject({
    code: 'last_login',
    shortMessage: 'The last sign-in method cannot be removed.',
    details: 'This is the last way to sign in to this account; link another before removing it',
  })
  expect(kindsAndLabels(await userOf(linking))).toEqual([['email', email]])
})

test('error: a wallet or an email of another user is AccountAlreadyLinkedError, and neither user changes', async () => {
  const other = await signedIn()
  const key = generatePrivateKey()
  await other.linking.linkWallet((await walletProof(other.linking, key)).proof)
  const otherBefore = await userOf(other.linking)

  const { linking } = await signedIn()
  const taken = await linking.linkWallet((await walletProof(linking, key)).proof).catch((error: unknown) => error)
  expect(taken).toBeInstanceOf(AccountAlreadyLinkedError)
  expect(taken).toMatchObject({
    code: 'account_already_linked',
    shortMessage: 'This login belongs to another account.',
    details: 'This login belongs to another user; sign in with it, or unlink it from that account first',
  })
  // With a wallet of their own and their email unlinked, the other user's email is refused alike.
  stack.clock += 1000
  await linking.linkWallet((await walletProof(linking)).proof)
  await linking.unlink((await userOf(linking)).logins.find((login) => login.kind === 'email')!.id)
  const before = await userOf(linking)
  await expect(linking.linkEmail(other.email)).rejects.toBeInstanceOf(AccountAlreadyLinkedError)
  expect(await userOf(linking)).toEqual(before)
  expect(await userOf(other.linking)).toEqual(otherBefore)
})
