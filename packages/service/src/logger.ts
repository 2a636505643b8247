import { AsyncLocalStorage } from 'node:async_hooks'
import { type DestinationStream, type Logger, pino } from 'pino'

export type { Logger } from 'pino'

/** pino's levels, and `silent`. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

export type CreateLoggerOptions = {
  /** The service's name, on every line as `service`. */
  name: string
  /** Default `info`. */
  level?: LogLevel | undefined
  /**
   * Texts no line may show (keys, passwords, tokens the service was configured with): replaced by
   * `[redacted]` wherever they appear, as a last line of defence behind never logging them. Texts
   * shorter than 8 characters are not matched, so a short word is not cut out of every line.
   */
  secrets?: readonly string[] | undefined
  /** Default: standard output, written synchronously so no line is lost when the process exits. */
  destination?: DestinationStream | undefined
}

/** The request being handled, so every line logged while handling it carries its id. */
const requestContext = new AsyncLocalStorage<{ requestId: string }>()

/**
 * Runs `work` as part of the request `requestId`: every line logged from it (and from what it
 * awaits) carries `reqId`.
 *
 * @example
 * withRequestId('3f2a…', () => handle(request, response))
 */
export function withRequestId<result>(requestId: string, work: () => result): result {
  return requestContext.run({ requestId }, work)
}

/**
 * The id of the request being handled, if any.
 *
 * @example
 * const id = currentRequestId() // '3f2a…' inside a request, undefined outside
 */
export function currentRequestId(): string | undefined {
  return requestContext.getStore()?.requestId
}

/**
 * Fields that hold credentials if a caller ever logs a request, a response or a settings object:
 * pino removes them before the line is written.
 */
const REDACTED_PATHS = [
  'headers',
  '*.headers',
  'authorization',
  '*.authorization',
  'cookie',
  '*.cookie',
  'password',
  '*.password',
  'secret',
  '*.secret',
  'token',
  '*.token',
  'privateKey',
  '*.privateKey',
  'apiPrivateKey',
  '*.apiPrivateKey',
  'masterKey',
  '*.masterKey',
  'signerPrivateKey',
  '*.signerPrivateKey',
]

/**
 * A pino logger writing one JSON object a line: `level` as a word, `time` in ISO 8601, `service`,
 * `reqId` inside a request, and the message. Credential-named fields are removed and the given
 * `secrets` are replaced by `[redacted]` wherever they would appear.
 *
 * @example
 * const logger = createLogger({ name: 'latchkey-kms', level: 'info', secrets: [masterKeyHex] })
 * logger.info({ url }, 'kms listening')
 */
export function createLogger(options: CreateLoggerOptions): Logger {
  const secrets = scrubbable(options.secrets ?? [])
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: options.name },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => {
        const requestId = currentRequestId()
        return requestId === undefined ? {} : { reqId: requestId }
      },
      redact: { paths: REDACTED_PATHS, remove: true },
      hooks: secrets.length ? { streamWrite: (line) => replaceAll(line, secrets) } : {},
    },
    options.destination ?? pino.destination({ dest: 1, sync: true }),
  )
}

/** The secrets as they may appear in a line (also JSON-escaped), long enough to match, longest first. */
function scrubbable(secrets: readonly string[]): string[] {
  return (
    [...new Set(secrets.flatMap((secret) => [secret, JSON.stringify(secret).slice(1, -1)]))]
      .filter((secret) => secret.length >= 8)
      // Longest first: a secret that contains another is replaced whole.
      .sort((a, b) => b.length - a.length)
  )
}

/**
 * `line` with each of `secrets` (8 characters or more) replaced by `[redacted]`.
 *
 * @example
 * scrub('connect to postgres://kms:hunter22@db failed', ['hunter22']) // 'connect to postgres://kms:[redacted]@db failed'
 */
export function scrub(line: string, secrets: readonly string[]): string {
  return replaceAll(line, scrubbable(secrets))
}

function replaceAll(line: string, secrets: readonly string[]): string {
  let clean = line
  for (const secret of secrets) if (clean.includes(secret)) clean = clean.split(secret).join('[redacted]')
  return clean
}
