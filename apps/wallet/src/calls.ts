import { createWalletCalls, type RpcReceipt, type WalletCalls } from '@latchkey/core/dev'
import type { KeyValueStorage } from '@latchkey/walletconnect'
import { type Address, createPublicClient, type Hex, http } from 'viem'

/** The EIP-5792 methods the reference wallet answers; status and capabilities without asking the user. */
export const CALLS_METHODS = ['wallet_sendCalls', 'wallet_getCallsStatus', 'wallet_getCapabilities'] as const
export const SILENT_CALLS_METHODS = ['wallet_getCallsStatus', 'wallet_getCapabilities'] as const

/**
 * The reference wallet's call batches (EIP-5792): one transaction per call from its EOA, status
 * read from the chain, sent batches remembered in the wallet's storage across reloads.
 *
 * @example
 * const calls = createReferenceWalletCalls({ chains, address: () => account.address, sendTransaction, storage })
 */
export function createReferenceWalletCalls(options: {
  chains: readonly { readonly id: number; readonly rpcUrl: string }[]
  address(): Address
  sendTransaction(chainId: number, call: { to: Address | undefined; value: bigint | undefined; data: Hex | undefined }): Promise<Hex>
  storage?: KeyValueStorage | undefined
}): WalletCalls {
  const rpcUrl = (chainId: number) => options.chains.find((chain) => chain.id === chainId)!.rpcUrl
  return createWalletCalls({
    chainIds: options.chains.map((chain) => chain.id),
    address: options.address,
    sendTransaction: options.sendTransaction,
    getReceipt: (chainId, hash) =>
      createPublicClient({ transport: http(rpcUrl(chainId)) }).request({ method: 'eth_getTransactionReceipt', params: [hash] }) as Promise<RpcReceipt | null>,
    storage: options.storage,
    storageKey: 'latchkey.wallet.calls',
  })
}
