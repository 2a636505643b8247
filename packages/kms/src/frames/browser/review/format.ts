import { formatUnits, getAddress, isAddress } from 'viem'
import type { ReviewContext } from './types.js'

// How values read in the frame: full checksummed addresses (a shortened one is what address
// poisoning imitates), amounts in whole units, dates in UTC, chains by name and id.

/** Chains the frame names; any other reads "chain <id>". */
const CHAIN_NAMES: Readonly<Record<number, string>> = {
  1: 'Ethereum',
  10: 'OP Mainnet',
  137: 'Polygon',
  8453: 'Base',
  42161: 'Arbitrum One',
  11155111: 'Sepolia',
  84532: 'Base Sepolia',
  31337: 'Anvil A',
  31338: 'Anvil B',
}

/** "Anvil A (31337)", "chain 5000". */
export const formatNetwork = (chainId: number): string => {
  const name = CHAIN_NAMES[chainId]
  return name ? `${name} (${chainId})` : `chain ${chainId}`
}

/** The native currency's symbol: every chain the wallet serves pays gas in ETH. */
export const NATIVE_SYMBOL = 'ETH'

export const formatNative = (wei: bigint): string => `${formatUnits(wei, 18)} ${NATIVE_SYMBOL}`

/** "2026-11-28 01:13:49 UTC" from unix seconds. */
export const formatDate = (seconds: bigint | number): string => {
  const milliseconds = Number(seconds) * 1000
  if (!Number.isFinite(milliseconds) || Math.abs(milliseconds) > 8.64e15) return `${seconds} (unix time, beyond any date)`
  return `${new Date(milliseconds).toISOString().slice(0, 19).replace('T', ' ')} UTC`
}

/** A checksummed address, or undefined for anything that is not one. */
export const toAddress = (value: unknown): `0x${string}` | undefined =>
  typeof value === 'string' && isAddress(value, { strict: false }) ? getAddress(value) : undefined

export const sameAddress = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase()

/** A JSON-RPC quantity or number as a bigint; undefined when it is neither. */
export function toQuantity(value: unknown): bigint | undefined {
  if (typeof value === 'bigint') return value >= 0n ? value : undefined
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : undefined
  if (typeof value === 'string' && /^0x[0-9a-fA-F]{1,64}$/.test(value)) return BigInt(value)
  if (typeof value === 'string' && /^\d{1,78}$/.test(value)) return BigInt(value)
  return undefined
}

/** The origin's host ("app.example.com:8443"), as a SIWE domain names it. */
export const originHost = (context: ReviewContext): string => {
  try {
    return new URL(context.origin).host
  } catch {
    return context.origin
  }
}
