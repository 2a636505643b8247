import type { Client } from '../createClient.js'

/**
 * Calls `onChange` with the new chain id whenever it changes.
 *
 * @example
 * const stop = watchChainId(client, { onChange: (chainId) => console.log(chainId) })
 */
export function watchChainId(client: Client, { onChange }: { onChange(chainId: number, previous: number): void }): () => void {
  return client.subscribe((state, previous) => {
    if (state.chainId !== previous.chainId) onChange(state.chainId, previous.chainId)
  })
}
