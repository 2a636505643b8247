import { CancelledError, TimeoutError } from '../errors/connection.js'

export type WaitOptions = {
  /** What is being waited for, for the timeout message ("Connecting to MetaMask"). */
  what: string
  ms: number
  signal?: AbortSignal | undefined
}

/**
 * Races a promise against a timeout and an abort signal, so that no wait is without an end.
 * The timer is cleared whichever way it ends.
 *
 * @example
 * const accounts = await withTimeout(provider.request({ method: 'eth_accounts' }), { what: 'eth_accounts', ms: 5000 })
 */
export function withTimeout<value>(promise: Promise<value>, { what, ms, signal }: WaitOptions): Promise<value> {
  if (signal?.aborted) return Promise.reject(new CancelledError({ cause: signal.reason }))
  return new Promise<value>((resolve, reject) => {
    const onAbort = () => finish(() => reject(new CancelledError({ cause: signal?.reason })))
    const timer = setTimeout(() => finish(() => reject(new TimeoutError({ what, ms }))), ms)
    function finish(settle: () => void) {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      settle()
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => finish(() => resolve(value)),
      (error: unknown) => finish(() => reject(error)),
    )
  })
}
