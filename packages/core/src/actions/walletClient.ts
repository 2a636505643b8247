import { type Account, type Chain, type CustomTransport, createClient, custom, type Client as ViemClient } from 'viem'
import type { Client } from '../createClient.js'
import type { Address } from '../types.js'
import { requireConnection } from './internal.js'

/**
 * @internal A bare viem client over the connected wallet's EIP-1193 provider, for the actions of
 * `viem/actions`. Not `createWalletClient`: its decorator imports every wallet action, and this
 * module sits apart from `internal.js` so that the connect modal, which needs only
 * `requireConnection`, never downloads viem's client code.
 */
export async function getWalletClient(client: Client, account?: Address | undefined): Promise<ViemClient<CustomTransport, Chain | undefined, Account>> {
  const { connector, account: active, chainId } = requireConnection(client)
  const provider = await connector.getProvider()
  const chain = client.chains.find((c) => c.id === chainId)
  return createClient({ account: account ?? active, chain, transport: custom(provider) })
}
