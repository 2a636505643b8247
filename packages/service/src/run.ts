import type { Server } from 'node:http'
import { SettingsError } from './errors.js'
import { type InflightRequest, withdrawReadiness } from './http.js'
import { createLogger, LOG_LEVELS, type Logger, type LogLevel, scrub } from './logger.js'
import { createMetrics, type Metrics, serveMetrics } from './metrics.js'
import {
  type AnySetting,
  choice,
  type Environment,
  integer,
  parseSettings,
  port as portSetting,
  productionGaps,
  type Setting,
  type SettingValues,
  settingsHelp,
  text,
  url,
} from './settings.js'
import { startTracing } from './tracing.js'

/** A service once it listens: what a shutdown needs. */
export type StartedService = {
  /** Stops accepting connections, finishes the requests in flight, closes the store. */
  stop(): Promise<void>
  /** Requests not yet answered, for the log line of a shutdown that runs out of time. */
  inflight(): readonly InflightRequest[]
}

export type ServiceContext = {
  /** JSON lines on standard output, at the configured level, with every configured secret scrubbed. */
  logger: Logger
  /** NODE_ENV=production. */
  production: boolean
  env: Environment
  /** The service's Prometheus metrics, served on `--metrics-port`; none without it (then nothing is counted). */
  metrics?: Metrics | undefined
}

/** A one-off command of a service's bin (e.g. `latchkey-kms init-organization`, or two words: `latchkey-kms audit verify`): it prints its result as JSON and exits. */
export type ServiceCommand<settings extends Record<string, AnySetting>> = {
  /** One line for --help. */
  summary: string
  settings: settings
  /** Its result is printed as JSON on standard output. Throw a SettingsError for bad input (exit 2); anything else exits 1. */
  run(values: SettingValues<settings>, context: Omit<ServiceContext, 'logger' | 'metrics'>): Promise<unknown>
}

/** The settings every service has: where it listens, how much it logs, how long a shutdown may take. */
export type BaseSettings = {
  host: Setting<string>
  port: Setting<number>
  logLevel: Setting<LogLevel>
  shutdownTimeout: Setting<number>
  shutdownDelay: Setting<number>
  metricsPort: Setting<number | undefined>
  metricsHost: Setting<string>
  otlpEndpoint: Setting<string | undefined>
}

export type ServiceDefinition<settings extends BaseSettings & Record<string, AnySetting>> = {
  /** The bin's name, e.g. `latchkey-kms`: it starts every error line. */
  name: string
  version: string
  /** What the service is, for --help. */
  summary: string
  settings: settings
  /**
   * Production checks beyond the settings marked `production: 'required'`: each entry names a
   * setting (flag and variable) that is left to a development default.
   */
  production?: ((values: SettingValues<settings>, given: ReadonlySet<keyof settings>) => readonly string[]) | undefined
  /** Lines --help adds after the options. */
  notes?: readonly string[] | undefined
  /** Opens the store and listens; throws (with a message fit for one line) when it cannot. */
  start(values: SettingValues<settings>, context: ServiceContext): Promise<StartedService>
  // biome-ignore lint/suspicious/noExplicitAny: each command has settings of its own
  commands?: Record<string, ServiceCommand<any>> | undefined
  /** Default `process.argv.slice(2)`. */
  argv?: readonly string[] | undefined
  /** Default `process.env`. */
  env?: Environment | undefined
}

/**
 * `host`, `port`, `logLevel`, `shutdownTimeout`, `shutdownDelay`, and the metrics and traces
 * settings (`metricsPort`, `metricsHost`, `otlpEndpoint`), as every service takes them.
 *
 * @example
 * const settings = { ...baseSettings({ port: 8090 }), db: text({ flag: 'db', env: 'LATCHKEY_KMS_DB', description: 'SQLite file.' }) }
 */
