import { type Address, type Client, getPublicClient } from '@latchkey/core'
import { getEnsAvatar, getEnsName } from 'viem/actions'
import { normalize } from 'viem/ens'

/** An address's primary ENS name and its avatar's URL (viem checked that it serves an image). */
export type EnsProfile = { readonly name: string; readonly avatar: string | undefined }

// Per chain and address, for the page's life: the button and the account modal ask once.
const cache = new Map<string, Promise<EnsProfile | null>>()

/** Whether `chainId` is one of the client's chains with ENS (viem's `contracts.ensUniversalResolver`). */
export const hasEns = (client: Client, chainId: number | undefined) =>
  client.chains.some((chain) => chain.id === chainId && chain.contracts?.ensUniversalResolver !== undefined)

/**
 * @internal The address's ENS name and avatar through viem (the chain's universal resolver),
 * cached per chain and address; null without a name, or on a chain without ENS. A failed read
 * (the RPC down) is null too and silent, and is not cached: the next open asks again.
 */
export function lookupEns(client: Client, address: Address, chainId: number): Promise<EnsProfile | null> {
  if (!hasEns(client, chainId)) return Promise.resolve(null)
  const key = `${chainId}:${address.toLowerCase()}`
  let found = cache.get(key)
  if (!found) {
    found = (async () => {
      const reader = getPublicClient(client, { chainId })
      const name = await getEnsName(reader, { address })
      if (!name) return null
      // getEnsAvatar answers null for a record that is not an image, or that no gateway serves.
      const avatar = await getEnsAvatar(reader, { name: normalize(name) }).catch(() => null)
      return { name, avatar: avatar ?? undefined }
    })()
    cache.set(key, found)
    found.catch(() => cache.delete(key))
  }
  return found.catch(() => null)
}
