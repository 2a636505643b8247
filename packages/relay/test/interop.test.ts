import { getFreePort } from '@latchkey/devnet'
import { SignClient } from '@walletconnect/sign-client'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createRelay, type Relay } from '../src/index.js'

// Two official Apache-2.0 clients (@walletconnect/sign-client@2.21.8, test-only), a dapp and a
// wallet, pair, settle a session and exchange a request through our relay alone. Vitest sets
// IS_VITEST, which keeps the clients from calling the vendor's verify and telemetry hosts.

const account = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
let relay: Relay
const clients: InstanceType<typeof SignClient>[] = []

beforeAll(async () => {
  relay = createRelay({ port: await getFreePort() })
  await relay.start()
})
afterAll(async () => {
  for (const client of clients) await client.core.relayer.transportClose().catch(() => undefined)
  await relay.stop()
})

async function client(name: string) {
  const instance = await SignClient.init({
    projectId: 'local',
    relayUrl: relay.url,
    customStoragePrefix: `${name}-${Math.random()}`,
    telemetryEnabled: false,
    logger: 'silent',
    metadata: { name, description: `${name} (interop test)`, url: 'http://localhost', icons: [] },
  })
  clients.push(instance)
  return instance
}

describe('official sign-client through our relay', () => {
  test('default: pair, approve, settle, request and respond', async () => {
    const dapp = await client('dapp')
    const wallet = await client('wallet')

    wallet.on('session_proposal', async ({ id, params }) => {
      // 2.21 clients move required namespaces into optionalNamespaces; look at both.
      const eip155 = params.requiredNamespaces['eip155'] ?? params.optionalNamespaces?.['eip155']
      expect(eip155?.methods).toEqual(['personal_sign'])
      await wallet.approve({
        id,
        namespaces: { eip155: { accounts: [`eip155:31337:${account}`], methods: ['personal_sign'], events: ['chainChanged', 'accountsChanged'] } },
      })
    })
    wallet.on('session_request', async ({ topic, id, params }) => {
      expect(params.request.method).toBe('personal_sign')
      await wallet.respond({ topic, response: { id, jsonrpc: '2.0', result: '0xsigned' } })
    })

    const { uri, approval } = await dapp.connect({
      requiredNamespaces: { eip155: { chains: ['eip155:31337'], methods: ['personal_sign'], events: ['chainChanged', 'accountsChanged'] } },
    })
    expect(uri).toMatch(/^wc:[0-9a-f]{64}@2\?/)
    await wallet.pair({ uri: uri as string })
    const session = await approval()
    expect(session.namespaces['eip155']?.accounts).toEqual([`eip155:31337:${account}`])
    expect(wallet.session.get(session.topic).topic).toBe(session.topic)

    const result = await dapp.request({
      topic: session.topic,
      chainId: 'eip155:31337',
      request: { method: 'personal_sign', params: ['0x68656c6c6f', account] },
    })
    expect(result).toBe('0xsigned')
  })
})
