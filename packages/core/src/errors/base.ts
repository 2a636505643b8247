import { version } from '../version.js'

export type BaseErrorParameters = {
  /** Extra lines shown between the short message and the details. */
  metaMessages?: readonly string[] | undefined
  /** The underlying error; its message becomes `details` unless given. */
  cause?: unknown
  details?: string | undefined
  docsPath?: string | undefined
}

export type BaseErrorType = BaseError & { name: 'BaseError' }

/**
 * The root of every error Latchkey throws. `shortMessage` is the catalogue text (SPEC §8),
 * `code` a stable machine-readable identifier. The UI branches on classes or codes, never on text.
 *
 * @example
 * try { await connect(client, { connector }) }
 * catch (e) { if (e instanceof BaseError) console.log(e.code, e.shortMessage) }
 */
export class BaseError extends Error {
  override name = 'BaseError'
  /** Stable identifier of the kind of failure (snake_case). */
  code: string = 'unknown'
  /** The catalogue text, without details. */
  shortMessage: string
  details: string
  docsPath: string | undefined
  metaMessages: readonly string[] | undefined
  version = version

  constructor(shortMessage: string, parameters: BaseErrorParameters = {}) {
    const details =
      parameters.details ??
      (parameters.cause instanceof BaseError ? parameters.cause.details : parameters.cause instanceof Error ? parameters.cause.message : '')
    const message = [
      shortMessage,
      ...(parameters.metaMessages?.length ? ['', ...parameters.metaMessages] : []),
      ...(parameters.docsPath ? ['', `Docs: https://latchkey.dev${parameters.docsPath}`] : []),
      ...(details && details !== shortMessage ? ['', `Details: ${details}`] : []),
      '',
      `Version: @latchkey/core@${version}`,
    ].join('\n')
    super(message, parameters.cause === undefined ? undefined : { cause: parameters.cause })
    this.shortMessage = shortMessage
    this.details = details
    this.docsPath = parameters.docsPath
    this.metaMessages = parameters.metaMessages
  }

  /**
   * Follows `cause` to the deepest error, or to the first one `fn` accepts.
   *
   * @example
   * const rejected = error.walk((e) => e instanceof UserRejectedRequestError)
   */
  walk(fn?: (error: unknown) => boolean): unknown {
    return walk(this, fn)
  }
}

function walk(error: unknown, fn?: (error: unknown) => boolean): unknown {
  if (fn?.(error)) return error
  if (error && typeof error === 'object' && 'cause' in error && error.cause !== undefined) return walk(error.cause, fn)
  return fn ? null : error
}
