import { waitForCallsStatus as viemWaitForCallsStatus } from 'viem/actions'
import type { Client } from '../createClient.js'
import type { BaseError } from '../errors/base.js'
import type { CallsNotSupportedErrorType, InvalidCallsResultErrorType, UnknownCallsIdErrorType } from '../errors/calls.js'
import { type NotConnectedErrorType, TimeoutError, type TimeoutErrorType } from '../errors/connection.js'
import { getCallsClient, toCallsError } from './callsClient.js'
import type { GetCallsStatusReturnType } from './getCallsStatus.js'
import { requireConnection } from './internal.js'

export type WaitForCallsStatusParameters = {
  /** The id `sendCalls` returned. */
  id: string
  /** Default 60 000 ms. */
  timeoutMs?: number | undefined
  /** How often the wallet is asked, in ms. Default: the connector's `callsStatusPollingIntervalMs`, else 250. */
  pollingIntervalMs?: number | undefined
}

/** The batch's final status: `success` or `failure`, with receipts. */
export type WaitForCallsStatusReturnType = GetCallsStatusReturnType

export type WaitForCallsStatusErrorType =
  | TimeoutErrorType
  | CallsNotSupportedErrorType
  | InvalidCallsResultErrorType
  | UnknownCallsIdErrorType
  | NotConnectedErrorType
  | BaseError

/**
 * Waits until the wallet reports the batch done (confirmed or failed) and returns that status.
 * A batch that fails is returned with `status: 'failure'`, not thrown.
 *
 * @example
 * const { status, receipts } = await waitForCallsStatus(client, { id })
 */
export async function waitForCallsStatus(client: Client, parameters: WaitForCallsStatusParameters): Promise<WaitForCallsStatusReturnType> {
  const wallet = await getCallsClient(client)
  const timeout = parameters.timeoutMs ?? 60_000
  const { connector } = requireConnection(client)
  try {
    return await viemWaitForCallsStatus(wallet, {
      id: parameters.id,
      timeout,
      pollingInterval: parameters.pollingIntervalMs ?? connector.callsStatusPollingIntervalMs ?? 250,
      // A wallet that answers wrongly will not answer better on a retry.
      retryCount: 0,
    })
  } catch (error) {
    const typed =
      (error as { name?: string }).name === 'WaitForCallsStatusTimeoutError'
        ? new TimeoutError({ what: 'Waiting for the calls', ms: timeout, cause: error })
        : toCallsError(error, 'wallet_getCallsStatus')
    client._internal.report('waitForCallsStatus', typed)
    throw typed
  }
}
