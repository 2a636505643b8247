import type { SignableMessage } from 'viem'
import { signMessage as viemSignMessage } from 'viem/actions'
import { REQUEST_TIMEOUT_MS } from '../constants.js'
import type { Client } from '../createClient.js'
import type { BaseError } from '../errors/base.js'
import type { NotConnectedErrorType } from '../errors/connection.js'
import { toProviderError } from '../errors/rpc.js'
import type { Address, Hex } from '../types.js'
import { withTimeout } from '../utils/wait.js'
import { getWalletClient } from './walletClient.js'

export type SignMessageParameters = {
  message: SignableMessage
  /** Default: the active account. */
  account?: Address | undefined
  signal?: AbortSignal | undefined
}

export type SignMessageReturnType = Hex

export type SignMessageErrorType = NotConnectedErrorType | BaseError

/**
 * Signs a message with the connected wallet (EIP-191, `personal_sign`).
 *
 * @example
 * const signature = await signMessage(client, { message: 'hello' })
 */
export async function signMessage(client: Client, parameters: SignMessageParameters): Promise<SignMessageReturnType> {
  const wallet = await getWalletClient(client, parameters.account)
  try {
    return await withTimeout(viemSignMessage(wallet, { message: parameters.message, account: wallet.account }), {
      what: 'Signing the message',
      ms: REQUEST_TIMEOUT_MS,
      signal: parameters.signal,
    })
  } catch (error) {
    const typed = toProviderError(error)
    client._internal.report('signMessage', typed)
    throw typed
  }
}
