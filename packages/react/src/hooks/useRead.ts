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
  const [state, setState] = useState<{ data: data | undefined; error: BaseError | null; status: ReadStatus; keys: readonly unknown[] }>({
    data: undefined,
    error: null,
    status: 'idle',
    keys,
  })
  const [generation, setGeneration] = useState(0)
  const readRef = useRef(read)
  readRef.current = read
  // biome-ignore lint/correctness/useExhaustiveDependencies: keys are the caller's dependencies; generation is the refetch trigger
  useEffect(() => {
    if (!enabled) {
      setState({ data: undefined, error: null, status: 'idle', keys })
      return
    }
    let live = true
    setState({ data: undefined, error: null, status: 'pending', keys })
    readRef.current().then(
      (data) => live && setState({ data, error: null, status: 'success', keys }),
      (error: BaseError) => live && setState({ data: undefined, error, status: 'error', keys }),
    )
    return () => {
      live = false
    }
  }, [enabled, generation, ...keys])
  const refetch = useCallback(() => setGeneration((g) => g + 1), [])
  // What was read belongs to the keys it was read for: in the render where the keys change (before
  // the effect above runs), nothing stale shows beside the new ones, not even for one frame.
  const current = state.keys.length === keys.length && state.keys.every((key, index) => Object.is(key, keys[index]))
  if (!current) return { data: undefined, error: null, status: enabled ? 'pending' : 'idle', isPending: enabled, refetch }
  return { data: state.data, error: state.error, status: state.status, isPending: state.status === 'pending', refetch }
}
