import { createPublicClient, http, parseEther, verifyMessage } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { testChains } from '../../../../test/chains.js'
import { memoryKeys, memoryStorage, useEmbeddedStack } from '../../../embedded/test/harness.js'
import { connect } from '../actions/connect.js'
import { disconnect } from '../actions/disconnect.js'
import { signInAsGuest } from '../actions/embedded/guestSignIn.js'
import { getUser } from '../actions/embedded/linking.js'
import { upgradeAccount } from '../actions/embedded/upgradeAccount.js'
import { getCapabilities } from '../actions/getCapabilities.js'
import { reconnect } from '../actions/reconnect.js'
import { sendCalls } from '../actions/sendCalls.js'
import { signMessage } from '../actions/signMessage.js'
import { switchChain } from '../actions/switchChain.js'
import { waitForCallsStatus } from '../actions/waitForCallsStatus.js'
import { createClient } from '../createClient.js'
import { ChainNotConfiguredError, ConnectorError } from '../errors/connection.js'
import { CannotProceedError, InvalidAuthorizationError } from '../errors/embedded.js'
import { createMemoryStorage, type KeyValueStorage } from '../storage.js'
import { embedded, isEmbeddedConnector } from './embedded.js'

// The embedded connector through the client's actions, against a real kms and backend: the UI's
// sign-in (getFlows) first, then connect, sign, switch, reload, disconnect.

const stack = useEmbeddedStack()
let people = 0

function setup(shared?: {
  storage: KeyValueStorage
  walletStorage: KeyValueStorage
  keys: ReturnType<typeof memoryKeys>
  browser: ReturnType<typeof stack.browserFetch>
}) {
  const state = shared ?? { storage: createMemoryStorage(), walletStorage: memoryStorage(), keys: memoryKeys(), browser: stack.browserFetch() }
  const client = createClient({
    chains: testChains(),
    storage: state.storage,
    window: new EventTarget(),
    connectors: [
      embedded({
        appName: 'Connector test',
        backendUrl: stack.backendUrl,
        kmsUrl: stack.kms.url,
        organizationId: stack.organizationId,
        walletOptions: { storage: state.walletStorage, testOnlySessionKeys: state.keys, fetch: state.browser.fetchFn, now: stack.now },
      }),
    ],
  })
  client.mount()
  const connector = client.getConnectors().find(isEmbeddedConnector)!
  return { client, connector, state }
}

async function signInByEmail(connector: ReturnType<typeof setup>['connector']) {
  const { wallet } = await connector.getFlows()
  const email = `connector${++people}@example.test`
  const sent = await wallet.startEmail(email)
  return wallet.verifyEmail(sent)
}

