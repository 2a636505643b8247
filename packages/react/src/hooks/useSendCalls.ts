import { type SendCallsParameters, type SendCallsReturnType, sendCalls } from '@latchkey/core'
import { useRef } from 'react'
import { sendTracked } from '../toast/track.js'
import { type ActionState, useAction } from './useAction.js'
import { useLatchkeyContext } from './useClient.js'

/**
 * Sends a batch of calls through the connected wallet (EIP-5792); `data` is the last batch's id. A
 * toast shows it pending, then confirmed or failed (`<LatchkeyProvider toasts={false}>` turns them off).
 *
 * @example
 * const { sendCalls, data } = useSendCalls()
 * await sendCalls({ calls: [{ to: alice, value: parseEther('0.001') }, { to: bob, value: parseEther('0.001') }] })
 */
export function useSendCalls(): ActionState<SendCallsReturnType> & {
  sendCalls(parameters: SendCallsParameters): Promise<SendCallsReturnType>
} {
  const context = useLatchkeyContext()
  const again = useRef<(parameters: SendCallsParameters) => Promise<SendCallsReturnType>>(undefined)
  const [run, state] = useAction((parameters: SendCallsParameters) =>
    sendTracked(
      context,
      { kind: 'calls', chainId: parameters.chainId, retry: () => void again.current?.(parameters).catch(() => {}) },
      () => sendCalls(context.client, parameters),
      (result) => ({ callsId: result.id }),
    ),
  )
  again.current = run
  return { ...state, sendCalls: run }
}
