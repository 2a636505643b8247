import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { SettingsError } from './errors.js'

/** The environment a service reads its settings from (`process.env`, or a test's own). */
export type Environment = Readonly<Record<string, string | undefined>>

/**
 * One setting of a service: the flag and environment variable that give it, how its text becomes
 * a value, and its development default. Made by `text`, `port`, `integer`, `url`, `origin`,
 * `choice`, `toggle`, `secret` and `list`; read by `parseSettings`, listed by `settingsHelp`.
 */
export type Setting<value> = {
  /** `value`: a flag with a value or a variable; `switch`: a flag alone; `secret`: a variable, or a file named by a flag or a variable. */
  readonly kind: 'value' | 'switch' | 'secret'
  /** The flag without its dashes; for a secret, the flag that names its file. */
  readonly flag: string | undefined
  readonly env: string | undefined
  /** For a secret: the environment variable that names its file. */
  readonly fileEnv: string | undefined
  /** Repeatable flag; the environment variable holds a comma-separated list. */
  readonly multiple: boolean
  /** What --help shows after the flag, e.g. `<n>`. */
  readonly valueName: string
  readonly description: string
  /** The development default as --help shows it. */
  readonly defaultText: string | undefined
  /** NODE_ENV=production refuses to start when it is left to its default. */
  readonly requiredInProduction: boolean
  /** @internal Text to value; `label` names where the text came from, for the error. */
  readonly convert: (text: string, label: string) => unknown
  /** @internal The value when nothing gives the setting. */
  readonly fallback: () => value
  /** @internal Values the logs must never show, e.g. a URL's password. */
  readonly secretsOf: (value: unknown) => readonly string[]
}

type SettingOptions = {
  /** The flag without its dashes, e.g. `port` for `--port`. */
  flag?: string | undefined
  /** The environment variable, e.g. `PORT`. */
  env?: string | undefined
  description: string
  /** What --help shows after the flag. */
  valueName?: string | undefined
  /** NODE_ENV=production refuses to start unless it is given. */
  production?: 'required' | undefined
}

type Convert<value> = (text: string, label: string) => value

function valueSetting<value>(
  options: SettingOptions & { default?: value | undefined },
  convert: Convert<value>,
  valueName: string,
  secretsOf: (value: value) => readonly string[] = () => [],
): Setting<value> {
  if (!options.flag && !options.env) throw new TypeError(`a setting needs a flag or an environment variable: ${options.description}`)
  const fallback = options.default
  return {
    kind: 'value',
    flag: options.flag,
    env: options.env,
    fileEnv: undefined,
    multiple: false,
    valueName: options.valueName ?? valueName,
    description: options.description,
    defaultText: fallback === undefined ? undefined : String(fallback),
    requiredInProduction: options.production === 'required',
    convert,
    fallback: () => fallback as value,
    secretsOf: secretsOf as (value: unknown) => readonly string[],
  }
}

/**
 * A text setting (not empty).
 *
 * @example
 * const settings = { host: text({ flag: 'host', env: 'HOST', default: '127.0.0.1', description: 'Address to listen on.' }) }
 */
export function text(options: SettingOptions & { default: string }): Setting<string>
export function text(options: SettingOptions): Setting<string | undefined>
export function text(options: SettingOptions & { default?: string }): Setting<string | undefined> {
  return valueSetting(
    options,
    (value, label) => {
      if (value.trim() === '') throw new SettingsError(`${label} must not be empty`)
      return value
    },
    '<text>',
  )
}

/**
 * A TCP port, 1 to 65535.
 *
 * @example
 * const settings = { port: port({ flag: 'port', env: 'PORT', default: 8090, description: 'Port to listen on.' }) }
 */
export function port(options: SettingOptions & { default: number }): Setting<number>
export function port(options: SettingOptions): Setting<number | undefined>
export function port(options: SettingOptions & { default?: number }): Setting<number | undefined> {
  return valueSetting(options, (value, label) => wholeNumber(value, label, 1, 65_535, 'a port number'), '<port>')
}