describe('embedded connector', () => {
  test('default: sign in through the flows, connect, sign, switch locally, reload, disconnect', async () => {
    const { client, connector, state } = setup()
    expect(connector).toMatchObject({ id: 'embedded', type: 'embedded', name: 'Email or passkey' })
    expect(await connector.isAuthorized()).toBe(false)

    const credential = await signInByEmail(connector)
    expect(await connect(client, { connector })).toEqual({ accounts: [credential.address], chainId: 31337 })
    const signature = await signMessage(client, { message: 'from the connector' })
    expect(await verifyMessage({ address: credential.address, message: 'from the connector', signature })).toBe(true)

    await switchChain(client, { chainId: 31338 })
    expect(client.getState().chainId).toBe(31338)
    await expect(switchChain(client, { chainId: 1 })).rejects.toBeInstanceOf(ChainNotConfiguredError)

    // A reload: a new client over the same storage restores without a prompt, on the same chain.
    const reloaded = setup(state)
    expect(await reconnect(reloaded.client)).toEqual({ connected: true })
    expect(reloaded.client.getState().connection).toMatchObject({ accounts: [credential.address], chainId: 31338 })

    await disconnect(reloaded.client)
    expect(state.walletStorage.getItem('latchkey.embedded.wallet')).toBeNull()
    expect(await state.keys.publicKey()).toBeUndefined()
    expect(state.browser.calls).toContain('/auth/signout')
  })

  test('behavior: offersGuests reads the backend’s /auth/config once (this backend offers guests); signInAsGuest then connects a guest wallet, whose user is a guest', async () => {
    const { client, connector, state } = setup()
    expect([await connector.offersGuests(), await connector.offersGuests()]).toEqual([true, true])
    expect(state.browser.calls.filter((path) => path === '/auth/config')).toEqual(['/auth/config'])
    const { accounts } = await signInAsGuest(client, { connector })
    expect(client.getState().connection?.accounts).toEqual(accounts)
    expect(await getUser(client, { connector })).toMatchObject({ guest: true, logins: [], wallets: [{ address: accounts[0], kind: 'embedded' }] })
    expect(state.browser.calls).toContain('/auth/guest')
  })

  test('behavior: a backend that cannot be read offers no guests, and is read again the next time', async () => {
    const calls: string[] = []
    const client = createClient({
      chains: testChains(),
      storage: createMemoryStorage(),
      window: new EventTarget(),
      connectors: [
        embedded({
          appName: 'Connector test',
          backendUrl: 'http://backend.invalid/',
          walletOptions: {
            fetch: async (input) => {
              calls.push(String(input))
              throw new TypeError('fetch failed')
            },
          },
        }),
      ],
    })
    const connector = client.getConnectors().find(isEmbeddedConnector)!
    expect([await connector.offersGuests(), await connector.offersGuests()]).toEqual([false, false])
    expect(calls).toEqual(['http://backend.invalid/auth/config', 'http://backend.invalid/auth/config'])
  })

  test('error: connecting before signing in is "Account not found"', async () => {
    const { client, connector } = setup()
    const failure = await connect(client, { connector }).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(ConnectorError)
    expect(failure).toMatchObject({ code: 'account_not_found', shortMessage: 'Account not found' })
    expect(client.getState().status).toBe('disconnected')
  })

  test('behavior: a reload after the backend session ended does not reconnect and clears storage', async () => {
    const first = setup()
    await signInByEmail(first.connector)
    await connect(first.client, { connector: first.connector })
    first.state.browser.forget()
    await first.state.keys.clear()
    const reloaded = setup(first.state)
    expect(await reconnect(reloaded.client)).toEqual({ connected: false })
    expect(first.state.walletStorage.getItem('latchkey.embedded.wallet')).toBeNull()
  })
})

describe('smart account (EIP-7702) through the actions', () => {
  test('default: sendCalls sends both transfers in one atomic transaction; getCapabilities turns supported; upgradeAccount on chain B', async () => {
    const { client, connector } = setup()
    const { address } = await signInByEmail(connector)
    await connect(client, { connector })
    const [chainA, chainB] = testChains().map((chain) => createPublicClient({ chain, transport: http() }))
    for (const chain of [chainA!, chainB!]) await chain.request({ method: 'anvil_setBalance' as never, params: [address, '0xDE0B6B3A7640000'] as never })
    expect(await getCapabilities(client, { chainId: 31337 })).toEqual({ atomic: { status: 'ready' } })

    const to = [privateKeyToAccount(generatePrivateKey()).address, privateKeyToAccount(generatePrivateKey()).address] as const
    const { id } = await sendCalls(client, {
      calls: [
        { to: to[0], value: parseEther('0.001') },
        { to: to[1], value: parseEther('0.001') },
      ],
      forceAtomic: true,
    })
    const status = await waitForCallsStatus(client, { id })
    expect(status).toMatchObject({ status: 'success', atomic: true, chainId: 31337 })
    expect(status.receipts).toHaveLength(1)
    expect(await Promise.all(to.map((address) => chainA!.getBalance({ address })))).toEqual([parseEther('0.001'), parseEther('0.001')])
    expect(await getCapabilities(client, { chainId: 31337 })).toEqual({ atomic: { status: 'supported' } })

    await switchChain(client, { chainId: 31338 })
    const error = await upgradeAccount(client, { nonce: 7 }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(InvalidAuthorizationError)
    expect(error).toBeInstanceOf(CannotProceedError)
    expect(error).toMatchObject({ shortMessage: 'Cannot proceed with your request', code: 'invalid_authorization' })
    expect(await chainB!.getCode({ address })).toBeUndefined()
    const upgraded = await upgradeAccount(client)
    expect(upgraded.smartWalletRefId).toMatch(/^eip155:31338:0x[0-9a-fA-F]{40}$/)
    expect(await getCapabilities(client, { chainId: 31338 })).toEqual({ atomic: { status: 'supported' } })
  })
})
