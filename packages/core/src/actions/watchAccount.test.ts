import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../test/chains.js'
import { setupClient } from '../../../../test/setup.js'
import { connect } from './connect.js'
import { getAccount } from './getAccount.js'
import { getChainId } from './getChainId.js'
import { watchAccount } from './watchAccount.js'
import { watchChainId } from './watchChainId.js'

const key = anvilKeys[8]
const address = privateKeyToAddress(key)
const other = privateKeyToAddress(anvilKeys[9])

describe('watchAccount', () => {
  test('default: hears connect, account change and chain change from the wallet', async () => {
    const { client, wallet, storage } = setupClient({ privateKey: key })
    const seen: unknown[] = []
    watchAccount(client, { onChange: ({ address, chainId, status }) => seen.push([status, address, chainId]) })
    await connect(client, { connector: 'dev' })
    wallet.emit('accountsChanged', [other.toLowerCase()])
    wallet.emit('chainChanged', '0x7a6a')
    expect(seen).toEqual([
      ['connecting', undefined, 31337],
      ['connected', address, 31337],
      ['connected', other, 31337],
      ['connected', other, 31338],
    ])
    expect(storage.getItem('latchkey.dev.activeAccount')).toBe(JSON.stringify(other))
    expect(getChainId(client)).toBe(31338)
  })

  test('behavior: an empty accountsChanged (wallet locked) disconnects and clears storage', async () => {
    const { client, wallet, storage } = setupClient({ privateKey: key })
    await connect(client, { connector: 'dev' })
    wallet.emit('accountsChanged', [])
    expect(getAccount(client)).toMatchObject({ status: 'disconnected', address: undefined })
    expect(storage.getItem('latchkey.dev.activeAccount')).toBeNull()
  })

  test('behavior: getAccount is referentially stable while nothing changes', async () => {
    const { client } = setupClient({ privateKey: key })
    expect(getAccount(client)).toBe(getAccount(client))
  })

  test('behavior: watchChainId fires only on change', async () => {
    const { client, wallet } = setupClient({ privateKey: key })
    const chains: number[] = []
    watchChainId(client, { onChange: (chainId) => chains.push(chainId) })
    await connect(client, { connector: 'dev' })
    wallet.emit('chainChanged', '0x7a6a')
    wallet.emit('chainChanged', '0x7a6a')
    expect(chains).toEqual([31338])
  })
})
