import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach } from 'vitest'

// A service bin as an operator runs it, for the bins' tests: a child process from the TypeScript
// source (until the packages are built, `node --conditions=source --import tsx`), its JSON log
// lines, its standard error, its exit, and a request kept in flight across a signal.

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))

/** Variables a bin reads: cleared so the test's own environment never leaks into a child. */
const CLEARED = ['PORT', 'HOST', 'LOG_LEVEL', 'NODE_ENV', 'REDIS_URL', 'DATABASE_URL', 'DATABASE_URL_FILE']

export type LogLine = { level: string; time: string; service: string; msg: string; reqId?: string } & Record<string, unknown>

export type CliProcess = {
  readonly child: ChildProcess
  /** Resolves when the process exits. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  stdout(): string
  stderr(): string
  /** Standard output's lines, each parsed as JSON (a line that is not JSON fails the test that reads it). */
  logs(): LogLine[]
  /** The first log line `matches` accepts, once written; rejects if the process exits first. */
  waitForLog(matches: (line: LogLine) => boolean): Promise<LogLine>
}

const running: { test: ChildProcess[]; file: ChildProcess[] } = { test: [], file: [] }
const killAll = (children: ChildProcess[]) => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}
afterEach(() => killAll(running.test))
afterAll(() => killAll(running.file))

/**
 * Starts `cli` (a package's `src/cli.ts`, as a path from the repository root) with `args` and only
 * the given variables among those a bin reads. Killed after the test if still running (after the
 * file's tests with `scope: 'file'`, for a service started in beforeAll). `cwd` (default: this
 * repository) is where it runs, and what a relative `cli` is read from: another release's tree.
 *
 * @example
 * const relay = startCli('packages/relay/src/cli.ts', ['--port', '5555', '--memory'])
 * await relay.waitForLog((line) => line.msg.startsWith('Relay listening'))
 */
export function startCli(
  cli: string,
  args: readonly string[],
  env: Record<string, string> = {},
  scope: 'test' | 'file' = 'test',
  cwd: string = repoRoot,
): CliProcess {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('LATCHKEY_') && !CLEARED.includes(name)))
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', cli, ...args], {
    cwd,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running[scope].push(child)
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }))
  const logs = () =>
    stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        try {
          return JSON.parse(line) as LogLine
        } catch {
          throw new Error(`a line of standard output is not JSON: ${line}`)
        }
      })
  return {
    child,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    logs,
    waitForLog: (matches) =>
      new Promise<LogLine>((resolve, reject) => {
        const check = () => {
          // Only complete lines: a line is parsed once its newline arrived.
          const complete = stdout.slice(0, stdout.lastIndexOf('\n') + 1)
          const found = complete
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as LogLine)
            .find(matches)
          if (found) {
            child.stdout!.off('data', check)
            resolve(found)
          }
        }
        child.stdout!.on('data', check)
        check()
        void exited.then((result) => reject(new Error(`${cli} exited (${JSON.stringify(result)}) before the awaited log line:\n${stdout}${stderr}`)))
      }),
  }
}

/** The bin's "listening" line: the first info line whose message says it listens. */
export const listening = (line: LogLine) => / listening on /i.test(line.msg)

/**
 * Whether a new TCP connection to `port` is refused (nothing listens there any more).
 *
 * @example
 * expect(await connectionRefused(8090)).toBe(true)
 */
export function connectionRefused(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host)
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNREFUSED' ? resolve(true) : reject(error)))
  })
}

export type StreamingRequest = {
  /** Resolves once the server took the request (it answered `100 Continue`): it is in flight. */
  readonly accepted: Promise<void>
  /** Sends the rest of the body; resolves with the answer. */
  finish(): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>
  /** Resolves with the error if the connection is cut before an answer. */
  readonly failed: Promise<Error>
}

/**
 * A POST whose body is sent in two parts: the headers (with `Expect: 100-continue`, so the
 * server says when it has taken the request) and the first `firstBytes` (ASCII), then the rest
 * when the test says so.
 * How a test keeps a request in flight across a signal without sleeping.
 *
 * @example
 * const inFlight = streamingRequest(`${url}/auth/email/start`, { 'content-type': 'application/json' }, body, 10)
 * await inFlight.accepted
 * child.kill('SIGTERM')
 * const answer = await inFlight.finish()
 */
export function streamingRequest(url: string, headers: Record<string, string>, body: string, firstBytes: number): StreamingRequest {
  let answer!: (value: { status: number; headers: IncomingHttpHeaders; body: string }) => void
  let failedWith!: (error: Error) => void
  const answered = new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolve) => (answer = resolve))
  const failed = new Promise<Error>((resolve) => (failedWith = resolve))
  const request = httpRequest(url, {
    method: 'POST',
    agent: false,
    headers: { ...headers, 'content-length': String(Buffer.byteLength(body)), expect: '100-continue' },
  })
  const accepted = once(request, 'continue').then(() => void request.write(body.slice(0, firstBytes)))
  request.on('response', (response) => {
    let text = ''
    response.setEncoding('utf8')
    response.on('data', (chunk: string) => (text += chunk))
    response.on('end', () => answer({ status: response.statusCode!, headers: response.headers, body: text }))
  })
  request.on('error', failedWith)
  request.flushHeaders()
  return {
    accepted,
    failed,
    finish() {
      request.end(body.slice(firstBytes))
      return answered
    },
  }
}
