import type { TypedData, TypedDataDefinition } from 'viem'
import { signTypedData as viemSignTypedData } from 'viem/actions'
import { REQUEST_TIMEOUT_MS } from '../constants.js'
import type { Client } from '../createClient.js'
import type { BaseError } from '../errors/base.js'
import type { NotConnectedErrorType } from '../errors/connection.js'
import { toProviderError } from '../errors/rpc.js'
import type { Address, Hex } from '../types.js'
import { withTimeout } from '../utils/wait.js'
import { getWalletClient } from './walletClient.js'

export type SignTypedDataParameters<
  typedData extends TypedData | Record<string, unknown> = TypedData,
  primaryType extends string = string,
> = TypedDataDefinition<typedData, primaryType> & {
  account?: Address | undefined
  signal?: AbortSignal | undefined
}

export type SignTypedDataReturnType = Hex

export type SignTypedDataErrorType = NotConnectedErrorType | BaseError

/**
 * Signs EIP-712 typed data with the connected wallet (`eth_signTypedData_v4`).
 *
 * @example
 * const signature = await signTypedData(client, { domain, types, primaryType: 'Mail', message })
 */
export async function signTypedData<const typedData extends TypedData | Record<string, unknown>, primaryType extends string>(
  client: Client,
  parameters: SignTypedDataParameters<typedData, primaryType>,
): Promise<SignTypedDataReturnType> {
  const { account, signal, ...definition } = parameters
  const wallet = await getWalletClient(client, account)
  try {
    return await withTimeout(viemSignTypedData(wallet, { ...(definition as TypedDataDefinition), account: wallet.account }), {
      what: 'Signing the typed data',
      ms: REQUEST_TIMEOUT_MS,
      signal,
    })
  } catch (error) {
    const typed = toProviderError(error)
    client._internal.report('signTypedData', typed)
    throw typed
  }
}
