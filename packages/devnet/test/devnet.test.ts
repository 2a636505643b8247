import { type ChildProcess, spawn } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { TurnkeyClient } from '@turnkey/http'
import { createPublicClient, http, maxUint256, parseAbi, parseEther } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { afterEach, describe, expect, test, vi } from 'vitest'
import {
  batchExecutorArtifact,
  sponsorPaymasterArtifact,
  sponsorPaymasterDeployment,
  testTokenArtifact,
  tokenPaymasterArtifact,
  tokenPaymasterDeployment,
} from '../../../contracts/index.js'
import * as devnet from '../src/index.js'
import {
  anvil,
  BATCH_EXECUTOR_ADDRESS,
  DevnetError,
  defaultPorts,
  ENTRY_POINT_ADDRESS,
  getFreePort,
  type Instance,
  PortInUseError,
  StartFailedError,
  startStack,
  staticServer,
  TEST_TOKEN_ADDRESS,
} from '../src/index.js'

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))
const cliPath = fileURLToPath(new URL('../src/cli.ts', import.meta.url))

// Everything a test starts is stopped after it, even when an assertion failed half-way.
const cleanups: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})
function track<instance extends Instance>(instance: instance): instance {
  cleanups.push(() => instance.stop())
  return instance
}

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await response.json()) as { result?: unknown; error?: unknown }
  if (body.error) throw new Error(JSON.stringify(body.error))
  return body.result
}

/** Binds `port` and lets it go again: resolves `true` when that worked, else the error code. */
function canBind(port: number, host = '127.0.0.1'): Promise<true | string> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)))
  })
}

/** Holds `port` until the test ends. */
async function occupy(port: number, host = '127.0.0.1'): Promise<Server> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen({ port, host, exclusive: true }, resolve)
  })
  cleanups.push(() => new Promise((resolve) => server.close(resolve)))
  return server
}

/** Whether `pid` is a live process (a zombie nobody reaped yet counts as gone). Linux: reads /proc. */
async function isRunning(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    return state !== 'Z' && state !== 'X'
  } catch {
    return false
  }
}

/** Child processes of `parentPid` whose command is `name`. Linux: reads /proc. */
async function childrenNamed(parentPid: number, name: string): Promise<number[]> {
  const pids: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '')
    const open = stat.indexOf('(')
    const close = stat.lastIndexOf(')')
    if (open < 0 || close < 0) continue
    const ppid = Number(stat.slice(close + 2).split(' ')[1])
    if (ppid === parentPid && stat.slice(open + 1, close) === name) pids.push(Number(entry))
  }
  return pids.sort((a, b) => a - b)
}

/** Spawns TypeScript with the repo's loader, the way `npm start` runs the CLI. */
function spawnNode(args: string[], env: Record<string, string> = {}): ChildProcess & { output(): { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  return Object.assign(child, { output: () => ({ stdout, stderr }) })
}

/** Resolves with all stdout so far once it contains `text`; rejects if the process exits first. */
function waitForStdout(child: ChildProcess & { output(): { stdout: string; stderr: string } }, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!child.output().stdout.includes(text)) return
      child.stdout?.off('data', check)
      child.off('exit', onExit)
      resolve(child.output().stdout)
    }
    const onExit = () => {
      child.stdout?.off('data', check)
      reject(new Error(`exited before printing ${JSON.stringify(text)}:\n${child.output().stdout}\n${child.output().stderr}`))
    }
    child.stdout?.on('data', check)
    child.once('exit', onExit)
    check()
  })
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode })
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
}

test('default: exports', () => {
  expect(Object.keys(devnet).sort()).toMatchInlineSnapshot(`
    [
      "BATCH_EXECUTOR_ADDRESS",
      "DEMO_OAUTH_CLIENT_ID",
      "DevnetError",
      "ENTRY_POINT_ADDRESS",
      "GUARANTOR_TOKENS",
      "OIDC_PROVIDERS",
      "PAYMASTER_DEPOSIT",
      "PortInUseError",
      "StartFailedError",
      "StartTimeoutError",
      "TEST_TOKEN_ADDRESS",
      "alto",
      "anvil",
      "buildDemo",
      "buildWallet",
      "defaultPorts",
      "defineInstance",
      "deployBatchExecutor",
      "deployEntryPoint",
      "deployPaymasters",
      "deployTestToken",
      "getFreePort",
      "loadPaymasters",
      "oidcInstance",
      "resolveAnvilBinary",
      "startStack",
      "staticServer",
      "testSubject",
    ]
  `)
})