/**
 * A whole number within bounds.
 *
 * @example
 * const settings = { timeout: integer({ flag: 'shutdown-timeout', min: 1, max: 3600, default: 10, description: 'Seconds to finish in-flight requests.' }) }
 */
export function integer(options: SettingOptions & { min: number; max: number; default: number }): Setting<number>
export function integer(options: SettingOptions & { min: number; max: number }): Setting<number | undefined>
export function integer(options: SettingOptions & { min: number; max: number; default?: number }): Setting<number | undefined> {
  return valueSetting(options, (value, label) => wholeNumber(value, label, options.min, options.max, 'a whole number'), '<n>')
}

function wholeNumber(text: string, label: string, min: number, max: number, what: string): number {
  const value = Number(text)
  if (!/^\d+$/.test(text) || value < min || value > max) throw new SettingsError(`${label} must be ${what} from ${min} to ${max}, got "${text}"`)
  return value
}

/**
 * A URL with one of `protocols` (e.g. `['redis:', 'rediss:']`). Its password, if it has one, is
 * never logged.
 *
 * @example
 * const settings = { redis: url({ flag: 'redis', env: 'REDIS_URL', protocols: ['redis:', 'rediss:'], description: 'Keep messages in Redis.' }) }
 */
export function url(options: SettingOptions & { protocols: readonly string[]; default: string }): Setting<string>
export function url(options: SettingOptions & { protocols: readonly string[] }): Setting<string | undefined>
export function url(options: SettingOptions & { protocols: readonly string[]; default?: string }): Setting<string | undefined> {
  return valueSetting(
    options,
    (value, label) => checkUrl(value, label, options.protocols),
    '<url>',
    (value) => (value ? urlSecrets(value) : []),
  )
}

/**
 * `text` when it is a URL with one of `protocols`; otherwise a SettingsError naming `label`.
 *
 * @example
 * checkUrl('redis://127.0.0.1:6379', '--redis', ['redis:', 'rediss:'])
 */
export function checkUrl(text: string, label: string, protocols: readonly string[]): string {
  let parsed: URL
  try {
    parsed = new URL(text)
  } catch {
    throw new SettingsError(
      `${label} must be a URL starting with ${protocols.map((protocol) => `${protocol}//`).join(' or ')}, got ${JSON.stringify(withoutCredentials(text))}`,
    )
  }
  if (!protocols.includes(parsed.protocol))
    throw new SettingsError(
      `${label} must start with ${protocols.map((protocol) => `${protocol}//`).join(' or ')}, got ${JSON.stringify(withoutCredentials(text))}`,
    )
  if (!parsed.hostname && parsed.protocol !== 'file:') throw new SettingsError(`${label} has no host: ${JSON.stringify(withoutCredentials(text))}`)
  return text
}

/**
 * A URL as logs and messages may show it: user and password replaced by `***`.
 *
 * @example
 * withoutCredentials('postgres://kms:s3cret@db.internal/kms') // 'postgres://***@db.internal/kms'
 */
