import { type WaitForCallsStatusReturnType, waitForCallsStatus } from '@latchkey/core'
import { useClient } from './useClient.js'
import { type ReadState, useRead } from './useRead.js'

/**
 * Waits until the wallet reports the batch confirmed or failed; `data` is that final status.
 *
 * @example
 * const { data, isPending } = useWaitForCallsStatus({ id: sent.data?.id })
 */
export function useWaitForCallsStatus({ id, timeoutMs }: { id: string | undefined; timeoutMs?: number | undefined }): ReadState<WaitForCallsStatusReturnType> {
  const client = useClient()
  return useRead([client, id, timeoutMs], id !== undefined, () => waitForCallsStatus(client, { id: id!, timeoutMs }))
}
