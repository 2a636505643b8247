import { type Client, type Hex, waitForCallsStatus, waitForTransactionReceipt } from '@latchkey/core'
import { updateTransaction } from './transactions.js'

/**
 * @internal Follows a sent transaction (`hash`) or batch (`callsId`) to the chain and marks it
 * confirmed, or failed (reverted, or the error of the wait). Loaded after the first send.
 */
export async function confirmTransaction(client: Client, id: number, sent: ({ hash: Hex } | { callsId: string }) & { chainId: number }) {
  try {
    if ('hash' in sent) {
      const receipt = await waitForTransactionReceipt(client, { hash: sent.hash, chainId: sent.chainId })
      updateTransaction(client, id, receipt.status === 'success' ? { status: 'confirmed' } : { status: 'failed', reverted: true })
    } else {
      const result = await waitForCallsStatus(client, { id: sent.callsId })
      const hash = result.receipts?.at(-1)?.transactionHash
      updateTransaction(client, id, result.status === 'success' ? { status: 'confirmed', hash } : { status: 'failed', reverted: true, hash })
    }
  } catch (error) {
    updateTransaction(client, id, { status: 'failed', error })
  }
}
