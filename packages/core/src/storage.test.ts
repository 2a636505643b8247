import { describe, expect, test } from 'vitest'
import { LAST_USED_CHAIN_ID_KEY } from './constants.js'
import { createMemoryStorage, createStorage, getDefaultStorage } from './storage.js'

describe('createStorage', () => {
  test('default: layout latchkey.<connectorId>.<field> and the fixed last-used-chain key', () => {
    const backend = createMemoryStorage()
    const storage = createStorage({ storage: backend })
    const slot = storage.forConnector('io.metamask')
    slot.set('activeAccount', '0x00000000000000000000000000000000000a11ce')
    slot.set('sessionTopic', 'abc')
    slot.set('currentChain', 31338)
    slot.set('providerChainId', 31338)
    slot.set('namespaces', { eip155: { chains: ['eip155:31338'] } })
    storage.setLastUsedChainId(31338)
    storage.setRecentConnectorId('io.metamask')
    expect(Object.fromEntries(backend.map)).toEqual({
      'latchkey.io.metamask.activeAccount': '"0x00000000000000000000000000000000000a11ce"',
      'latchkey.io.metamask.sessionTopic': '"abc"',
      'latchkey.io.metamask.currentChain': '31338',
      'latchkey.io.metamask.providerChainId': '31338',
      'latchkey.io.metamask.namespaces': '{"eip155":{"chains":["eip155:31338"]}}',
      'latchkey.lastUsedChainId': '31338',
      'latchkey.recentConnectorId': '"io.metamask"',
    })
    expect(LAST_USED_CHAIN_ID_KEY).toBe('latchkey.lastUsedChainId')
    expect(slot.get('currentChain')).toBe(31338)
  })

  test('behavior: clear removes every field of that connector and nothing else', () => {
    const backend = createMemoryStorage()
    const storage = createStorage({ storage: backend })
    storage.forConnector('a').set('activeAccount', '0x0000000000000000000000000000000000000001')
    storage.forConnector('a').set('namespaces', {})
    storage.forConnector('b').set('activeAccount', '0x0000000000000000000000000000000000000002')
    storage.setLastUsedChainId(1)
    storage.forConnector('a').clear()
    expect([...backend.map.keys()].sort()).toEqual(['latchkey.b.activeAccount', 'latchkey.lastUsedChainId'])
  })

  test('behavior: unreadable data counts as absent', () => {
    const backend = createMemoryStorage()
    backend.setItem('latchkey.lastUsedChainId', '{not json')
    expect(createStorage({ storage: backend }).getLastUsedChainId()).toBeNull()
  })

  test('error: a failing write (quota) is reported, not thrown, and leaves the rest intact', () => {
    const backend = createMemoryStorage()
    const quota = new Error('QuotaExceededError')
    const storage = createStorage({
      storage: {
        ...backend,
        getItem: backend.getItem,
        removeItem: backend.removeItem,
        setItem: () => {
          throw quota
        },
      },
    })
    const reported: unknown[] = []
    storage.onError = (error) => reported.push(error)
    expect(() => storage.setLastUsedChainId(5)).not.toThrow()
    expect(reported).toEqual([quota])
  })

  test('behavior: outside a browser the default storage is memory', () => {
    const storage = getDefaultStorage()
    storage.setItem('k', 'v')
    expect(storage.getItem('k')).toBe('v')
    expect(typeof window).toBe('undefined')
  })
})
