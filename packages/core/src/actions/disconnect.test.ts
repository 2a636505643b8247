import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../test/chains.js'
import { setupClient } from '../../../../test/setup.js'
import { connect } from './connect.js'
import { disconnect } from './disconnect.js'

const key = anvilKeys[6]

describe('disconnect', () => {
  test('default: clears state and every stored field of the connection (SPEC §4)', async () => {
    const { client, storage, wallet } = setupClient({ privateKey: key })
    await connect(client, { connector: 'dev' })
    await disconnect(client)
    expect(client.getState()).toMatchObject({ status: 'disconnected', connection: undefined })
    // The wallet forgot the permission too, so the next connect asks again.
    expect(await wallet.request({ method: 'eth_accounts' })).toEqual([])
    // Only preferences remain: which wallet was used last, and on which chain.
    expect(Object.fromEntries(storage.map)).toEqual({
      'latchkey.lastUsedChainId': '31337',
      'latchkey.recentConnectorId': '"dev"',
    })
  })

  test('behavior: the wallet disconnecting by itself clears the session the same way', async () => {
    const { client, storage, wallet } = setupClient({ privateKey: key })
    await connect(client, { connector: 'dev' })
    wallet.emit('disconnect', { code: 4900, message: 'disconnected' })
    expect(client.getState().status).toBe('disconnected')
    expect(storage.getItem('latchkey.dev.activeAccount')).toBeNull()
  })

  test('behavior: a wallet reconnecting to its node (1013) does not end the session', async () => {
    const { client, wallet } = setupClient({ privateKey: key })
    await connect(client, { connector: 'dev' })
    wallet.emit('disconnect', { code: 1013, message: 'reconnecting' })
    expect(client.getState().status).toBe('connected')
  })

  test('behavior: events after disconnect no longer move the state', async () => {
    const { client, wallet } = setupClient({ privateKey: key })
    await connect(client, { connector: 'dev' })
    await disconnect(client)
    wallet.emit('accountsChanged', ['0x0000000000000000000000000000000000000001'])
    wallet.emit('chainChanged', '0x7a6a')
    expect(client.getState()).toMatchObject({ status: 'disconnected', connection: undefined, chainId: 31337 })
  })
})
