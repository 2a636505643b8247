import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import {
  baseSettings,
  choice,
  custom,
  hexBytes,
  list,
  origin,
  parseSettings,
  port,
  productionGaps,
  SettingsError,
  secret,
  secretUrl,
  settingLabel,
  settingsHelp,
  text,
  toggle,
  url,
  withoutCredentials,
} from '../src/index.js'

const settings = {
  ...baseSettings({ port: 8090 }),
  db: text({ flag: 'db', env: 'TEST_DB', valueName: '<path>', description: 'A file.' }),
  redis: url({ flag: 'redis', env: 'REDIS_URL', protocols: ['redis:', 'rediss:'], description: 'Redis.' }),
  memory: toggle({ flag: 'memory', env: 'TEST_MEMORY', description: 'In memory.' }),
  origins: list(origin({ flag: 'allowed-origin', env: 'TEST_ORIGINS', production: 'required', description: 'Origins.' }), {
    default: ['http://localhost:5173'],
  }),
  mode: choice({ flag: 'mode', env: 'TEST_MODE', values: ['fast', 'safe'], default: 'safe', description: 'A mode.' }),
  masterKey: secret({ env: 'TEST_MASTER_KEY', fileFlag: 'master-key-file', convert: hexBytes(32), production: 'required', description: 'A key.' }),
  databaseUrl: secretUrl({ env: 'DATABASE_URL', fileFlag: 'database-url-file', protocols: ['postgres:'], description: 'PostgreSQL.' }),
  pair: custom({
    flag: 'pair',
    description: 'a=b',
    convert: (entry, label) => {
      const [left, right] = entry.split('=')
      if (!left || !right) throw new SettingsError(`${label} must look like a=b`)
      return [left, right] as const
    },
  }),
}

const key = 'ab'.repeat(32)
const parse = (args: string[], env: Record<string, string | undefined> = {}) => parseSettings(settings, args, env)
const problem = (args: string[], env: Record<string, string | undefined> = {}) => {
  try {
    parse(args, env)
  } catch (error) {
    expect(error).toBeInstanceOf(SettingsError)
    return (error as Error).message
  }
  throw new Error('no error')
}
const secretFile = async (contents: string) => {
  const path = join(await mkdtemp(join(tmpdir(), 'latchkey-settings-')), 'secret')
  await writeFile(path, contents, { mode: 0o600 })
  return path
}

