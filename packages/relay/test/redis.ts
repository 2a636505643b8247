import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { getFreePort } from '@latchkey/devnet'
import { Redis } from 'ioredis'
import { afterAll } from 'vitest'
import { type RelayStore, redisStore } from '../src/index.js'

const ensureScript = fileURLToPath(new URL('../../../scripts/ensure-redis.mjs', import.meta.url))
let server: Promise<{ url: string; process: ChildProcess }> | undefined
let stores = 0

/**
 * A real redis-server for this test file, on a free port, without persistence; installed first
 * when missing (scripts/ensure-redis.mjs, apt-get as root). Started on first use, stopped after
 * the file's tests.
 */
export function redisUrl(): Promise<string> {
  server ??= start()
  return server.then((started) => started.url)
}

/** A Redis store under a key prefix no other store of this run uses. */
export async function freshRedisStore(): Promise<RelayStore> {
  return redisStore(await redisUrl(), { prefix: `test${process.pid}:${++stores}:` })
}

async function start() {
  const ensured = spawnSync(process.execPath, [ensureScript], { encoding: 'utf8' })
  if (ensured.status !== 0) throw new Error(`redis-server is not available:\n${ensured.stderr}`)
  const port = await getFreePort()
  const child = spawn('/usr/bin/redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  // Redis says when it accepts connections; that line is the synchronisation.
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes('Ready to accept connections')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready:\n${output}`)))
    child.once('error', reject)
  })
  // And it answers: one PING on a fresh connection.
  const url = `redis://127.0.0.1:${port}`
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 })
  try {
    await probe.connect()
    const pong = await probe.ping()
    if (pong !== 'PONG') throw new Error(`redis-server answered PING with ${pong}`)
  } finally {
    probe.disconnect()
  }
  return { url, process: child }
}

afterAll(async () => {
  if (!server) return
  const { process: child } = await server
  if (child.exitCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
})
