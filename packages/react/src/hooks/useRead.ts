import type { BaseError } from '@latchkey/core'
import { useCallback, useEffect, useRef, useState } from 'react'

export type ReadStatus = 'idle' | 'pending' | 'success' | 'error'

export type ReadState<data> = {
  data: data | undefined
  error: BaseError | null
  /** `idle` until there is something to read (no id, not connected). */
  status: ReadStatus
  isPending: boolean
  refetch(): void
}

/**
 * @internal Runs `read` whenever one of `keys` changes (and on `refetch`), while `enabled`; only
 * the latest run's answer lands in the state.
 */
export function useRead<data>(keys: readonly unknown[], enabled: boolean, read: () => Promise<data>): ReadState<data> {
  const [state, setState] = useState<{ data: data | undefined; error: BaseError | null; status: ReadStatus }>({
    data: undefined,
    error: null,
    status: 'idle',
  })
  const [generation, setGeneration] = useState(0)
  const readRef = useRef(read)
  readRef.current = read
  // biome-ignore lint/correctness/useExhaustiveDependencies: keys are the caller's dependencies; generation is the refetch trigger
  useEffect(() => {
    if (!enabled) {
      setState({ data: undefined, error: null, status: 'idle' })
      return
    }
    let live = true
    // What was read belongs to the old keys: nothing stale shows beside the new ones.
    setState({ data: undefined, error: null, status: 'pending' })
    readRef.current().then(
      (data) => live && setState({ data, error: null, status: 'success' }),
      (error: BaseError) => live && setState({ data: undefined, error, status: 'error' }),
    )
    return () => {
      live = false
    }
  }, [enabled, generation, ...keys])
  const refetch = useCallback(() => setGeneration((g) => g + 1), [])
  return { ...state, isPending: state.status === 'pending', refetch }
}
