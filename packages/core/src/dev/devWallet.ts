import { type Chain, createWalletClient, type EIP1193Provider, type Hex, hexToString, http, isHex, type LocalAccount, numberToHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { createWalletCalls, type RpcReceipt } from './walletCalls.js'

/** A request the dev wallet asks its user to approve. */
export type DevWalletPrompt = {
  method: string
  /** A human summary: the message text, the typed data's primary type, the transfer. */
  summary: string
  params: readonly unknown[]
}

export type DevWalletParameters = {
  /** The anvil test key the wallet holds. */
  privateKey: Hex
  /** More keys the user can switch to (`selectAccount`), as in a real wallet's account list. */
  otherKeys?: readonly Hex[] | undefined
  /** The account in use at start: 0 is `privateKey`, 1 the first of `otherKeys`. Default 0. */
  accountIndex?: number | undefined
  /** Called when the user switches account, so a page can remember it across reloads. */
  onAccountChanged?: ((index: number) => void) | undefined
  chains: readonly [Chain, ...Chain[]]
  /** The chain the wallet starts on. Default the first. */
  chainId?: number | undefined
  /** Resolves true to approve, false to reject (4001). Default: approve everything. */
  approve?: ((prompt: DevWalletPrompt) => Promise<boolean>) | undefined
  /** Called when the wallet's chain changes, so a page can remember it across reloads. */
  onChainChanged?: ((chainId: number) => void) | undefined
  /** Accounts are shared only after eth_requestAccounts, like a real extension. */
  authorized?: boolean | undefined
  onAuthorizedChanged?: ((authorized: boolean) => void) | undefined
}

export type DevWallet = EIP1193Provider & {
  readonly account: LocalAccount
  /** Every account the wallet holds, in order. */
  readonly accounts: readonly LocalAccount[]
  /** Emulates the user picking another account in the wallet: `accountsChanged` goes to the site. */
  selectAccount(index: number): void
  readonly chainId: number
  /** Emulates the user switching account or chain in the wallet's own UI. */
  emit(event: 'accountsChanged' | 'chainChanged' | 'disconnect' | 'connect', data: unknown): void
}

type Listener = (...args: unknown[]) => void

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

/**
 * A real EIP-1193 wallet for development and tests: holds one key, asks `approve` for every
 * request that needs the user, signs locally with viem and forwards reads to the chain's RPC.
 * It is not a mock: signatures and transactions are real and verifiable on anvil.
 *
 * @example
 * const wallet = createDevWallet({ privateKey: anvilKey, chains: [chainA, chainB] })
 * announceDevWallet(window, wallet)
 */
export function createDevWallet(parameters: DevWalletParameters): DevWallet {
  const accounts = [parameters.privateKey, ...(parameters.otherKeys ?? [])].map((key) => privateKeyToAccount(key))
  let index = Math.min(Math.max(parameters.accountIndex ?? 0, 0), accounts.length - 1)
  const current = () => accounts[index]!
  const listeners = new Map<string, Set<Listener>>()
  const approve = parameters.approve ?? (async () => true)
  let chainId = parameters.chainId ?? parameters.chains[0].id
  let authorized = parameters.authorized ?? false
  if (!parameters.chains.some((c) => c.id === chainId)) chainId = parameters.chains[0].id

  const chain = () => parameters.chains.find((c) => c.id === chainId) ?? parameters.chains[0]
  const walletClient = () => createWalletClient({ account: current(), chain: chain(), transport: http(chain().rpcUrls.default.http[0]) })

  // EIP-5792: batches go out as one transaction per call (an EOA cannot do better).
  const calls = createWalletCalls({
    chainIds: parameters.chains.map((c) => c.id),
    address: () => current().address,
    async sendTransaction(id, call) {
      const target = parameters.chains.find((c) => c.id === id)!
      const client = createWalletClient({ account: current(), chain: target, transport: http(target.rpcUrls.default.http[0]) })
      return client.sendTransaction({ to: call.to ?? null, value: call.value, data: call.data } as never)
    },
    getReceipt: (id, hash) => rpc(parameters.chains.find((c) => c.id === id)!, 'eth_getTransactionReceipt', [hash]) as Promise<RpcReceipt | null>,
  })

  function emit(event: string, data: unknown) {
    for (const listener of [...(listeners.get(event) ?? [])]) listener(data)
  }

  async function ask(method: string, summary: string, params: readonly unknown[]) {
    if (!(await approve({ method, summary, params }))) throw new RpcError(4001, 'User rejected the request.')
  }

  function requireAuthorized() {
    if (!authorized) throw new RpcError(4100, 'The requested account has not been authorized by the user.')
  }

  function requireOwnAddress(address: unknown) {
    if (typeof address !== 'string' || address.toLowerCase() !== current().address.toLowerCase())
      throw new RpcError(4100, `Unknown account ${String(address)}.`)
  }

  async function request({ method, params }: { method: string; params?: unknown }): Promise<unknown> {
    const list = (Array.isArray(params) ? params : params === undefined ? [] : [params]) as unknown[]
    switch (method) {
      case 'eth_requestAccounts':
        if (!authorized) {
          await ask(method, `Connect ${current().address} to this site`, list)
          authorized = true
          parameters.onAuthorizedChanged?.(true)
          emit('connect', { chainId: numberToHex(chainId) })
        }
        return [current().address]
      case 'eth_accounts':
        return authorized ? [current().address] : []
      case 'eth_chainId':
        return numberToHex(chainId)
      case 'net_version':
        return String(chainId)
      case 'wallet_revokePermissions':
        authorized = false
        parameters.onAuthorizedChanged?.(false)
        return null
      case 'personal_sign': {
        requireAuthorized()
        const [data, address] = list as [Hex, string]
        requireOwnAddress(address)
        const text = isHex(data) ? safeText(data) : String(data)
        await ask(method, text, list)
        return current().signMessage({ message: isHex(data) ? { raw: data } : String(data) })
      }
      case 'eth_signTypedData_v4': {
        requireAuthorized()
        const [address, json] = list as [string, string]
        requireOwnAddress(address)
        const typed = typeof json === 'string' ? JSON.parse(json) : json
        await ask(method, `Sign typed data: ${typed.primaryType}`, list)
        const { EIP712Domain: _, ...types } = typed.types
        return current().signTypedData({ domain: typed.domain, types, primaryType: typed.primaryType, message: typed.message })
      }
      case 'eth_sendTransaction': {
        requireAuthorized()
        const [tx] = list as [{ from: string; to?: Hex; value?: Hex; data?: Hex; gas?: Hex }]
        requireOwnAddress(tx.from)
        await ask(method, `Send ${tx.value ? BigInt(tx.value) : 0n} wei to ${tx.to ?? 'a new contract'}`, list)
        return walletClient().sendTransaction({
          to: tx.to ?? null,
          value: tx.value ? BigInt(tx.value) : undefined,
          data: tx.data,
          gas: tx.gas ? BigInt(tx.gas) : undefined,
        } as never)
      }
      case 'wallet_switchEthereumChain': {
        const [{ chainId: hexId }] = list as [{ chainId: Hex }]
        const target = Number(hexId)
        if (!parameters.chains.some((c) => c.id === target)) throw new RpcError(4902, `Unrecognized chain ${hexId}.`)
        if (target !== chainId) {
          await ask(method, `Switch to ${parameters.chains.find((c) => c.id === target)?.name} (${target})`, list)
          chainId = target
          parameters.onChainChanged?.(chainId)
          emit('chainChanged', numberToHex(chainId))
        }
        return null
      }
      case 'wallet_addEthereumChain':
        throw new RpcError(4200, 'This wallet knows only its configured chains.')
      case 'wallet_sendCalls': {
        requireAuthorized()
        // Checked before the user is asked: a malformed batch is refused and nothing is sent.
        const batch = calls.check(list)
        const summary = batch.calls.map((call) => `${call.value ?? 0n} wei to ${call.to ?? 'a new contract'}`).join('; ')
        await ask(method, `Send ${batch.calls.length} calls: ${summary}`, list)
        return calls.send(batch)
      }
      case 'wallet_getCallsStatus':
        return calls.getCallsStatus(list)
      case 'wallet_getCapabilities':
        requireAuthorized()
        return calls.getCapabilities(list)
      default:
        return forward(method, list)
    }
  }

  function forward(method: string, params: unknown[]) {
    return rpc(chain(), method, params)
  }

  async function rpc(target: Chain, method: string, params: unknown[]) {
    const response = await fetch(target.rpcUrls.default.http[0] as string, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    })
    const body = (await response.json()) as { result?: unknown; error?: { code: number; message: string } }
    if (body.error) throw new RpcError(body.error.code, body.error.message)
    return body.result
  }

  const wallet = {
    request,
    on(event: string, listener: Listener) {
      const set = listeners.get(event) ?? new Set()
      set.add(listener)
      listeners.set(event, set)
    },
    removeListener(event: string, listener: Listener) {
      listeners.get(event)?.delete(listener)
    },
    emit,
    get account() {
      return current()
    },
    accounts,
    selectAccount(next: number) {
      if (!accounts[next] || next === index) return
      index = next
      parameters.onAccountChanged?.(index)
      if (authorized) emit('accountsChanged', [current().address])
    },
    get chainId() {
      return chainId
    },
  }
  return wallet as unknown as DevWallet
}

