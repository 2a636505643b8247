import { type Address, getBalance } from '@latchkey/core'
import { useCallback, useEffect, useState } from 'react'
import { formatUnits } from 'viem'
import { useClient } from './useClient.js'

export type Balance = { value: bigint; decimals: number; symbol: string; formatted: string }

/**
 * The native balance of an address, read from the chain's RPC; refetched when the address or
 * chain changes.
 *
 * @example
 * const { data } = useBalance({ address, chainId })
 */
export function useBalance({ address, chainId }: { address: Address | undefined; chainId?: number | undefined }) {
  const client = useClient()
  const [result, setResult] = useState<{ data?: Balance; status: 'pending' | 'success' | 'error' }>({ status: 'pending' })
  const [generation, setGeneration] = useState(0)
  // biome-ignore lint/correctness/useExhaustiveDependencies: generation is the refetch trigger
  useEffect(() => {
    if (!address) return
    let live = true
    setResult((previous) => ({ ...previous, status: 'pending' }))
    getBalance(client, { address, chainId }).then(
      ({ value, decimals, symbol }) => live && setResult({ status: 'success', data: { value, decimals, symbol, formatted: formatUnits(value, decimals) } }),
      () => live && setResult({ status: 'error' }),
    )
    return () => {
      live = false
    }
  }, [client, address, chainId, generation])
  const refetch = useCallback(() => setGeneration((g) => g + 1), [])
  return { ...result, refetch }
}
