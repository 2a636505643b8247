import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../test/chains.js'
import { setupClient } from '../../../../test/setup.js'
import { CancelledError, ChainNotConfiguredError, ConnectorNotFoundError, TimeoutError } from '../errors/connection.js'
import { UserRejectedRequestError } from '../errors/rpc.js'
import { connect } from './connect.js'
import { getAccount } from './getAccount.js'

const key = anvilKeys[1]
const address = privateKeyToAddress(key)

describe('connect', () => {
  test('default: connects, moves connecting → connected and persists the connection', async () => {
    const { client, storage } = setupClient({ privateKey: key })
    const statuses: string[] = []
    client.subscribe((state) => statuses.push(state.status))
    const result = await connect(client, { connector: 'dev' })
    expect(result).toEqual({ accounts: [address], chainId: 31337 })
    expect(statuses).toEqual(['connecting', 'connected'])
    expect(getAccount(client)).toMatchObject({ address, chainId: 31337, status: 'connected', isConnected: true })
    expect(Object.fromEntries(storage.map)).toEqual({
      'latchkey.dev.activeAccount': JSON.stringify(address),
      'latchkey.dev.currentChain': '31337',
      'latchkey.lastUsedChainId': '31337',
      'latchkey.recentConnectorId': '"dev"',
    })
  })

  test('behavior: connects on the requested chain', async () => {
    const { client } = setupClient({ privateKey: key })
    expect(await connect(client, { connector: 'dev', chainId: 31338 })).toEqual({ accounts: [address], chainId: 31338 })
    expect(getAccount(client).chainId).toBe(31338)
  })

  test('error: the user rejects: typed error, logged as a warning, back to disconnected', async () => {
    const { client, logger, storage } = setupClient({ privateKey: key, decide: async () => false })
    await expect(connect(client, { connector: 'dev' })).rejects.toThrow(UserRejectedRequestError)
    expect(client.getState().status).toBe('disconnected')
    expect(logger.warnings).toEqual(['[latchkey] connect Dev Wallet: User rejected the request.'])
    expect(logger.errors).toEqual([])
    expect(storage.map.size).toBe(0)
  })

  test('error: cancelled by the app while the wallet waits', async () => {
    const { client, logger } = setupClient({ privateKey: key, decide: () => new Promise(() => {}) })
    const controller = new AbortController()
    const pending = connect(client, { connector: 'dev', signal: controller.signal })
    expect(client.getState().status).toBe('connecting')
    controller.abort()
    await expect(pending).rejects.toThrow(CancelledError)
    expect(client.getState().status).toBe('disconnected')
    expect(logger.warnings).toHaveLength(1)
  })

  test('error: unknown connector id', async () => {
    const { client } = setupClient({ privateKey: key })
    await expect(connect(client, { connector: 'nope' })).rejects.toThrow(ConnectorNotFoundError)
  })

  test('error: a chain that is not configured', async () => {
    const { client } = setupClient({ privateKey: key })
    await expect(connect(client, { connector: 'dev', chainId: 1 })).rejects.toThrow(ChainNotConfiguredError)
    expect(client.getState().status).toBe('disconnected')
  })

  test('behavior: a newer attempt supersedes an older one that is still waiting', async () => {
    let release: (value: boolean) => void = () => {}
    let calls = 0
    const { client } = setupClient({
      privateKey: key,
      decide: () => (++calls === 1 ? new Promise<boolean>((resolve) => (release = resolve)) : Promise.resolve(true)),
    })
    const first = connect(client, { connector: 'dev' })
    const second = connect(client, { connector: 'dev' })
    release(true)
    await expect(second).resolves.toMatchObject({ accounts: [address] })
    await expect(first).rejects.toThrow(CancelledError)
    expect(client.getState().status).toBe('connected')
  })

  test('error: TimeoutError is a warning too', () => {
    expect(new TimeoutError({ what: 'Connecting', ms: 5 }).shortMessage).toBe('Connecting timed out after 5 ms.')
  })
})
