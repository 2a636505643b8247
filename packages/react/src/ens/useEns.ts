import type { Address } from '@latchkey/core'
import { useEffect, useState } from 'react'
import { useLatchkeyContext } from '../hooks/useClient.js'
import type { EnsProfile } from './ens.js'

/**
 * @internal The address's ENS name and avatar where its chain has ENS, else undefined. The lookup's
 * code (viem's ENS actions) downloads on the first ask, on a chain with ENS only.
 */
export function useEns(address: Address | undefined, chainId: number | undefined): EnsProfile | undefined {
  const { client } = useLatchkeyContext()
  const ens = address && client.chains.some((chain) => chain.id === chainId && chain.contracts?.ensUniversalResolver) ? `${chainId}:${address}` : undefined
  const [found, setFound] = useState<{ key: string; profile: EnsProfile | null }>()
  useEffect(() => {
    if (!ens || !address || chainId === undefined) return
    let live = true
    import('./ens.js')
      .then((module) => module.lookupEns(client, address, chainId))
      .then(
        (profile) => live && setFound({ key: ens, profile }),
        () => {},
      )
    return () => {
      live = false
    }
  }, [client, ens, address, chainId])
  return (found?.key === ens && found?.profile) || undefined
}
