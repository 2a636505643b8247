import { type Hex, type SignTypedDataParameters, signTypedData } from '@latchkey/core'
import type { TypedData } from 'viem'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

export type UseSignTypedDataReturnType = ActionState<Hex> & {
  signTypedData<const typedData extends TypedData | Record<string, unknown>, primaryType extends string>(
    parameters: SignTypedDataParameters<typedData, primaryType>,
  ): Promise<Hex>
}

/**
 * Signs EIP-712 typed data with the connected wallet; `data` is the last signature.
 *
 * @example
 * const { signTypedData } = useSignTypedData()
 */
export function useSignTypedData(): UseSignTypedDataReturnType {
  const client = useClient()
  const [run, state] = useAction((parameters: SignTypedDataParameters) => signTypedData(client, parameters))
  return { ...state, signTypedData: run as UseSignTypedDataReturnType['signTypedData'] }
}
