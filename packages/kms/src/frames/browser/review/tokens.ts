import { decodeAbiParameters, formatUnits, type Hex, hexToString, maxUint160, maxUint256, trim } from 'viem'
import type { ReviewContext, ReviewWarning } from './types.js'
import { unreadableToken } from './warnings.js'

// Token symbols and decimals, read from the chain the request is for: an app cannot make "1000000
// USDC" look like "1 USDC" by lying in its request. A token that does not answer is shown raw.

export type TokenInfo = { readonly symbol: string; readonly decimals: number }

const SYMBOL = '0x95d89b41' // symbol()
const DECIMALS = '0x313ce567' // decimals()
const SUPPORTS_INTERFACE = '0x01ffc9a7' // supportsInterface(bytes4)
const ERC721_INTERFACE = '80ac58cd'

/** eth_call on the context's chain; undefined when there is no chain or the call fails. */
export async function ethCall(context: ReviewContext, to: string, data: Hex): Promise<Hex | undefined> {
  if (!context.rpc) return undefined
  try {
    const result = await context.rpc('eth_call', [{ to, data }, 'latest'])
    return typeof result === 'string' && /^0x(?:[0-9a-fA-F]{2})*$/.test(result) && result !== '0x' ? (result as Hex) : undefined
  } catch {
    return undefined
  }
}

// One read per token and review context: a batch of ten transfers asks once.
const cache = new WeakMap<ReviewContext, Map<string, Promise<TokenInfo | undefined>>>()

/**
 * The ERC-20 `symbol()` and `decimals()` of `token` (ERC-721 collections answer `symbol()` and
 * get 0 decimals only where asked for); undefined when either call fails.
 *
 * @example
 * await readToken(context, '0x…') // { symbol: 'TKN', decimals: 18 }
 */
export function readToken(context: ReviewContext, token: string): Promise<TokenInfo | undefined> {
  let known = cache.get(context)
  if (!known) cache.set(context, (known = new Map()))
  const key = token.toLowerCase()
  let info = known.get(key)
  if (!info) known.set(key, (info = fetchToken(context, token)))
  return info
}

async function fetchToken(context: ReviewContext, token: string): Promise<TokenInfo | undefined> {
  const [symbol, decimals] = await Promise.all([readSymbol(context, token), ethCall(context, token, DECIMALS)])
  if (symbol === undefined || decimals === undefined) return undefined
  try {
    const [value] = decodeAbiParameters([{ type: 'uint8' }], decimals)
    return { symbol, decimals: value }
  } catch {
    return undefined
  }
}

/** `symbol()` as a string, or as bytes32 (older tokens); undefined when neither decodes to something printable. */
export async function readSymbol(context: ReviewContext, token: string): Promise<string | undefined> {
  const result = await ethCall(context, token, SYMBOL)
  if (!result) return undefined
  let symbol: string
  try {
    ;[symbol] = decodeAbiParameters([{ type: 'string' }], result)
  } catch {
    if (result.length !== 66) return undefined
    symbol = hexToString(trim(result, { dir: 'right' }))
  }
  // A symbol is a short label: control characters or spaces could fake the text around it.
  return /^[\p{L}\p{N}._$+-]{1,32}$/u.test(symbol) ? symbol : undefined
}

/** Whether `contract` says it is an ERC-721 collection (ERC-165). */
export async function isErc721(context: ReviewContext, contract: string): Promise<boolean> {
  const result = await ethCall(context, contract, `${SUPPORTS_INTERFACE}${ERC721_INTERFACE}${'0'.repeat(56)}`)
  return result !== undefined && result.length === 66 && BigInt(result) === 1n
}

/** Amounts at or above these mean "everything": the ERC-20 and Permit2 (uint160) maxima. */
export const isUnlimited = (amount: bigint): boolean => amount === maxUint256 || amount === maxUint160

/**
 * "1.5 TKN", "unlimited TKN"; with no token info, the raw amount and the address, and a warning.
 *
 * @example
 * formatTokenAmount(1500000000000000000n, '0x…', { symbol: 'TKN', decimals: 18 }) // { text: '1.5 TKN', symbol: 'TKN', warnings: [] }
 */
export function formatTokenAmount(
  amount: bigint,
  token: string,
  info: TokenInfo | undefined,
): { readonly text: string; readonly symbol: string; readonly warnings: readonly ReviewWarning[] } {
  if (!info) {
    const symbol = `tokens of ${token}`
    return { text: isUnlimited(amount) ? `unlimited ${symbol}` : `${amount} ${symbol} (raw amount)`, symbol, warnings: [unreadableToken(token)] }
  }
  return { text: isUnlimited(amount) ? `unlimited ${info.symbol}` : `${formatUnits(amount, info.decimals)} ${info.symbol}`, symbol: info.symbol, warnings: [] }
}
