import { sendTransaction as viemSendTransaction } from 'viem/actions'
import { REQUEST_TIMEOUT_MS } from '../constants.js'
import type { Client } from '../createClient.js'
import type { BaseError } from '../errors/base.js'
import type { NotConnectedErrorType } from '../errors/connection.js'
import { sponsorshipErrorOf } from '../errors/embedded.js'
import { toProviderError } from '../errors/rpc.js'
import type { Address, Hex } from '../types.js'
import { withTimeout } from '../utils/wait.js'
import { getWalletClient } from './walletClient.js'

export type SendTransactionParameters = {
  to: Address
  value?: bigint | undefined
  data?: Hex | undefined
  gas?: bigint | undefined
  nonce?: number | undefined
  maxFeePerGas?: bigint | undefined
  maxPriorityFeePerGas?: bigint | undefined
  account?: Address | undefined
  signal?: AbortSignal | undefined
}

export type SendTransactionReturnType = Hex

export type SendTransactionErrorType = NotConnectedErrorType | BaseError

/**
 * Asks the connected wallet to sign and send a transaction on its current chain
 * (`eth_sendTransaction`). Returns the transaction hash.
 *
 * @example
 * const hash = await sendTransaction(client, { to: '0x…', value: parseEther('0.01') })
 */
export async function sendTransaction(client: Client, parameters: SendTransactionParameters): Promise<SendTransactionReturnType> {
  const { account, signal, ...request } = parameters
  const wallet = await getWalletClient(client, account)
  try {
    return await withTimeout(viemSendTransaction(wallet, { ...request, account: wallet.account, chain: wallet.chain ?? null } as never), {
      what: 'Sending the transaction',
      ms: REQUEST_TIMEOUT_MS,
      signal,
    })
  } catch (error) {
    const typed = sponsorshipErrorOf(error) ?? toProviderError(error)
    client._internal.report('sendTransaction', typed)
    throw typed
  }
}
