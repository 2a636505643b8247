'use client'
import type { Address } from '@latchkey/core'
import { useState } from 'react'
import { useEns } from './useEns.js'

/**
 * @internal The connect button's account label on a chain with ENS: the avatar (left out when it
 * fails to load) and the name, else `fallback` (the short address). Loaded only on such a chain.
 */
export default function EnsLabel({ address, chainId, fallback }: { address: Address; chainId: number; fallback: string }) {
  const ens = useEns(address, chainId)
  const [broken, setBroken] = useState<string>()
  const avatar = ens?.avatar !== broken && ens?.avatar
  return (
    <>
      {avatar && <img className="lk-button-avatar" src={avatar} alt="" width={20} height={20} onError={() => setBroken(avatar)} />}
      {ens?.name ?? fallback}
    </>
  )
}