export function baseSettings(defaults: { port: number }): BaseSettings {
  return {
    host: text({ flag: 'host', env: 'HOST', default: '127.0.0.1', valueName: '<address>', description: 'Address to listen on (0.0.0.0 for every interface).' }),
    port: portSetting({ flag: 'port', env: 'PORT', default: defaults.port, description: 'Port to listen on.' }),
    logLevel: choice({ flag: 'log-level', env: 'LOG_LEVEL', values: LOG_LEVELS, default: 'info', description: 'Least severe log lines written.' }),
    shutdownTimeout: integer({
      flag: 'shutdown-timeout',
      env: 'LATCHKEY_SHUTDOWN_TIMEOUT',
      min: 1,
      max: 3600,
      default: 10,
      valueName: '<seconds>',
      description: 'On SIGTERM or SIGINT, how long in-flight requests may take before the process exits 1 and logs what it cut.',
    }),
    shutdownDelay: integer({
      flag: 'shutdown-delay',
      env: 'LATCHKEY_SHUTDOWN_DELAY',
      min: 0,
      max: 3600,
      default: 0,
      valueName: '<seconds>',
      description:
        'On SIGTERM or SIGINT, how long /readyz answers 503 while requests are still served, before the graceful shutdown starts (time for a load balancer to stop sending requests).',
    }),
    metricsPort: portSetting({
      flag: 'metrics-port',
      env: 'LATCHKEY_METRICS_PORT',
      description:
        "Serve Prometheus metrics at GET /metrics on this port (apart from the service's port, so it need not be exposed). Default: no metrics, and nothing counted.",
    }),
    metricsHost: text({
      flag: 'metrics-host',
      env: 'LATCHKEY_METRICS_HOST',
      default: '127.0.0.1',
      valueName: '<address>',
      description: 'Address the metrics port listens on (0.0.0.0 for a scraper in another container or pod).',
    }),
    otlpEndpoint: url({
      flag: 'otlp-endpoint',
      env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
      protocols: ['http:', 'https:'],
      valueName: '<url>',
      description:
        'Send OpenTelemetry traces to this OTLP/HTTP collector (the base URL: traces go to <url>/v1/traces), with W3C traceparent carried from the backend to the kms. Default: no traces, and nothing of OpenTelemetry loaded.',
    }),
  }
}

/** Exit codes of every service bin. */
export const EXIT = { ok: 0, failed: 1, badSettings: 2 } as const

/**
 * Runs a service bin: reads its settings (printing --help or --version), refuses development
 * defaults under NODE_ENV=production, starts it, and stops it gracefully on SIGTERM or SIGINT
 * within `--shutdown-timeout`. Anything that keeps it from starting is one line on standard
 * error, `<name>: <reason>`, and exit code 2 (bad settings) or 1 (could not start). A first
 * argument that is not a flag names one of `commands`.
 *
 * @example
 * await runService({ name: 'latchkey-relay', version, summary, settings, start: async (values, { logger }) => startRelay(values, logger) })
 */
