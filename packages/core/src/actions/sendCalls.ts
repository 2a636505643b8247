import { numberToHex } from 'viem'
import { sendCalls as viemSendCalls } from 'viem/actions'
import { REQUEST_TIMEOUT_MS } from '../constants.js'
import type { Client } from '../createClient.js'
import type { BaseError } from '../errors/base.js'
import type { AtomicityNotSupportedErrorType, CallsNotSupportedErrorType, InvalidCallsResultErrorType } from '../errors/calls.js'
import { ChainNotConfiguredError, type ChainNotConfiguredErrorType, type NotConnectedErrorType } from '../errors/connection.js'
import { SponsorshipUnavailableError, sponsorshipErrorOf } from '../errors/embedded.js'
import type { Address, Hex } from '../types.js'
import { withTimeout } from '../utils/wait.js'
import { getCallsClient, toCallsError } from './callsClient.js'

/** One call of a batch: a transfer, a contract call, or both. */
export type Call = { to: Address; value?: bigint | undefined; data?: Hex | undefined }

export type SendCallsParameters = {
  calls: readonly [Call, ...Call[]]
  /** Default: the wallet's current chain. Must be configured. */
  chainId?: number | undefined
  /** Capabilities to ask for (EIP-5792), e.g. `{ paymasterService: { url } }`. */
  capabilities?: Record<string, unknown> | undefined
  /** Require the wallet to run the calls atomically (all or none); wallets that cannot refuse. */
  forceAtomic?: boolean | undefined
  /**
   * Sponsored gas (ERC-7677): sent as the `paymasterService` capability to a wallet that reports
   * it for the chain. A wallet that does not is `SponsorshipUnavailableError` ('unavailable') and
   * nothing is sent, unless `fallback: 'user-pays'` (then the calls go without it).
   */
  sponsorship?: { paymasterUrl: string; context?: Record<string, unknown> | undefined; fallback?: 'user-pays' | undefined } | undefined
  /** Default: the active account. */
  account?: Address | undefined
  signal?: AbortSignal | undefined
}

export type SendCallsReturnType = {
  /** The batch id, for `getCallsStatus` and `waitForCallsStatus`. */
  id: string
  capabilities?: Record<string, unknown> | undefined
}

export type SendCallsErrorType =
  | CallsNotSupportedErrorType
  | InvalidCallsResultErrorType
  | AtomicityNotSupportedErrorType
  | ChainNotConfiguredErrorType
  | NotConnectedErrorType
  | BaseError

/**
 * Asks the connected wallet to send a batch of calls (EIP-5792 `wallet_sendCalls`). Returns the
 * batch id; the wallet decides how it sends them (one by one, or atomically where it can). A
 * wallet without the method fails with `CallsNotSupportedError`.
 *
 * @example
 * const { id } = await sendCalls(client, { calls: [{ to: alice, value: parseEther('0.001') }, { to: bob, value: parseEther('0.001') }] })
 */
export async function sendCalls(client: Client, parameters: SendCallsParameters): Promise<SendCallsReturnType> {
  const { calls, chainId, forceAtomic, account, signal, sponsorship } = parameters
  const wallet = await getCallsClient(client, account)
  const chain = chainId === undefined ? wallet.chain : client.chains.find((c) => c.id === chainId)
  if (!chain) throw new ChainNotConfiguredError({ chainId: chainId ?? -1 })
  let capabilities = parameters.capabilities
  try {
    if (sponsorship || capabilities?.['paymasterService']) capabilities = await withPaymasterService(wallet, chain.id, capabilities, sponsorship)
    const result = await withTimeout(
      viemSendCalls(wallet, { calls: calls as never, chain, account: wallet.account, capabilities: capabilities as never, forceAtomic }),
      { what: 'Sending the calls', ms: REQUEST_TIMEOUT_MS, signal },
    )
    return result.capabilities ? { id: result.id, capabilities: result.capabilities } : { id: result.id }
  } catch (error) {
    const typed = sponsorshipErrorOf(error) ?? toCallsError(error, 'wallet_sendCalls')
    client._internal.report('sendCalls', typed)
    throw typed
  }
}

/**
 * The batch's capabilities with ERC-7677's `paymasterService` (the sponsorship's, else the one
 * given) when the wallet reports it for the chain; without it when the wallet does not and the app
 * accepts user-paid gas (`fallback: 'user-pays'`, or an optional capability); else
 * SponsorshipUnavailableError, before anything is sent.
 */
async function withPaymasterService(
  wallet: Awaited<ReturnType<typeof getCallsClient>>,
  chainId: number,
  capabilities: Record<string, unknown> | undefined,
  sponsorship: SendCallsParameters['sponsorship'],
): Promise<Record<string, unknown>> {
  const { paymasterService: given, ...others } = capabilities ?? {}
  const service = sponsorship
    ? { url: sponsorship.paymasterUrl, ...(sponsorship.context ? { context: sponsorship.context } : {}), ...(sponsorship.fallback ? { optional: true } : {}) }
    : (given as { optional?: boolean })
  const reported = (await wallet
    .request({ method: 'wallet_getCapabilities', params: [wallet.account.address, [numberToHex(chainId)]] } as never)
    .catch(() => undefined)) as Record<string, { paymasterService?: { supported?: boolean } }> | undefined
  if (reported?.[numberToHex(chainId)]?.paymasterService?.supported === true) return { ...others, paymasterService: service }
  if (service.optional === true) return others
  throw new SponsorshipUnavailableError({ reason: 'unavailable', details: `The wallet does not offer sponsored calls (paymasterService) on chain ${chainId}.` })
}
