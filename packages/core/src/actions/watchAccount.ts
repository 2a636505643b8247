import type { Client } from '../createClient.js'
import { type GetAccountReturnType, getAccount } from './getAccount.js'

export type WatchAccountParameters = {
  onChange(account: GetAccountReturnType, previous: GetAccountReturnType): void
}

/**
 * Calls `onChange` whenever the account, chain, connector or status changes.
 *
 * @example
 * const stop = watchAccount(client, { onChange: ({ address }) => console.log(address) })
 */
export function watchAccount(client: Client, { onChange }: WatchAccountParameters): () => void {
  let previous = getAccount(client)
  const update = () => {
    const next = getAccount(client)
    if (
      next.address === previous.address &&
      next.chainId === previous.chainId &&
      next.status === previous.status &&
      next.connector === previous.connector &&
      next.addresses.length === previous.addresses.length
    )
      return
    const last = previous
    previous = next
    onChange(next, last)
  }
  const offState = client.subscribe(update)
  const offConnectors = client.subscribeConnectors(update)
  return () => {
    offState()
    offConnectors()
  }
}
