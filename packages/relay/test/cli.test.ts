import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { getFreePort } from '@latchkey/devnet'
import { afterEach, describe, expect, test } from 'vitest'
import { connectClient } from './client.js'
import { redisUrl } from './redis.js'

// The relay CLI as an operator runs it: a child process, its output, its exit code, signals.

const cliPath = fileURLToPath(new URL('../src/cli.ts', import.meta.url))
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))
const packageJson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { bin: Record<string, string> }
const binPath = fileURLToPath(new URL(`../${packageJson.bin['latchkey-relay']}`, import.meta.url))
const topic = () => randomBytes(32).toString('hex')
const children: ChildProcess[] = []
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
})

/** Runs the CLI as the start script does, or as its package `bin` (an executable with a shebang). */
function cli(args: string[], env: Record<string, string> = {}, how: 'node' | 'bin' = 'node') {
  const [command, prefix] = how === 'bin' ? [binPath, []] : [process.execPath, ['--conditions=source', '--import', 'tsx', cliPath]]
  const child = spawn(command, [...prefix, ...args], {
    cwd: repoRoot,
    env: { ...process.env, PORT: '', HOST: '', REDIS_URL: '', RELAY_DB: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as string | null }))
  return {
    child,
    exited,
    output: () => ({ stdout, stderr }),
    /** Resolves with stdout once it contains `text` (the CLI's own line is the synchronisation). */
    waitFor: (text: string) =>
      new Promise<string>((resolve, reject) => {
        const check = () => stdout.includes(text) && resolve(stdout)
        child.stdout!.on('data', check)
        check()
        void exited.then((result) => reject(new Error(`the relay exited (${JSON.stringify(result)}) before printing "${text}":\n${stdout}${stderr}`)))
      }),
  }
}

const temporaryDb = async () => join(await mkdtemp(join(tmpdir(), 'latchkey-relay-cli-')), 'relay.db')

describe('relay CLI', () => {
  test('default: listens, prints its URL and store, serves clients, and stops on SIGTERM with exit 0', async () => {
    const port = await getFreePort()
    const db = await temporaryDb()
    const relay = cli(['--port', String(port), '--db', db])
    expect(await relay.waitFor('\n')).toBe(`Relay listening on ws://127.0.0.1:${port} (store: sqlite ${db})\n`)
    const client = await connectClient(`ws://127.0.0.1:${port}`)
    expect(await client.request('irn_publish', { topic: topic(), message: 'hi', ttl: 300, tag: 1 })).toBe(true)
    relay.child.kill('SIGTERM')
    expect(await relay.exited).toEqual({ code: 0, signal: null })
    expect(relay.output().stderr).toBe('')
  })

  test('behavior: kill -9 and a restart on the same file lose no stored message', async () => {
    const port = await getFreePort()
    const db = await temporaryDb()
    const first = cli(['--port', String(port), '--db', db])
    await first.waitFor('Relay listening')
    const alice = await connectClient(`ws://127.0.0.1:${port}`)
    const t = topic()
    // Each reply comes after the store took the message.
    for (const message of ['one', 'two', 'three']) await alice.request('irn_publish', { topic: t, message, ttl: 300, tag: 1 })
    first.child.kill('SIGKILL')
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' })

    const second = cli(['--port', String(port), '--db', db])
    await second.waitFor('Relay listening')
    const bob = await connectClient(`ws://127.0.0.1:${port}`)
    await bob.request('irn_subscribe', { topic: t })
    const received = [await bob.nextPush(), await bob.nextPush(), await bob.nextPush()].map((push) => push.params.data.message)
    expect(received).toEqual(['one', 'two', 'three'])
  })

  test('behavior: REDIS_URL picks the Redis store, and two relay processes on it deliver across', async () => {
    const url = await redisUrl()
    const [portA, portB] = [await getFreePort(), await getFreePort()]
    const a = cli(['--port', String(portA)], { REDIS_URL: url })
    const b = cli(['--port', String(portB)], { REDIS_URL: url })
    expect(await a.waitFor('\n')).toBe(`Relay listening on ws://127.0.0.1:${portA} (store: redis ${url})\n`)
    await b.waitFor('Relay listening')
    const alice = await connectClient(`ws://127.0.0.1:${portA}`)
    const bob = await connectClient(`ws://127.0.0.1:${portB}`)
    const t = topic()
    await alice.request('irn_subscribe', { topic: t })
    await bob.request('irn_publish', { topic: t, message: 'across nodes', ttl: 300, tag: 1 })
    expect((await alice.nextPush()).params.data.message).toBe('across nodes')
  })

  test('bin: the package bin (latchkey-relay) runs the CLI', async () => {
    const port = await getFreePort()
    const relay = cli(['--port', String(port), '--memory'], {}, 'bin')
    expect(await relay.waitFor('\n')).toBe(`Relay listening on ws://127.0.0.1:${port} (store: memory)\n`)
    relay.child.kill('SIGINT')
    expect(await relay.exited).toEqual({ code: 0, signal: null })
  })

  test('--help: prints the usage and exits 0', async () => {
    const relay = cli(['--help'])
    expect(await relay.exited).toEqual({ code: 0, signal: null })
    expect(relay.output().stdout).toMatch(/^Usage: latchkey-relay \[options\]\n/)
  })

  test.each([
    [['--port', '99999'], '--port must be a port number from 1 to 65535, got "99999"'],
    [['--bogus'], "Unknown option '--bogus'"],
    [['--memory', '--db', 'x.db'], 'Choose one store: --db, --memory or --redis'],
    [['--rpc', 'mainnet'], '--rpc must look like eip155:1=https://rpc.example, got "mainnet"'],
  ])('error: %j exits 2 with a clear message and the usage', async (args, message) => {
    const relay = cli(args)
    expect(await relay.exited).toEqual({ code: 2, signal: null })
    expect(relay.output().stderr).toContain(message)
    expect(relay.output().stderr).toContain('Usage: latchkey-relay')
  })

  test('error: a port in use exits 1 and says which', async () => {
    const holder = createServer()
    const port = await getFreePort()
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve))
    try {
      const relay = cli(['--port', String(port), '--memory'])
      expect(await relay.exited).toEqual({ code: 1, signal: null })
      expect(relay.output().stderr).toBe(`Port ${port} on 127.0.0.1 is in use; choose another with --port or PORT\n`)
    } finally {
      holder.close()
    }
  })

  test('error: an unreachable Redis exits 1 and says so', async () => {
    const port = await getFreePort()
    const relay = cli(['--port', String(await getFreePort()), '--redis', `redis://127.0.0.1:${port}`])
    expect(await relay.exited).toEqual({ code: 1, signal: null })
    expect(relay.output().stderr).toMatch(
      new RegExp(`^Could not open the store: Could not connect to Redis at redis://127.0.0.1:${port} \\(store\\): .*ECONNREFUSED`),
    )
  })
})
