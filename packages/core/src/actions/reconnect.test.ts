import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys, testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { createClient } from '../createClient.js'
import { announceProvider, createDevWallet, devWalletInfo } from '../dev/devWallet.js'
import { createMemoryStorage } from '../storage.js'
import { connect } from './connect.js'
import { reconnect } from './reconnect.js'

const key = anvilKeys[7]
const address = privateKeyToAddress(key)

/** A "page load": a fresh client over the same storage and the same (still authorized) wallet. */
function page(storage: ReturnType<typeof createMemoryStorage>, target: EventTarget) {
  const client = createClient({ chains: testChains(), storage, window: target, logger: createRecordingLogger() })
  client.mount()
  return client
}

describe('reconnect', () => {
  test('default: restores the last used EIP-6963 wallet on its chain without prompting', async () => {
    const storage = createMemoryStorage()
    const prompts: string[] = []
    const wallet = createDevWallet({ privateKey: key, chains: testChains(), approve: async (p) => (prompts.push(p.method), true) })
    const target = new EventTarget()
    announceProvider(target, { info: { ...devWalletInfo, uuid: '1' }, provider: wallet })
    const first = page(storage, target)
    await connect(first, { connector: devWalletInfo.rdns, chainId: 31338 })
    const promptsBefore = prompts.length

    const second = page(storage, target)
    const statuses: string[] = []
    second.subscribe((s) => statuses.push(s.status))
    expect(await reconnect(second)).toEqual({ connected: true })
    expect(statuses).toEqual(['reconnecting', 'connected'])
    expect(second.getState()).toMatchObject({ chainId: 31338, connection: { accounts: [address], connectorId: devWalletInfo.rdns } })
    expect(prompts.length).toBe(promptsBefore)
  })

  test('behavior: waits for a wallet that announces late', async () => {
    const storage = createMemoryStorage()
    const wallet = createDevWallet({ privateKey: key, chains: testChains(), authorized: true })
    storage.setItem('latchkey.recentConnectorId', JSON.stringify(devWalletInfo.rdns))
    storage.setItem(`latchkey.${devWalletInfo.rdns}.activeAccount`, JSON.stringify(address))
    const target = new EventTarget()
    const client = page(storage, target)
    const pending = reconnect(client)
    expect(client.getState().status).toBe('reconnecting')
    announceProvider(target, { info: { ...devWalletInfo, uuid: '2' }, provider: wallet })
    expect(await pending).toEqual({ connected: true })
  })

  test('behavior: nothing stored, nothing to do', async () => {
    const client = page(createMemoryStorage(), new EventTarget())
    expect(await reconnect(client)).toEqual({ connected: false })
    expect(client.getState().status).toBe('disconnected')
  })

  test('error: the wallet never appears: times out to disconnected with a warning and forgets it', async () => {
    const storage = createMemoryStorage()
    storage.setItem('latchkey.recentConnectorId', '"gone.wallet"')
    storage.setItem('latchkey.gone.wallet.activeAccount', JSON.stringify(address))
    const client = createClient({ chains: testChains(), storage, window: new EventTarget(), logger: createRecordingLogger() })
    client.mount()
    expect(await reconnect(client, { timeoutMs: 50 })).toEqual({ connected: false })
    expect(client.getState().status).toBe('disconnected')
    expect(storage.getItem('latchkey.gone.wallet.activeAccount')).toBeNull()
    expect((client.logger as ReturnType<typeof createRecordingLogger>).warnings).toEqual([
      '[latchkey] reconnect: Waiting for wallet "gone.wallet" timed out after 50 ms.',
    ])
  })

  test('error: the wallet no longer authorizes us: disconnected, stored account removed', async () => {
    const storage = createMemoryStorage()
    const wallet = createDevWallet({ privateKey: key, chains: testChains(), authorized: false })
    storage.setItem('latchkey.recentConnectorId', JSON.stringify(devWalletInfo.rdns))
    storage.setItem(`latchkey.${devWalletInfo.rdns}.activeAccount`, JSON.stringify(address))
    const target = new EventTarget()
    announceProvider(target, { info: { ...devWalletInfo, uuid: '3' }, provider: wallet })
    const client = page(storage, target)
    expect(await reconnect(client)).toEqual({ connected: false })
    expect(storage.getItem(`latchkey.${devWalletInfo.rdns}.activeAccount`)).toBeNull()
  })
})
