import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { getFreePort } from '@latchkey/devnet'
import { signRelayJwt } from '@latchkey/walletconnect'
import { afterEach, describe, expect, test } from 'vitest'
import WebSocket from 'ws'
import { createRelay, memoryStore, type Relay, RelayCloseCode } from '../src/index.js'
import { addressKey, connectionGate } from '../src/limits.js'
import { connectClient } from './client.js'

// The relay's caps on connections: past them an upgrade is refused with an HTTP status before
// the WebSocket opens, which WalletConnect clients take as a failed connect and retry later.

let relay: Relay | undefined
afterEach(async () => {
  await relay?.stop()
  relay = undefined
})

/** An upgrade's outcome as a WebSocket client sees it: opened, or the HTTP status and body it was refused with. */
function upgrade(url: string): Promise<{ socket: WebSocket } | { status: number; retryAfter: string | undefined; body: string }> {
  const token = signRelayJwt({ seed: randomBytes(32).toString('hex'), aud: url })
  const socket = new WebSocket(`${url}/?auth=${token}`)
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve({ socket }))
    socket.once('unexpected-response', (_request, response: IncomingMessage) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (body += chunk))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'], body }))
    })
    socket.once('error', reject)
  })
}

const closeAll = (sockets: WebSocket[]) =>
  Promise.all(sockets.map((socket) => new Promise<void>((resolve) => (socket.once('close', () => resolve()), socket.close()))))

describe('connection caps', () => {
  test('error: refuses an upgrade past the per-IP cap with 429 before the WebSocket opens, and admits again once one leaves', async () => {
    relay = createRelay({ port: await getFreePort(), store: memoryStore(), limits: { maxConnectionsPerIp: 3 } })
    await relay.start()
    const opened = []
    for (let index = 0; index < 3; index++) {
      const outcome = await upgrade(relay.url)
      if (!('socket' in outcome)) throw new Error(`refused: ${outcome.status}`)
      opened.push(outcome.socket)
    }
    expect(await upgrade(relay.url)).toEqual({ status: 429, retryAfter: '60', body: 'Too many connections from your address: at most 3' })
    expect(relay.connections()).toBe(3)
    await closeAll(opened.splice(0, 1))
    const again = await upgrade(relay.url)
    expect('socket' in again).toBe(true)
    if ('socket' in again) opened.push(again.socket)
    await closeAll(opened)
  })

  test('error: refuses an upgrade past the overall cap with 503', async () => {
    relay = createRelay({ port: await getFreePort(), store: memoryStore(), limits: { maxConnections: 2, maxConnectionsPerIp: 0 } })
    await relay.start()
    const first = await upgrade(relay.url)
    const second = await upgrade(relay.url)
    expect(await upgrade(relay.url)).toEqual({
      status: 503,
      retryAfter: undefined,
      body: 'The relay holds its maximum of 2 connections: try again later',
    })
    await closeAll([first, second].flatMap((outcome) => ('socket' in outcome ? [outcome.socket] : [])))
  })

  test('behavior: a connection refused for its token frees its place', async () => {
    relay = createRelay({ port: await getFreePort(), store: memoryStore(), limits: { maxConnectionsPerIp: 1 } })
    await relay.start()
    const refused = await connectClient(relay.url, { token: 'not-a-jwt' })
    expect(await refused.closed).toEqual({ code: RelayCloseCode.unauthorized, reason: 'the token is not a JWT' })
    const client = await connectClient(relay.url)
    expect(client.opened).toBe(true)
    await client.close()
  })

  test('error: refuses a 100-year token (exp - iat over a day) with 4001', async () => {
    relay = createRelay({ port: await getFreePort(), store: memoryStore() })
    await relay.start()
    const token = signRelayJwt({ seed: randomBytes(32).toString('hex'), aud: relay.url, ttl: 100 * 365 * 86_400 })
    const client = await connectClient(relay.url, { token })
    expect(await client.closed).toEqual({ code: RelayCloseCode.unauthorized, reason: 'the token lives longer than 86400 s' })
  })

  test('default: an IPv6 address counts by its /64, an IPv4-mapped one as IPv4', () => {
    expect(addressKey('127.0.0.1')).toBe('127.0.0.1')
    expect(addressKey('::ffff:10.0.0.7')).toBe('10.0.0.7')
    expect(addressKey('2001:db8:0:1:aaaa::1')).toBe('2001:db8:0:1::/64')
    expect(addressKey('2001:0db8:0000:0001:ffff:ffff:ffff:ffff')).toBe('2001:db8:0:1::/64')
    expect(addressKey('::1')).toBe('0:0:0:0::/64')
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64')
  })

  test('error: a negative cap is refused', () => {
    expect(() => connectionGate({ maxConnections: -1 })).toThrow('maxConnections must be a whole number, 0 for no cap')
  })
})
