import { mkdtemp, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getFreePort } from '@latchkey/devnet'
import { withoutCredentials } from '@latchkey/service'
import { p256 } from '@noble/curves/p256'
import { ApiKeyStamper } from '@turnkey/api-key-stamper'
import pg from 'pg'
import { describe, expect, test } from 'vitest'
import { type CliProcess, connectionRefused, listening, startCli, streamingRequest } from '../../service/test/cliProcess.js'
import { type TestDatabase, testBackend, testDatabase } from './database.js'

// latchkey-kms as an operator runs it: a child process on the suite's storage engine (SQLite, or
// PostgreSQL in the PostgreSQL run), its JSON log lines, its exit code, signals.

const cli = 'packages/kms/src/cli.ts'
type Keys = { masterKey: string; signerPrivateKey: string; signerPublicKey: string; apiPrivateKey: string; apiPublicKey: string }

const directory = () => mkdtemp(join(tmpdir(), 'latchkey-kms-cli-'))
const secretFile = async (contents: string) => {
  const path = join(await directory(), 'secret')
  await writeFile(path, `${contents}\n`, { mode: 0o600 })
  return path
}

/** How the bin is given `database`: --db for SQLite, DATABASE_URL for PostgreSQL. */
const storeArgs = (database: TestDatabase): { args: string[]; env: Record<string, string> } =>
  'databaseUrl' in database ? { args: [], env: { DATABASE_URL: database.databaseUrl } } : { args: ['--db', database.databasePath], env: {} }

/** Runs a one-off command to its end. */
async function command(args: string[], env: Record<string, string> = {}) {
  const run = startCli(cli, args, env)
  const { code } = await run.exited
  return { code, stdout: run.stdout(), stderr: run.stderr() }
}

async function generateKeys(): Promise<Keys> {
  const { code, stdout } = await command(['generate-keys'])
  expect(code).toBe(0)
  return JSON.parse(stdout) as Keys
}

/** A stamped query as the official clients send it: the body, and the X-Stamp of the API key pair. */
async function stamped(keys: Keys, body: object) {
  const text = JSON.stringify(body)
  const { stampHeaderName, stampHeaderValue } = await new ApiKeyStamper({ apiPublicKey: keys.apiPublicKey, apiPrivateKey: keys.apiPrivateKey }).stamp(text)
  return { text, headers: { 'content-type': 'application/json', [stampHeaderName]: stampHeaderValue }, stamp: stampHeaderValue }
}

/** A store with the organization of `keys.apiPublicKey`, and a kms started on it; the store as the bin is given it. */
async function startedKms(keys: Keys, extraArgs: string[] = [], extraEnv: Record<string, string> = {}) {
  const database = await testDatabase(join(await directory(), 'kms.db'))
  const store = storeArgs(database)
  const init = await command(['init-organization', ...store.args, '--name', 'Acme', '--public-key', keys.apiPublicKey], store.env)
  expect(init.code).toBe(0)
  const organization = JSON.parse(init.stdout) as { organizationId: string; userId: string; apiKeyId: string; name: string; created: boolean }
  const port = await getFreePort()
  const kms: CliProcess = startCli(cli, ['--port', String(port), ...store.args, '--master-key-file', await secretFile(keys.masterKey), ...extraArgs], {
    ...store.env,
    LATCHKEY_KMS_SIGNER_KEY: keys.signerPrivateKey,
    ...extraEnv,
  })
  const line = await kms.waitForLog(listening)
  return { ...kms, line, port, url: `http://127.0.0.1:${port}`, organization, database, store }
}

