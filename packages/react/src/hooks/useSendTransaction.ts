import { type Hex, type SendTransactionParameters, sendTransaction } from '@latchkey/core'
import { useRef } from 'react'
import { sendTracked } from '../toast/track.js'
import { type ActionState, useAction } from './useAction.js'
import { useLatchkeyContext } from './useClient.js'

/**
 * Sends a transaction through the connected wallet; `data` is the last transaction hash. A toast
 * shows it pending, then confirmed or failed (`<LatchkeyProvider toasts={false}>` turns them off).
 *
 * @example
 * const { sendTransaction, data: hash } = useSendTransaction()
 */
export function useSendTransaction(): ActionState<Hex> & {
  sendTransaction(parameters: SendTransactionParameters): Promise<Hex>
} {
  const context = useLatchkeyContext()
  const again = useRef<(parameters: SendTransactionParameters) => Promise<Hex>>(undefined)
  const [run, state] = useAction((parameters: SendTransactionParameters) =>
    sendTracked(
      context,
      { kind: 'transaction', chainId: undefined, retry: () => void again.current?.(parameters).catch(() => {}) },
      () => sendTransaction(context.client, parameters),
      (hash) => ({ hash }),
    ),
  )
  again.current = run
  return { ...state, sendTransaction: run }
}
