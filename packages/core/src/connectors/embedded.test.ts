import { verifyMessage } from 'viem'
import { describe, expect, test } from 'vitest'
import { testChains } from '../../../../test/chains.js'
import { memoryKeys, memoryStorage, useEmbeddedStack } from '../../../embedded/test/harness.js'
import { connect } from '../actions/connect.js'
import { disconnect } from '../actions/disconnect.js'
import { reconnect } from '../actions/reconnect.js'
import { signMessage } from '../actions/signMessage.js'
import { switchChain } from '../actions/switchChain.js'
import { createClient } from '../createClient.js'
import { ChainNotConfiguredError, ConnectorError } from '../errors/connection.js'
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
        walletOptions: { storage: state.walletStorage, sessionKeys: state.keys, fetch: state.browser.fetchFn, now: stack.now },
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
  const { otpId } = await wallet.startEmail(email)
  return wallet.verifyEmail({ otpId, code: await stack.codeFor(email) })
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
