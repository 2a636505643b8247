import type { Page } from 'playwright-core'
import {
  createWalletClient,
  defineChain,
  type Hex,
  http,
  isHex,
  numberToHex,
  type PrivateKeyAccount,
  type TransactionRequest,
  type TypedDataDefinition,
} from 'viem'

/** How the test wallet shows itself in the connect modal (EIP-6963 provider info). */
export const testWalletInfo = {
  uuid: '5b0f3c43-4a43-4e0b-9d8e-6a9d64a3a6f1',
  name: 'Consumer Test Wallet',
  rdns: 'org.latchkey.consumer-test-wallet',
  icon: `data:image/svg+xml,${encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 8 8"><rect width="8" height="8" fill="#2f6"/></svg>')}`,
} as const

export type TestWalletRequest = { method: string; params: unknown }

export type TestWallet = {
  /** Every request the page made, in order. */
  readonly requests: readonly TestWalletRequest[]
  /** Whether the page holds the account (after `eth_requestAccounts`, until `wallet_revokePermissions`). */
  readonly isConnected: boolean
  /** The next `personal_sign` is refused as a user would refuse it (EIP-1193 code 4001). */
  rejectNextSignature(): void
  /** The user picks another account in the wallet: the page hears `accountsChanged`. */
  switchAccount(account: PrivateKeyAccount): Promise<void>
}

type Reply = { result: unknown } | { error: { code: number; message: string } }

/**
 * Installs a browser wallet in the page as an extension would: an EIP-1193 provider announced
 * through EIP-6963. It is not part of the app under test. The page's requests come back to this
 * process, where a viem local account signs and reads go to the chain's JSON-RPC.
 * Call before the page loads the app.
 *
 * @example
 * const wallet = await installTestWallet(page, { account: privateKeyToAccount(generatePrivateKey()), chainId: 31337, rpcUrl })
 */
export async function installTestWallet(
  page: Page,
  parameters: {
    account: PrivateKeyAccount
    chainId: number
    rpcUrl: string
    /** Further chains the wallet can switch to (`wallet_switchEthereumChain`); it signs transactions on every one. */
    otherChains?: readonly { chainId: number; rpcUrl: string }[] | undefined
  },
): Promise<TestWallet> {
  let { account, chainId, rpcUrl } = parameters
  const chains = [{ chainId, rpcUrl }, ...(parameters.otherChains ?? [])]
  const emit = (event: string, data: unknown) =>
    page.evaluate(
      ([event, data]) => (window as unknown as { __consumerTestWalletEmit(event: string, data: unknown): void }).__consumerTestWalletEmit(event, data),
      [event, data] as const,
    )
  const requests: TestWalletRequest[] = []
  let connected = false
  let rejectSignature = false

  async function answer(method: string, params: unknown): Promise<Reply> {
    requests.push({ method, params })
    switch (method) {
      case 'eth_requestAccounts':
        connected = true
        return { result: [account.address] }
      case 'eth_accounts':
        return { result: connected ? [account.address] : [] }
      case 'eth_chainId':
        return { result: numberToHex(chainId) }
      case 'wallet_switchEthereumChain': {
        const [{ chainId: requested } = { chainId: '' }] = params as [{ chainId: string }]
        if (Number(requested) === chainId) return { result: null }
        const next = chains.find((chain) => chain.chainId === Number(requested))
        if (!next) return { error: { code: 4902, message: `Unrecognized chain ID ${requested}.` } }
        chainId = next.chainId
        rpcUrl = next.rpcUrl
        await emit('chainChanged', numberToHex(chainId))
        return { result: null }
      }
      case 'wallet_revokePermissions':
        connected = false
        return { result: null }
      case 'personal_sign': {
        const [message, address] = params as [Hex, string]
        if (!connected || address.toLowerCase() !== account.address.toLowerCase())
          return { error: { code: 4100, message: 'The requested account has not been authorized by the user.' } }
        if (rejectSignature) {
          rejectSignature = false
          return { error: { code: 4001, message: 'User rejected the request.' } }
        }
        return { result: await account.signMessage({ message: isHex(message) ? { raw: message } : message }) }
      }
      case 'eth_signTypedData_v4': {
        const [, typedData] = params as [string, string]
        return { result: await account.signTypedData(JSON.parse(typedData) as TypedDataDefinition) }
      }
      case 'eth_sendTransaction': {
        const [request] = params as [{ to: Hex; value?: Hex; data?: Hex }]
        const chain = defineChain({
          id: chainId,
          name: `Chain ${chainId}`,
          nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
          rpcUrls: { default: { http: [rpcUrl] } },
        })
        const wallet = createWalletClient({ account, chain, transport: http(rpcUrl) })
        const transaction: TransactionRequest = {
          to: request.to,
          ...(request.value ? { value: BigInt(request.value) } : {}),
          ...(request.data ? { data: request.data } : {}),
        }
        return { result: await wallet.sendTransaction(transaction) }
      }
      default: {
        const response = await fetch(rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: requests.length, method, params: params ?? [] }),
        })
        const body = (await response.json()) as Reply
        return 'error' in body ? { error: body.error } : { result: body.result }
      }
    }
  }

  await page.exposeFunction('__consumerTestWallet', answer)
  await page.addInitScript((info) => {
    type Listener = (...args: unknown[]) => void
    const listeners = new Map<string, Set<Listener>>()
    const bridge = (window as unknown as { __consumerTestWallet(method: string, params: unknown): Promise<Reply> }).__consumerTestWallet
    const provider = {
      async request({ method, params }: { method: string; params?: unknown }) {
        const reply = await bridge(method, params)
        if ('error' in reply) throw Object.assign(new Error(reply.error.message), { code: reply.error.code })
        return reply.result
      },
      on(event: string, listener: Listener) {
        listeners.set(event, (listeners.get(event) ?? new Set()).add(listener))
      },
      removeListener(event: string, listener: Listener) {
        listeners.get(event)?.delete(listener)
      },
    }
    ;(window as unknown as { __consumerTestWalletEmit(event: string, data: unknown): void }).__consumerTestWalletEmit = (event, data) => {
      for (const listener of [...(listeners.get(event) ?? [])]) listener(data)
    }
    const detail = Object.freeze({ info: Object.freeze({ ...info }), provider })
    const announce = () => window.dispatchEvent(new CustomEvent('eip6963:announceProvider', { detail }))
    window.addEventListener('eip6963:requestProvider', announce)
    announce()
  }, testWalletInfo)

  return {
    requests,
    get isConnected() {
      return connected
    },
    rejectNextSignature() {
      rejectSignature = true
    },
    async switchAccount(next) {
      account = next
      await emit('accountsChanged', [next.address])
    },
  }
}
