import { disconnect } from '@latchkey/core'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

/**
 * Disconnects the wallet and clears its session.
 *
 * @example
 * const { disconnect } = useDisconnect()
 */
export function useDisconnect(): ActionState<void> & { disconnect(): Promise<void> } {
  const client = useClient()
  const [run, state] = useAction(() => disconnect(client))
  return { ...state, disconnect: run }
}