export async function runService<settings extends BaseSettings & Record<string, AnySetting>>(definition: ServiceDefinition<settings>): Promise<void> {
  const argv = definition.argv ?? process.argv.slice(2)
  const env = definition.env ?? process.env
  const production = env['NODE_ENV'] === 'production'
  let secrets: readonly string[] = []
  const fail = (code: number, message: string): never => {
    process.stderr.write(`${definition.name}: ${scrub(message.replace(/\s*\n\s*/g, ' '), secrets)}\n`)
    process.exit(code)
  }
  const exitCodeOf = (error: unknown) => (error instanceof SettingsError ? EXIT.badSettings : EXIT.failed)

  let [first, ...rest] = argv
  // A command may have two words (`audit verify`): the longer name wins.
  const second = rest[0]
  if (first !== undefined && second !== undefined && !second.startsWith('-') && definition.commands?.[`${first} ${second}`]) {
    first = `${first} ${second}`
    rest = rest.slice(1)
  }
  if (first !== undefined && !first.startsWith('-')) {
    const command = definition.commands?.[first]
    if (!command) return fail(EXIT.badSettings, `unknown command ${JSON.stringify(first)} (see ${definition.name} --help)`)
    let parsed: ReturnType<typeof parseSettings<Record<string, AnySetting>>>
    try {
      parsed = parseSettings(command.settings, rest, env)
    } catch (error) {
      return fail(EXIT.badSettings, `${(error as Error).message} (see ${definition.name} ${first} --help)`)
    }
    secrets = parsed.secrets
    if (parsed.help) {
      process.stdout.write(`Usage: ${definition.name} ${first} [options]\n\n${command.summary}\n\nOptions:\n${settingsHelp(command.settings).join('\n')}\n`)
      return process.exit(EXIT.ok)
    }
    if (parsed.version) return void process.stdout.write(`${definition.version}\n`)
    const gaps = production ? productionGaps(command.settings, parsed.given) : []
    if (gaps.length) return fail(EXIT.badSettings, productionMessage(gaps))
    try {
      const result = await command.run(parsed.values, { production, env })
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
    } catch (error) {
      return fail(exitCodeOf(error), (error as Error).message)
    }
    return process.exit(EXIT.ok)
  }

  let parsed: ReturnType<typeof parseSettings<settings>>
  try {
    parsed = parseSettings(definition.settings, argv, env)
  } catch (error) {
    return fail(EXIT.badSettings, `${(error as Error).message} (see ${definition.name} --help)`)
  }
  secrets = parsed.secrets
  if (parsed.help) {
    process.stdout.write(helpText(definition as unknown as ServiceDefinition<BaseSettings & Record<string, AnySetting>>))
    return process.exit(EXIT.ok)
  }
  if (parsed.version) {
    process.stdout.write(`${definition.version}\n`)
    return process.exit(EXIT.ok)
  }
  const { values, given } = parsed
  const base = values as unknown as {
    host: string
    port: number
    logLevel: LogLevel
    shutdownTimeout: number
    shutdownDelay: number
    metricsPort: number | undefined
    metricsHost: string
    otlpEndpoint: string | undefined
  }
  if (production) {
    const gaps = [...productionGaps(definition.settings, given), ...(definition.production?.(values, given) ?? [])]
    if (gaps.length) return fail(EXIT.badSettings, productionMessage(gaps))
  }

  const logger = createLogger({ name: definition.name, level: base.logLevel, secrets })
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, `uncaught error: ${error.message}`)
    process.exit(EXIT.failed)
  })
  process.on('unhandledRejection', (reason) => {
    logger.fatal({ err: reason }, `unhandled rejection: ${(reason as Error)?.message ?? String(reason)}`)
    process.exit(EXIT.failed)
  })

  // A signal while the service starts (migrations, a database still coming up) is kept, not
  // fatal: the default action would end the process mid-start with no log. It stops as soon as
  // the start is done.
  let signalledWhileStarting: NodeJS.Signals | undefined
  const onEarlySignal = (signal: NodeJS.Signals) => {
    if (signalledWhileStarting) {
      logger.warn({ signal }, `${signal} again while starting: exiting now`)
      process.exit(EXIT.failed)
    }
    signalledWhileStarting = signal
    logger.info({ signal }, `${signal} while starting: stopping as soon as started`)
  }
  process.on('SIGTERM', onEarlySignal)
  process.on('SIGINT', onEarlySignal)

  // The metrics port listens first: a port already taken is a bad setting, refused before the service listens.
  let metrics: Metrics | undefined
  let metricsServer: Server | undefined
  if (base.metricsPort !== undefined) {
    metrics = createMetrics(definition.name)
    try {
      metricsServer = await serveMetrics(metrics, base.metricsHost, base.metricsPort)
    } catch (error) {
      return fail(EXIT.badSettings, `--metrics-port: ${startFailure(error, base.metricsHost, base.metricsPort)}`)
    }
  }
  // Without an endpoint no OpenTelemetry module is loaded (startTracing imports them).
  const tracing = base.otlpEndpoint
    ? await startTracing({ service: definition.name, endpoint: `${base.otlpEndpoint.replace(/\/+$/, '')}/v1/traces` })
    : undefined
  const closeObservability = async () => {
    if (metricsServer) {
      const closed = new Promise<void>((resolve) => metricsServer!.close(() => resolve()))
      // A scraper's kept-alive connection must not hold the stop.
      metricsServer.closeAllConnections()
      await closed
    }
    await tracing?.stop()
  }

  let started: StartedService
  try {
    started = await definition.start(values, { logger, production, env, metrics })
  } catch (error) {
    return fail(exitCodeOf(error), startFailure(error, base.host, base.port))
  } finally {
    process.off('SIGTERM', onEarlySignal)
    process.off('SIGINT', onEarlySignal)
  }

  let stopping = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal, inflight: started.inflight() }, `${signal} again: exiting now`)
      process.exit(EXIT.failed)
    }
    stopping = true
    if (base.shutdownDelay === 0) return stop(signal)
    // Load balancers and Kubernetes endpoints take a while to stop sending requests: until then
    // they are served as before, and only readiness says the process is going away.
    withdrawReadiness()
    logger.info(
      { signal, delaySeconds: base.shutdownDelay },
      `${signal}: not ready; still serving for ${base.shutdownDelay} s (--shutdown-delay), then stopping`,
    )
    setTimeout(() => stop(signal), base.shutdownDelay * 1000)
  }
  const stop = (signal: NodeJS.Signals) => {
    // Called first: by the time the line below is written, no new connection is accepted.
    const stopped = started.stop().then(closeObservability)
    const inflight = started.inflight().length
    logger.info(
      { signal, inflight, timeoutSeconds: base.shutdownTimeout },
      `${signal}: stopping; no new connections, finishing ${inflight} request${inflight === 1 ? '' : 's'} in flight`,
    )
    const deadline = setTimeout(() => {
      const cut = started.inflight()
      logger.error(
        { inflight: cut },
        `shutdown timeout of ${base.shutdownTimeout} s passed; exiting with ${cut.length} request${cut.length === 1 ? '' : 's'} cut: ${cut.map((request) => `${request.method} ${request.path}`).join(', ') || 'none (the store did not close)'}`,
      )
      process.exit(EXIT.failed)
    }, base.shutdownTimeout * 1000)
    stopped.then(
      () => {
        clearTimeout(deadline)
        logger.info('stopped')
        process.exit(EXIT.ok)
      },
      (error: unknown) => {
        clearTimeout(deadline)
        logger.error({ err: error }, `did not stop cleanly: ${(error as Error).message}`)
        process.exit(EXIT.failed)
      },
    )
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  if (signalledWhileStarting) {
    // Never announced as ready for long: no drain, straight to the graceful stop.
    stopping = true
    stop(signalledWhileStarting)
  }
}

