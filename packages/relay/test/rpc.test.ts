import { getFreePort } from '@latchkey/devnet'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { createRelay, type Relay } from '../src/index.js'

// The JSON-RPC HTTP endpoint in front of the real anvil chains of the global setup.
let relay: Relay
let base: string

beforeAll(async () => {
  const closedPort = await getFreePort()
  relay = createRelay({
    port: await getFreePort(),
    rpc: { 'eip155:31337': inject('chainARpc'), 'eip155:31338': inject('chainBRpc'), 'eip155:9': `http://127.0.0.1:${closedPort}` },
  })
  await relay.start()
  base = relay.url.replace('ws://', 'http://')
})
afterAll(() => relay.stop())

const post = (query: string, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  fetch(`${base}/v1/${query}`, { method: 'POST', headers, body })

describe('JSON-RPC HTTP endpoint', () => {
  test('default: forwards to the chain named by chainId', async () => {
    const answer = await post('?chainId=eip155:31338&projectId=local', JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'eth_chainId', params: [] }))
    expect(answer.status).toBe(200)
    expect(answer.headers.get('access-control-allow-origin')).toBe('*')
    expect(await answer.json()).toEqual({ jsonrpc: '2.0', id: 7, result: '0x7a6a' })
  })

  test('behavior: batches pass through', async () => {
    const batch = [
      { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'net_version', params: [] },
    ]
    const answer = (await (await post('?chainId=eip155:31337', JSON.stringify(batch))).json()) as { id: number; result: string }[]
    expect(answer.sort((a, b) => a.id - b.id).map((r) => r.result)).toEqual(['0x7a69', '31337'])
  })

  test('behavior: CORS preflight', async () => {
    const answer = await fetch(`${base}/v1/?chainId=eip155:31337`, { method: 'OPTIONS' })
    expect(answer.status).toBe(204)
    expect(answer.headers.get('access-control-allow-methods')).toBe('POST, OPTIONS')
    expect(answer.headers.get('access-control-allow-headers')).toBe('content-type')
  })

  const error = async (answer: Response) => ({ status: answer.status, body: await answer.json() })

  test('error: an unsupported chain', async () => {
    expect(await error(await post('?chainId=eip155:1', '{}'))).toEqual({
      status: 400,
      body: { jsonrpc: '2.0', id: null, error: { code: -32602, message: 'Unsupported chainId eip155:1' } },
    })
  })

  test('error: a missing or malformed chainId', async () => {
    for (const query of ['', '?chainId=31337', '?chainId=eip155:'])
      expect((await error(await post(query, '{}'))).body.error.message).toBe('Invalid params: chainId must be a CAIP-2 id such as eip155:1')
  })

  test('error: a body that is not JSON', async () => {
    expect(await error(await post('?chainId=eip155:31337', '{nope'))).toEqual({
      status: 400,
      body: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is not JSON' } },
    })
  })

  test('error: a body over 1 MiB', async () => {
    const answer = await post('?chainId=eip155:31337', JSON.stringify({ pad: 'x'.repeat(1024 * 1024) }))
    expect(answer.status).toBe(413)
  })

  test('error: the chain RPC is down', async () => {
    expect(await error(await post('?chainId=eip155:9', '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}'))).toEqual({
      status: 502,
      body: { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'The RPC of eip155:9 is unavailable' } },
    })
  })

  test('error: methods other than POST, and other paths', async () => {
    const get = await fetch(`${base}/v1/?chainId=eip155:31337`)
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST, OPTIONS'])
    const root = await fetch(`${base}/`)
    expect(root.status).toBe(426)
  })
})