export function withoutCredentials(text: string): string {
  // Also without a scheme: a malformed URL may still carry a password before its host.
  const match = /^([a-z][a-z0-9+.-]*:\/\/)?[^/?#]*@/i.exec(text)
  return match ? `${match[1] ?? ''}***@${text.slice(match[0].length)}` : text
}

/** What of a URL must stay out of logs: the whole URL and its password, when it has one. */
function urlSecrets(text: string): string[] {
  const match = /^[a-z][a-z0-9+.-]*:\/\/([^@/?#]*)@/i.exec(text)
  if (!match) return []
  const password = match[1]!.split(':').slice(1).join(':')
  const decoded = safeDecode(password)
  return [text, password, decoded].filter((secret) => secret !== '')
}

const safeDecode = (text: string) => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * A browser origin (`https://app.example`, `http://localhost:5173`): scheme, host and port, no
 * path. A wildcard is refused: list each origin.
 *
 * @example
 * const settings = { origins: list(origin({ flag: 'allowed-origin', env: 'LATCHKEY_ALLOWED_ORIGINS', description: 'Browser origins.' })) }
 */
export function origin(options: SettingOptions & { default: string }): Setting<string>
export function origin(options: SettingOptions): Setting<string | undefined>
export function origin(options: SettingOptions & { default?: string }): Setting<string | undefined> {
  return valueSetting(options, checkOrigin, '<origin>')
}

/**
 * `text` when it is exactly a browser origin; otherwise a SettingsError naming `label`.
 *
 * @example
 * checkOrigin('https://app.example', '--allowed-origin')
 */
export function checkOrigin(text: string, label: string): string {
  if (text.includes('*')) throw new SettingsError(`${label} does not take a wildcard (${JSON.stringify(text)}): list each origin, e.g. https://app.example`)
  let parsed: URL | undefined
  try {
    parsed = new URL(text)
  } catch {
    parsed = undefined
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.origin !== text)
    throw new SettingsError(
      `${label} must be an origin like https://app.example or http://localhost:5173 (no path, no trailing slash), got ${JSON.stringify(text)}`,
    )
  return text
}

/**
 * One of a few words.
 *
 * @example
 * const settings = { level: choice({ flag: 'log-level', env: 'LOG_LEVEL', values: ['info', 'debug'], default: 'info', description: 'Log level.' }) }
 */
export function choice<const value extends string>(options: SettingOptions & { values: readonly value[]; default: value }): Setting<value>
export function choice<const value extends string>(options: SettingOptions & { values: readonly value[] }): Setting<value | undefined>
export function choice<const value extends string>(options: SettingOptions & { values: readonly value[]; default?: value }): Setting<value | undefined> {
  return valueSetting(
    options,
    (text, label) => {
      if (!(options.values as readonly string[]).includes(text))
        throw new SettingsError(`${label} must be one of ${options.values.join(', ')}, got ${JSON.stringify(text)}`)
      return text as value
    },
    `<${options.values.join('|')}>`,
  )
}

/**
 * A value that takes its own conversion (e.g. `chainId=url`); `convert` throws a SettingsError
 * naming `label` for bad text.
 *
 * @example
 * const settings = { rpc: list(custom({ flag: 'rpc', valueName: '<chainId>=<url>', description: 'A chain RPC.', convert: parseRpc })) }
 */
export function custom<value>(
  options: SettingOptions & { convert: Convert<value>; default?: value; secretsOf?: (value: value) => readonly string[] },
): Setting<value | undefined> {
  return valueSetting<value | undefined>(options, options.convert, '<value>', (value) => (value === undefined ? [] : (options.secretsOf?.(value) ?? [])))
}

/**
 * A flag alone (`--memory`), or its variable set to `1`, `true`, `0` or `false`. Default false.
 *
 * @example
 * const settings = { memory: toggle({ flag: 'memory', description: 'Keep messages in memory only.' }) }
 */
export function toggle(options: Omit<SettingOptions, 'valueName' | 'production'>): Setting<boolean> {
  if (!options.flag && !options.env) throw new TypeError(`a setting needs a flag or an environment variable: ${options.description}`)
  return {
    kind: 'switch',
    flag: options.flag,
    env: options.env,
    fileEnv: undefined,
    multiple: false,
    valueName: '',
    description: options.description,
    defaultText: undefined,
    requiredInProduction: false,
    convert: (text, label) => {
      if (/^(1|true|yes)$/i.test(text)) return true
      if (/^(0|false|no)$/i.test(text)) return false
      throw new SettingsError(`${label} must be 1, true, 0 or false, got ${JSON.stringify(text)}`)
    },
    fallback: () => false,
    secretsOf: () => [],
  }
}

/**
 * A secret: from its environment variable, or from a file named by `--<fileFlag>` or the variable
 * `<env>_FILE` (trailing whitespace trimmed). Never a flag's value, which other users of the
 * machine could read in the process list. Its text never appears in a log line.
 *
 * @example
 * const settings = { masterKey: secret({ env: 'LATCHKEY_KMS_MASTER_KEY', fileFlag: 'master-key-file', description: 'Seals key material.', convert: hexBytes(32) }) }
 */
export function secret<value = string>(
  options: Omit<SettingOptions, 'flag' | 'valueName'> & { env: string; fileFlag: string; convert?: Convert<value> },
): Setting<value | undefined> {
  const convert = options.convert ?? ((text: string) => text as value)
  return {
    kind: 'secret',
    flag: options.fileFlag,
    env: options.env,
    fileEnv: `${options.env}_FILE`,
    multiple: false,
    valueName: '<path>',
    description: options.description,
    defaultText: undefined,
    requiredInProduction: options.production === 'required',
    convert,
    fallback: () => undefined,
    secretsOf: () => [],
  }
}

/**
 * A URL that carries a password (a database's, an SMTP server's), so it is a secret: from its
 * environment variable or a file, checked to have one of `protocols`; neither the URL nor its
 * password is ever logged.
 *
 * @example
 * const settings = { databaseUrl: secretUrl({ env: 'DATABASE_URL', fileFlag: 'database-url-file', protocols: ['postgres:', 'postgresql:'], description: 'PostgreSQL.' }) }
 */
export function secretUrl(
  options: Omit<SettingOptions, 'flag' | 'valueName'> & { env: string; fileFlag: string; protocols: readonly string[] },
): Setting<string | undefined> {
  return {
    ...secret({ ...options, convert: (text, label) => checkUrl(text, label, options.protocols) }),
    secretsOf: (value) => (typeof value === 'string' ? urlSecrets(value) : []),
  }
}

/**
 * A repeatable setting: the flag given several times, or the variable as a comma-separated list.
 *
 * @example
 * const settings = { origins: list(origin({ flag: 'allowed-origin', env: 'LATCHKEY_ALLOWED_ORIGINS', description: 'Browser origins.' }), { default: ['http://localhost:5173'] }) }
 */
export function list<value>(setting: Setting<value | undefined>, options: { default?: readonly value[] } = {}): Setting<readonly value[]> {
  if (setting.kind !== 'value') throw new TypeError('only value settings can be lists')
  const fallback = options.default ?? []
  return {
    ...setting,
    multiple: true,
    defaultText: fallback.length ? fallback.join(',') : undefined,
    fallback: () => fallback,
    secretsOf: (values) => (values as readonly value[]).flatMap((value) => setting.secretsOf(value)),
  }
}

/** Any setting, as a record of them holds it. */
// biome-ignore lint/suspicious/noExplicitAny: a record of settings holds settings of every value type
export type AnySetting = Setting<any>

/** The values a record of settings gives. */
export type SettingValues<settings extends Record<string, AnySetting>> = {
  -readonly [key in keyof settings]: settings[key] extends Setting<infer value> ? value : never
}

export type ParsedSettings<settings extends Record<string, AnySetting>> = {
  readonly values: SettingValues<settings>
  /** The settings given by a flag, a variable or a file (not left to their default). */
  readonly given: ReadonlySet<keyof settings>
  /** Texts no log line may show: every secret's, and the passwords of URLs. */
  readonly secrets: readonly string[]
  /** --help or -h was given. */
  readonly help: boolean
  /** --version was given. */
  readonly version: boolean
}

/**
 * Reads `settings` from command-line `args` (flags win) and `env` (an empty variable counts as
 * unset). Throws a SettingsError, with one line naming the flag or variable, for an unknown flag,
 * a malformed value, a secret given twice or a secret file that cannot be read.
 *
 * @example
 * const { values } = parseSettings({ port: port({ flag: 'port', env: 'PORT', default: 8090, description: 'Port.' }) }, process.argv.slice(2), process.env)
 */
export function parseSettings<const settings extends Record<string, AnySetting>>(
  settings: settings,
  args: readonly string[],
  env: Environment,
): ParsedSettings<settings> {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
    version: { type: 'boolean' },
  }
  for (const setting of Object.values(settings)) {
    if (!setting.flag) continue
    if (options[setting.flag]) throw new TypeError(`--${setting.flag} is defined twice`)
    options[setting.flag] = setting.kind === 'switch' ? { type: 'boolean' } : { type: 'string', multiple: setting.multiple }
  }
  let flags: Record<string, string | boolean | (string | boolean)[] | undefined>
  try {
    flags = parseArgs({ args: [...args], options, strict: true, allowPositionals: false }).values
  } catch (error) {
    throw new SettingsError(argumentProblem(error as Error & { code?: string }))
  }
  if (flags['help'] || flags['version'])
    return { values: {} as SettingValues<settings>, given: new Set(), secrets: [], help: flags['help'] === true, version: flags['version'] === true }

  const values: Record<string, unknown> = {}
  const given = new Set<keyof settings>()
  const secrets: string[] = []
  const fromEnv = (name: string | undefined) => (name === undefined || env[name] === undefined || env[name] === '' ? undefined : env[name])
  for (const [key, setting] of Object.entries(settings)) {
    const flagValue = setting.flag ? flags[setting.flag] : undefined
    let value: unknown
    if (setting.kind === 'secret') {
      const direct = fromEnv(setting.env)
      const fileFromFlag = typeof flagValue === 'string' ? flagValue : undefined
      const fileFromEnv = fromEnv(setting.fileEnv)
      const [file, fileLabel] = fileFromFlag !== undefined ? [fileFromFlag, `--${setting.flag}`] : [fileFromEnv, setting.fileEnv!]
      if (direct !== undefined && file !== undefined) throw new SettingsError(`set ${setting.env} or ${fileLabel}, not both`)
      if (direct !== undefined) value = readSecret(setting, direct, setting.env!, secrets)
      else if (file !== undefined) value = readSecret(setting, readSecretFile(file, fileLabel), `${fileLabel} (${file})`, secrets)
      else value = setting.fallback()
      if (direct !== undefined || file !== undefined) given.add(key)
    } else if (setting.kind === 'switch') {
      const text = fromEnv(setting.env)
      if (flagValue === true) value = true
      else if (text !== undefined) value = setting.convert(text, setting.env!)
      else value = setting.fallback()
      if (flagValue === true || text !== undefined) given.add(key)
    } else {
      const texts: [text: string, label: string][] =
        flagValue !== undefined
          ? [flagValue].flat().map((text) => [String(text), `--${setting.flag}`])
          : (() => {
              const text = fromEnv(setting.env)
              if (text === undefined) return []
              return setting.multiple
                ? text
                    .split(',')
                    .map((part) => part.trim())
                    .filter(Boolean)
                    .map((part): [string, string] => [part, setting.env!])
                : [[text, setting.env!]]
            })()
      if (texts.length === 0) value = setting.fallback()
      else {
        const converted = texts.map(([text, label]) => setting.convert(text, label))
        value = setting.multiple ? converted : converted[0]
        given.add(key)
      }
    }
    secrets.push(...setting.secretsOf(value))
    values[key] = value
  }
  return { values: values as SettingValues<settings>, given, secrets: [...new Set(secrets)], help: false, version: false }
}

function readSecret(setting: AnySetting, text: string, label: string, secrets: string[]): unknown {
  secrets.push(text)
  return setting.convert(text, label)
}

function readSecretFile(path: string, label: string): string {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : (error as Error).message
    throw new SettingsError(`${label}: cannot read ${JSON.stringify(path)} (${why})`)
  }
  const trimmed = text.trimEnd()
  if (trimmed === '') throw new SettingsError(`${label}: ${JSON.stringify(path)} is empty`)
  return trimmed
}

/** parseArgs's complaint as one short line. */
function argumentProblem(error: Error & { code?: string }): string {
  const option = /'(-[^' ]+)/.exec(error.message)?.[1]
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option ?? error.message}`
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return option && /argument missing/.test(error.message) ? `${option} needs a value` : `${option ?? 'an option'} does not take a value`
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${/'([^']*)'/.exec(error.message)?.[1] ?? ''}`.trim()
    default:
      return error.message
  }
}