describe('anvil', () => {
  test('default: answers eth_chainId with the configured chain id', async () => {
    const port = await getFreePort()
    const chain = track(anvil({ port, chainId: 31337 }))
    expect(chain.status).toBe('idle')
    await chain.start()
    expect(chain.status).toBe('started')
    expect(chain.url).toBe(`http://127.0.0.1:${port}`)
    expect(await rpc(chain.url, 'eth_chainId')).toBe('0x7a69')

    await chain.stop()
    expect(chain.status).toBe('idle')
    expect(chain.pid).toBeUndefined()
    expect(await canBind(port)).toBe(true)
  })

  test('behavior: starting twice and stopping twice do nothing more', async () => {
    const chain = track(anvil({ port: await getFreePort(), chainId: 31338 }))
    await Promise.all([chain.start(), chain.start()])
    const pid = chain.pid
    await chain.start()
    expect(chain.pid).toBe(pid)
    expect(await rpc(chain.url, 'eth_chainId')).toBe('0x7a6a')

    await Promise.all([chain.stop(), chain.stop()])
    await chain.stop()
    expect(chain.status).toBe('idle')
    expect(await isRunning(pid as number)).toBe(false)
  })

  test('error: a second anvil on the same port fails clearly and leaves the first running', async () => {
    const port = await getFreePort()
    const first = track(anvil({ port, chainId: 31337 }))
    await first.start()
    const second = track(anvil({ port, chainId: 31338 }))

    const error = await second.start().catch((error: unknown) => error)
    expect(error).toBeInstanceOf(PortInUseError)
    expect((error as PortInUseError).shortMessage).toBe(`port ${port} is in use: anvil (chain id 31338) could not listen on 127.0.0.1:${port}`)
    expect((error as PortInUseError).code).toBe('PORT_IN_USE')
    expect((error as PortInUseError).port).toBe(port)
    expect((error as PortInUseError).details).toContain('Address already in use')
    expect(second.status).toBe('idle')

    expect(first.status).toBe('started')
    expect(await rpc(first.url, 'eth_chainId')).toBe('0x7a69')
  })

  test("error: anvil exiting before it listens reports anvil's stderr", async () => {
    const chain = track(anvil({ port: await getFreePort(), chainId: 31337, args: ['--no-such-flag'] }))
    const error = await chain.start().catch((error: unknown) => error)
    expect(error).toBeInstanceOf(StartFailedError)
    expect((error as StartFailedError).shortMessage).toBe('anvil (chain id 31337) failed to start: anvil exited (code 2) before it was listening')
    expect((error as StartFailedError).message).toContain("error: unexpected argument '--no-such-flag' found")
    expect(chain.status).toBe('idle')
  })

  for (const ending of ['process.exit()', 'SIGKILL'] as const) {
    test(`behavior: anvil does not outlive its parent (${ending})`, async () => {
      const script = [
        `import { anvil, getFreePort } from ${JSON.stringify(fileURLToPath(new URL('../src/index.ts', import.meta.url)))}`,
        'const chain = anvil({ port: await getFreePort(), chainId: 31337 })',
        'await chain.start()',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source of a script the test writes
        'console.log(`pid ${chain.pid}`)',
        ending === 'process.exit()' ? 'process.exit(0)' : 'setInterval(() => {}, 1_000)',
      ].join('\n')
      const parent = spawnNode(['--input-type=module', '-e', script])
      const stdout = await waitForStdout(parent, '\n')
      const pid = Number(/pid (\d+)/.exec(stdout)?.[1])
      expect(pid).toBeGreaterThan(0)
      // If the behaviour under test is broken, do not leave the orphan behind.
      cleanups.push(async () => {
        if (await isRunning(pid)) process.kill(pid, 'SIGKILL')
      })
      if (ending === 'SIGKILL') parent.kill('SIGKILL')
      await exitOf(parent)
      // The kernel delivers the kill as the parent dies; wait for it to take effect.
      await vi.waitFor(async () => expect(await isRunning(pid)).toBe(false), { timeout: 5_000, interval: 20 })
    })
  }
})

describe('getFreePort', () => {
  test('behavior: a process is never handed one port twice, though the OS may offer it again once closed', async () => {
    // One after the other, as a stack's ports are asked for: each bind closes before the next,
    // and the OS offered a closed port again about once in a hundred here.
    const ports: number[] = []
    for (let i = 0; i < 300; i++) ports.push(await getFreePort())
    expect(new Set(ports).size).toBe(300)
    for (const port of ports.slice(0, 5)) expect(await canBind(port)).toBe(true)
  })
})

