import { type GetCapabilitiesReturnType, getCapabilities } from '@latchkey/core'
import { useAccount } from './useAccount.js'
import { useClient } from './useClient.js'
import { type ReadState, useRead } from './useRead.js'

/**
 * What the connected wallet can do with call batches (EIP-5792), asked again when the account or
 * chain changes.
 *
 * @example
 * const { data } = useCapabilities({ chainId })
 * data?.atomic // { status: 'unsupported' } for an EOA
 */
export function useCapabilities({ chainId }: { chainId?: number | undefined } = {}): ReadState<GetCapabilitiesReturnType> {
  const client = useClient()
  const { address, isConnected } = useAccount()
  return useRead([client, address, chainId], isConnected, () => getCapabilities(client, { chainId }))
}
