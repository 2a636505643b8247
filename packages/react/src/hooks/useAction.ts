import type { BaseError } from '@latchkey/core'
import { useCallback, useRef, useState } from 'react'

export type ActionStatus = 'idle' | 'pending' | 'success' | 'error'

export type ActionState<data> = {
  data: data | undefined
  error: BaseError | null
  status: ActionStatus
  isPending: boolean
  reset(): void
}

/**
 * @internal Wraps an async action with pending, data and error state. The returned function
 * still resolves or rejects, so callers can await it; only the latest call updates the state.
 */
export function useAction<parameters extends unknown[], data>(
  action: (...parameters: parameters) => Promise<data>,
): [(...parameters: parameters) => Promise<data>, ActionState<data>] {
  const [state, setState] = useState<{ data: data | undefined; error: BaseError | null; status: ActionStatus }>({
    data: undefined,
    error: null,
    status: 'idle',
  })
  const latest = useRef(0)
  const actionRef = useRef(action)
  actionRef.current = action
  const run = useCallback(async (...parameters: parameters) => {
    const call = ++latest.current
    setState((previous) => ({ ...previous, error: null, status: 'pending' }))
    try {
      const data = await actionRef.current(...parameters)
      if (call === latest.current) setState({ data, error: null, status: 'success' })
      return data
    } catch (error) {
      if (call === latest.current) setState((previous) => ({ ...previous, error: error as BaseError, status: 'error' }))
      throw error
    }
  }, [])
  const reset = useCallback(() => {
    latest.current++
    setState({ data: undefined, error: null, status: 'idle' })
  }, [])
  return [run, { ...state, isPending: state.status === 'pending', reset }]
}