describe('staticServer', () => {
  async function site() {
    const dir = await mkdtemp(join(tmpdir(), 'latchkey-static-'))
    const root = join(dir, 'dist')
    await mkdir(join(root, 'assets'), { recursive: true })
    const files: Record<string, string> = {
      'index.html': '<!doctype html><title>demo</title>',
      'assets/app.js': 'console.log(1)',
      'assets/app.css': 'body{}',
      'logo.svg': '<svg xmlns="http://www.w3.org/2000/svg"/>',
      'data.json': '{"a":1}',
      'image.png': 'png',
      'favicon.ico': 'ico',
      'assets/font.woff2': 'woff2',
      'oauth/callback.html': '<!doctype html><title>callback</title>',
    }
    await mkdir(join(root, 'oauth'))
    for (const [path, body] of Object.entries(files)) await writeFile(join(root, path), body)
    await writeFile(join(dir, 'secret.txt'), 'secret')
    const server = track(staticServer({ root, port: await getFreePort() }))
    await server.start()
    return { server, root, files }
  }

  /** A GET with the path sent exactly as written (fetch would normalise `..` away). */
  function rawGet(port: number, path: string): Promise<{ status: number | undefined; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, method: 'GET' }, (response) => {
        let body = ''
        response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
        response.on('end', () => resolve({ status: response.statusCode, body }))
      })
      req.on('error', reject)
      req.end()
    })
  }

  test('default: serves files with their content types and no caching', async () => {
    const { server, files } = await site()
    expect(server.url).toBe(`http://localhost:${server.port}`)
    const expected: Record<string, string> = {
      'index.html': 'text/html; charset=utf-8',
      'assets/app.js': 'text/javascript; charset=utf-8',
      'assets/app.css': 'text/css; charset=utf-8',
      'logo.svg': 'image/svg+xml',
      'data.json': 'application/json',
      'image.png': 'image/png',
      'favicon.ico': 'image/x-icon',
      'assets/font.woff2': 'font/woff2',
    }
    for (const [path, type] of Object.entries(expected)) {
      const response = await fetch(`${server.url}/${path}`)
      expect({ path, status: response.status, type: response.headers.get('content-type'), cache: response.headers.get('cache-control') }).toEqual({
        path,
        status: 200,
        type,
        cache: 'no-store',
      })
      expect(await response.text()).toBe(files[path])
    }
    const home = await fetch(`${server.url}/`)
    expect(home.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(await home.text()).toBe(files['index.html'])
  })

  test('behavior: a path without a dot that matches no file gets index.html', async () => {
    const { server, files } = await site()
    for (const path of ['/explorer/31337', '/account', '/assets']) {
      const response = await fetch(`${server.url}${path}?tab=1`)
      expect({ path, status: response.status, type: response.headers.get('content-type'), cache: response.headers.get('cache-control') }).toEqual({
        path,
        status: 200,
        type: 'text/html; charset=utf-8',
        cache: 'no-store',
      })
      expect(await response.text()).toBe(files['index.html'])
    }
  })

  test('behavior: a page of a multi-page app is served for its path without .html', async () => {
    const { server, files } = await site()
    const response = await fetch(`${server.url}/oauth/callback?code=c&state=s`)
    expect({ status: response.status, type: response.headers.get('content-type') }).toEqual({ status: 200, type: 'text/html; charset=utf-8' })
    expect(await response.text()).toBe(files['oauth/callback.html'])
    // The directory itself is no page: the app's routes answer it.
    expect(await (await fetch(`${server.url}/oauth`)).text()).toBe(files['index.html'])
  })

  test('error: a missing asset is 404', async () => {
    const { server } = await site()
    for (const path of ['/assets/missing.js', '/missing.png', '/explorer/logo.svg']) {
      const response = await fetch(`${server.url}${path}`)
      expect({ path, status: response.status, body: await response.text(), cache: response.headers.get('cache-control') }).toEqual({
        path,
        status: 404,
        body: 'Not found',
        cache: 'no-store',
      })
    }
  })

  test('error: a path that leaves the root is 400', async () => {
    const { server } = await site()
    for (const path of [
      '/../secret.txt',
      '/assets/../../secret.txt',
      '/%2e%2e/secret.txt',
      '/assets/..%2f..%2fsecret.txt',
      '/..%5csecret.txt',
      '/%00',
      '/%E0%A4%A',
    ]) {
      expect({ path, ...(await rawGet(server.port, path)) }).toEqual({ path, status: 400, body: 'Bad request' })
    }
  })

  test('error: methods other than GET and HEAD are 405', async () => {
    const { server } = await site()
    const response = await fetch(`${server.url}/index.html`, { method: 'POST', body: 'x' })
    expect([response.status, response.headers.get('allow')]).toEqual([405, 'GET, HEAD'])
    const head = await fetch(`${server.url}/data.json`, { method: 'HEAD' })
    expect([head.status, head.headers.get('content-length'), await head.text()]).toEqual([200, '7', ''])
  })

  test('error: a port in use fails clearly', async () => {
    const { root } = await site()
    const port = await getFreePort()
    await occupy(port)
    const server = track(staticServer({ root, port }))
    const error = await server.start().catch((error: unknown) => error)
    expect(error).toBeInstanceOf(PortInUseError)
    expect((error as Error).message).toBe(`port ${port} is in use: static server could not listen on 127.0.0.1:${port}`)
    expect(server.status).toBe('idle')
  })

  test('error: a root without index.html fails clearly', async () => {
    const root = await mkdtemp(join(tmpdir(), 'latchkey-static-'))
    const server = track(staticServer({ root, port: await getFreePort() }))
    const error = await server.start().catch((error: unknown) => error)
    expect(error).toBeInstanceOf(StartFailedError)
    expect((error as Error).message).toBe(`static server failed to start: no index.html in ${root}`)
  })
})

