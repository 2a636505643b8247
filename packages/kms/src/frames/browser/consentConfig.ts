import { INVALID_REQUEST_CODE } from './consentMessages.js'
import { FrameError } from './encoding.js'
import type { WalletRequest } from './review/types.js'

// The consent frame's own configuration, written by the kms into the page's meta tags (kms
// settings --frames-chain, --frames-executor, --frames-paymaster and --frames-app-name), never
// taken from the embedding page: the RPC of each chain it reads tokens and simulates on (and the
// only hosts its CSP lets it reach), the batch executor, the one EIP-7702 delegate and batch target
// it signs for, and the app's paymasters and name, which a UserOperation's fee row names.

export type ConsentConfig = {
  /** Chain id → JSON-RPC url. */
  readonly chains: ReadonlyMap<number, string>
  readonly executor: `0x${string}` | undefined
  /** Chain id → the app's paymasters there, by kind. */
  readonly paymasters: ReadonlyMap<number, ChainPaymasters>
  readonly appName: string | undefined
}

/** The app's paymasters on one chain: the sponsoring one and the one charging gas in a token. */
export type ChainPaymasters = { readonly sponsor?: `0x${string}` | undefined; readonly token?: `0x${string}` | undefined }

/**
 * Reads `latchkey-chains` ("31337=http://127.0.0.1:8545 …"), `latchkey-executor`,
 * `latchkey-paymasters` ("31337=sponsor:0x… 31337=token:0x…") and `latchkey-app-name`; entries
 * that do not parse are left out.
 */
export function parseConsentConfig(meta: { chains: string; executor: string; paymasters?: string; appName?: string }): ConsentConfig {
  const chains = new Map<number, string>()
  for (const entry of meta.chains.split(/\s+/).filter(Boolean)) {
    const split = entry.indexOf('=')
    const id = Number(entry.slice(0, split))
    if (split > 0 && Number.isSafeInteger(id) && id > 0 && /^https?:\/\//.test(entry.slice(split + 1))) chains.set(id, entry.slice(split + 1))
  }
  const executor = /^0x[0-9a-fA-F]{40}$/.test(meta.executor) ? (meta.executor as `0x${string}`) : undefined
  const paymasters = new Map<number, ChainPaymasters>()
  for (const entry of (meta.paymasters ?? '').split(/\s+/)) {
    const match = /^(\d+)=(sponsor|token):(0x[0-9a-fA-F]{40})$/.exec(entry)
    if (match) paymasters.set(Number(match[1]), { ...paymasters.get(Number(match[1])), [match[2]!]: match[3] as `0x${string}` })
  }
  const appName = meta.appName?.trim() || undefined
  return { chains, executor, paymasters, appName }
}

/** Methods whose review reads the chain (tokens, fee, simulation): refused where the kms names no RPC for the chain. */
const CHAIN_METHODS: readonly WalletRequest['method'][] = ['eth_sendTransaction', 'wallet_sendCalls']

/**
 * The JSON-RPC of `chainId` as review/* reads it; throws for a transaction on a chain the kms
 * configured no RPC for (nothing could be decoded or simulated, so nothing is shown to approve).
 *
 * @example
 * const rpc = chainRpc(config, 'eth_sendTransaction', 31337)
 */
export function chainRpc(
  config: ConsentConfig,
  method: WalletRequest['method'],
  chainId: number,
  fetcher: typeof fetch = fetch,
): ((method: string, params: readonly unknown[]) => Promise<unknown>) | undefined {
  const url = config.chains.get(chainId)
  if (!url) {
    if (CHAIN_METHODS.includes(method))
      throw new FrameError(
        `this frame has no RPC for chain ${chainId} (kms setting --frames-chain), so it cannot review a transaction there`,
        INVALID_REQUEST_CODE,
      )
    return undefined
  }
  let id = 0
  return async (rpcMethod, params) => {
    const response = await fetcher(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method: rpcMethod, params }),
    })
    const answer = (await response.json()) as { result?: unknown; error?: { message?: string } }
    if (answer.error) throw new Error(answer.error.message ?? `${rpcMethod} failed`)
    return answer.result
  }
}
