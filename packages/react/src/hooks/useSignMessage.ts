import { type Hex, type SignMessageParameters, signMessage } from '@latchkey/core'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

/**
 * Signs a message with the connected wallet; `data` is the last signature.
 *
 * @example
 * const { signMessage, data } = useSignMessage()
 */
export function useSignMessage(): ActionState<Hex> & { signMessage(parameters: SignMessageParameters): Promise<Hex> } {
  const client = useClient()
  const [run, state] = useAction((parameters: SignMessageParameters) => signMessage(client, parameters))
  return { ...state, signMessage: run }
}