function safeText(data: Hex) {
  try {
    return hexToString(data)
  } catch {
    return data
  }
}

/** The dev wallet's EIP-6963 identity. */
export const devWalletInfo = {
  name: 'Latchkey Dev Wallet',
  rdns: 'dev.latchkey.wallet',
  icon: "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Crect width='32' height='32' rx='8' fill='%235b4cf0'/%3E%3Cpath d='M11 15v-3a5 5 0 0 1 10 0v3' stroke='white' stroke-width='2.5' fill='none'/%3E%3Crect x='9' y='15' width='14' height='10' rx='2' fill='white'/%3E%3C/svg%3E",
} as const

/**
 * Announces a provider through EIP-6963 now and whenever the page asks again. Returns a function
 * that stops answering.
 *
 * @example
 * const stop = announceProvider(window, { info: { ...devWalletInfo, uuid: crypto.randomUUID() }, provider: wallet })
 */
export function announceProvider(
  target: EventTarget,
  detail: { info: { uuid: string; name: string; icon: string; rdns: string }; provider: unknown },
): () => void {
  const frozen = Object.freeze({ info: Object.freeze({ ...detail.info }), provider: detail.provider })
  const announce = () => target.dispatchEvent(new CustomEvent('eip6963:announceProvider', { detail: frozen }))
  target.addEventListener('eip6963:requestProvider', announce)
  announce()
  return () => target.removeEventListener('eip6963:requestProvider', announce)
}
