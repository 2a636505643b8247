import type { GetCallsStatusReturnType as ViemCallsStatus } from 'viem'
import { getCallsStatus as viemGetCallsStatus } from 'viem/actions'
import type { Client } from '../createClient.js'
import type { BaseError } from '../errors/base.js'
import type { CallsNotSupportedErrorType, InvalidCallsResultErrorType, UnknownCallsIdErrorType } from '../errors/calls.js'
import type { NotConnectedErrorType } from '../errors/connection.js'
import { getCallsClient, toCallsError } from './callsClient.js'

export type GetCallsStatusParameters = {
  /** The id `sendCalls` returned. */
  id: string
}

/**
 * Where a batch stands (EIP-5792 v2): `status` is `pending`, `success` or `failure`, from the
 * wallet's `statusCode` (100 pending, 200 confirmed, 400 failed off chain, 500 reverted, 600
 * partly reverted); `receipts` once the calls are on chain.
 */
export type GetCallsStatusReturnType = ViemCallsStatus

export type GetCallsStatusErrorType = CallsNotSupportedErrorType | InvalidCallsResultErrorType | UnknownCallsIdErrorType | NotConnectedErrorType | BaseError

/**
 * Asks the connected wallet where a batch of calls stands (`wallet_getCallsStatus`).
 *
 * @example
 * const { status, receipts } = await getCallsStatus(client, { id })
 */
export async function getCallsStatus(client: Client, parameters: GetCallsStatusParameters): Promise<GetCallsStatusReturnType> {
  const wallet = await getCallsClient(client)
  try {
    return await viemGetCallsStatus(wallet, { id: parameters.id })
  } catch (error) {
    const typed = toCallsError(error, 'wallet_getCallsStatus')
    client._internal.report('getCallsStatus', typed)
    throw typed
  }
}
