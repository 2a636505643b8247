import { type GetCallsStatusReturnType, getCallsStatus } from '@latchkey/core'
import { useClient } from './useClient.js'
import { type ReadState, useRead } from './useRead.js'

/**
 * Where a batch of calls stands, asked of the wallet once per id (`refetch` asks again).
 *
 * @example
 * const { data } = useCallsStatus({ id })
 * data?.status // 'pending' | 'success' | 'failure'
 */
export function useCallsStatus({ id }: { id: string | undefined }): ReadState<GetCallsStatusReturnType> {
  const client = useClient()
  return useRead([client, id], id !== undefined, () => getCallsStatus(client, { id: id! }))
}

/** The same as {@link useCallsStatus}, under wagmi's name. */
export const useGetCallsStatus = useCallsStatus
