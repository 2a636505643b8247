import { type SendCallsParameters, type SendCallsReturnType, sendCalls } from '@latchkey/core'
import { type ActionState, useAction } from './useAction.js'
import { useClient } from './useClient.js'

/**
 * Sends a batch of calls through the connected wallet (EIP-5792); `data` is the last batch's id.
 *
 * @example
 * const { sendCalls, data } = useSendCalls()
 * await sendCalls({ calls: [{ to: alice, value: parseEther('0.001') }, { to: bob, value: parseEther('0.001') }] })
 */
export function useSendCalls(): ActionState<SendCallsReturnType> & {
  sendCalls(parameters: SendCallsParameters): Promise<SendCallsReturnType>
} {
  const client = useClient()
  const [run, state] = useAction((parameters: SendCallsParameters) => sendCalls(client, parameters))
  return { ...state, sendCalls: run }
}