describe('latchkey-kms', () => {
  test('init-organization: creates the organization and prints its ids; the same again is the same organization; another name for that key is refused', async () => {
    const keys = await generateKeys()
    const store = storeArgs(await testDatabase(join(await directory(), 'kms.db')))
    const first = await command(['init-organization', ...store.args, '--name', 'Acme', '--public-key', keys.apiPublicKey], store.env)
    expect(first.code).toBe(0)
    const created = JSON.parse(first.stdout)
    expect(created).toEqual({ organizationId: expect.any(String), name: 'Acme', userId: expect.any(String), apiKeyId: expect.any(String), created: true })
    const again = await command(['init-organization', ...store.args, '--name', 'Acme', '--public-key', keys.apiPublicKey.toUpperCase()], store.env)
    expect([again.code, JSON.parse(again.stdout)]).toEqual([0, { ...created, created: false }])
    const other = await command(['init-organization', ...store.args, '--name', 'Other', '--public-key', keys.apiPublicKey], store.env)
    expect([other.code, other.stdout, other.stderr]).toEqual([
      2,
      '',
      `latchkey-kms: the API key is already the key of organization ${created.organizationId} ("Acme"), not "Other": use that organization, or a new key pair\n`,
    ])
  })

  test('default: logs JSON lines, answers /healthz and /readyz (API and frames), a stamped whoami; no line holds a key or a stamp', async () => {
    const keys = await generateKeys()
    const framesPort = await getFreePort()
    const kms = await startedKms(keys, ['--frames-parent-origin', 'http://localhost:5173', '--frames-port', String(framesPort), '--log-level', 'debug'])
    const storeName = 'databaseUrl' in kms.database ? `postgres ${withoutCredentials(kms.database.databaseUrl)}` : `sqlite ${kms.database.databasePath}`
    expect(kms.line).toMatchObject({
      level: 'info',
      service: 'latchkey-kms',
      msg: `kms listening on ${kms.url}, frames on http://localhost:${framesPort} (store: ${storeName}; mail: dev inbox)`,
      url: kms.url,
      framesUrl: `http://localhost:${framesPort}`,
      signerPublicKey: keys.signerPublicKey,
      passkeys: { rpIds: ['localhost'], origins: ['http://localhost:5173'] },
      production: false,
    })
    for (const base of [kms.url, `http://localhost:${framesPort}`]) {
      const health = await fetch(`${base}/healthz`)
      const ready = await fetch(`${base}/readyz`)
      expect([health.status, await health.json(), ready.status, await ready.json()]).toEqual([200, { status: 'ok' }, 200, { status: 'ready' }])
    }

    const { text, headers, stamp } = await stamped(keys, { organizationId: kms.organization.organizationId })
    const whoami = await fetch(`${kms.url}/public/v1/query/whoami`, { method: 'POST', headers: { ...headers, 'x-request-id': 'whoami-1' }, body: text })
    expect([whoami.status, whoami.headers.get('x-request-id')]).toEqual([200, 'whoami-1'])
    expect(await whoami.json()).toMatchObject({ organizationId: kms.organization.organizationId, organizationName: 'Acme', userId: kms.organization.userId })

    kms.child.kill('SIGTERM')
    expect(await kms.exited).toEqual({ code: 0, signal: null })
    expect(kms.stderr()).toBe('')
    expect(
      kms
        .logs()
        .filter((line) => line.level === 'warn')
        .map((line) => line.msg),
    ).toEqual([
      'OIDC tokens are trusted from the devnet’s local provider at http://localhost:8092 only (development only): set --oidc-issuer for Google or Apple',
      'the audit trail hashes IPs and emails with the fixed development key (development only)',
      `mail goes to the dev inbox at ${kms.url}/dev/mailbox, readable by anyone who reaches the kms (development only)`,
    ])
    expect(kms.logs().find((line) => line.reqId === 'whoami-1')).toMatchObject({
      method: 'POST',
      path: '/public/v1/query/whoami',
      status: 200,
      msg: 'POST /public/v1/query/whoami 200',
    })
    const everything = kms.stdout()
    for (const secret of [keys.masterKey, keys.signerPrivateKey, keys.apiPrivateKey, stamp]) expect(everything).not.toContain(secret)
  })

  test('behavior: SIGTERM refuses new connections, answers the stamped request in flight, then exits 0', async () => {
    const keys = await generateKeys()
    const kms = await startedKms(keys)
    const { text, headers } = await stamped(keys, { organizationId: kms.organization.organizationId })
    const inFlight = streamingRequest(`${kms.url}/public/v1/query/whoami`, headers, text, 12)
    await inFlight.accepted
    kms.child.kill('SIGTERM')
    expect(await kms.waitForLog((line) => line.signal === 'SIGTERM')).toMatchObject({ inflight: 1 })
    expect(await connectionRefused(kms.port)).toBe(true)
    const answer = await inFlight.finish()
    expect([answer.status, JSON.parse(answer.body).organizationId]).toEqual([200, kms.organization.organizationId])
    expect(await kms.exited).toEqual({ code: 0, signal: null })
    expect(kms.logs().at(-1)).toMatchObject({ msg: 'stopped' })
  })

  test('production: with every setting given it starts, mails by SMTP (no dev inbox), and never logs the SMTP password', async () => {
    const keys = await generateKeys()
    const smtpPassword = `smtp-pass-${keys.masterKey.slice(0, 12)}`
    const kms = await startedKms(
      keys,
      [
        '--rp-id',
        'app.example',
        '--passkey-origin',
        'https://app.example',
        '--oidc-issuer',
        'https://accounts.google.com=1234.apps.googleusercontent.com',
        '--oidc-issuer',
        'https://accounts.google.com=5678.apps.googleusercontent.com',
      ],
      {
        NODE_ENV: 'production',
        LATCHKEY_SMTP_URL: `smtp://mailer:${smtpPassword}@127.0.0.1:2525`,
        LATCHKEY_AUDIT_KEY: '42'.repeat(32),
      },
    )
    expect(kms.line).toMatchObject({
      mail: 'smtp smtp://***@127.0.0.1:2525',
      production: true,
      passkeys: { rpIds: ['app.example'], origins: ['https://app.example'] },
      oidcIssuers: [{ issuer: 'https://accounts.google.com', audiences: ['1234.apps.googleusercontent.com', '5678.apps.googleusercontent.com'] }],
    })
    expect(kms.logs().filter((line) => line.level === 'warn')).toEqual([])
    expect((await fetch(`${kms.url}/dev/mailbox.json`)).status).toBe(404)
    kms.child.kill('SIGINT')
    expect(await kms.exited).toEqual({ code: 0, signal: null })
    expect(kms.stdout()).not.toContain(smtpPassword)
  })

  if (testBackend === 'postgres')
    test('behavior: /readyz answers 503 with the reason while its PostgreSQL refuses connections, 200 again once it takes them', async () => {
      const keys = await generateKeys()
      const kms = await startedKms(keys)
      expect((await fetch(`${kms.url}/readyz`)).status).toBe(200)
      const url = new URL((kms.database as { databaseUrl: string }).databaseUrl)
      const database = url.pathname.slice(1)
      url.pathname = '/postgres'
      const admin = new pg.Client({ connectionString: url.href })
      await admin.connect()
      try {
        // Its pooled connections cut, and no new one allowed.
        await admin.query(`alter database ${database} with allow_connections false`)
        await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database])
        const answer = await fetch(`${kms.url}/readyz`)
        expect(answer.status).toBe(503)
        expect(await answer.json()).toEqual({ status: 'unavailable', reason: expect.stringMatching(/\S/) })
        await admin.query(`alter database ${database} with allow_connections true`)
        // The pool connects again: no restart needed.
        expect((await fetch(`${kms.url}/readyz`)).status).toBe(200)
      } finally {
        await admin.end()
      }
    })
})

