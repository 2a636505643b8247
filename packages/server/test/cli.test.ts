import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort, oidcInstance } from '@latchkey/devnet'
import { generateApiKeyPair } from '@latchkey/kms'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import { getPublicKey } from '@turnkey/crypto'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { beforeAll, describe, expect, test } from 'vitest'
import { executeCallData } from '../../../test/batch.js'
import { type CliProcess, connectionRefused, listening, startCli, streamingRequest } from '../../service/test/cliProcess.js'
import { freshDatabaseUrl, testEngine } from '../../service/test/testDatabase.js'
import { sealCode } from './consentFrameCode.js'

// latchkey-server as an operator runs it, against latchkey-kms as an operator runs it: both child
// processes, set up the way the READMEs say (generate keys, init-organization, start the kms,
// start the backend), their JSON log lines, exit codes and signals.

const kmsCli = 'packages/kms/src/cli.ts'
const serverCli = 'packages/server/src/cli.ts'
const origin = 'http://localhost:5173'

const directory = () => mkdtemp(join(tmpdir(), 'latchkey-server-cli-'))
const secretFile = async (contents: string) => {
  const path = join(await directory(), 'secret')
  await writeFile(path, `${contents}\n`, { mode: 0o600 })
  return path
}

const masterKey = randomBytes(32).toString('hex')
const signerPrivateKey = generateApiKeyPair().apiPrivateKey
const signerPublicKey = Buffer.from(getPublicKey(signerPrivateKey, false)).toString('hex')
const backendKey = generateApiKeyPair()
const sessionJwtKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
let kms: CliProcess & { url: string }
let organizationId: string

beforeAll(async () => {
  const db = join(await directory(), 'kms.db')
  const init = startCli(kmsCli, ['init-organization', '--db', db, '--name', 'Acme', '--public-key', backendKey.apiPublicKey])
  expect((await init.exited).code).toBe(0)
  organizationId = (JSON.parse(init.stdout()) as { organizationId: string }).organizationId
  const port = await getFreePort()
  const started = startCli(
    kmsCli,
    ['--port', String(port), '--db', db],
    { LATCHKEY_KMS_MASTER_KEY: masterKey, LATCHKEY_KMS_SIGNER_KEY: signerPrivateKey },
    'file',
  )
  await started.waitForLog(listening)
  kms = { ...started, url: `http://127.0.0.1:${port}` }
})

/** Where a backend keeps its data: a new database of the run's engine (DATABASE_URL in a file on PostgreSQL). */
const newStorage = async () =>
  testEngine === 'postgres' ? ['--database-url-file', await secretFile(await freshDatabaseUrl())] : ['--db', join(await directory(), 'server.db')]

/** Every setting the backend needs, the private keys in files; `overrides` replace or add flags. */
async function serverArgs(port: number, overrides: string[] = [], storage?: string[]) {
  return [
    '--port',
    String(port),
    ...(storage ?? (await newStorage())),
    '--kms-url',
    kms.url,
    '--organization-id',
    organizationId,
    '--api-public-key',
    backendKey.apiPublicKey,
    '--api-private-key-file',
    await secretFile(backendKey.apiPrivateKey),
    '--session-signer-public-key',
    signerPublicKey,
    '--allowed-origin',
    origin,
    '--session-jwt-key-file',
    await secretFile(sessionJwtKey),
    '--session-jwt-issuer',
    'https://api.example',
    ...overrides,
  ]
}

async function startServer(overrides: string[] = [], env: Record<string, string> = {}, storage?: string[]) {
  const port = await getFreePort()
  const server = startCli(serverCli, await serverArgs(port, overrides, storage), env)
  const line = await server.waitForLog(listening)
  return { ...server, port, line, url: `http://127.0.0.1:${port}` }
}

/** A paymaster policy for the CLI's tests (the stub answer reads no chain). */
const PAYMASTER_SIGNER_KEY = `0x${randomBytes(32).toString('hex')}`
const PAYMASTER_POLICY = {
  chains: [
    {
      chainId: 31337,
      rpcUrl: 'http://127.0.0.1:9',
      entryPoint: '0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108',
      sponsorPaymaster: '0x00000000000000000000000000000000005050aA',
      targets: [{ address: '0x000000000000000000000000000000000000A11c' }],
      perUserPerDayWei: '1000000000000000',
      globalPerDayWei: '100000000000000000',
      maxGasPerOperation: 1_000_000,
    },
  ],
  accounts: 'any',
} as const
const policyFile = async (policy: unknown) => {
  const path = join(await directory(), 'policy.json')
  await writeFile(path, JSON.stringify(policy))
  return path
}