describe('startStack', () => {
  test('default: with demo: false, writes dev.json and stop() frees the ports', async () => {
    const ports = {
      chainA: await getFreePort(),
      chainB: await getFreePort(),
      relay: await getFreePort(),
      kms: await getFreePort(),
      frames: await getFreePort(),
      server: await getFreePort(),
      oidc: await getFreePort(),
    }
    const stateDir = join(await mkdtemp(join(tmpdir(), 'latchkey-stack-')), 'state')
    const stack = await startStack({ ports, stateDir, demo: false, bundlers: false })
    cleanups.push(() => stack.stop())

    const chainA = `http://127.0.0.1:${ports.chainA}`
    const chainB = `http://127.0.0.1:${ports.chainB}`
    const relay = `ws://127.0.0.1:${ports.relay}`
    const kms = `http://127.0.0.1:${ports.kms}`
    const server = `http://127.0.0.1:${ports.server}`
    const frames = `http://localhost:${ports.frames}`
    const oidc = `http://localhost:${ports.oidc}`
    expect(stack.urls).toEqual({ chainA, chainB, relay, kms, frames, server, oidc })
    expect(stack.instances.map((instance) => [instance.name, instance.status])).toEqual([
      ['chain A', 'started'],
      ['chain B', 'started'],
      ['relay', 'started'],
      ['kms', 'started'],
      ['oidc', 'started'],
      ['server', 'started'],
    ])
    expect(stack.devJson).toBe(join(stateDir, 'dev.json'))
    const devJson = JSON.parse(await readFile(stack.devJson, 'utf8')) as { startedAt: string }
    // The paymasters' keys, created in the state directory on the first start (mode 0600).
    const paymasterKeys = JSON.parse(await readFile(join(stateDir, 'paymasters.json'), 'utf8')) as Record<string, `0x${string}`>
    expect(Object.keys(paymasterKeys)).toEqual(['signerPrivateKey', 'ownerPrivateKey', 'guarantorPrivateKey'])
    expect((await stat(join(stateDir, 'paymasters.json'))).mode & 0o777).toBe(0o600)
    const [signer, owner, guarantor] = [paymasterKeys['signerPrivateKey']!, paymasterKeys['ownerPrivateKey']!, paymasterKeys['guarantorPrivateKey']!].map(
      (key) => privateKeyToAccount(key).address,
    ) as [`0x${string}`, `0x${string}`, `0x${string}`]
    const sponsorPaymaster = sponsorPaymasterDeployment({ signer, owner }).address
    const tokenPaymaster = tokenPaymasterDeployment({ signer, owner }).address
    const contracts = { batchExecutor: BATCH_EXECUTOR_ADDRESS, token: TEST_TOKEN_ADDRESS, sponsorPaymaster, tokenPaymaster, paymasterGuarantor: guarantor }
    expect(devJson).toEqual({
      version: 1,
      startedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      pid: process.pid,
      urls: { chainA, chainB, relay, kms, frames, server, oidc },
      chains: [
        { id: 31337, name: 'Anvil A', rpcUrl: chainA },
        { id: 31338, name: 'Anvil B', rpcUrl: chainB },
      ],
      kms: {
        parentOrganizationId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        apiPublicKey: expect.stringMatching(/^0[23][0-9a-f]{64}$/),
        apiPrivateKey: expect.stringMatching(/^[0-9a-f]{64}$/),
        signerPublicKey: expect.stringMatching(/^04[0-9a-f]{128}$/),
      },
      // The local OpenID provider plays Google and Apple, and GitHub and Discord as configured OpenID providers, for the demo's client id.
      oidc: {
        google: { issuer: `${oidc}/google`, clientId: 'latchkey-demo', authorizationEndpoint: `${oidc}/google/auth` },
        apple: { issuer: `${oidc}/apple`, clientId: 'latchkey-demo', authorizationEndpoint: `${oidc}/apple/auth` },
        github: { issuer: `${oidc}/github`, clientId: 'latchkey-demo', authorizationEndpoint: `${oidc}/github/auth` },
        discord: { issuer: `${oidc}/discord`, clientId: 'latchkey-demo', authorizationEndpoint: `${oidc}/discord/auth` },
      },
      // The EIP-7702 batch executor, deployed with CREATE2 on both chains at the embedded wallet's default address,
      // the demo's test token, deployed the same way, the two paymasters (their addresses follow the
      // signer and owner keys) and the guarantor of first operations paid in TKN.
      contracts,
      adminToken: expect.stringMatching(/^[0-9a-f]{48}$/),
      // ERC-4337 EntryPoint v0.8 at its canonical address; no bundlers asked for (userOperation.test.ts runs them).
      entryPoint: '0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108',
      // The backend's ERC-7677 paymaster service, on localhost as the demo calls the backend.
      paymaster: `http://localhost:${ports.server}/paymaster`,
    })
    // The service answers there (a malformed operation is JSON-RPC's invalid params).
    const stub = await fetch((devJson as { paymaster?: string }).paymaster!, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'pm_getPaymasterStubData', params: [{}, stack.entryPoint, '0x7a69', {}] }),
    })
    expect(await stub.json()).toMatchObject({ id: 1, error: { code: -32602 } })
    // The admin token opens the backend's admin API.
    const endpoints = await fetch(`${server}/admin/webhooks`, { headers: { authorization: `Bearer ${(devJson as { adminToken?: string }).adminToken}` } })
    expect(await endpoints.json()).toEqual({ endpoints: [] })
    expect(stack.contracts).toEqual(contracts)
    // What a backend needs to run the paymaster service.
    expect(stack.paymasterSigner).toEqual({ privateKey: paymasterKeys['signerPrivateKey'], address: signer })
    expect(stack.guarantor).toBe(guarantor)
    expect(stack.paymasters).toEqual({
      31337: { sponsor: sponsorPaymaster, token: tokenPaymaster },
      31338: { sponsor: sponsorPaymaster, token: tokenPaymaster },
    })
    const reads = parseAbi([
      'function signer() view returns (address)',
      'function owner() view returns (address)',
      'function balanceOf(address) view returns (uint256)',
      'function allowance(address, address) view returns (uint256)',
    ])
    for (const rpc of [chainA, chainB]) {
      const client = createPublicClient({ transport: http(rpc) })
      expect(await client.getCode({ address: BATCH_EXECUTOR_ADDRESS })).toBe(batchExecutorArtifact.deployedBytecode)
      expect(await client.getCode({ address: TEST_TOKEN_ADDRESS })).toBe(testTokenArtifact.deployedBytecode)
      // Each paymaster: the code (its EIP-712 immutables filled in), the signer and owner, 100 ETH deposited.
      for (const [address, artifact] of [
        [sponsorPaymaster, sponsorPaymasterArtifact],
        [tokenPaymaster, tokenPaymasterArtifact],
      ] as const) {
        expect((await client.getCode({ address }))?.length).toBe(artifact.deployedBytecode.length)
        expect(await client.readContract({ address, abi: reads, functionName: 'signer' })).toBe(signer)
        expect(await client.readContract({ address, abi: reads, functionName: 'owner' })).toBe(owner)
        expect(await client.readContract({ address: ENTRY_POINT_ADDRESS, abi: reads, functionName: 'balanceOf', args: [address] })).toBe(parseEther('100'))
      }
      // The guarantor: 1,000,000 TKN, the token paymaster approved for all of them.
      expect(await client.readContract({ address: TEST_TOKEN_ADDRESS, abi: reads, functionName: 'balanceOf', args: [guarantor] })).toBe(parseEther('1000000'))
      expect(await client.readContract({ address: TEST_TOKEN_ADDRESS, abi: reads, functionName: 'allowance', args: [guarantor, tokenPaymaster] })).toBe(
        maxUint256,
      )
    }
    const discovery = (await (await fetch(`${oidc}/google/.well-known/openid-configuration`)).json()) as { issuer: string }
    expect(discovery.issuer).toBe(`${oidc}/google`)
    // The parent organization's key from dev.json works against the kms.
    const credentials = stack.kms!
    const whoami = await new TurnkeyClient(
      { baseUrl: kms },
      new ApiKeyStamper({ apiPublicKey: credentials.apiPublicKey, apiPrivateKey: credentials.apiPrivateKey }),
    ).getWhoami({
      organizationId: credentials.parentOrganizationId,
    })
    expect(whoami).toMatchObject({ organizationId: credentials.parentOrganizationId, organizationName: 'Latchkey devnet', username: 'app backend' })
    expect((await stat(join(stateDir, 'kms.json'))).mode & 0o777).toBe(0o600)
    // The kms frames may be embedded by the demo and the wallet, and know the signer key.
    const framePage = await fetch(`${frames}/export`)
    expect(framePage.headers.get('content-security-policy')).toContain(
      `frame-ancestors http://localhost:${defaultPorts.demo} http://127.0.0.1:${defaultPorts.demo} http://localhost:${defaultPorts.wallet} http://127.0.0.1:${defaultPorts.wallet};`,
    )
    expect(await framePage.text()).toContain(`<meta name="latchkey-signer-public-key" content="${credentials.signerPublicKey}">`)
    // The backend tells browsers where the frames are.
    expect(await (await fetch(`${server}/auth/config`)).json()).toMatchObject({ framesUrl: frames })
    // The backend answers, and knows no session yet.
    const session = await fetch(`${server}/auth/session`)
    expect([session.status, await session.json()]).toEqual([200, null])
    expect(stack.chains).toEqual(JSON.parse(await readFile(stack.devJson, 'utf8')).chains)
    expect(Math.abs(Date.parse(devJson.startedAt) - Date.now())).toBeLessThan(60_000)
    expect((await stat(stateDir)).mode & 0o777).toBe(0o700)
    expect((await stat(stack.devJson)).mode & 0o777).toBe(0o600)
    expect(await rpc(chainA, 'eth_chainId')).toBe('0x7a69')
    expect(await rpc(chainB, 'eth_chainId')).toBe('0x7a6a')
    // The relay's JSON-RPC endpoint reaches the chains too.
    expect(await rpc(`${relay.replace('ws://', 'http://')}/v1/?chainId=eip155:31338&projectId=local`, 'eth_chainId')).toBe('0x7a6a')

    await stack.stop()
    expect(stack.instances.map((instance) => instance.status)).toEqual(['idle', 'idle', 'idle', 'idle', 'idle', 'idle'])
    expect([
      await canBind(ports.chainA),
      await canBind(ports.chainB),
      await canBind(ports.relay),
      await canBind(ports.kms),
      await canBind(ports.frames),
      await canBind(ports.server),
      await canBind(ports.oidc),
    ]).toEqual([true, true, true, true, true, true, true])

    // A second start reuses the parent organization and keys.
    const again = await startStack({ ports, stateDir, demo: false, bundlers: false })
    cleanups.push(() => again.stop())
    expect(again.kms).toEqual(credentials)
    // …and the paymasters' keys, so their addresses.
    expect(again.contracts).toEqual(contracts)
    expect(again.paymasterSigner).toEqual(stack.paymasterSigner)
    await again.stop()
    // stop() ends processes only; the file stays.
    expect((await stat(stack.devJson)).isFile()).toBe(true)
  })

  test('behavior: build: false serves the demo and wallet already in demoDir and walletDir', async () => {
    const ports = {
      chainA: await getFreePort(),
      chainB: await getFreePort(),
      relay: await getFreePort(),
      kms: await getFreePort(),
      frames: await getFreePort(),
      server: await getFreePort(),
      oidc: await getFreePort(),
      demo: await getFreePort(),
      wallet: await getFreePort(),
    }
    const dir = await mkdtemp(join(tmpdir(), 'latchkey-stack-'))
    const demoDir = join(dir, 'demo')
    const walletDir = join(dir, 'wallet')
    await mkdir(demoDir)
    await mkdir(walletDir)
    await writeFile(join(demoDir, 'index.html'), '<!doctype html><title>built</title>')
    await writeFile(join(walletDir, 'index.html'), '<!doctype html><title>wallet</title>')
    const stateDir = join(dir, 'state')
    const stack = await startStack({ ports, stateDir, demoDir, walletDir, build: false, bundlers: false })
    cleanups.push(() => stack.stop())
    expect((await stat(stateDir)).mode & 0o777).toBe(0o700)

    expect(stack.urls.demo).toBe(`http://localhost:${ports.demo}`)
    expect(stack.urls.wallet).toBe(`http://localhost:${ports.wallet}`)
    expect(stack.instances.map((instance) => instance.name)).toEqual(['chain A', 'chain B', 'relay', 'kms', 'oidc', 'server', 'demo', 'wallet'])
    expect(await (await fetch(`${stack.urls.demo}/explorer/31337`)).text()).toBe('<!doctype html><title>built</title>')
    // A deep link into the wallet (/wc?uri=…) gets its page.
    expect(await (await fetch(`${stack.urls.wallet}/wc?uri=wc%3Aabc`)).text()).toBe('<!doctype html><title>wallet</title>')
    expect((JSON.parse(await readFile(stack.devJson, 'utf8')) as { urls: unknown }).urls).toEqual({
      chainA: `http://127.0.0.1:${ports.chainA}`,
      chainB: `http://127.0.0.1:${ports.chainB}`,
      relay: `ws://127.0.0.1:${ports.relay}`,
      kms: `http://127.0.0.1:${ports.kms}`,
      frames: `http://localhost:${ports.frames}`,
      server: `http://127.0.0.1:${ports.server}`,
      oidc: `http://localhost:${ports.oidc}`,
      demo: `http://localhost:${ports.demo}`,
      wallet: `http://localhost:${ports.wallet}`,
    })

    await stack.stop()
    expect([await canBind(ports.chainA), await canBind(ports.chainB), await canBind(ports.demo), await canBind(ports.wallet)]).toEqual([true, true, true, true])
  })

  test('error: when one service fails to start, the ones that started are stopped', async () => {
    const ports = {
      chainA: await getFreePort(),
      chainB: await getFreePort(),
      relay: await getFreePort(),
      kms: await getFreePort(),
      frames: await getFreePort(),
      server: await getFreePort(),
      oidc: await getFreePort(),
    }
    await occupy(ports.chainB)
    const stateDir = join(await mkdtemp(join(tmpdir(), 'latchkey-stack-')), 'state')

    const error = await startStack({ ports, stateDir, demo: false, bundlers: false }).catch((error: unknown) => error)
    expect(error).toBeInstanceOf(PortInUseError)
    expect((error as PortInUseError).shortMessage).toBe(`port ${ports.chainB} is in use: chain B could not listen on 127.0.0.1:${ports.chainB}`)
    expect([await canBind(ports.chainA), await canBind(ports.relay)]).toEqual([true, true])
    await expect(stat(join(stateDir, 'dev.json'))).rejects.toThrow('ENOENT')
  })

  test('error: the relay port in use is named, and the chains are stopped', async () => {
    const ports = {
      chainA: await getFreePort(),
      chainB: await getFreePort(),
      relay: await getFreePort(),
      kms: await getFreePort(),
      frames: await getFreePort(),
      server: await getFreePort(),
      oidc: await getFreePort(),
    }
    await occupy(ports.relay)
    const stateDir = join(await mkdtemp(join(tmpdir(), 'latchkey-stack-')), 'state')
    const error = await startStack({ ports, stateDir, demo: false, bundlers: false }).catch((error: unknown) => error)
    expect(error).toBeInstanceOf(PortInUseError)
    expect((error as PortInUseError).shortMessage).toBe(`port ${ports.relay} is in use: relay could not listen on 127.0.0.1:${ports.relay}`)
    expect([await canBind(ports.chainA), await canBind(ports.chainB)]).toEqual([true, true])
  })

  test('error: the kms frames port in use is named', async () => {
    const ports = {
      chainA: await getFreePort(),
      chainB: await getFreePort(),
      relay: await getFreePort(),
      kms: await getFreePort(),
      frames: await getFreePort(),
      server: await getFreePort(),
      oidc: await getFreePort(),
    }
    await occupy(ports.frames)
    const stateDir = join(await mkdtemp(join(tmpdir(), 'latchkey-stack-')), 'state')
    const error = await startStack({ ports, stateDir, demo: false, bundlers: false }).catch((error: unknown) => error)
    expect(error).toBeInstanceOf(PortInUseError)
    expect((error as PortInUseError).shortMessage).toBe(`port ${ports.frames} is in use: kms frames could not listen on localhost:${ports.frames}`)
    expect([await canBind(ports.chainA), await canBind(ports.kms)]).toEqual([true, true])
  })

  test('error: a port in the environment that is not a number', async () => {
    const error = await startStack({ env: { LATCHKEY_CHAIN_A_PORT: '85a45' }, demo: false }).catch((error: unknown) => error)
    expect(error).toBeInstanceOf(DevnetError)
    expect((error as DevnetError).message).toBe('LATCHKEY_CHAIN_A_PORT must be a port number from 1 to 65535, got "85a45"')
  })
})