// What does not touch the suite's store runs once, in the SQLite run (the PostgreSQL run repeats
// this file for the tests above, which do).
if (testBackend === 'sqlite')
  describe('latchkey-kms settings and commands', () => {
    test('generate-keys: a master key, a signer key pair and an API key pair, fresh each time', async () => {
      const [keys, again] = [await generateKeys(), await generateKeys()]
      expect(keys).toEqual({
        masterKey: expect.stringMatching(/^[0-9a-f]{64}$/),
        signerPrivateKey: expect.stringMatching(/^[0-9a-f]{64}$/),
        signerPublicKey: expect.stringMatching(/^04[0-9a-f]{128}$/),
        apiPrivateKey: expect.stringMatching(/^[0-9a-f]{64}$/),
        apiPublicKey: expect.stringMatching(/^0[23][0-9a-f]{64}$/),
      })
      expect(Buffer.from(p256.getPublicKey(keys.signerPrivateKey, false)).toString('hex')).toBe(keys.signerPublicKey)
      expect(Buffer.from(p256.getPublicKey(keys.apiPrivateKey, true)).toString('hex')).toBe(keys.apiPublicKey)
      expect(again.masterKey).not.toBe(keys.masterKey)
    })

    test('--help: lists every flag and variable and the commands, exits 0', async () => {
      const help = await command(['--help'])
      expect(help.code).toBe(0)
      expect(help.stdout).toMatch(/^Usage: latchkey-kms \[options\]\n {7}latchkey-kms init-organization \[options\] {3}Create the organization/)
      for (const setting of [
        '--host <address>, HOST',
        '--port <port>, PORT',
        '--log-level <fatal|error|warn|info|debug|trace|silent>, LOG_LEVEL',
        '--shutdown-timeout <seconds>, LATCHKEY_SHUTDOWN_TIMEOUT',
        '--db <path>, LATCHKEY_KMS_DB',
        'DATABASE_URL, or a file: --database-url-file <path> / DATABASE_URL_FILE',
        'LATCHKEY_KMS_MASTER_KEY, or a file: --master-key-file <path> / LATCHKEY_KMS_MASTER_KEY_FILE',
        'LATCHKEY_KMS_SIGNER_KEY, or a file: --signer-key-file <path> / LATCHKEY_KMS_SIGNER_KEY_FILE',
        '--next-signer-public-key <hex>, LATCHKEY_KMS_NEXT_SIGNER_PUBLIC_KEY',
        'LATCHKEY_SMTP_URL, or a file: --smtp-url-file <path> / LATCHKEY_SMTP_URL_FILE',
        '--mail-from <text>, LATCHKEY_SMTP_FROM',
        '--rp-id <domain>, LATCHKEY_KMS_RP_IDS',
        '--passkey-origin <origin>, LATCHKEY_KMS_PASSKEY_ORIGINS',
        '--oidc-issuer <issuer>=<client id>, LATCHKEY_KMS_OIDC_ISSUERS',
        '--max-credential-lifetime <seconds>, LATCHKEY_KMS_MAX_CREDENTIAL_SECONDS',
        '--fresh-verification-window <seconds>, LATCHKEY_KMS_FRESH_VERIFICATION_SECONDS',
        '--mfa-required <action,…>, LATCHKEY_KMS_MFA_REQUIRED',
        '--mfa-grace <seconds>, LATCHKEY_KMS_MFA_GRACE_SECONDS',
        '--eip7702-delegate <address>, LATCHKEY_KMS_EIP7702_DELEGATES',
        '--frames-parent-origin <origin>, LATCHKEY_KMS_FRAMES_PARENT_ORIGINS',
        '--frames-chain <chain id>=<rpc url>, LATCHKEY_KMS_FRAMES_CHAINS',
        '--frames-paymaster <chain id>=<sponsor|token>:<address>, LATCHKEY_KMS_FRAMES_PAYMASTERS',
        '--frames-app-name <name>, LATCHKEY_KMS_FRAMES_APP_NAME',
        '--frames-executor <address>, LATCHKEY_KMS_FRAMES_EXECUTOR',
        '--cors-origin <origin>, LATCHKEY_KMS_CORS_ORIGINS',
        '--rate-limit-per-key <units>, LATCHKEY_KMS_RATE_LIMIT_PER_KEY',
        '--rate-limit-per-organization <units>, LATCHKEY_KMS_RATE_LIMIT_PER_ORGANIZATION',
        '--frames-port <port>, LATCHKEY_KMS_FRAMES_PORT',
        'LATCHKEY_AUDIT_KEY, or a file: --audit-key-file <path> / LATCHKEY_AUDIT_KEY_FILE',
        '--audit-log-file <path>, LATCHKEY_AUDIT_LOG_FILE',
        '--frames-host <address>, LATCHKEY_KMS_FRAMES_HOST',
      ])
        expect(help.stdout).toContain(`\n  ${setting}\n`)
      const commandHelp = await command(['init-organization', '--help'])
      expect(commandHelp.stdout).toContain('\n  --public-key <hex>, LATCHKEY_API_PUBLIC_KEY\n')
    })

    test.each<[string, string[], Record<string, string>, string]>([
      ['an unknown flag', ['--bogus'], {}, 'unknown option --bogus (see latchkey-kms --help)'],
      ['an unknown command', ['serve'], {}, 'unknown command "serve" (see latchkey-kms --help)'],
      [
        'a DATABASE_URL that is not PostgreSQL',
        [],
        { DATABASE_URL: 'mysql://kms:pw@db/kms' },
        'DATABASE_URL must start with postgres:// or postgresql://, got "mysql://***@db/kms" (see latchkey-kms --help)',
      ],
      [
        'a master key of the wrong length',
        [],
        { LATCHKEY_KMS_MASTER_KEY: 'abcd' },
        'LATCHKEY_KMS_MASTER_KEY must be 32 bytes as 64 hex characters (see latchkey-kms --help)',
      ],
      [
        'a master key file that cannot be read',
        ['--master-key-file', '/nonexistent/master.key'],
        {},
        '--master-key-file: cannot read "/nonexistent/master.key" (no such file) (see latchkey-kms --help)',
      ],
      [
        'a signer key that is no key',
        [],
        { LATCHKEY_KMS_SIGNER_KEY: '00'.repeat(32) },
        'LATCHKEY_KMS_SIGNER_KEY must be a P-256 private key as 64 hex characters (see latchkey-kms --help)',
      ],
      [
        'an SMTP URL of another protocol',
        [],
        { LATCHKEY_SMTP_URL: 'https://mail.example' },
        'LATCHKEY_SMTP_URL must start with smtp:// or smtps://, got "https://mail.example" (see latchkey-kms --help)',
      ],
      [
        'a wildcard passkey origin',
        ['--passkey-origin', 'https://*.example'],
        {},
        '--passkey-origin does not take a wildcard ("https://*.example"): list each origin, e.g. https://app.example (see latchkey-kms --help)',
      ],
      [
        'an OIDC issuer without a client id',
        ['--oidc-issuer', 'https://accounts.google.com'],
        {},
        '--oidc-issuer must look like https://accounts.google.com=<client id>, got "https://accounts.google.com" (see latchkey-kms --help)',
      ],
      [
        'a frame paymaster without its kind',
        ['--frames-paymaster', '31337=0x5050505050505050505050505050505050505050'],
        {},
        '--frames-paymaster must look like 31337=sponsor:0x… or 31337=token:0x… (a chain id, a kind and an address), got "31337=0x5050505050505050505050505050505050505050" (see latchkey-kms --help)',
      ],
      [
        'a persistent store with a generated master key',
        ['--db', '/tmp/latchkey-kms-never.db'],
        {},
        'a persistent store (sqlite /tmp/latchkey-kms-never.db) needs a master key that outlives the process: set LATCHKEY_KMS_MASTER_KEY or --master-key-file / LATCHKEY_KMS_MASTER_KEY_FILE (`latchkey-kms generate-keys` makes one), or use no store setting to keep everything in memory',
      ],
      [
        'two stores',
        ['--db', 'kms.db'],
        { DATABASE_URL: 'postgres://db/kms', LATCHKEY_KMS_MASTER_KEY: 'ab'.repeat(32) },
        'choose one store, not --db / LATCHKEY_KMS_DB and DATABASE_URL or --database-url-file / DATABASE_URL_FILE',
      ],
      [
        'production on development defaults',
        [],
        { NODE_ENV: 'production' },
        'refusing to start with development defaults in production (NODE_ENV=production): set LATCHKEY_KMS_MASTER_KEY or --master-key-file / LATCHKEY_KMS_MASTER_KEY_FILE; LATCHKEY_KMS_SIGNER_KEY or --signer-key-file / LATCHKEY_KMS_SIGNER_KEY_FILE; LATCHKEY_SMTP_URL or --smtp-url-file / LATCHKEY_SMTP_URL_FILE; --rp-id / LATCHKEY_KMS_RP_IDS; --passkey-origin / LATCHKEY_KMS_PASSKEY_ORIGINS; --oidc-issuer / LATCHKEY_KMS_OIDC_ISSUERS; LATCHKEY_AUDIT_KEY or --audit-key-file / LATCHKEY_AUDIT_KEY_FILE; a store: --db / LATCHKEY_KMS_DB or DATABASE_URL or --database-url-file / DATABASE_URL_FILE',
      ],
      [
        'the deprecated --frames-executor naming another contract than --eip7702-delegate',
        ['--eip7702-delegate', '0x5FbDB2315678afecb367f032d93F642f64180aa3', '--frames-executor', '0x000000000000000000000000000000000000dEaD'],
        {},
        '--frames-executor / LATCHKEY_KMS_FRAMES_EXECUTOR (deprecated) is 0x000000000000000000000000000000000000dEaD but --eip7702-delegate / LATCHKEY_KMS_EIP7702_DELEGATES is 0x5FbDB2315678afecb367f032d93F642f64180aa3: they name one contract, the batch executor; give --eip7702-delegate / LATCHKEY_KMS_EIP7702_DELEGATES only',
      ],
      [
        'two EIP-7702 delegates while the frames are served',
        [
          '--frames-parent-origin',
          'http://localhost:5173',
          '--eip7702-delegate',
          '0x5FbDB2315678afecb367f032d93F642f64180aa3',
          '--eip7702-delegate',
          '0x000000000000000000000000000000000000dEaD',
        ],
        {},
        '--eip7702-delegate / LATCHKEY_KMS_EIP7702_DELEGATES names 2 contracts, but the consent frame signs for one batch executor: name one while the frames are served',
      ],
      [
        'an action --mfa-required does not know',
        ['--mfa-required', 'export,withdraw'],
        {},
        '--mfa-required: unknown action withdraw: one of sign-in, export, add-login, add-key, grant, or tx-over:<wei> (see latchkey-kms --help)',
      ],
      [
        'init-organization without a store',
        // The generator point: a valid compressed P-256 key.
        ['init-organization', '--name', 'Acme', '--public-key', '036b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296'],
        {},
        "init-organization writes to the kms's store: set --db / LATCHKEY_KMS_DB or DATABASE_URL or --database-url-file / DATABASE_URL_FILE, as the kms has them",
      ],
      [
        'init-organization with a key that is no public key',
        ['init-organization', '--db', 'kms.db', '--name', 'Acme', '--public-key', '04abc'],
        {},
        '--public-key must be a compressed P-256 public key (66 hex characters starting 02 or 03), got "04abc" (see latchkey-kms init-organization --help)',
      ],
    ])('error: %s exits 2 with one line, before listening', async (_, args, env, message) => {
      // A free port, so that a bin that wrongly starts would not collide; commands take none.
      const run = await command(args[0]?.startsWith('-') === false ? args : ['--port', String(await getFreePort()), ...args], env)
      expect([run.code, run.stderr, run.stdout]).toEqual([2, `latchkey-kms: ${message}\n`, ''])
    })

    test('error: an unreachable PostgreSQL exits 1 with one line that hides its password', async () => {
      const closedPort = await getFreePort()
      const run = await command(['--port', String(await getFreePort())], {
        DATABASE_URL: `postgres://kms:pg-secret-password@127.0.0.1:${closedPort}/kms`,
        LATCHKEY_KMS_MASTER_KEY: 'ab'.repeat(32),
      })
      expect([run.code, run.stdout]).toEqual([1, ''])
      expect(run.stderr).toMatch(
        new RegExp(`^latchkey-kms: could not open the store \\(postgres postgres://\\*\\*\\*@127\\.0\\.0\\.1:${closedPort}/kms\\): .*ECONNREFUSED.*\\n$`),
      )
    })

    test('error: a SQLite file in a directory that does not exist exits 1 with one line', async () => {
      const run = await command(['--port', String(await getFreePort()), '--db', '/nonexistent/dir/kms.db'], { LATCHKEY_KMS_MASTER_KEY: 'ab'.repeat(32) })
      expect([run.code, run.stderr, run.stdout]).toEqual([
        1,
        'latchkey-kms: could not open the store (sqlite /nonexistent/dir/kms.db): Cannot open database because the directory does not exist\n',
        '',
      ])
    })

    test('error: a port in use exits 1 with one line', async () => {
      const holder = createServer()
      const port = await getFreePort()
      await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve))
      try {
        const run = await command(['--port', String(port)])
        expect([run.code, run.stderr, run.stdout]).toEqual([1, `latchkey-kms: 127.0.0.1:${port} is already in use; choose another port\n`, ''])
      } finally {
        holder.close()
      }
    })
  })
