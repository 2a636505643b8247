import { createServer, type Server } from 'node:http'
import { getFreePort } from '@latchkey/devnet'
import { afterAll, beforeAll, describe, expect, inject, test, vi } from 'vitest'
import { createRelay, type Relay, RelayErrorCode } from '../src/index.js'

// The JSON-RPC HTTP endpoint in front of the real anvil chains of the global setup, called through
// the Hono app (`app.request`, no port) except where the node adapter itself is under test.
let relay: Relay
/** An RPC that takes requests and never answers them. */
let silent: Server
let silentPort: number

beforeAll(async () => {
  silent = createServer(() => undefined)
  silentPort = await getFreePort()
  await new Promise<void>((resolve) => silent.listen(silentPort, '127.0.0.1', resolve))
  relay = createRelay({
    port: await getFreePort(),
    rpc: {
      'eip155:31337': inject('chainARpc'),
      'eip155:31338': inject('chainBRpc'),
      'eip155:9': `http://127.0.0.1:${await getFreePort()}`,
      'eip155:7': `http://127.0.0.1:${silentPort}`,
    },
    upstreamTimeoutMs: 300,
  })
  await relay.start()
})
afterAll(async () => {
  await relay.stop()
  silent.closeAllConnections()
  await new Promise((resolve) => silent.close(resolve))
})

const post = (query: string, body: BodyInit, headers: Record<string, string> = { 'content-type': 'application/json' }, app = relay.app) =>
  app.request(`/v1/${query}`, { method: 'POST', headers, body })
const error = async (answer: Response) => ({ status: answer.status, body: await answer.json() })

describe('JSON-RPC HTTP endpoint', () => {
  test('default: forwards to the chain named by chainId', async () => {
    const answer = await post('?chainId=eip155:31338&projectId=local', JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'eth_chainId', params: [] }))
    expect(answer.status).toBe(200)
    expect(answer.headers.get('access-control-allow-origin')).toBe('*')
    expect(await answer.json()).toEqual({ jsonrpc: '2.0', id: 7, result: '0x7a6a' })
  })

  test('default: the running relay serves it on its port', async () => {
    const base = relay.url.replace('ws://', 'http://')
    const answer = await fetch(`${base}/v1/?chainId=eip155:31337`, { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}' })
    expect(await answer.json()).toEqual({ jsonrpc: '2.0', id: 1, result: '0x7a69' })
    const preflight = await fetch(`${base}/v1/?chainId=eip155:31337`, { method: 'OPTIONS' })
    expect(preflight.status).toBe(204)
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
    const answer = await relay.app.request('/v1/?chainId=eip155:31337', { method: 'OPTIONS' })
    expect(answer.status).toBe(204)
    expect(answer.headers.get('access-control-allow-methods')).toBe('POST, OPTIONS')
    expect(answer.headers.get('access-control-allow-headers')).toBe('content-type')
  })

  test('error: an unsupported chain', async () => {
    expect(await error(await post('?chainId=eip155:1', '{}'))).toEqual({
      status: 400,
      body: { jsonrpc: '2.0', id: null, error: { code: -32602, message: 'Unsupported chainId eip155:1' } },
    })
    // Only the configured chains, never a property every object has.
    expect((await error(await post('?chainId=eip155:constructor', '{}'))).body.error.message).toBe('Unsupported chainId eip155:constructor')
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

  test('error: JSON that is not a JSON-RPC request', async () => {
    for (const body of ['{}', '[]', '{"id":3,"method":"eth_chainId"}', '"eth_chainId"'])
      expect(await error(await post('?chainId=eip155:31337', body))).toMatchObject({
        status: 400,
        body: {
          jsonrpc: '2.0',
          error: { code: RelayErrorCode.invalidRequest, message: 'Invalid request: the body must be a JSON-RPC request or a batch of them' },
        },
      })
  })

  test('error: a body over 1 MiB', async () => {
    const answer = await post('?chainId=eip155:31337', JSON.stringify({ pad: 'x'.repeat(1024 * 1024) }))
    expect(await error(answer)).toEqual({
      status: 413,
      body: { jsonrpc: '2.0', id: null, error: { code: RelayErrorCode.tooLarge, message: 'Request too large: at most 1048576 bytes' } },
    })
  })

  test('error: a streamed body over 1 MiB is cut off while it streams, whatever content-length says', async () => {
    const chunk = new Uint8Array(64 * 1024).fill(0x20)
    let pulled = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++
        if (pulled > 64)
          controller.close() // 4 MiB in all, if anyone read it whole
        else controller.enqueue(chunk)
      },
    })
    const answer = await relay.app.request('/v1/?chainId=eip155:31337', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': '2' },
      body,
      duplex: 'half',
    } as RequestInit)
    expect(answer.status).toBe(413)
    // 1 MiB is 16 chunks: the relay stopped reading just past it.
    expect(pulled).toBeLessThan(24)
  })

  test('error: the chain RPC is down', async () => {
    expect(await error(await post('?chainId=eip155:9', '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}'))).toEqual({
      status: 502,
      body: { jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'The RPC of eip155:9 is unavailable' } },
    })
  })

  test('error: the chain RPC does not answer in time', async () => {
    expect(await error(await post('?chainId=eip155:7', '{"jsonrpc":"2.0","id":"a","method":"eth_chainId"}'))).toEqual({
      status: 504,
      body: { jsonrpc: '2.0', id: 'a', error: { code: RelayErrorCode.upstreamTimeout, message: 'The RPC of eip155:7 did not answer within 300 ms' } },
    })
  })

  test('error: methods other than POST, and other paths', async () => {
    const get = await relay.app.request('/v1/?chainId=eip155:31337')
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST, OPTIONS'])
    const root = await relay.app.request('/')
    expect(root.status).toBe(426)
  })
})