describe('cli', () => {
  // The CLI starts the stack in a child: TypeScript compiled on the fly, the kms, two chains and two bundlers.
  test.each(['SIGINT', 'SIGTERM'] as const)(
    'default: prints the URLs; on %s stops both anvils and both bundlers and exits 0',
    async (signal) => {
      const ports = {
        chainA: await getFreePort(),
        chainB: await getFreePort(),
        relay: await getFreePort(),
        kms: await getFreePort(),
        frames: await getFreePort(),
        server: await getFreePort(),
        oidc: await getFreePort(),
        bundlerA: await getFreePort(),
        bundlerB: await getFreePort(),
      }
      const stateDir = await mkdtemp(join(tmpdir(), 'latchkey-cli-'))
      const cli = spawnNode([cliPath], {
        LATCHKEY_CHAIN_A_PORT: String(ports.chainA),
        LATCHKEY_CHAIN_B_PORT: String(ports.chainB),
        LATCHKEY_RELAY_PORT: String(ports.relay),
        LATCHKEY_KMS_PORT: String(ports.kms),
        LATCHKEY_KMS_FRAMES_PORT: String(ports.frames),
        LATCHKEY_SERVER_PORT: String(ports.server),
        LATCHKEY_OIDC_PORT: String(ports.oidc),
        LATCHKEY_BUNDLER_A_PORT: String(ports.bundlerA),
        LATCHKEY_BUNDLER_B_PORT: String(ports.bundlerB),
        LATCHKEY_STATE_DIR: stateDir,
        LATCHKEY_DEMO: '0',
      })
      const stdout = await waitForStdout(cli, 'Press Ctrl-C to stop')
      const { contracts } = JSON.parse(await readFile(join(stateDir, 'dev.json'), 'utf8')) as devnet.DevJson
      expect(stdout).toBe(
        [
          'Starting Latchkey devnet (no demo)…',
          '',
          'Latchkey devnet is running',
          '',
          `  Chain A      http://127.0.0.1:${ports.chainA}   chain id 31337`,
          `  Chain B      http://127.0.0.1:${ports.chainB}   chain id 31338`,
          `  Executor     ${BATCH_EXECUTOR_ADDRESS}   EIP-7702 batch executor, on both chains`,
          `  Token        ${TEST_TOKEN_ADDRESS}   Test Token (TKN), on both chains`,
          `  EntryPoint   ${ENTRY_POINT_ADDRESS}   ERC-4337 v0.8, on both chains`,
          `  Sponsor      ${contracts.sponsorPaymaster}   paymaster: sponsored gas, on both chains`,
          `  Gas in TKN   ${contracts.tokenPaymaster}   paymaster: gas paid in TKN, on both chains`,
          `  Guarantor    ${contracts.paymasterGuarantor}   prefunds an account's first operation paid in TKN`,
          `  Bundler A    http://127.0.0.1:${ports.bundlerA}   ERC-4337 bundler (Alto) for chain A`,
          `  Bundler B    http://127.0.0.1:${ports.bundlerB}   ERC-4337 bundler (Alto) for chain B`,
          `  Relay        ws://127.0.0.1:${ports.relay}`,
          `  KMS          http://127.0.0.1:${ports.kms}   dev inbox http://127.0.0.1:${ports.kms}/dev/mailbox`,
          `  Frames       http://localhost:${ports.frames}   /auth /recovery /export /import`,
          `  Backend      http://localhost:${ports.server}   sign-in, sessions (listens on 127.0.0.1)`,
          `  Paymaster    http://localhost:${ports.server}/paymaster   ERC-7677 paymaster service (the backend's)`,
          `  dev.json     ${join(stateDir, 'dev.json')}`,
          '',
          'Press Ctrl-C to stop',
          '',
          '',
        ].join('\n'),
      )
      const anvils = await childrenNamed(cli.pid as number, 'anvil')
      expect(anvils).toHaveLength(2)
      // The bundlers are Node processes of their own.
      const bundlers = await childrenNamed(cli.pid as number, 'node')
      expect(bundlers).toHaveLength(2)
      expect(await rpc(`http://127.0.0.1:${ports.bundlerA}`, 'eth_chainId')).toBe('0x7a69')
      expect(await rpc(`http://127.0.0.1:${ports.bundlerB}`, 'eth_chainId')).toBe('0x7a6a')
      expect(await rpc(`http://127.0.0.1:${ports.chainA}`, 'eth_chainId')).toBe('0x7a69')
      expect(await rpc(`http://127.0.0.1:${ports.chainB}`, 'eth_chainId')).toBe('0x7a6a')

      cli.kill(signal)
      expect(await exitOf(cli)).toEqual({ code: 0, signal: null })
      expect(cli.output().stdout.slice(stdout.length)).toBe('\nStopping…\nStopped.\n')
      expect(cli.output().stderr).toBe('')
      expect(await Promise.all([...anvils, ...bundlers].map(isRunning))).toEqual([false, false, false, false])
      expect([
        await canBind(ports.chainA),
        await canBind(ports.chainB),
        await canBind(ports.relay),
        await canBind(ports.bundlerA),
        await canBind(ports.bundlerB),
      ]).toEqual([true, true, true, true, true])
    },
    120_000,
  )

  test('error: a port in use exits 1 with a clear message and leaves nothing running', async () => {
    const ports = {
      chainA: await getFreePort(),
      chainB: await getFreePort(),
      relay: await getFreePort(),
      kms: await getFreePort(),
      frames: await getFreePort(),
      server: await getFreePort(),
      oidc: await getFreePort(),
    }
    await occupy(ports.chainA)
    const cli = spawnNode([cliPath], {
      LATCHKEY_CHAIN_A_PORT: String(ports.chainA),
      LATCHKEY_CHAIN_B_PORT: String(ports.chainB),
      LATCHKEY_RELAY_PORT: String(ports.relay),
      LATCHKEY_KMS_PORT: String(ports.kms),
      LATCHKEY_KMS_FRAMES_PORT: String(ports.frames),
      LATCHKEY_SERVER_PORT: String(ports.server),
      LATCHKEY_OIDC_PORT: String(ports.oidc),
      LATCHKEY_BUNDLER_A_PORT: String(await getFreePort()),
      LATCHKEY_BUNDLER_B_PORT: String(await getFreePort()),
      LATCHKEY_STATE_DIR: await mkdtemp(join(tmpdir(), 'latchkey-cli-')),
      LATCHKEY_DEMO: '0',
    })
    expect(await exitOf(cli)).toEqual({ code: 1, signal: null })
    const { stderr } = cli.output()
    expect(stderr).toContain(`\nCould not start the devnet: port ${ports.chainA} is in use: chain A could not listen on 127.0.0.1:${ports.chainA}\n`)
    expect(stderr).toContain(
      'choose others with LATCHKEY_CHAIN_A_PORT, LATCHKEY_CHAIN_B_PORT, LATCHKEY_RELAY_PORT, LATCHKEY_KMS_PORT, LATCHKEY_KMS_FRAMES_PORT, LATCHKEY_SERVER_PORT, LATCHKEY_DEMO_PORT, LATCHKEY_WALLET_PORT, LATCHKEY_OIDC_PORT, LATCHKEY_BUNDLER_A_PORT and LATCHKEY_BUNDLER_B_PORT',
    )
    expect(await canBind(ports.chainB)).toBe(true)
  }, 120_000)
})
