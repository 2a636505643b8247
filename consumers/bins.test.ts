import { spawnSync } from 'node:child_process'
import { createECDH, randomBytes, randomUUID } from 'node:crypto'
import { chmod, mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { connectClient } from '../packages/relay/test/client.js'
import { nativeModulesReady } from './harness/native.js'
import { binPath, type StartedProcess, startProcess } from './harness/process.js'
import { type KmsKeys, listening, startKms, startServer, startServerBin } from './harness/services.js'

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

describe('as the image runs them (deploy/Dockerfile): started by name, in a directory the user cannot write, as uid 10001', () => {
  // The image installs the tarballs with one `npm install` and puts node_modules/.bin on PATH; its
  // CMD names the bin, which runs through its shebang, as USER 10001. Here: the consumer
  // directory's install (the same `npm install` of the same tarballs), a working directory owned
  // by root, and that user — taken only when the test runs as root, as in CI containers.
  const asUser = process.getuid?.() === 0 ? ['/usr/bin/setpriv', '--reuid=10001', '--regid=10001', '--clear-groups', '--'] : []
  let workDirectory: string

  beforeAll(async () => {
    workDirectory = join(dir, 'image-workdir')
    await mkdir(workDirectory, { recursive: true })
    // mkdtemp made the consumer directory 0700: the user must reach the installed packages.
    await chmod(dir, 0o755)
    await chmod(workDirectory, 0o555)
  })

  /** The backend's organization and API key, the private key as a file, as the manifests give it. */
  async function backendKeys(): Promise<Record<string, string>> {
    const key = createECDH('prime256v1')
    key.generateKeys()
    const secrets = join(dir, 'image-secrets')
    await mkdir(secrets, { recursive: true, mode: 0o755 })
    await writeFile(join(secrets, 'api-private-key'), key.getPrivateKey('hex').padStart(64, '0'), { mode: 0o444 })
    return {
      LATCHKEY_ORGANIZATION_ID: randomUUID(),
      LATCHKEY_API_PUBLIC_KEY: key.getPublicKey('hex', 'compressed'),
      LATCHKEY_API_PRIVATE_KEY_FILE: join(secrets, 'api-private-key'),
    }
  }

  test('default: the user cannot write in its working directory', () => {
    const command = asUser.length ? [...asUser, '/usr/bin/touch'] : ['/usr/bin/touch']
    const touch = spawnSync(command[0]!, [...command.slice(1), join(workDirectory, 'written')], { encoding: 'utf8' })
    expect([touch.status === 0, touch.stderr]).toEqual([false, expect.stringContaining('Permission denied')])
  })

  test.each(['latchkey-relay', 'latchkey-kms', 'latchkey-server'])('behavior: %s starts, answers /readyz, and exits 0 on SIGTERM', async (name) => {
    await nativeModulesReady(dir)
    const port = await getFreePort()
    const bin = await startProcess({
      command: asUser[0] ?? name,
      args: asUser.length ? [...asUser.slice(1), name] : [],
      cwd: workDirectory,
      env: {
        PATH: `${dirname(binPath(dir, name))}:${dirname(process.execPath)}:/usr/bin:/bin`,
        HOME: '/nonexistent',
        HOST: '127.0.0.1',
        PORT: String(port),
        // compose gives the relay Redis; here memory (its default, a file in the working directory, cannot be written).
        ...(name === 'latchkey-relay' ? { LATCHKEY_RELAY_MEMORY: '1' } : {}),
        ...(name === 'latchkey-kms' ? { LATCHKEY_KMS_FRAMES_PORT: String(await getFreePort()) } : {}),
        ...(name === 'latchkey-server' ? await backendKeys() : {}),
      },
      ready: listening,
    })
    started.push(bin)
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`)
    expect([ready.status, await ready.text()]).toEqual([200, '{"status":"ready"}'])
    expect(await bin.stop()).toEqual({ code: 0, signal: null })
  })
})
