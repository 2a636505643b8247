import { createServer } from 'node:net'

/** Where an instance is in its life. */
export type InstanceStatus = 'idle' | 'starting' | 'started' | 'stopping'

/**
 * A service of the local stack (a chain, a server) that starts and stops the same way for
 * `npm start`, tests and benchmarks: prool's `Instance`, trimmed to what we use.
 */
export type Instance = {
  readonly name: string
  readonly host: string
  readonly port: number
  readonly url: string
  readonly status: InstanceStatus
  /** Resolves once the service answers. Starting a started instance does nothing. */
  start(): Promise<void>
  /** Resolves once the service is gone and its port is free. Stopping a stopped instance does nothing. */
  stop(): Promise<void>
}

export type DefineInstanceParameters = {
  name: string
  host: string
  port: number
  url: string
  /** Starts the service; on failure it must leave nothing running. */
  start(): Promise<void>
  /** Stops the service it started. */
  stop(): Promise<void>
}

/**
 * Wraps a start/stop pair into an {@link Instance}: repeated or concurrent calls collapse into
 * one, and a stop issued while starting waits for the start to settle first.
 *
 * @example
 * const server = defineInstance({
 *   name: 'echo', host: '127.0.0.1', port: 9000, url: 'http://127.0.0.1:9000',
 *   start: () => listen(9000),
 *   stop: () => close(),
 * })
 * await server.start()
 * await server.start() // no-op
 */
export function defineInstance(parameters: DefineInstanceParameters): Instance {
  let status: InstanceStatus = 'idle'
  let inFlight: { kind: 'start' | 'stop'; promise: Promise<void> } | undefined

  function run(kind: 'start' | 'stop', task: () => Promise<void>): Promise<void> {
    if (inFlight?.kind === kind) return inFlight.promise
    const previous = inFlight?.promise.catch(() => undefined)
    const promise = (async () => {
      await previous
      await task()
    })()
    const entry = { kind, promise }
    inFlight = entry
    const settle = () => {
      if (inFlight === entry) inFlight = undefined
    }
    promise.then(settle, settle)
    return promise
  }

  return {
    name: parameters.name,
    host: parameters.host,
    port: parameters.port,
    url: parameters.url,
    get status() {
      return status
    },
    start: () =>
      run('start', async () => {
        if (status === 'started') return
        status = 'starting'
        try {
          await parameters.start()
          status = 'started'
        } catch (error) {
          status = 'idle'
          throw error
        }
      }),
    stop: () =>
      run('stop', async () => {
        if (status !== 'started') return
        status = 'stopping'
        try {
          await parameters.stop()
          status = 'idle'
        } catch (error) {
          status = 'started'
          throw error
        }
      }),
  }
}

/**
 * Asks the OS for a port that is free on `host` right now. Another process could take it before
 * you bind it, so use it at once.
 *
 * @example
 * const chain = anvil({ port: await getFreePort(), chainId: 31337 })
 */
export async function getFreePort(host = '127.0.0.1'): Promise<number> {
  // The kernel may hand the same free port to two binds in a row once the first is closed: a
  // port given out by this process is never given out again by it (a stack asks for seven at once).
  for (;;) {
    const port = await anyFreePort(host)
    if (handedOut.has(port)) continue
    handedOut.add(port)
    return port
  }
}

const handedOut = new Set<number>()

function anyFreePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen({ port: 0, host, exclusive: true }, () => {
      const address = server.address()
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port)
        else reject(new Error(`could not get a free port on ${host}`))
      })
    })
  })
}

/** @internal `host:port`, with brackets around an IPv6 host. */
export function formatAddress(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`
}

/**
 * Base of every devnet error: `shortMessage` is the one-line reason, `details` what the service
 * said (stderr), and `code` a stable identifier to branch on.
 */
export class DevnetError extends Error {
  override name = 'DevnetError'
  readonly code: string
  readonly shortMessage: string
  readonly details: string | undefined

  constructor(shortMessage: string, options: { code: string; details?: string | undefined; cause?: unknown }) {
    const details = options.details?.trim()
    super(details ? `${shortMessage}\n\n${details}` : shortMessage, { cause: options.cause })
    this.code = options.code
    this.shortMessage = shortMessage
    this.details = details || undefined
  }
}

/**
 * The port an instance needs is taken by another process.
 *
 * @example
 * try { await chain.start() } catch (error) { if (error instanceof PortInUseError) console.log(error.port) }
 */
export class PortInUseError extends DevnetError {
  override name = 'PortInUseError'
  readonly port: number

  constructor(parameters: { name: string; host: string; port: number; details?: string | undefined }) {
    super(`port ${parameters.port} is in use: ${parameters.name} could not listen on ${formatAddress(parameters.host, parameters.port)}`, {
      code: 'PORT_IN_USE',
      details: parameters.details,
    })
    this.port = parameters.port
  }
}

/**
 * An instance did not become ready within its start timeout; whatever it spawned was killed.
 *
 * @example
 * await anvil({ port, chainId: 1, startTimeout: 1 }).start() // throws StartTimeoutError
 */
export class StartTimeoutError extends DevnetError {
  override name = 'StartTimeoutError'

  constructor(parameters: { name: string; timeout: number; details?: string | undefined }) {
    super(`${parameters.name} did not start within ${parameters.timeout} ms`, { code: 'START_TIMEOUT', details: parameters.details })
  }
}

/**
 * An instance's process failed to spawn or exited before it was ready.
 *
 * @example
 * await anvil({ port, chainId: 1, args: ['--no-such-flag'] }).start() // throws StartFailedError
 */
export class StartFailedError extends DevnetError {
  override name = 'StartFailedError'

  constructor(parameters: { name: string; reason: string; details?: string | undefined; cause?: unknown }) {
    super(`${parameters.name} failed to start: ${parameters.reason}`, {
      code: 'START_FAILED',
      details: parameters.details,
      cause: parameters.cause,
    })
  }
}
