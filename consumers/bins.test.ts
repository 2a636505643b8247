import { randomBytes } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { connectClient } from '../packages/relay/test/client.js'
import { nativeModulesReady } from './harness/native.js'
import type { StartedProcess } from './harness/process.js'
import { type KmsKeys, startKms, startServer, startServerBin } from './harness/services.js'

// The three server bins as an operator runs them: `node node_modules/.bin/<bin>` from the installed
// tarballs, plain node, settings by flag and environment, one real request each.

const dir = inject('consumers')
const started: StartedProcess[] = []
let data: string

// The bins load SQLite: wait for its background compile here, up to a few minutes on a busy 2-core machine.
beforeAll(async () => {
  data = join(dir, 'bins-data')
  await mkdir(data, { recursive: true })
  await nativeModulesReady(dir)
}, 600_000)
afterAll(async () => {
  await Promise.all(started.map((bin) => bin.stop()))
})

/** Starts a bin on a free port and remembers it for the cleanup; `args` come after `--host` and `--port`. */
async function start(name: string, args: string[] = [], env: Record<string, string> = {}) {
  const bin = await startServerBin(dir, name, args, env)
  started.push(bin.bin)
  return bin
}

test('latchkey-relay: a message published by one client reaches another through the relay; SIGTERM exits 0', async () => {
  const { bin, port } = await start('latchkey-relay', ['--memory'])
  const url = `ws://127.0.0.1:${port}`
  const publisher = await connectClient(url)
  const subscriber = await connectClient(url)
  const topic = randomBytes(32).toString('hex')
  const subscriptionId = await subscriber.request<string>('irn_subscribe', { topic })
  expect(await publisher.request('irn_publish', { topic, message: 'gm from the installed relay', ttl: 300, tag: 1108 })).toBe(true)
  const push = await subscriber.nextPush()
  expect(push.params).toMatchObject({ id: subscriptionId, data: { topic, message: 'gm from the installed relay', tag: 1108 } })
  await Promise.all([publisher.close(), subscriber.close()])
  expect(await bin.stop()).toEqual({ code: 0, signal: null })
})

describe('latchkey-kms and latchkey-server', () => {
  let kms: Awaited<ReturnType<typeof startKms>>
  let keys: KmsKeys
  let organizationId: string

  beforeAll(async () => {
    kms = await startKms(dir, data)
    started.push(kms.bin)
    ;({ keys, organizationId } = kms)
  })

  test('latchkey-kms: a stamped whoami names the organization made by init-organization', async () => {
    const body = JSON.stringify({ organizationId })
    const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper({ apiPublicKey: keys.apiPublicKey, apiPrivateKey: keys.apiPrivateKey }).stamp(body)
    const whoami = await fetch(`${kms.url}/public/v1/query/whoami`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [stampHeaderName]: stampHeaderValue },
      body,
    })
    expect([whoami.status, await whoami.json()]).toEqual([200, expect.objectContaining({ organizationId, organizationName: 'Acme' })])
  })

  test('latchkey-server: GET /auth/nonce gives a sign-in nonce and its cookie; SIGTERM exits 0', async () => {
    const origin = 'http://localhost:5173'
    const { bin, url } = await startServer(dir, kms, { db: join(data, 'server.db'), args: ['--allowed-origin', origin] })
    started.push(bin)
    const response = await fetch(`${url}/auth/nonce`, { headers: { origin } })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ nonce: expect.stringMatching(/^[0-9a-f]{32}$/) })
    expect(response.headers.get('set-cookie')).toMatch(/^__Host-latchkey_siwe=[\w-]{43};/)
    expect(await bin.stop()).toEqual({ code: 0, signal: null })
  })
})
