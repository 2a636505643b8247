import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { signRelayJwt } from '@latchkey/walletconnect'
import { afterEach, describe, expect, inject, test } from 'vitest'
import { connectionRefused, listening, startCli, streamingRequest } from '../../service/test/cliProcess.js'
import { connectClient } from './client.js'
import { redisUrl } from './redis.js'

// latchkey-relay as an operator runs it: a child process, its JSON log lines, its exit code, signals.

const cli = 'packages/relay/src/cli.ts'
const topic = () => randomBytes(32).toString('hex')
const temporaryDb = async () => join(await mkdtemp(join(tmpdir(), 'latchkey-relay-cli-')), 'relay.db')
const rpcBody = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'eth_chainId', params: [] })

async function startRelay(args: string[] = [], env: Record<string, string> = {}) {
  const port = await getFreePort()
  const relay = startCli(cli, ['--port', String(port), ...args], env)
  const line = await relay.waitForLog(listening)
  return { ...relay, port, line, http: `http://127.0.0.1:${port}`, ws: `ws://127.0.0.1:${port}` }
}

describe('latchkey-relay', () => {
  test('default: logs JSON lines, answers /healthz and /readyz, relays, and no line holds the token, the project id or the RPC key', async () => {
    const db = await temporaryDb()
    // An RPC URL with an API key in it, as hosted RPCs have them (anvil ignores the query).
    const rpcWithKey = `${inject('chainARpc')}/?apikey=rpc-key-${randomBytes(8).toString('hex')}`
    const relay = await startRelay(['--db', db, '--rpc', `eip155:31337=${rpcWithKey}`, '--log-level', 'debug'])
    expect(relay.line).toMatchObject({
      level: 'info',
      service: 'latchkey-relay',
      msg: `Relay listening on ws://127.0.0.1:${relay.port} (store: sqlite ${db})`,
      url: `ws://127.0.0.1:${relay.port}`,
      chains: ['eip155:31337'],
    })

    expect([(await fetch(`${relay.http}/healthz`)).status, await (await fetch(`${relay.http}/healthz`)).json()]).toEqual([200, { status: 'ok' }])
    const ready = await fetch(`${relay.http}/readyz`)
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'ready' }])

    const projectId = `project-${randomBytes(8).toString('hex')}`
    const rpc = await fetch(`${relay.http}/v1/?chainId=eip155:31337&projectId=${projectId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'operator-trace-1' },
      body: rpcBody,
    })
    expect([rpc.status, rpc.headers.get('x-request-id'), await rpc.json()]).toEqual([200, 'operator-trace-1', { jsonrpc: '2.0', id: 7, result: '0x7a69' }])

    const token = signRelayJwt({ seed: randomBytes(32).toString('hex'), aud: relay.ws })
    const client = await connectClient(relay.ws, { token })
    expect(await client.request('irn_publish', { topic: topic(), message: 'hi', ttl: 300, tag: 1 })).toBe(true)
    await client.close()
    const socketLine = await relay.waitForLog((line) => line.msg.startsWith('WebSocket'))
    expect(socketLine).toMatchObject({ method: 'GET', path: '/', status: 101, closeCode: 1005 })
    expect(socketLine.reqId).toMatch(/^[0-9a-f-]{36}$/)

    relay.child.kill('SIGTERM')
    expect(await relay.exited).toEqual({ code: 0, signal: null })
    expect(relay.stderr()).toBe('')
    const logs = relay.logs()
    expect(logs.find((line) => line.reqId === 'operator-trace-1')).toMatchObject({ method: 'POST', path: '/v1/', status: 200, msg: 'POST /v1/ 200' })
    expect(logs.filter((line) => line.path === '/healthz' || line.path === '/readyz').map((line) => [line.path, line.status])).toEqual([
      ['/healthz', 200],
      ['/healthz', 200],
      ['/readyz', 200],
    ])
    expect(logs.at(-1)).toMatchObject({ msg: 'stopped' })
    const everything = relay.stdout()
    for (const secret of [token, projectId, rpcWithKey, new URL(rpcWithKey).searchParams.get('apikey')!]) expect(everything).not.toContain(secret)
  })

  test('behavior: SIGTERM refuses new connections, answers the request in flight, then exits 0', async () => {
    const relay = await startRelay(['--memory', '--rpc', `eip155:31337=${inject('chainARpc')}`])
    const inFlight = streamingRequest(`${relay.http}/v1/?chainId=eip155:31337`, { 'content-type': 'application/json' }, rpcBody, 10)
    await inFlight.accepted
    relay.child.kill('SIGTERM')
    expect(await relay.waitForLog((line) => line.signal === 'SIGTERM')).toMatchObject({
      msg: 'SIGTERM: stopping; no new connections, finishing 1 request in flight',
      inflight: 1,
    })
    expect(await connectionRefused(relay.port)).toBe(true)
    const answer = await inFlight.finish()
    expect([answer.status, JSON.parse(answer.body)]).toEqual([200, { jsonrpc: '2.0', id: 7, result: '0x7a69' }])
    expect(await relay.exited).toEqual({ code: 0, signal: null })
    expect(relay.logs().at(-1)).toMatchObject({ msg: 'stopped' })
  })

  test('behavior: past --shutdown-timeout it exits 1 and logs the request it cut', async () => {
    const relay = await startRelay(['--memory', '--shutdown-timeout', '1', '--rpc', `eip155:31337=${inject('chainARpc')}`])
    const inFlight = streamingRequest(`${relay.http}/v1/?chainId=eip155:31337&projectId=p`, { 'content-type': 'application/json' }, rpcBody, 10)
    await inFlight.accepted
    relay.child.kill('SIGTERM')
    expect(await relay.exited).toEqual({ code: 1, signal: null })
    const cut = relay.logs().at(-1)!
    expect(cut).toMatchObject({ level: 'error', msg: 'shutdown timeout of 1 s passed; exiting with 1 request cut: POST /v1/' })
    expect(cut.inflight).toEqual([{ requestId: expect.any(String), method: 'POST', path: '/v1/', ms: expect.any(Number) }])
    await inFlight.failed
  })

  test('behavior: kill -9 and a restart on the same file lose no stored message', async () => {
    const db = await temporaryDb()
    const first = await startRelay(['--db', db])
    const alice = await connectClient(first.ws)
    const t = topic()
    // Each reply comes after the store took the message.
    for (const message of ['one', 'two', 'three']) await alice.request('irn_publish', { topic: t, message, ttl: 300, tag: 1 })
    first.child.kill('SIGKILL')
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' })

    const second = await startRelay(['--db', db])
    const bob = await connectClient(second.ws)
    await bob.request('irn_subscribe', { topic: t })
    const received = [await bob.nextPush(), await bob.nextPush(), await bob.nextPush()].map((push) => push.params.data.message)
    expect(received).toEqual(['one', 'two', 'three'])
  })

  test('behavior: REDIS_URL picks the Redis store, and two relay processes on it deliver across', async () => {
    const url = await redisUrl()
    const a = await startRelay([], { REDIS_URL: url })
    const b = await startRelay([], { REDIS_URL: url })
    expect(a.line.msg).toBe(`Relay listening on ws://127.0.0.1:${a.port} (store: redis ${new URL(url).host})`)
    const alice = await connectClient(a.ws)
    const bob = await connectClient(b.ws)
    const t = topic()
    await alice.request('irn_subscribe', { topic: t })
    await bob.request('irn_publish', { topic: t, message: 'across nodes', ttl: 300, tag: 1 })
    expect((await alice.nextPush()).params.data.message).toBe('across nodes')
  })

  test('behavior: REDIS_URL_FILE gives a URL with a password from a file (a mounted secret); the password is never printed', async () => {
    const password = 'hunter2-long-redis-secret'
    const redis = await ownRedis(['--requirepass', password])
    const file = join(await mkdtemp(join(tmpdir(), 'relay-secret-')), 'redis-url')
    const secretUrl = redis.url.replace('redis://', `redis://:${password}@`)
    await writeFile(file, `${secretUrl}\n`)
    const relay = await startRelay([], { REDIS_URL_FILE: file })
    expect(relay.line.msg).toBe(`Relay listening on ws://127.0.0.1:${relay.port} (store: redis ${new URL(redis.url).host})`)
    expect((await fetch(`${relay.http}/readyz`)).status).toBe(200)
    expect(relay.stdout() + relay.stderr()).not.toContain(password)
  })

  test('behavior: /readyz answers 503 with the reason once its Redis is gone', async () => {
    const redis = await ownRedis()
    const relay = await startRelay(['--redis', redis.url])
    expect((await fetch(`${relay.http}/readyz`)).status).toBe(200)
    redis.child.kill('SIGKILL')
    await once(redis.child, 'exit')
    const answer = await fetch(`${relay.http}/readyz`)
    expect(answer.status).toBe(503)
    expect(await answer.json()).toEqual({ status: 'unavailable', reason: expect.stringMatching(/\S/) })
    expect((await fetch(`${relay.http}/healthz`)).status).toBe(200)
    expect(await relay.waitForLog((line) => line.status === 503)).toMatchObject({ level: 'warn', path: '/readyz', reason: expect.stringMatching(/\S/) })
  })

  test('production: with every setting given it starts, and refuses tokens made for another relay', async () => {
    const port = await getFreePort()
    const ws = `ws://127.0.0.1:${port}`
    const relay = startCli(cli, ['--port', String(port), '--memory', '--audience', ws], { NODE_ENV: 'production' })
    await relay.waitForLog(listening)
    const mine = await connectClient(ws, { token: signRelayJwt({ seed: randomBytes(32).toString('hex'), aud: ws }) })
    expect(mine.opened).toBe(true)
    const other = await connectClient(ws, { token: signRelayJwt({ seed: randomBytes(32).toString('hex'), aud: 'wss://relay.elsewhere' }) })
    expect(await other.closed).toEqual({ code: 4001, reason: 'the token is for another relay (wss://relay.elsewhere)' })
    await mine.close()
  })

  test('--version: prints the package version, exits 0', async () => {
    const relay = startCli(cli, ['--version'])
    expect(await relay.exited).toEqual({ code: 0, signal: null })
    const { version } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
    expect(relay.stdout()).toBe(`${version}\n`)
  })

  test('--help: lists every flag and variable, exits 0', async () => {
    const relay = startCli(cli, ['--help'])
    expect(await relay.exited).toEqual({ code: 0, signal: null })
    const help = relay.stdout()
    expect(help).toMatch(/^Usage: latchkey-relay \[options\]\n/)
    for (const setting of [
      '--host <address>, HOST',
      '--port <port>, PORT',
      '--log-level <fatal|error|warn|info|debug|trace|silent>, LOG_LEVEL',
      '--shutdown-timeout <seconds>, LATCHKEY_SHUTDOWN_TIMEOUT',
      '--db <path>, LATCHKEY_RELAY_DB',
      '--redis <url>',
      '--memory, LATCHKEY_RELAY_MEMORY=1',
      '--rpc <chainId>=<url>, LATCHKEY_RELAY_RPC',
      '--audience <url>, LATCHKEY_RELAY_AUDIENCES',
      '--project-id <id>, LATCHKEY_RELAY_PROJECT_IDS',
      '--upstream-timeout <ms>, LATCHKEY_RELAY_UPSTREAM_TIMEOUT',
      '--coalesce <µs>, LATCHKEY_RELAY_COALESCE',
      '--max-stored-bytes-per-topic <bytes>, LATCHKEY_RELAY_MAX_STORED_BYTES_PER_TOPIC',
      '--max-stored-messages-per-topic <n>, LATCHKEY_RELAY_MAX_STORED_MESSAGES_PER_TOPIC',
      '--max-buffered-bytes <bytes>, LATCHKEY_RELAY_MAX_BUFFERED_BYTES',
      '--max-buffered-bytes-per-ip <bytes>, LATCHKEY_RELAY_MAX_BUFFERED_BYTES_PER_IP',
      '--max-buffered-bytes-total <bytes>, LATCHKEY_RELAY_MAX_BUFFERED_BYTES_TOTAL',
      '--max-unacked-messages <n>, LATCHKEY_RELAY_MAX_UNACKED_MESSAGES',
      '--max-unacked-bytes <bytes>, LATCHKEY_RELAY_MAX_UNACKED_BYTES',
    ])
      expect(help).toContain(`\n  ${setting}\n`)
  })

  test.each<[string, string[], Record<string, string>, string]>([
    ['an unknown flag', ['--bogus'], {}, 'unknown option --bogus (see latchkey-relay --help)'],
    ['a port out of range', ['--port', '99999'], {}, '--port must be a port number from 1 to 65535, got "99999" (see latchkey-relay --help)'],
    [
      'a malformed REDIS_URL',
      [],
      { REDIS_URL: 'localhost:6379' },
      'REDIS_URL must start with redis:// or rediss://, got "localhost:6379" (see latchkey-relay --help)',
    ],
    ['a REDIS_URL that is no URL', [], { REDIS_URL: 'redis://' }, 'REDIS_URL has no host: "redis://" (see latchkey-relay --help)'],
    ['a malformed --rpc', ['--rpc', 'mainnet'], {}, '--rpc must look like eip155:1=https://rpc.example, got "mainnet" (see latchkey-relay --help)'],
    [
      'an RPC that is not http',
      ['--rpc', 'eip155:1=ws://rpc'],
      {},
      '--rpc: the RPC of eip155:1 must be an http:// or https:// URL (see latchkey-relay --help)',
    ],
    [
      'a malformed --audience',
      ['--audience', 'relay.example'],
      {},
      '--audience must be a URL starting with wss:// or ws:// or https:// or http://, got "relay.example" (see latchkey-relay --help)',
    ],
    ['two stores', ['--memory', '--db', 'x.db'], {}, 'choose one store, not --db / LATCHKEY_RELAY_DB and --memory / LATCHKEY_RELAY_MEMORY'],
    [
      'an address budget below one connection’s',
      ['--memory', '--max-buffered-bytes-per-ip', '2000000'],
      {},
      '--max-buffered-bytes-per-ip / LATCHKEY_RELAY_MAX_BUFFERED_BYTES_PER_IP must be 0 (no cap) or at least --max-buffered-bytes / LATCHKEY_RELAY_MAX_BUFFERED_BYTES (4194304)',
    ],
    [
      'production without a store or an audience',
      [],
      { NODE_ENV: 'production' },
      'refusing to start with development defaults in production (NODE_ENV=production): set --audience / LATCHKEY_RELAY_AUDIENCES; a store: --db / LATCHKEY_RELAY_DB, --redis (or REDIS_URL or --redis-url-file / REDIS_URL_FILE) or --memory / LATCHKEY_RELAY_MEMORY',
    ],
    [
      'production with chains behind POST /v1/ and no project id',
      ['--memory', '--audience', 'wss://relay.example', '--rpc', 'eip155:1=https://rpc.example/?key=secret'],
      { NODE_ENV: 'production' },
      'refusing to start with development defaults in production (NODE_ENV=production): set --project-id / LATCHKEY_RELAY_PROJECT_IDS (POST /v1/ forwards to --rpc chains)',
    ],
  ])('error: %s exits 2 with one line, before listening', async (_, args, env, message) => {
    const relay = startCli(cli, ['--port', String(await getFreePort()), ...args], env)
    expect(await relay.exited).toEqual({ code: 2, signal: null })
    expect(relay.stderr()).toBe(`latchkey-relay: ${message}\n`)
    expect(relay.stdout()).toBe('')
  })

  test('error: a port in use exits 1 with one line', async () => {
    const holder = createServer()
    const port = await getFreePort()
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve))
    try {
      const relay = startCli(cli, ['--port', String(port), '--memory'])
      expect(await relay.exited).toEqual({ code: 1, signal: null })
      expect(relay.stderr()).toBe(`latchkey-relay: 127.0.0.1:${port} is already in use; choose another port\n`)
    } finally {
      holder.close()
    }
  })

  test('error: an unreachable Redis exits 1 with one line, before listening', async () => {
    const closedPort = await getFreePort()
    const relay = startCli(cli, ['--port', String(await getFreePort()), '--redis', `redis://relay:hunter2-long-secret@127.0.0.1:${closedPort}`])
    expect(await relay.exited).toEqual({ code: 1, signal: null })
    expect(relay.stderr()).toMatch(
      new RegExp(
        `^latchkey-relay: could not open the store: Could not connect to Redis at redis://\\*\\*\\*@127\\.0\\.0\\.1:${closedPort} \\(store\\): .*ECONNREFUSED.*\\n$`,
      ),
    )
    expect(relay.stdout()).toBe('')
  })
})

const redisServers: ChildProcess[] = []
afterEach(() => {
  for (const child of redisServers.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
})

/** A redis-server of this test's own (the file's shared one must stay up), answering once it says it is ready. */
async function ownRedis(extraArgs: readonly string[] = []) {
  await redisUrl() // installs redis-server when missing
  const port = await getFreePort()
  const child = spawn('/usr/bin/redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  redisServers.push(child)
  let output = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes('Ready to accept connections')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready:\n${output}`)))
  })
  return { url: `redis://127.0.0.1:${port}`, child }
}
