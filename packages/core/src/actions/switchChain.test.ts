import { describe, expect, test } from 'vitest'
import { anvilKeys, testChains } from '../../../../test/chains.js'
import { createRecordingLogger, setupClient } from '../../../../test/setup.js'
import { injected } from '../connectors/injected.js'
import { createClient } from '../createClient.js'
import { createDevWallet } from '../dev/devWallet.js'
import { ChainNotConfiguredError, NetworkSwitchingNotAvailableError, NotConnectedError } from '../errors/connection.js'
import { UserRejectedRequestError } from '../errors/rpc.js'
import { createMemoryStorage } from '../storage.js'
import { connect } from './connect.js'
import { switchChain } from './switchChain.js'

const key = anvilKeys[5]

/** A wallet that knows only chain A until the app adds B, like a fresh MetaMask. */
function walletKnowingOnlyA(options: { canSwitch: boolean }) {
  const chains = testChains()
  const inner = createDevWallet({ privateKey: key, chains })
  const known = new Set([31337])
  const calls: string[] = []
  const provider = {
    ...inner,
    on: inner.on,
    removeListener: inner.removeListener,
    async request(args: { method: string; params?: unknown }) {
      calls.push(args.method)
      if (args.method === 'wallet_switchEthereumChain') {
        if (!options.canSwitch) throw { code: 4200, message: 'Method not supported' }
        const [{ chainId }] = args.params as [{ chainId: string }]
        if (!known.has(Number(chainId))) throw { code: 4902, message: 'Unrecognized chain ID' }
      }
      if (args.method === 'wallet_addEthereumChain') {
        const [params] = args.params as [{ chainId: string; rpcUrls: string[] }]
        known.add(Number(params.chainId))
        return null
      }
      return inner.request(args as never)
    },
  }
  const storage = createMemoryStorage()
  const client = createClient({ chains, storage, logger: createRecordingLogger(), connectors: [injected({ id: 'w', provider: provider as never })] })
  return { client, calls, storage }
}

describe('switchChain', () => {
  test('default: switches, updates the current chain and what storage holds', async () => {
    const { client, storage } = setupClient({ privateKey: key })
    await connect(client, { connector: 'dev' })
    const chain = await switchChain(client, { chainId: 31338 })
    expect(chain.id).toBe(31338)
    expect(client.getState()).toMatchObject({ chainId: 31338, connection: { chainId: 31338 } })
    expect(storage.getItem('latchkey.dev.currentChain')).toBe('31338')
    expect(storage.getItem('latchkey.lastUsedChainId')).toBe('31338')
  })

  test('behavior: on 4902 the chain is added with wallet_addEthereumChain, then switched to', async () => {
    const { client, calls } = walletKnowingOnlyA({ canSwitch: true })
    await connect(client, { connector: 'w' })
    await switchChain(client, { chainId: 31338 })
    expect(calls.filter((m) => m.startsWith('wallet_'))).toEqual(['wallet_switchEthereumChain', 'wallet_addEthereumChain', 'wallet_switchEthereumChain'])
    expect(client.getState().chainId).toBe(31338)
  })

  test('error: a wallet that cannot switch on request: switch in the wallet', async () => {
    const { client } = walletKnowingOnlyA({ canSwitch: false })
    await connect(client, { connector: 'w' })
    const error = await switchChain(client, { chainId: 31338 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(NetworkSwitchingNotAvailableError)
    expect((error as NetworkSwitchingNotAvailableError).code).toBe('network_switching_only_available_in_wallet')
    expect(client.getState()).toMatchObject({ status: 'connected', chainId: 31337 })
  })

  test('error: only configured chains (SPEC §5)', async () => {
    const { client } = setupClient({ privateKey: key })
    await connect(client, { connector: 'dev' })
    await expect(switchChain(client, { chainId: 1 })).rejects.toThrow(ChainNotConfiguredError)
    expect(client.getState().chainId).toBe(31337)
  })

  test('error: not connected', async () => {
    const { client } = setupClient({ privateKey: key })
    await expect(switchChain(client, { chainId: 31338 })).rejects.toThrow(NotConnectedError)
  })

  test('error: the user declines the switch and stays where they were', async () => {
    const { client } = setupClient({ privateKey: key, decide: async ({ method }) => method !== 'wallet_switchEthereumChain' })
    await connect(client, { connector: 'dev' })
    await expect(switchChain(client, { chainId: 31338 })).rejects.toThrow(UserRejectedRequestError)
    expect(client.getState()).toMatchObject({ status: 'connected', chainId: 31337 })
  })
})