const post = (url: string, json: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', origin, ...headers }, body: JSON.stringify(json) })

async function codeFor(email: string) {
  const inbox = (await (await fetch(`${kms.url}/dev/mailbox.json`)).json()) as { messages: { to: string; text: string }[] }
  return /sign-in code is (\d{6})\./.exec(inbox.messages.find((message) => message.to === email)!.text)![1]!
}

/** The body of /auth/email/verify for the code sent by `start`, as the consent frame holding `key` makes it. */
async function frameAnswer(start: Response, email: string, key: { apiPublicKey: string; apiPrivateKey: string }) {
  const { otpId, otpEncryptionTargetBundle } = (await start.json()) as { otpId: string; otpEncryptionTargetBundle: string }
  return { otpId, ...(await sealCode({ otpEncryptionTargetBundle, code: await codeFor(email), key, signerPublicKey })) }
}

describe('latchkey-server', () => {
  test('default: an email sign-in through the kms and backend bins, then a stamped whoami; no log line of either holds a key, the code, the cookie, the credential, a stamp or the email', async () => {
    const server = await startServer(['--log-level', 'debug'])
    expect(server.line).toMatchObject({
      level: 'info',
      service: 'latchkey-server',
      url: server.url,
      kmsUrl: kms.url,
      organizationId,
      allowedOrigins: [origin],
      trustProxy: false,
    })
    for (const path of ['/healthz', '/readyz']) {
      const answer = await fetch(`${server.url}${path}`)
      expect([answer.status, await answer.json()]).toEqual([200, { status: path === '/healthz' ? 'ok' : 'ready' }])
    }

    const email = `person.${randomBytes(4).toString('hex')}@example.test`
    const start = await post(`${server.url}/auth/email/start`, { email }, { 'x-request-id': 'sign-in-1' })
    expect([start.status, start.headers.get('x-request-id')]).toEqual([200, 'sign-in-1'])
    const userKey = generateApiKeyPair()
    const verify = await post(`${server.url}/auth/email/verify`, await frameAnswer(start, email, userKey))
    expect(verify.status).toBe(200)
    const cookie = verify.headers.get('set-cookie')!.split(';')[0]!
    const account = (await verify.json()) as { organizationId: string; userId: string; address: string }
    const session = await fetch(`${server.url}/auth/session`, { headers: { cookie, origin } })
    expect([session.status, await session.json()]).toEqual([200, expect.objectContaining({ email, kind: 'email', organizationId: account.organizationId })])

    // The frame's key the code registered works against the kms bin.
    const body = JSON.stringify({ organizationId: account.organizationId })
    const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(userKey).stamp(body)
    const whoami = await fetch(`${kms.url}/public/v1/query/whoami`, { method: 'POST', headers: { [stampHeaderName]: stampHeaderValue }, body })
    expect([whoami.status, ((await whoami.json()) as { userId: string }).userId]).toEqual([200, account.userId])

    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 0, signal: null })
    expect(server.stderr()).toBe('')
    const lines = server.logs()
    expect(lines.find((line) => line.reqId === 'sign-in-1')).toMatchObject({ method: 'POST', path: '/auth/email/start', status: 200 })
    expect(lines.filter((line) => typeof line.path === 'string').map((line) => `${line.method} ${line.path} ${line.status}`)).toEqual([
      'GET /healthz 200',
      'GET /readyz 200',
      'POST /auth/email/start 200',
      'POST /auth/email/verify 200',
      'GET /auth/session 200',
    ])
    // The kms logged the backend's calls and the stamped whoami, each with its own request id.
    const kmsRequests = kms.logs().filter((line) => line.path === '/public/v1/query/whoami' || line.path?.toString().startsWith('/public/v1/submit/'))
    expect(kmsRequests.length).toBeGreaterThanOrEqual(3)

    const everything = `${server.stdout()}${kms.stdout()}`
    for (const secret of [
      masterKey,
      signerPrivateKey,
      backendKey.apiPrivateKey,
      userKey.apiPrivateKey,
      cookie.split('=')[1]!,
      stampHeaderValue,
      email,
      sessionJwtKey,
    ])
      expect(everything).not.toContain(secret)
    const code = await codeFor(email)
    // The code: six digits, never standing on their own in a line (hex ids may hold the same digits inside them).
    expect(everything).not.toMatch(new RegExp(`(?<![0-9a-f])${code}(?![0-9a-f])`))
  })

  test('behavior: two bins on one database share a session; a JWT one issues verifies against the other’s JWKS', async () => {
    const storage = await newStorage()
    // Started together: on PostgreSQL the second waits for the first's migrations (advisory lock).
    const [a, b] = await Promise.all([startServer([], {}, storage), startServer([], {}, storage)])
    expect(a.line).toMatchObject({ store: testEngine === 'postgres' ? expect.stringMatching(/^postgres 127\.0\.0\.1:\d+\/test_/) : `sqlite ${storage[1]}` })
    const nonce = await fetch(`${a.url}/auth/nonce`, { headers: { origin } })
    expect(nonce.status).toBe(200)
    // The nonce's pre-session cookie is not a session: ask B for a token with a session A started.
    const email = `person.${randomBytes(4).toString('hex')}@example.test`
    const start = await post(`${a.url}/auth/email/start`, { email })
    const verify = await post(`${b.url}/auth/email/verify`, await frameAnswer(start, email, generateApiKeyPair()))
    expect(verify.status).toBe(200)
    const cookie = verify.headers.get('set-cookie')!.split(';')[0]!
    const token = (await (await post(`${a.url}/auth/token`, {}, { cookie })).json()) as { accessToken: string }
    const { payload } = await jwtVerify(token.accessToken, createRemoteJWKSet(new URL(`${b.url}/.well-known/jwks.json`)), {
      issuer: 'https://api.example',
      audience: 'latchkey-app',
    })
    expect(payload).toMatchObject({ email, kind: 'email' })
    for (const server of [a, b]) {
      server.child.kill('SIGTERM')
      expect(await server.exited).toEqual({ code: 0, signal: null })
    }
  }, 60_000)

  test('behavior: SIGTERM refuses new connections, answers the sign-in request in flight (it calls the kms), then exits 0', async () => {
    const server = await startServer()
    const body = JSON.stringify({ email: `person.${randomBytes(4).toString('hex')}@example.test` })
    const inFlight = streamingRequest(`${server.url}/auth/email/start`, { 'content-type': 'application/json', origin }, body, 5)
    await inFlight.accepted
    server.child.kill('SIGTERM')
    expect(await server.waitForLog((line) => line.signal === 'SIGTERM')).toMatchObject({ inflight: 1 })
    expect(await connectionRefused(server.port)).toBe(true)
    const answer = await inFlight.finish()
    expect([answer.status, JSON.parse(answer.body)]).toEqual([200, { otpId: expect.any(String), otpEncryptionTargetBundle: expect.any(String) }])
    expect(await server.exited).toEqual({ code: 0, signal: null })
    expect(server.logs().at(-1)).toMatchObject({ msg: 'stopped' })
  })

  test('behavior: behind a TLS proxy, cookies are Secure __Host- cookies with or without --trust-proxy (L6: a production backend that does not trust the proxy too)', async () => {
    // Started together: two bins one after the other can take most of the test's time on a loaded machine.
    const [plain, trusting] = await Promise.all([
      startServer([], { NODE_ENV: 'production', LATCHKEY_AUDIT_KEY: '42'.repeat(32) }),
      startServer(['--trust-proxy']),
    ])
    const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.7' }
    const untrusted = await fetch(`${plain.url}/auth/nonce`, { headers: forwarded })
    const trusted = await fetch(`${trusting.url}/auth/nonce`, { headers: forwarded })
    expect([untrusted.status, trusted.status]).toEqual([200, 200])
    for (const response of [untrusted, trusted])
      expect(response.headers.get('set-cookie')).toMatch(/^__Host-latchkey_siwe=[\w-]{43}; Max-Age=600; Path=\/; HttpOnly; Secure; SameSite=Strict$/)
  })

  test('behavior: --guests offers guests (guests: true at GET /auth/config, POST /auth/guest answers); without it neither', async () => {
    const [closed, offering] = await Promise.all([startServer([]), startServer(['--guests'])])
    const config = async (url: string) => (await (await fetch(`${url}/auth/config`)).json()) as { guests?: boolean }
    expect([(await config(closed.url)).guests, (await config(offering.url)).guests]).toEqual([undefined, true])
    // A body the route refuses (400) where it exists, and 404 where it does not: nothing is created either way.
    const guest = (url: string) =>
      fetch(`${url}/auth/guest`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', origin: 'http://localhost:5173' } })
    expect([(await guest(closed.url)).status, (await guest(offering.url)).status]).toEqual([404, 400])
  })

  test('behavior: the Google and Apple settings reach GET /auth/config: Google from its issuer’s discovery, Apple by form_post to --oauth-redirect-uri', async () => {
    const oidc = oidcInstance({ port: await getFreePort(), clientId: 'latchkey-demo', redirectUris: [`${origin}/oauth/callback`] })
    await oidc.start()
    try {
      const appleKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
      const server = await startServer([
        ...['--google-client-id', 'latchkey-demo', '--google-issuer', oidc.issuers.google.issuer],
        ...['--apple-client-id', 'latchkey-demo', '--apple-issuer', oidc.issuers.apple.issuer, '--apple-team-id', 'TEAM123456', '--apple-key-id', 'KEY1234567'],
        ...['--apple-private-key-file', await secretFile(appleKey), '--oauth-redirect-uri', 'https://api.app.example/auth/oauth/callback'],
      ])
      expect(server.line).toMatchObject({
        oauth: {
          google: { issuer: oidc.issuers.google.issuer, clientId: 'latchkey-demo' },
          apple: { issuer: oidc.issuers.apple.issuer, clientId: 'latchkey-demo' },
        },
      })
      const config = (await (await fetch(`${server.url}/auth/config`, { headers: { origin } })).json()) as { oauth: unknown }
      expect(config.oauth).toEqual({
        google: { clientId: 'latchkey-demo', authorizationEndpoint: oidc.issuers.google.authorizationEndpoint },
        apple: {
          clientId: 'latchkey-demo',
          authorizationEndpoint: oidc.issuers.apple.authorizationEndpoint,
          responseMode: 'form_post',
          redirectUri: 'https://api.app.example/auth/oauth/callback',
        },
      })
      expect(JSON.stringify(server.logs())).not.toContain(appleKey.split('\n')[1])
    } finally {
      await oidc.stop()
    }
  })

  test('sessions revoke: ends an account’s session and its credentials in the kms, and prints what it ended', async () => {
    const storage = await newStorage()
    const server = await startServer([], {}, storage)
    const email = `person.${randomBytes(4).toString('hex')}@example.test`
    const userKey = generateApiKeyPair()
    const verify = await post(`${server.url}/auth/email/verify`, await frameAnswer(await post(`${server.url}/auth/email/start`, { email }), email, userKey))
    const cookie = verify.headers.get('set-cookie')!.split(';')[0]!
    const account = (await verify.json()) as { organizationId: string; userId: string }
    const whoami = async () => {
      const body = JSON.stringify({ organizationId: account.organizationId })
      const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper(userKey).stamp(body)
      return (await fetch(`${kms.url}/public/v1/query/whoami`, { method: 'POST', headers: { [stampHeaderName]: stampHeaderValue }, body })).status
    }
    expect(await whoami()).toBe(200)

    const keys = ['--kms-url', kms.url, '--organization-id', organizationId, '--api-public-key', backendKey.apiPublicKey]
    const revoke = startCli(serverCli, [
      'sessions',
      'revoke',
      '--email',
      email,
      ...storage,
      ...keys,
      '--api-private-key-file',
      await secretFile(backendKey.apiPrivateKey),
    ])
    expect([(await revoke.exited).code, revoke.stderr()]).toEqual([0, ''])
    expect(JSON.parse(revoke.stdout())).toEqual({
      sessions: 1,
      refreshTokens: 0,
      apiKeys: [{ organizationId: account.organizationId, userId: account.userId, apiKeyIds: [expect.any(String)] }],
    })
    expect(await (await fetch(`${server.url}/auth/session`, { headers: { cookie, origin } })).json()).toBeNull()
    expect(await whoami()).toBe(401)
    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 0, signal: null })

    const neither = startCli(serverCli, ['sessions', 'revoke', ...storage, ...keys])
    expect([(await neither.exited).code, neither.stderr()]).toEqual([2, 'latchkey-server: give exactly one of --email, --address or --organization\n'])
  }, 180_000)

  test('webhooks: the admin API takes the admin token from its file; webhooks replay queues events; bad settings exit 2', async () => {
    const storage = await newStorage()
    const token = randomBytes(24).toString('hex')
    const server = await startServer(['--admin-token-file', await secretFile(token)], {}, storage)
    const created = await fetch(`${server.url}/admin/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://hooks.example/latchkey' }),
    })
    expect(created.status).toBe(201)
    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 0, signal: null })

    const replay = startCli(serverCli, ['webhooks', 'replay', '--since', '1h', ...storage])
    expect([(await replay.exited).code, replay.stderr()]).toEqual([0, ''])
    expect(JSON.parse(replay.stdout())).toEqual({ since: expect.any(String), queued: 0 })
    const badSince = startCli(serverCli, ['webhooks', 'replay', '--since', 'yesterday', ...storage])
    expect([(await badSince.exited).code, badSince.stderr()]).toEqual([
      2,
      'latchkey-server: --since must be an ISO 8601 time (2026-11-28T08:00:00Z) or a span ago (30m, 6h, 2d), not yesterday\n',
    ])
    const port = await getFreePort()
    const shortFile = await secretFile('too-short')
    const shortToken = startCli(serverCli, await serverArgs(port, ['--admin-token-file', shortFile]))
    expect([(await shortToken.exited).code, shortToken.stderr()]).toEqual([
      2,
      `latchkey-server: --admin-token-file (${shortFile}) must be at least 32 characters, without spaces (see latchkey-server --help)\n`,
    ])
  }, 60_000)

  test('paymaster: --paymaster-policy and the signer key from its file serve POST /paymaster; the key is never logged', async () => {
    const server = await startServer([
      '--paymaster-policy',
      await policyFile(PAYMASTER_POLICY),
      '--paymaster-signer-key-file',
      await secretFile(PAYMASTER_SIGNER_KEY),
    ])
    const callData = executeCallData([{ to: '0x000000000000000000000000000000000000a11c' }])
    const operation = { sender: '0x000000000000000000000000000000000000beef', nonce: '0x0', callData, maxFeePerGas: '0x1', maxPriorityFeePerGas: '0x1' }
    const response = await post(`${server.url}/paymaster`, {
      jsonrpc: '2.0',
      id: 1,
      method: 'pm_getPaymasterStubData',
      params: [operation, PAYMASTER_POLICY.chains[0].entryPoint, '0x7a69', {}],
    })
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: expect.objectContaining({ paymaster: PAYMASTER_POLICY.chains[0].sponsorPaymaster, sponsor: { name: expect.any(String) }, isFinal: false }),
    })
    expect(server.line.paymaster).toEqual([31337])
    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 0, signal: null })
    expect(server.stdout() + server.stderr()).not.toContain(PAYMASTER_SIGNER_KEY.slice(2))
  })

  test('production: with every setting given it starts', async () => {
    const server = await startServer([], { NODE_ENV: 'production', LATCHKEY_AUDIT_KEY: '42'.repeat(32) })
    expect(server.logs().filter((line) => line.level === 'warn')).toEqual([])
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200)
  })

  test('--help: lists every flag and variable, exits 0', async () => {
    const help = startCli(serverCli, ['--help'])
    expect(await help.exited).toEqual({ code: 0, signal: null })
    for (const setting of [
      '--host <address>, HOST',
      '--port <port>, PORT',
      '--log-level <fatal|error|warn|info|debug|trace|silent>, LOG_LEVEL',
      '--shutdown-timeout <seconds>, LATCHKEY_SHUTDOWN_TIMEOUT',
      '--db <path>, LATCHKEY_SERVER_DB',
      'DATABASE_URL, or a file: --database-url-file <path> / DATABASE_URL_FILE',
      '--kms-url <url>, LATCHKEY_KMS_URL',
      '--public-kms-url <url>, LATCHKEY_PUBLIC_KMS_URL',
      '--frames-url <url>, LATCHKEY_FRAMES_URL',
      '--organization-id <id>, LATCHKEY_ORGANIZATION_ID',
      '--api-public-key <hex>, LATCHKEY_API_PUBLIC_KEY',
      'LATCHKEY_API_PRIVATE_KEY, or a file: --api-private-key-file <path> / LATCHKEY_API_PRIVATE_KEY_FILE',
      '--session-signer-public-key <hex>, LATCHKEY_SESSION_SIGNER_PUBLIC_KEY',
      '--app-name <name>, LATCHKEY_APP_NAME',
      '--allowed-origin <origin>, LATCHKEY_ALLOWED_ORIGINS',
      '--siwe-domain <host[:port]>, LATCHKEY_SIWE_DOMAINS',
      '--chain <chainId>=<rpcUrl>, LATCHKEY_CHAINS',
      '--session-seconds <seconds>, LATCHKEY_SESSION_SECONDS',
      '--session-jwt-issuer <url>, LATCHKEY_SESSION_JWT_ISSUER',
      '--session-jwt-audience <audience>, LATCHKEY_SESSION_JWT_AUDIENCE',
      'LATCHKEY_SESSION_JWT_KEY, or a file: --session-jwt-key-file <path> / LATCHKEY_SESSION_JWT_KEY_FILE',
      'LATCHKEY_DELEGATION_SECRET, or a file: --delegation-secret-file <path> / LATCHKEY_DELEGATION_SECRET_FILE',
      '--access-token-seconds <seconds>, LATCHKEY_ACCESS_TOKEN_SECONDS',
      '--google-client-id <id>, LATCHKEY_GOOGLE_CLIENT_ID',
      'LATCHKEY_GOOGLE_CLIENT_SECRET, or a file: --google-client-secret-file <path> / LATCHKEY_GOOGLE_CLIENT_SECRET_FILE',
      '--google-issuer <url>, LATCHKEY_GOOGLE_ISSUER',
      '--apple-client-id <services id>, LATCHKEY_APPLE_CLIENT_ID',
      '--apple-team-id <team id>, LATCHKEY_APPLE_TEAM_ID',
      '--apple-key-id <key id>, LATCHKEY_APPLE_KEY_ID',
      'LATCHKEY_AUDIT_KEY, or a file: --audit-key-file <path> / LATCHKEY_AUDIT_KEY_FILE',
      '--audit-log-file <path>, LATCHKEY_AUDIT_LOG_FILE',
      'LATCHKEY_APPLE_PRIVATE_KEY, or a file: --apple-private-key-file <path> / LATCHKEY_APPLE_PRIVATE_KEY_FILE',
      '--apple-client-secret-seconds <seconds>, LATCHKEY_APPLE_CLIENT_SECRET_SECONDS',
      '--apple-issuer <url>, LATCHKEY_APPLE_ISSUER',
      '--oauth-redirect-uri <url>, LATCHKEY_OAUTH_REDIRECT_URI',
      '--trust-proxy, LATCHKEY_TRUST_PROXY=1',
      '--webhook-timeout <seconds>, LATCHKEY_WEBHOOK_TIMEOUT',
      '--guests, LATCHKEY_GUESTS=1',
      '--paymaster-policy <file.json>, LATCHKEY_PAYMASTER_POLICY',
      'LATCHKEY_PAYMASTER_SIGNER_KEY, or a file: --paymaster-signer-key-file <path> / LATCHKEY_PAYMASTER_SIGNER_KEY_FILE',
    ])
      expect(help.stdout()).toContain(`\n  ${setting}\n`)
  })

  test.each<[string, (port: number) => Promise<string[]>, Record<string, string>, string]>([
    [
      'a paymaster policy with an entry point that is not an address',
      async (port) =>
        serverArgs(port, ['--paymaster-policy', await policyFile({ ...PAYMASTER_POLICY, chains: [{ ...PAYMASTER_POLICY.chains[0], entryPoint: 'nope' }] })]),
      { LATCHKEY_PAYMASTER_SIGNER_KEY: PAYMASTER_SIGNER_KEY },
      '--paymaster-policy / LATCHKEY_PAYMASTER_POLICY: paymaster policy: chains.0.entryPoint: an address (0x and 40 hex digits)',
    ],
    [
      'a paymaster policy file that is not JSON',
      async (port) => serverArgs(port, ['--paymaster-policy', await secretFile('{ chains')]),
      { LATCHKEY_PAYMASTER_SIGNER_KEY: PAYMASTER_SIGNER_KEY },
      expect.stringMatching(
        /^latchkey-server: --paymaster-policy \/ LATCHKEY_PAYMASTER_POLICY: could not read \/\S+\/secret as JSON: Expected property name or '}' in JSON at position 2[^\n]*\n$/,
      ) as unknown as string,
    ],
    [
      'a paymaster policy without its signer key',
      async (port) => serverArgs(port, ['--paymaster-policy', await policyFile(PAYMASTER_POLICY)]),
      {},
      '--paymaster-policy / LATCHKEY_PAYMASTER_POLICY needs LATCHKEY_PAYMASTER_SIGNER_KEY or --paymaster-signer-key-file / LATCHKEY_PAYMASTER_SIGNER_KEY_FILE',
    ],
    ['an unknown flag', (port) => serverArgs(port, ['--bogus']), {}, 'unknown option --bogus (see latchkey-server --help)'],
    [
      'a malformed --kms-url',
      (port) => serverArgs(port, ['--kms-url', 'kms.internal:8090']),
      {},
      '--kms-url must start with http:// or https://, got "kms.internal:8090" (see latchkey-server --help)',
    ],
    [
      'a wildcard origin',
      (port) => serverArgs(port, ['--allowed-origin', '*']),
      {},
      '--allowed-origin does not take a wildcard ("*"): list each origin, e.g. https://app.example (see latchkey-server --help)',
    ],
    [
      'a malformed chain',
      (port) => serverArgs(port, ['--chain', 'mainnet=https://rpc.example']),
      {},
      '--chain must look like 1=https://rpc.example, got "mainnet=https://rpc.example" (see latchkey-server --help)',
    ],
    [
      'both --db and DATABASE_URL',
      (port) => serverArgs(port, [], ['--db', '/tmp/never-opened.db']),
      { DATABASE_URL: 'postgres://server:pw@db/server' },
      'give --db / LATCHKEY_SERVER_DB or DATABASE_URL or --database-url-file / DATABASE_URL_FILE, not both',
    ],
    [
      'a DATABASE_URL that is not PostgreSQL',
      (port) => serverArgs(port, [], []),
      { DATABASE_URL: 'mysql://server:pw@db/server' },
      'DATABASE_URL must start with postgres:// or postgresql://, got "mysql://***@db/server" (see latchkey-server --help)',
    ],
    [
      'a session JWT key that is not P-256',
      (port) => serverArgs(port, [], []),
      { LATCHKEY_SESSION_JWT_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() },
      'LATCHKEY_SESSION_JWT_KEY must be a P-256 private key (PKCS#8 PEM or a private JWK), or a list of them (see latchkey-server --help)',
    ],
    [
      'a session JWT key list that names a key twice',
      (port) => serverArgs(port, [], []),
      { LATCHKEY_SESSION_JWT_KEY: `${sessionJwtKey}\n${sessionJwtKey}` },
      'LATCHKEY_SESSION_JWT_KEY lists a key twice (see latchkey-server --help)',
    ],
    [
      'no organization',
      async (port) => ['--port', String(port)],
      {},
      '--organization-id / LATCHKEY_ORGANIZATION_ID is required (`latchkey-kms generate-keys` and `latchkey-kms init-organization` give them)',
    ],
    [
      'a private key of another public key',
      (port) => serverArgs(port),
      { LATCHKEY_API_PUBLIC_KEY: generateApiKeyPair().apiPublicKey },
      'LATCHKEY_API_PRIVATE_KEY or --api-private-key-file / LATCHKEY_API_PRIVATE_KEY_FILE is not the private key of --api-public-key / LATCHKEY_API_PUBLIC_KEY',
    ],
    [
      'a Google client secret without the Google client id',
      (port) => serverArgs(port),
      { LATCHKEY_GOOGLE_CLIENT_SECRET: 'secret' },
      'LATCHKEY_GOOGLE_CLIENT_SECRET or --google-client-secret-file / LATCHKEY_GOOGLE_CLIENT_SECRET_FILE is for Google sign-in: give --google-client-id / LATCHKEY_GOOGLE_CLIENT_ID too',
    ],
    [
      'an Apple key without its key id',
      (port) => serverArgs(port, ['--apple-client-id', 'com.example.web', '--apple-team-id', 'TEAM123456']),
      { LATCHKEY_APPLE_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() },
      "Apple's client secret needs all of --apple-team-id / LATCHKEY_APPLE_TEAM_ID, --apple-key-id / LATCHKEY_APPLE_KEY_ID and LATCHKEY_APPLE_PRIVATE_KEY or --apple-private-key-file / LATCHKEY_APPLE_PRIVATE_KEY_FILE",
    ],
    [
      'an Apple key that is not P-256',
      (port) => serverArgs(port, ['--apple-client-id', 'com.example.web', '--apple-team-id', 'TEAM123456', '--apple-key-id', 'KEY1234567']),
      { LATCHKEY_APPLE_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() },
      'LATCHKEY_APPLE_PRIVATE_KEY or --apple-private-key-file / LATCHKEY_APPLE_PRIVATE_KEY_FILE must be the Sign in with Apple key: a P-256 private key in PKCS#8 PEM (the .p8 file)',
    ],
    [
      'a development issuer in production',
      (port) => serverArgs(port, ['--google-client-id', 'latchkey-demo', '--google-issuer', 'http://localhost:8092/google']),
      { NODE_ENV: 'production', LATCHKEY_GOOGLE_CLIENT_SECRET: 'secret', LATCHKEY_AUDIT_KEY: '42'.repeat(32) },
      'refusing a development issuer in production (NODE_ENV=production): --google-issuer / LATCHKEY_GOOGLE_ISSUER must be https://, got http://localhost:8092/google',
    ],
    [
      'Google without its client secret in production',
      (port) => serverArgs(port, ['--google-client-id', '1234.apps.googleusercontent.com']),
      { NODE_ENV: 'production', LATCHKEY_AUDIT_KEY: '42'.repeat(32) },
      'refusing Google sign-in without its client secret in production (NODE_ENV=production): set LATCHKEY_GOOGLE_CLIENT_SECRET or --google-client-secret-file / LATCHKEY_GOOGLE_CLIENT_SECRET_FILE',
    ],
    [
      'Apple without its client-secret key in production',
      (port) => serverArgs(port, ['--apple-client-id', 'com.example.web']),
      { NODE_ENV: 'production', LATCHKEY_AUDIT_KEY: '42'.repeat(32) },
      'refusing Apple sign-in without its client-secret key in production (NODE_ENV=production): set --apple-team-id / LATCHKEY_APPLE_TEAM_ID, --apple-key-id / LATCHKEY_APPLE_KEY_ID and LATCHKEY_APPLE_PRIVATE_KEY or --apple-private-key-file / LATCHKEY_APPLE_PRIVATE_KEY_FILE',
    ],
    [
      'production on development defaults',
      async (port) => ['--port', String(port)],
      { NODE_ENV: 'production' },
      'refusing to start with development defaults in production (NODE_ENV=production): set --kms-url / LATCHKEY_KMS_URL; --allowed-origin / LATCHKEY_ALLOWED_ORIGINS; LATCHKEY_SESSION_JWT_KEY or --session-jwt-key-file / LATCHKEY_SESSION_JWT_KEY_FILE; --session-jwt-issuer / LATCHKEY_SESSION_JWT_ISSUER; LATCHKEY_AUDIT_KEY or --audit-key-file / LATCHKEY_AUDIT_KEY_FILE; --db / LATCHKEY_SERVER_DB or DATABASE_URL or --database-url-file / DATABASE_URL_FILE',
    ],
  ])('error: %s exits 2 with one line, before listening', async (_, args, env, message) => {
    const argv = await args(await getFreePort())
    // serverArgs gives the public key and the JWT key as flags: drop them where their variable is tested.
    const replaced = [env.LATCHKEY_API_PUBLIC_KEY && '--api-public-key', env.LATCHKEY_SESSION_JWT_KEY && '--session-jwt-key-file'].filter(Boolean)
    const withoutFlag = argv.filter((arg, index) => !replaced.includes(arg) && !replaced.includes(argv[index - 1]!))
    const server = startCli(serverCli, withoutFlag, env)
    expect(await server.exited).toEqual({ code: 2, signal: null })
    expect([server.stderr(), server.stdout()]).toEqual([typeof message === 'string' ? `latchkey-server: ${message}\n` : message, ''])
  })

  test('error: a SQLite file in a directory that does not exist exits 1 with one line', async () => {
    const server = startCli(serverCli, await serverArgs(await getFreePort(), [], ['--db', '/nonexistent/dir/server.db']))
    expect(await server.exited).toEqual({ code: 1, signal: null })
    expect([server.stderr(), server.stdout()]).toEqual([
      'latchkey-server: could not open the store (sqlite /nonexistent/dir/server.db): Cannot open database because the directory does not exist\n',
      '',
    ])
  })

  test('error: a port in use exits 1 with one line', async () => {
    const holder = createServer()
    const port = await getFreePort()
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve))
    try {
      const server = startCli(serverCli, await serverArgs(port))
      expect(await server.exited).toEqual({ code: 1, signal: null })
      expect([server.stderr(), server.stdout()]).toEqual([`latchkey-server: 127.0.0.1:${port} is already in use; choose another port\n`, ''])
    } finally {
      holder.close()
    }
  })
})
