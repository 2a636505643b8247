import { getAddress, stringToHex } from 'viem'
import type { EmbeddedFlows } from '../../connectors/embedded.js'
import type { Client } from '../../createClient.js'
import { ConnectorNotFoundError } from '../../errors/connection.js'
import { createSiweMessage } from '../../signIn/signIn.js'
import type { Address, Connector, Hex } from '../../types.js'
import type { LinkedLogin } from './linking.js'

// linkAccount's wallet kind (linking.ts), loaded with its first use.

/** An external wallet: its first account signs a SIWE message with a nonce of this browser's. */
export async function linkWallet(client: Client, flows: EmbeddedFlows, parameters: { wallet: Connector | string }): Promise<LinkedLogin> {
  const wanted = parameters.wallet
  const connector = typeof wanted === 'string' ? client.getConnectors().find((candidate) => candidate.id === wanted) : wanted
  if (!connector || connector.type === 'embedded') throw new ConnectorNotFoundError({ id: typeof wanted === 'string' ? wanted : wanted.id })
  const provider = await connector.getProvider()
  const [address] = (await provider.request({ method: 'eth_requestAccounts' })) as Address[]
  if (!address) throw new ConnectorNotFoundError({ id: connector.id })
  const issuedAt = new Date()
  const message = await createSiweMessage({
    address: getAddress(address),
    chainId: client.getState().connection?.chainId ?? client.chains[0].id,
    nonce: await flows.linking.walletNonce(),
    domain: typeof location === 'undefined' ? 'localhost' : location.host,
    uri: typeof location === 'undefined' ? 'http://localhost' : location.origin,
    statement: 'Link this wallet to your account.',
    issuedAt,
    expirationTime: new Date(issuedAt.getTime() + 600_000),
  })
  const signature = (await provider.request({ method: 'personal_sign', params: [stringToHex(message), address] })) as Hex
  return flows.linking.linkWallet({ message, signature })
}
