import { connect, getAccount, injected, disconnect as latchkeyDisconnect, switchChain as latchkeySwitchChain, signMessage } from '@latchkey/core'
import { createDevWallet } from '@latchkey/core/dev'
import { verifyMessage } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { createConfig, http } from 'wagmi'
import { disconnect, switchChain } from 'wagmi/actions'
import { anvilKeys, testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { UnsupportedWagmiVersionError } from '../errors.js'
import { assertWagmiVersion } from './assertWagmiVersion.js'
import { createWagmiClient } from './createWagmiClient.js'
import { fromLatchkey } from './fromLatchkey.js'

const key = anvilKeys[8]
const address = privateKeyToAddress(key)

function setup() {
  const chains = testChains()
  const wallet = createDevWallet({ privateKey: key, chains })
  const config = createConfig({
    chains,
    // The dev wallet through core's injected connector: wagmi's own injected() looks for `window`, which Node lacks.
    connectors: [fromLatchkey(injected({ id: 'dev', name: 'Dev Wallet', provider: wallet }))],
    transports: { [chains[0].id]: http(), [chains[1].id]: http() },
    multiInjectedProviderDiscovery: false,
  })
  const client = createWagmiClient(config, { logger: createRecordingLogger() })
  const unmount = client.mount()
  const seen: string[] = []
  client.subscribe((state) => seen.push(`${state.status} ${state.connection?.accounts[0] ?? '-'} ${state.chainId}`))
  return { config, client, unmount, seen }
}

describe('createWagmiClient', () => {
  test('default: a connect through Latchkey is wagmi connection, and what wagmi does shows in Latchkey at once', async () => {
    const { config, client, unmount, seen } = setup()
    const [connector] = client.getConnectors()
    expect(connector).toMatchObject({ id: 'dev', name: 'Dev Wallet', type: 'injected' })

    await connect(client, { connector: 'dev' })
    const current = config.state.connections.get(config.state.current!)
    expect({ accounts: current?.accounts, chainId: current?.chainId, status: config.state.status }).toEqual({
      accounts: [address],
      chainId: 31337,
      status: 'connected',
    })
    expect(getAccount(client)).toMatchObject({ address, chainId: 31337, status: 'connected', isConnected: true, connector })

    // wagmi's own actions: Latchkey hears of them synchronously with wagmi's store.
    await switchChain(config, { chainId: 31338 })
    expect(getAccount(client)).toMatchObject({ address, chainId: 31338, status: 'connected' })
    await latchkeySwitchChain(client, { chainId: 31337 })
    expect(config.state.connections.get(config.state.current!)?.chainId).toBe(31337)

    const signature = await signMessage(client, { message: 'gm' })
    expect(await verifyMessage({ address, message: 'gm', signature })).toBe(true)

    await disconnect(config)
    expect(getAccount(client)).toMatchObject({ address: undefined, status: 'disconnected', isConnected: false })
    expect(seen).toEqual([
      'connecting - 31337',
      `connected ${address} 31337`,
      `connected ${address} 31338`,
      `connected ${address} 31337`,
      'disconnected - 31337',
    ])
    unmount()
  })

  test('behavior: a disconnect in Latchkey is wagmi disconnect', async () => {
    const { config, client, unmount } = setup()
    await connect(client, { connector: 'dev' })
    await latchkeyDisconnect(client)
    expect({ current: config.state.current, status: config.state.status, connections: config.state.connections.size }).toEqual({
      current: null,
      status: 'disconnected',
      connections: 0,
    })
    expect(client.getState().connection).toBeUndefined()
    unmount()
  })

  test('behavior: stores nothing of its own, so Latchkey reconnect leaves restoring to wagmi', () => {
    const { client, unmount } = setup()
    expect(client.connections.getRecentConnectorId()).toBeNull()
    unmount()
  })
})

describe('assertWagmiVersion', () => {
  test('default: wagmi 2 and 3 pass, the installed one too', () => {
    expect(() => assertWagmiVersion('2.19.5')).not.toThrow()
    expect(() => assertWagmiVersion('3.7.7')).not.toThrow()
    expect(() => assertWagmiVersion()).not.toThrow()
  })

  test('error: another major is one typed error', () => {
    for (const version of ['1.4.13', '4.0.0', 'next']) {
      let error: unknown
      try {
        assertWagmiVersion(version)
      } catch (caught) {
        error = caught
      }
      expect(error).toBeInstanceOf(UnsupportedWagmiVersionError)
      expect(error).toMatchObject({
        code: 'unsupported_wagmi_version',
        shortMessage: 'Unsupported wagmi version',
        details: `@latchkey/wagmi supports wagmi 2 and 3; this app has wagmi ${version}.`,
        wagmiVersion: version,
      })
    }
  })
})