/**
 * How --help and error messages name a setting: `--port / PORT`, `--memory`, or for a secret
 * `LATCHKEY_KMS_MASTER_KEY or --master-key-file / LATCHKEY_KMS_MASTER_KEY_FILE`.
 *
 * @example
 * settingLabel(port({ flag: 'port', env: 'PORT', description: 'Port.' })) // '--port / PORT'
 */
export function settingLabel(setting: AnySetting): string {
  if (setting.kind === 'secret') return `${setting.env} or --${setting.flag} / ${setting.fileEnv}`
  return [setting.flag && `--${setting.flag}`, setting.env].filter(Boolean).join(' / ')
}

/**
 * The settings as --help lists them: the flag and variable on one line, the description and the
 * default under it.
 *
 * @example
 * console.log(settingsHelp(settings).join('\n'))
 */
export function settingsHelp(settings: Record<string, AnySetting>): string[] {
  const lines: string[] = []
  for (const setting of Object.values(settings)) {
    const flag = setting.flag ? `--${setting.flag}${setting.kind === 'switch' ? '' : ` ${setting.valueName}`}` : undefined
    const head =
      setting.kind === 'secret'
        ? `${setting.env}, or a file: ${flag} / ${setting.fileEnv}`
        : [flag, setting.env && (setting.kind === 'switch' ? `${setting.env}=1` : setting.env)].filter(Boolean).join(', ')
    const notes = [
      setting.multiple ? 'Repeatable; the variable takes a comma-separated list.' : undefined,
      setting.defaultText !== undefined ? `Default: ${setting.defaultText}.` : undefined,
      setting.requiredInProduction ? 'Required in production.' : undefined,
    ].filter(Boolean)
    lines.push(`  ${head}`, `      ${[setting.description, ...notes].join(' ')}`)
  }
  return lines
}

/**
 * The settings marked `production: 'required'` that were left to their default, by label: what
 * NODE_ENV=production refuses.
 *
 * @example
 * productionGaps(settings, parsed.given) // ['--allowed-origin / LATCHKEY_ALLOWED_ORIGINS']
 */
export function productionGaps<settings extends Record<string, AnySetting>>(settings: settings, given: ReadonlySet<keyof settings>): string[] {
  return Object.entries(settings)
    .filter(([key, setting]) => setting.requiredInProduction && !given.has(key))
    .map(([, setting]) => settingLabel(setting))
}

/**
 * A converter for secrets and keys given as hex: exactly `bytes` bytes, optionally 0x-prefixed.
 *
 * @example
 * const masterKey = secret({ env: 'LATCHKEY_KMS_MASTER_KEY', fileFlag: 'master-key-file', description: 'Seals key material.', convert: hexBytes(32) })
 */
export function hexBytes(bytes: number): Convert<Uint8Array> {
  return (text, label) => {
    const hex = text.trim().replace(/^0x/i, '')
    if (!new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`).test(hex)) throw new SettingsError(`${label} must be ${bytes} bytes as ${bytes * 2} hex characters`)
    return Uint8Array.from(Buffer.from(hex, 'hex'))
  }
}
