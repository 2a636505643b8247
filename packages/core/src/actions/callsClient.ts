import { type Account, type Chain, type CustomTransport, createClient, custom, type Client as ViemClient } from 'viem'
import type { Client } from '../createClient.js'
import type { BaseError } from '../errors/base.js'
import { AtomicityNotSupportedError, CallsNotSupportedError, InvalidCallsResultError, UnknownCallsIdError } from '../errors/calls.js'
import { toProviderError, UnsupportedProviderMethodError } from '../errors/rpc.js'
import type { Address } from '../types.js'
import { requireConnection } from './internal.js'

/**
 * @internal A bare viem client over the connected wallet for the EIP-5792 actions. Its transport
 * checks what the wallet answers to `wallet_*` before viem reads it, so a malformed answer is an
 * {@link InvalidCallsResultError}, never a TypeError deep in viem.
 */
export async function getCallsClient(client: Client, account?: Address | undefined): Promise<ViemClient<CustomTransport, Chain | undefined, Account>> {
  const { connector, account: active, chainId } = requireConnection(client)
  const provider = await connector.getProvider()
  const chain = client.chains.find((c) => c.id === chainId)
  const checked = {
    async request(args: { method: string; params?: unknown }) {
      return checkCallsResult(args.method, await provider.request(args as never))
    },
  }
  return createClient({ account: account ?? active, chain, transport: custom(checked, { retryCount: 0 }), pollingInterval: 250 })
}

/** @internal What a wallet's failure of an EIP-5792 method means, as a typed error. */
export function toCallsError(error: unknown, method: string): BaseError {
  // Ours, raised at the boundary above and wrapped by viem on the way out.
  for (let cause = error, depth = 0; cause && depth < 8; cause = (cause as { cause?: unknown }).cause, depth++)
    if (cause instanceof InvalidCallsResultError) return cause
  const typed = toProviderError(error)
  const rpcCode = (typed as { rpcCode?: number }).rpcCode
  // 4200 (EIP-1193), -32601 (JSON-RPC method not found), or a WalletConnect method not granted.
  if (typed instanceof UnsupportedProviderMethodError || rpcCode === -32601 || typed.code === 'method_not_granted')
    return new CallsNotSupportedError({ method, cause: error })
  if (rpcCode === AtomicityNotSupportedError.rpcCode) return new AtomicityNotSupportedError({ cause: error })
  if (rpcCode === UnknownCallsIdError.rpcCode) return new UnknownCallsIdError({ cause: error })
  return typed
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const isHex = (value: unknown): value is `0x${string}` => typeof value === 'string' && /^0x[0-9a-fA-F]*$/.test(value)
/** EIP-5792: an id is at most 4096 bytes, sent as a string. */
const isCallsId = (value: unknown): value is string => typeof value === 'string' && value.length > 0 && value.length <= 8194

/** @internal Throws InvalidCallsResultError unless `result` has the shape EIP-5792 gives `method`. */
export function checkCallsResult(method: string, result: unknown): unknown {
  const fail = (problem: string) => {
    throw new InvalidCallsResultError({ method, problem })
  }
  switch (method) {
    case 'wallet_sendCalls':
      // v1 wallets answer the id alone; v2 an object with the id.
      if (isCallsId(result)) return result
      if (!isRecord(result) || !isCallsId(result['id'])) fail('expected { id: string }')
      if ((result as Record<string, unknown>)['capabilities'] !== undefined && !isRecord((result as Record<string, unknown>)['capabilities']))
        fail('capabilities is not an object')
      return result
    case 'wallet_getCallsStatus': {
      if (!isRecord(result)) fail('expected an object')
      const status = (result as Record<string, unknown>)['status']
      if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status >= 700)
        fail(`status ${JSON.stringify(status)} is not a status code`)
      const { receipts, chainId, atomic } = result as Record<string, unknown>
      if (chainId !== undefined && !isHex(chainId)) fail('chainId is not hex')
      if (atomic !== undefined && typeof atomic !== 'boolean') fail('atomic is not a boolean')
      if (receipts !== undefined && !Array.isArray(receipts)) fail('receipts is not a list')
      for (const receipt of (receipts as unknown[] | undefined) ?? [])
        if (!isRecord(receipt) || !isHex(receipt['transactionHash']) || !isHex(receipt['blockNumber']) || !isHex(receipt['gasUsed']))
          fail('a receipt lacks transactionHash, blockNumber or gasUsed')
      return result
    }
    case 'wallet_getCapabilities':
      if (!isRecord(result) || !Object.values(result).every(isRecord)) fail('expected capabilities by chain id')
      return result
    default:
      return result
  }
}
