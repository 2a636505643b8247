import type { TransactionReceipt } from 'viem'
import type { Client } from '../createClient.js'
import type { Hex } from '../types.js'
import { getPublicClient } from './getPublicClient.js'

export type WaitForTransactionReceiptParameters = {
  hash: Hex
  chainId?: number | undefined
  /** Default 60 000 ms. */
  timeoutMs?: number | undefined
}

export type WaitForTransactionReceiptReturnType = TransactionReceipt

/**
 * Waits until the transaction is mined and returns its receipt.
 *
 * @example
 * const { status } = await waitForTransactionReceipt(client, { hash })
 */
export function waitForTransactionReceipt(client: Client, parameters: WaitForTransactionReceiptParameters): Promise<WaitForTransactionReceiptReturnType> {
  return getPublicClient(client, { chainId: parameters.chainId }).waitForTransactionReceipt({
    hash: parameters.hash,
    timeout: parameters.timeoutMs ?? 60_000,
    pollingInterval: 250,
  })
}
