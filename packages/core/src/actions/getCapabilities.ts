import { getCapabilities as viemGetCapabilities } from 'viem/actions'
import type { Client } from '../createClient.js'
import type { BaseError } from '../errors/base.js'
import type { CallsNotSupportedErrorType, InvalidCallsResultErrorType } from '../errors/calls.js'
import type { NotConnectedErrorType } from '../errors/connection.js'
import type { Address } from '../types.js'
import { getCallsClient, toCallsError } from './callsClient.js'

export type GetCapabilitiesParameters = {
  /** Default: the active account. */
  account?: Address | undefined
  /** Only this chain's capabilities; default every chain the wallet reports. */
  chainId?: number | undefined
}

/** Capabilities by name, e.g. `{ atomic: { status: 'unsupported' } }` (EIP-5792). */
export type Capabilities = Record<string, unknown>

/** By chain id, or one chain's when `chainId` was given. */
export type GetCapabilitiesReturnType = Record<number, Capabilities> | Capabilities

export type GetCapabilitiesErrorType = CallsNotSupportedErrorType | InvalidCallsResultErrorType | NotConnectedErrorType | BaseError

/**
 * Asks the connected wallet what it can do with call batches (`wallet_getCapabilities`): atomic
 * execution, paymasters and the like, per chain.
 *
 * @example
 * const { atomic } = (await getCapabilities(client, { chainId: 1 })) as Capabilities
 */
export async function getCapabilities(client: Client, parameters: GetCapabilitiesParameters = {}): Promise<GetCapabilitiesReturnType> {
  const wallet = await getCallsClient(client, parameters.account)
  try {
    const result = (await viemGetCapabilities(wallet, { account: wallet.account, chainId: parameters.chainId })) as GetCapabilitiesReturnType | undefined
    // A wallet with nothing to offer on the chain asked for may leave it out.
    return result ?? {}
  } catch (error) {
    const typed = toCallsError(error, 'wallet_getCapabilities')
    client._internal.report('getCapabilities', typed)
    throw typed
  }
}
