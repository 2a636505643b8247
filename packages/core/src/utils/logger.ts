import { isBenign } from '../errors/rpc.js'

export type Logger = {
  warn(message: string, ...rest: unknown[]): void
  error(message: string, ...rest: unknown[]): void
}

/**
 * Logs a failure at the right level: timeouts, user denials and cancellations are warnings
 * (SPEC §8 handling), everything else an error.
 *
 * @example
 * report(client.logger, 'signMessage', error)
 */
export function report(logger: Logger, context: string, error: unknown) {
  const text = error instanceof Error ? ((error as { shortMessage?: string }).shortMessage ?? error.message) : String(error)
  if (isBenign(error)) logger.warn(`[latchkey] ${context}: ${text}`)
  else logger.error(`[latchkey] ${context}: ${text}`, error)
}