function productionMessage(gaps: readonly string[]): string {
  return `refusing to start with development defaults in production (NODE_ENV=production): set ${gaps.join('; ')}`
}

/** Why a start failed, in one line: the common socket errors said plainly. */
function startFailure(error: unknown, host: string, port: number): string {
  const { code, address, port: failedPort } = error as NodeJS.ErrnoException & { address?: string; port?: number }
  const where = `${address ?? host}:${failedPort ?? port}`
  if (code === 'EADDRINUSE') return `${where} is already in use; choose another port`
  if (code === 'EACCES') return `not allowed to listen on ${where} (ports below 1024 need privileges)`
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return `cannot listen on ${where}: no such address on this machine (--host / HOST)`
  return (error as Error)?.message ?? String(error)
}

function helpText(definition: ServiceDefinition<BaseSettings & Record<string, AnySetting>>): string {
  const commands = Object.entries(definition.commands ?? {})
  const usage = [
    `Usage: ${definition.name} [options]`,
    ...commands.map(([name, command]) => `       ${definition.name} ${name} [options]   ${command.summary}`),
  ]
  return `${[
    ...usage,
    '',
    definition.summary,
    '',
    'Options (a flag, or the environment variable after it; a flag wins):',
    ...settingsHelp(definition.settings),
    '  -h, --help',
    `      This text${commands.length ? `; \`${definition.name} <command> --help\` for a command's options` : ''}.`,
    '  --version',
    '      The version.',
    '',
    'NODE_ENV=production refuses to start on a development default: every setting marked "Required in production" must be given.',
    ...(definition.notes ?? []),
    'Exit codes: 0 stopped cleanly (SIGTERM or SIGINT); 1 could not start, crashed, or stopped past --shutdown-timeout; 2 bad settings.',
  ].join('\n')}\n`
}
