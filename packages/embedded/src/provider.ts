import { type Chain, type Hex, hexToBigInt, isHex, type TypedDataDefinition } from 'viem'
import { AccountNotFoundError, ProviderRpcError } from './errors.js'
import type { EmbeddedWallet } from './wallet.js'

type Listener = (...args: never[]) => void
type RpcTransaction = {
  from?: string
  to?: `0x${string}` | null
  value?: Hex
  data?: Hex
  input?: Hex
  gas?: Hex
  nonce?: Hex
  maxFeePerGas?: Hex
  maxPriorityFeePerGas?: Hex
  gasPrice?: Hex
}

export { ProviderRpcError } from './errors.js'

/**
 * The embedded wallet as an EIP-1193 provider, so viem, ethers or wagmi drive it like any other:
 * accounts and signing through the key-management API, reads forwarded to the chain's RPC url,
 * `wallet_switchEthereumChain` among the configured chains.
 *
 * @example
 * const provider = createEmbeddedProvider(wallet, chains)
 * await provider.request({ method: 'personal_sign', params: ['0x68656c6c6f', address] })
 */
export function createEmbeddedProvider(wallet: EmbeddedWallet, chains: readonly Chain[]) {
  const listeners = new Map<string, Set<Listener>>()
  const emit = (event: string, ...args: unknown[]) => {
    for (const listener of listeners.get(event) ?? []) (listener as (...values: unknown[]) => void)(...args)
  }
  let last = wallet.current
  wallet.subscribe((next) => {
    const before = last
    last = next
    if (!next) {
      if (before) emit('accountsChanged', [])
      return
    }
    if (before?.credential.address !== next.credential.address) emit('accountsChanged', [next.credential.address])
    if (before?.chainId !== next.chainId) emit('chainChanged', `0x${next.chainId.toString(16)}`)
  })

  function account(requested?: unknown): `0x${string}` {
    const current = wallet.current
    if (!current) throw new ProviderRpcError(4100, 'The embedded wallet is not signed in.')
    if (typeof requested === 'string' && requested.toLowerCase() !== current.credential.address.toLowerCase())
      throw new AccountNotFoundError({ details: `This wallet cannot sign for ${requested}` })
    return current.credential.address
  }

  async function request({ method, params }: { method: string; params?: unknown }): Promise<unknown> {
    const list = (Array.isArray(params) ? params : []) as unknown[]
    switch (method) {
      case 'eth_accounts':
      case 'eth_requestAccounts':
        return wallet.current ? [wallet.current.credential.address] : []
      case 'eth_chainId':
        return `0x${wallet.chainId.toString(16)}`
      case 'personal_sign': {
        const [data, address] = list as [Hex | string, string]
        account(address)
        return wallet.signMessage({ message: isHex(data) ? { raw: data } : data })
      }
      case 'eth_sign': {
        const [address, data] = list as [string, Hex]
        account(address)
        return wallet.signMessage({ message: { raw: data } })
      }
      case 'eth_signTypedData_v4': {
        const [address, json] = list as [string, string | TypedDataDefinition]
        account(address)
        return wallet.signTypedData({ typedData: typeof json === 'string' ? (JSON.parse(json) as TypedDataDefinition) : json })
      }
      case 'eth_signTransaction':
      case 'eth_sendTransaction': {
        const [transaction] = list as [RpcTransaction]
        account(transaction.from)
        const request = {
          to: transaction.to,
          value: transaction.value === undefined ? undefined : hexToBigInt(transaction.value),
          data: transaction.data ?? transaction.input,
          gas: transaction.gas === undefined ? undefined : hexToBigInt(transaction.gas),
          nonce: transaction.nonce === undefined ? undefined : Number(transaction.nonce),
          maxFeePerGas: transaction.maxFeePerGas === undefined ? undefined : hexToBigInt(transaction.maxFeePerGas),
          maxPriorityFeePerGas: transaction.maxPriorityFeePerGas === undefined ? undefined : hexToBigInt(transaction.maxPriorityFeePerGas),
          gasPrice: transaction.gasPrice === undefined ? undefined : hexToBigInt(transaction.gasPrice),
        }
        if (method === 'eth_sendTransaction') return wallet.sendTransaction(request)
        throw new ProviderRpcError(4200, 'eth_signTransaction: use eth_sendTransaction; the embedded wallet broadcasts what it signs.')
      }
      case 'wallet_switchEthereumChain': {
        const [{ chainId }] = list as [{ chainId: Hex }]
        const id = Number(chainId)
        if (!chains.some((chain) => chain.id === id)) throw new ProviderRpcError(4902, `Chain ${id} is not configured.`)
        wallet.switchChain(id)
        return null
      }
      case 'wallet_getCapabilities':
      case 'wallet_sendCalls':
      case 'wallet_getCallsStatus': {
        // EIP-5792 loads with its first use, with the smart-account code.
        const { callsRequest } = await import('./smartAccount.js')
        return callsRequest(wallet, method, list, account)
      }
      case 'wallet_grantPermissions':
        // ERC-7715: the user approves the grant in the consent frame; nothing a page sets skips that.
        account()
        return wallet.grantPermissions(list)
      case 'wallet_getPermissions':
        account()
        return wallet.getPermissions()
      case 'wallet_revokePermissions':
        account()
        return wallet.revokePermissions(list)
      case 'wallet_addEthereumChain':
        throw new ProviderRpcError(4200, 'The embedded wallet signs only for the chains the app configured.')
      default: {
        // Reads go to the current chain's RPC url.
        const chain = chains.find((candidate) => candidate.id === wallet.chainId)!
        const response = await fetch(chain.rpcUrls.default.http[0]!, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: list }),
        })
        const answer = (await response.json()) as { result?: unknown; error?: { code: number; message: string } }
        if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code })
        return answer.result
      }
    }
  }

  return {
    request,
    on(event: string, listener: Listener) {
      let set = listeners.get(event)
      if (!set) listeners.set(event, (set = new Set()))
      set.add(listener)
    },
    removeListener(event: string, listener: Listener) {
      listeners.get(event)?.delete(listener)
    },
  }
}
