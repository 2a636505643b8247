import { type Hex, type SendTransactionParameters, sendTransaction } from '@latchkey/core'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

/**
 * Sends a transaction through the connected wallet; `data` is the last transaction hash.
 *
 * @example
 * const { sendTransaction, data: hash } = useSendTransaction()
 */
export function useSendTransaction(): ActionState<Hex> & {
  sendTransaction(parameters: SendTransactionParameters): Promise<Hex>
} {
  const client = useClient()
  const [run, state] = useAction((parameters: SendTransactionParameters) => sendTransaction(client, parameters))
  return { ...state, sendTransaction: run }
}