describe('parseSettings', () => {
  test('default: development defaults when nothing is given', () => {
    const { values, given, secrets } = parse([])
    expect(values).toEqual({
      host: '127.0.0.1',
      port: 8090,
      logLevel: 'info',
      shutdownTimeout: 10,
      shutdownDelay: 0,
      metricsPort: undefined,
      metricsHost: '127.0.0.1',
      otlpEndpoint: undefined,
      db: undefined,
      redis: undefined,
      memory: false,
      origins: ['http://localhost:5173'],
      mode: 'safe',
      masterKey: undefined,
      databaseUrl: undefined,
      pair: undefined,
    })
    expect([...given]).toEqual([])
    expect(secrets).toEqual([])
  })

  test('behavior: a flag wins over its variable; an empty variable counts as unset', () => {
    const { values, given } = parse(['--port', '9000', '--memory'], { PORT: '9001', HOST: '', TEST_DB: 'data.db', TEST_MEMORY: '0' })
    expect([values.port, values.host, values.db, values.memory]).toEqual([9000, '127.0.0.1', 'data.db', true])
    expect([...given].sort()).toEqual(['db', 'memory', 'port'])
  })

  test('behavior: a list from a repeated flag, or a comma-separated variable', () => {
    expect(parse(['--allowed-origin', 'https://a.example', '--allowed-origin', 'https://b.example']).values.origins).toEqual([
      'https://a.example',
      'https://b.example',
    ])
    expect(parse([], { TEST_ORIGINS: 'https://a.example, https://b.example,' }).values.origins).toEqual(['https://a.example', 'https://b.example'])
  })

  test('behavior: a secret from its variable or from a file (flag or variable), trailing newline trimmed; each is a secret of the logs', async () => {
    expect(parse([], { TEST_MASTER_KEY: key }).values.masterKey).toEqual(Uint8Array.from(Buffer.from(key, 'hex')))
    const path = await secretFile(`${key}\n`)
    const fromFlag = parse(['--master-key-file', path])
    expect(fromFlag.values.masterKey).toEqual(Uint8Array.from(Buffer.from(key, 'hex')))
    expect(fromFlag.secrets).toEqual([key])
    expect(parse([], { TEST_MASTER_KEY_FILE: path }).given.has('masterKey')).toBe(true)
  })

  test('behavior: a URL with a password: the URL and the password (as written and decoded) are secrets', () => {
    const { values, secrets } = parse(['--redis', 'redis://relay:p%40ss-word-1@cache.internal:6379'], {
      DATABASE_URL: 'postgres://kms:hunter22@db.internal/kms',
    })
    expect(values.redis).toBe('redis://relay:p%40ss-word-1@cache.internal:6379')
    expect(secrets).toEqual([
      'redis://relay:p%40ss-word-1@cache.internal:6379',
      'p%40ss-word-1',
      'p@ss-word-1',
      'postgres://kms:hunter22@db.internal/kms',
      'hunter22',
    ])
  })

  test('behavior: --help and --version are reported, not parsed further', () => {
    expect(parse(['--help', '--port', 'nonsense'])).toMatchObject({ help: true, version: false })
    expect(parse(['--version'])).toMatchObject({ help: false, version: true })
  })

  test.each<[string, string[], Record<string, string>, string]>([
    ['an unknown flag', ['--bogus'], {}, 'unknown option --bogus'],
    ['a flag without its value', ['--port'], {}, '--port needs a value'],
    ['a positional argument', ['serve'], {}, 'unexpected argument serve'],
    ['a port out of range', [], { PORT: '0' }, 'PORT must be a port number from 1 to 65535, got "0"'],
    ['a port that is no number', ['--port', '80a'], {}, '--port must be a port number from 1 to 65535, got "80a"'],
    ['a timeout out of range', ['--shutdown-timeout', '0'], {}, '--shutdown-timeout must be a whole number from 1 to 3600, got "0"'],
    ['an unknown log level', [], { LOG_LEVEL: 'verbose' }, 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"'],
    ['an empty text', ['--db', ' '], {}, '--db must not be empty'],
    ['a URL of another protocol', [], { REDIS_URL: 'http://cache' }, 'REDIS_URL must start with redis:// or rediss://, got "http://cache"'],
    ['a URL without its scheme, its password hidden', ['--redis', 'relay:secret@cache'], {}, '--redis must start with redis:// or rediss://, got "***@cache"'],
    ['a string that is no URL', ['--redis', 'redis//cache'], {}, '--redis must be a URL starting with redis:// or rediss://, got "redis//cache"'],
    ['a wildcard origin', ['--allowed-origin', '*'], {}, '--allowed-origin does not take a wildcard ("*"): list each origin, e.g. https://app.example'],
    [
      'an origin with a path',
      [],
      { TEST_ORIGINS: 'https://a.example/app' },
      'TEST_ORIGINS must be an origin like https://app.example or http://localhost:5173 (no path, no trailing slash), got "https://a.example/app"',
    ],
    ['a switch variable that is no boolean', [], { TEST_MEMORY: 'maybe' }, 'TEST_MEMORY must be 1, true, 0 or false, got "maybe"'],
    ['a malformed secret, not echoed', [], { TEST_MASTER_KEY: 'not-hex-and-secret' }, 'TEST_MASTER_KEY must be 32 bytes as 64 hex characters'],
    ['a secret given twice', ['--master-key-file', '/x'], { TEST_MASTER_KEY: key }, 'set TEST_MASTER_KEY or --master-key-file, not both'],
    [
      'a secret file that does not exist',
      [],
      { TEST_MASTER_KEY_FILE: '/nonexistent/key' },
      'TEST_MASTER_KEY_FILE: cannot read "/nonexistent/key" (no such file)',
    ],
    ['a secret URL of another protocol', [], { DATABASE_URL: 'mysql://db/kms' }, 'DATABASE_URL must start with postgres://, got "mysql://db/kms"'],
    ['a custom value', ['--pair', 'a'], {}, '--pair must look like a=b'],
  ])('error: %s', (_, args, env, message) => {
    expect(problem(args, env)).toBe(message)
  })

  test('error: an empty secret file', async () => {
    const path = await secretFile('\n')
    expect(problem(['--master-key-file', path])).toBe(`--master-key-file: ${JSON.stringify(path)} is empty`)
  })
})

describe('production and help', () => {
  test('productionGaps: the settings marked required that were left to their default, by flag and variable', () => {
    expect(productionGaps(settings, parse([]).given)).toEqual([
      '--allowed-origin / TEST_ORIGINS',
      'TEST_MASTER_KEY or --master-key-file / TEST_MASTER_KEY_FILE',
    ])
    expect(productionGaps(settings, parse(['--allowed-origin', 'https://app.example'], { TEST_MASTER_KEY: key }).given)).toEqual([])
  })

  test('settingLabel', () => {
    expect([
      settingLabel(settings.port),
      settingLabel(settings.masterKey),
      settingLabel(settings.pair),
      settingLabel(port({ env: 'ONLY_ENV', description: '' })),
    ]).toEqual(['--port / PORT', 'TEST_MASTER_KEY or --master-key-file / TEST_MASTER_KEY_FILE', '--pair', 'ONLY_ENV'])
  })

  test('settingsHelp: every setting with its flag, variable, default and production note', () => {
    expect(settingsHelp(settings).join('\n')).toMatchInlineSnapshot(`
      "  --host <address>, HOST
            Address to listen on (0.0.0.0 for every interface). Default: 127.0.0.1.
        --port <port>, PORT
            Port to listen on. Default: 8090.
        --log-level <fatal|error|warn|info|debug|trace|silent>, LOG_LEVEL
            Least severe log lines written. Default: info.
        --shutdown-timeout <seconds>, LATCHKEY_SHUTDOWN_TIMEOUT
            On SIGTERM or SIGINT, how long in-flight requests may take before the process exits 1 and logs what it cut. Default: 10.
        --shutdown-delay <seconds>, LATCHKEY_SHUTDOWN_DELAY
            On SIGTERM or SIGINT, how long /readyz answers 503 while requests are still served, before the graceful shutdown starts (time for a load balancer to stop sending requests). Default: 0.
        --metrics-port <port>, LATCHKEY_METRICS_PORT
            Serve Prometheus metrics at GET /metrics on this port (apart from the service's port, so it need not be exposed). Default: no metrics, and nothing counted.
        --metrics-host <address>, LATCHKEY_METRICS_HOST
            Address the metrics port listens on (0.0.0.0 for a scraper in another container or pod). Default: 127.0.0.1.
        --otlp-endpoint <url>, OTEL_EXPORTER_OTLP_ENDPOINT
            Send OpenTelemetry traces to this OTLP/HTTP collector (the base URL: traces go to <url>/v1/traces), with W3C traceparent carried from the backend to the kms. Default: no traces, and nothing of OpenTelemetry loaded.
        --db <path>, TEST_DB
            A file.
        --redis <url>, REDIS_URL
            Redis.
        --memory, TEST_MEMORY=1
            In memory.
        --allowed-origin <origin>, TEST_ORIGINS
            Origins. Repeatable; the variable takes a comma-separated list. Default: http://localhost:5173. Required in production.
        --mode <fast|safe>, TEST_MODE
            A mode. Default: safe.
        TEST_MASTER_KEY, or a file: --master-key-file <path> / TEST_MASTER_KEY_FILE
            A key. Required in production.
        DATABASE_URL, or a file: --database-url-file <path> / DATABASE_URL_FILE
            PostgreSQL.
        --pair <value>
            a=b"
    `)
  })

  test('withoutCredentials', () => {
    expect(withoutCredentials('postgres://kms:s3cret@db.internal:5432/kms?sslmode=require')).toBe('postgres://***@db.internal:5432/kms?sslmode=require')
    expect(withoutCredentials('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379')
    expect(withoutCredentials('kms:s3cret@db.internal')).toBe('***@db.internal')
  })
})