describe('JSON-RPC HTTP endpoint with project ids', () => {
  const guarded = () => createRelay({ port: 0, rpc: { 'eip155:31337': inject('chainARpc') }, projectIds: ['p-one', 'p-two'] }).app
  const body = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}'

  test('default: a listed projectId is served', async () => {
    const answer = await post('?chainId=eip155:31337&projectId=p-two', body, undefined, guarded())
    expect(await answer.json()).toEqual({ jsonrpc: '2.0', id: 1, result: '0x7a69' })
  })

  test('error: a missing projectId', async () => {
    expect(await error(await post('?chainId=eip155:31337', body, undefined, guarded()))).toEqual({
      status: 401,
      body: {
        jsonrpc: '2.0',
        id: null,
        error: { code: RelayErrorCode.unknownProject, message: 'Missing projectId: this relay answers only requests with one of its project ids' },
      },
    })
  })

  test('error: an unknown projectId', async () => {
    expect(await error(await post('?chainId=eip155:31337&projectId=p-three', body, undefined, guarded()))).toEqual({
      status: 403,
      body: { jsonrpc: '2.0', id: null, error: { code: RelayErrorCode.unknownProject, message: 'Unknown projectId p-three' } },
    })
  })
})

describe('JSON-RPC HTTP endpoint: what it forwards, and how often', () => {
  test('error: refuses a method outside the allowlist (eth_sendTransaction, anvil_*, debug_*), and a batch holding one, forwarding nothing', async () => {
    for (const method of ['eth_sendTransaction', 'anvil_setBalance', 'debug_traceTransaction', 'eth_accounts'])
      expect(await error(await post('?chainId=eip155:31337', JSON.stringify({ jsonrpc: '2.0', id: 4, method, params: [] })))).toEqual({
        status: 403,
        body: {
          jsonrpc: '2.0',
          id: 4,
          error: {
            code: RelayErrorCode.methodNotAllowed,
            message: `Method not allowed: ${method} (this relay forwards chain reads and eth_sendRawTransaction)`,
          },
        },
      })
    const batch = [
      { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'anvil_mine', params: [] },
    ]
    const before = await post('?chainId=eip155:31337', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }))
    const height = ((await before.json()) as { result: string }).result
    expect((await error(await post('?chainId=eip155:31337', JSON.stringify(batch)))).body.error.message).toBe(
      'Method not allowed: anvil_mine (this relay forwards chain reads and eth_sendRawTransaction)',
    )
    const after = await post('?chainId=eip155:31337', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }))
    expect(((await after.json()) as { result: string }).result).toBe(height)
  })

  test('default: eth_sendRawTransaction is forwarded (the chain answers for it)', async () => {
    const answer = await post('?chainId=eip155:31337', JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'eth_sendRawTransaction', params: ['0x00'] }))
    const body = (await answer.json()) as { id: number; error?: { code: number } }
    // anvil refuses the malformed transaction itself: the relay let it through.
    expect([body.id, body.error?.code === RelayErrorCode.methodNotAllowed]).toEqual([9, false])
  })

  test('error: past the per-IP rate limit a request is refused with 429; each of a batch counts', async () => {
    const limited = createRelay({ port: await getFreePort(), rpc: { 'eip155:31337': inject('chainARpc') }, maxRpcRequestsPerSecond: 3 })
    await limited.start()
    try {
      const base = limited.url.replace('ws://', 'http://')
      const call = (body: unknown) =>
        fetch(`${base}/v1/?chainId=eip155:31337`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => ({
          status: r.status,
          body: await r.json(),
        }))
      const one = { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }
      // The count is per wall-clock second: the clock is held still, so no second boundary
      // falls between the calls, then moved on to show that a new second counts afresh.
      vi.useFakeTimers({ toFake: ['Date'], now: 1_700_000_000_000 })
      const statuses = [(await call([one, one])).status, (await call(one)).status]
      const refused = await call(one)
      statuses.push(refused.status)
      expect(statuses).toEqual([200, 200, 429])
      expect(refused.body).toEqual({
        jsonrpc: '2.0',
        id: 1,
        error: { code: RelayErrorCode.rateLimited, message: 'Rate limit: at most 3 JSON-RPC requests per second from your address' },
      })
      vi.setSystemTime(1_700_000_001_000)
      expect((await call(one)).status).toBe(200)
    } finally {
      vi.useRealTimers()
      await limited.stop()
    }
  })
})
