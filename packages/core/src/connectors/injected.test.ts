import { describe, expect, test } from 'vitest'
import { testChains } from '../../../../test/chains.js'
import { createRecordingLogger } from '../../../../test/setup.js'
import { connect } from '../actions/connect.js'
import { createClient } from '../createClient.js'
import { ProviderNotFoundError, TimeoutError } from '../errors/connection.js'
import { RequestPendingError, UnknownProviderError } from '../errors/rpc.js'
import { createMemoryStorage } from '../storage.js'
import { injected } from './injected.js'

function clientWith(connector: ReturnType<typeof injected>) {
  const logger = createRecordingLogger()
  return { client: createClient({ chains: testChains(), storage: createMemoryStorage(), logger, connectors: [connector] }), logger }
}

describe('injected', () => {
  test('error: no wallet in this browser: No provider found', async () => {
    const { client, logger } = clientWith(injected({ id: 'missing', name: 'Missing Wallet', provider: () => undefined }))
    const error = await connect(client, { connector: 'missing' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ProviderNotFoundError)
    expect((error as ProviderNotFoundError).shortMessage).toBe('No provider found')
    expect((error as ProviderNotFoundError).details).toBe('Missing Wallet is not available in this browser.')
    expect(logger.errors).toEqual(['[latchkey] connect Missing Wallet: No provider found'])
  })

  test('error: outside a browser the default (window.ethereum) is absent too', async () => {
    const { client } = clientWith(injected())
    await expect(connect(client, { connector: 'injected' })).rejects.toThrow('No provider found')
  })

  test('error: a wallet that never answers times out, as a warning, and the client is free again', async () => {
    const silent = { request: () => new Promise(() => {}) }
    const { client, logger } = clientWith(injected({ id: 'silent', name: 'Silent', provider: silent as never, timeouts: { user: 30 } }))
    const error = await connect(client, { connector: 'silent' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TimeoutError)
    expect((error as TimeoutError).shortMessage).toBe('Silent: eth_requestAccounts timed out after 30 ms.')
    expect(logger.warnings).toEqual(['[latchkey] connect Silent: Silent: eth_requestAccounts timed out after 30 ms.'])
    expect(client.getState().status).toBe('disconnected')
  })

  test('error: a request already pending in the wallet (-32002) is typed', async () => {
    const busy = { request: async () => Promise.reject({ code: -32002, message: 'Already processing eth_requestAccounts.' }) }
    const { client } = clientWith(injected({ id: 'busy', provider: busy as never }))
    await expect(connect(client, { connector: 'busy' })).rejects.toThrow(RequestPendingError)
  })

  test('behavior: accounts are checksummed whatever case the wallet uses', async () => {
    const lower = {
      request: async ({ method }: { method: string }) => (method === 'eth_chainId' ? '0x7a69' : ['0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266']),
    }
    const { client } = clientWith(injected({ id: 'lower', provider: lower as never }))
    expect(await connect(client, { connector: 'lower' })).toEqual({
      accounts: ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'],
      chainId: 31337,
    })
  })

  test('behavior: the wallet switching accounts is checksummed and applied when the event fires', async () => {
    const listeners = new Map<string, (value: unknown) => void>()
    const wallet = {
      request: async ({ method }: { method: string }) => (method === 'eth_chainId' ? '0x7a69' : ['0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266']),
      on: (event: string, listener: (value: unknown) => void) => listeners.set(event, listener),
      removeListener: (event: string) => listeners.delete(event),
    }
    const { client } = clientWith(injected({ id: 'events', provider: wallet as never }))
    await connect(client, { connector: 'events' })
    listeners.get('accountsChanged')!(['0x70997970c51812dc3a010c7d01b50e0d17dc79c8'])
    // No await in between: the checksum code loaded with the connection, the event needs no download.
    expect(client.getState().connection?.accounts).toEqual(['0x70997970C51812dc3A010C7d01b50e0d17dc79C8'])
  })

  test('error: a malformed account from the wallet fails the connection and leaves the client disconnected', async () => {
    const broken = { request: async ({ method }: { method: string }) => (method === 'eth_chainId' ? '0x7a69' : ['0x1234']) }
    const { client } = clientWith(injected({ id: 'broken', name: 'Broken', provider: broken as never }))
    const error = await connect(client, { connector: 'broken' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UnknownProviderError)
    expect((error as UnknownProviderError).details).toContain('Address "0x1234" is invalid.')
    expect(client.getState()).toMatchObject({ status: 'disconnected', connection: undefined })
  })
})
