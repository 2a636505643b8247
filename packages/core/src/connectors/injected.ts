import { CONNECT_TIMEOUT_MS, RECONNECT_TIMEOUT_MS, REQUEST_TIMEOUT_MS } from '../constants.js'
import { ChainNotConfiguredError, NetworkSwitchingNotAvailableError, ProviderNotFoundError } from '../errors/connection.js'
import { toProviderError, UnrecognizedChainError, UnsupportedProviderMethodError } from '../errors/rpc.js'
import type { Address, ConnectorEvents, CreateConnectorFn, EIP1193Provider } from '../types.js'
import { type ChecksumAddress, loadChecksumAddress } from '../utils/checksum.js'
import { createEmitter } from '../utils/emitter.js'
import { withTimeout } from '../utils/wait.js'

export type InjectedParameters = {
  /** Default `injected`; EIP-6963 connectors use the rdns (or the wallet's dedicated key). */
  id?: string | undefined
  name?: string | undefined
  icon?: string | undefined
  rdns?: string | undefined
  /** The wallet's provider, or a getter for it. Default: the legacy `window.ethereum`. */
  provider?: EIP1193Provider | (() => EIP1193Provider | undefined) | undefined
  /** How long to wait for the user (connect, sign, send) and for plain reads, in ms. */
  timeouts?: { user?: number | undefined; read?: number | undefined } | undefined
}

type RequestArguments = { method: string; params?: unknown }
type LooseProvider = {
  request(args: RequestArguments): Promise<unknown>
  on?(event: string, listener: (...args: never[]) => void): void
  removeListener?(event: string, listener: (...args: never[]) => void): void
}

/**
 * A connector for a browser wallet that injects an EIP-1193 provider. The client creates one per
 * EIP-6963 announcement by itself; apps call this for a wallet they want to address directly.
 *
 * @example
 * const client = createClient({ chains: [mainnet], connectors: [injected({ id: 'my-wallet', provider: () => window.myWallet })] })
 */
export function injected(parameters: InjectedParameters = {}): CreateConnectorFn {
  const id = parameters.id ?? 'injected'
  const name = parameters.name ?? 'Browser Wallet'
  const userTimeout = parameters.timeouts?.user ?? REQUEST_TIMEOUT_MS
  const readTimeout = parameters.timeouts?.read ?? RECONNECT_TIMEOUT_MS
  const setup: CreateConnectorFn = Object.assign(
    (config: Parameters<CreateConnectorFn>[0]) => {
      const emitter = createEmitter<ConnectorEvents>()
      let detach: (() => void) | undefined

      function findProvider(): LooseProvider | undefined {
        const { provider } = parameters
        if (typeof provider === 'function') return provider() as LooseProvider | undefined
        if (provider) return provider as LooseProvider
        return typeof window === 'undefined' ? undefined : (window as { ethereum?: LooseProvider }).ethereum
      }

      async function request<result>(args: RequestArguments, ms = userTimeout, signal?: AbortSignal): Promise<result> {
        const provider = findProvider()
        if (!provider) throw new ProviderNotFoundError({ details: `${name} is not available in this browser.` })
        try {
          return (await withTimeout(provider.request(args), { what: `${name}: ${args.method}`, ms, signal })) as result
        } catch (error) {
          throw toProviderError(error)
        }
      }

      // Takes the loaded checksum so that the wallet's events are handled synchronously, in order.
      function attach(checksum: ChecksumAddress) {
        const provider = findProvider()
        if (detach || !provider?.on) return
        const onAccountsChanged = (accounts: string[]) => emitter.emit('change', { accounts: accounts.map(checksum) })
        const onChainChanged = (chainId: string | number) => emitter.emit('change', { chainId: Number(chainId) })
        const onDisconnect = (error?: { code?: number }) => {
          // 1013: the wallet is reconnecting to its node (MetaMask); the session is not over.
          if (error?.code === 1013) return
          detach?.()
          emitter.emit('disconnect', undefined)
        }
        provider.on('accountsChanged', onAccountsChanged)
        provider.on('chainChanged', onChainChanged)
        provider.on('disconnect', onDisconnect)
        detach = () => {
          provider.removeListener?.('accountsChanged', onAccountsChanged)
          provider.removeListener?.('chainChanged', onChainChanged)
          provider.removeListener?.('disconnect', onDisconnect)
          detach = undefined
        }
      }

      const getChainId = async () => Number(await request<string>({ method: 'eth_chainId' }, readTimeout))
      const getAccounts = async () => {
        const raw = await request<string[]>({ method: 'eth_accounts' }, readTimeout)
        return raw.map(await loadChecksumAddress())
      }

      const connector: ReturnType<CreateConnectorFn> = {
        id,
        name,
        type: 'injected',
        icon: parameters.icon,
        rdns: parameters.rdns,
        emitter,
        async connect({ chainId, signal, isReconnecting } = {}) {
          // The checksum code downloads while the wallet asks the user; a failed download is
          // reported by the await below.
          loadChecksumAddress().catch(() => {})
          const raw = isReconnecting
            ? await request<string[]>({ method: 'eth_accounts' }, readTimeout, signal)
            : await request<string[]>({ method: 'eth_requestAccounts' }, parameters.timeouts?.user ?? CONNECT_TIMEOUT_MS, signal)
          const checksum = await loadChecksumAddress()
          const accounts: Address[] = raw.map(checksum)
          let current = await getChainId()
          attach(checksum)
          if (chainId !== undefined && chainId !== current && !isReconnecting) current = (await connector.switchChain({ chainId, signal })).id
          return { accounts, chainId: current }
        },
        async disconnect() {
          detach?.()
          // Wallets that support it forget the permission, so the next connect asks again.
          await request({ method: 'wallet_revokePermissions', params: [{ eth_accounts: {} }] }, 5_000).catch(() => {})
        },
        getAccounts,
        getChainId,
        async getProvider() {
          const provider = findProvider()
          if (!provider) throw new ProviderNotFoundError({ details: `${name} is not available in this browser.` })
          return provider as EIP1193Provider
        },
        async isAuthorized() {
          try {
            return findProvider() !== undefined && (await getAccounts()).length > 0
          } catch {
            return false
          }
        },
        async switchChain({ chainId, signal }) {
          const chain = config.chains.find((c) => c.id === chainId)
          if (!chain) throw new ChainNotConfiguredError({ chainId })
          const hexId = `0x${chainId.toString(16)}`
          const switchTo = () => request({ method: 'wallet_switchEthereumChain', params: [{ chainId: hexId }] }, userTimeout, signal)
          try {
            await switchTo()
          } catch (error) {
            if (error instanceof UnsupportedProviderMethodError) throw new NetworkSwitchingNotAvailableError({ cause: error })
            if (!(error instanceof UnrecognizedChainError)) throw error
            await request(
              {
                method: 'wallet_addEthereumChain',
                params: [
                  {
                    chainId: hexId,
                    chainName: chain.name,
                    nativeCurrency: chain.nativeCurrency,
                    rpcUrls: chain.rpcUrls.default.http,
                    blockExplorerUrls: chain.blockExplorers ? [chain.blockExplorers.default.url] : undefined,
                  },
                ],
              },
              userTimeout,
              signal,
            )
            // Some wallets switch on add, some do not: switch only if still elsewhere.
            if ((await getChainId()) !== chainId) await switchTo()
          }
          emitter.emit('change', { chainId })
          return chain
        },
      }
      return connector
    },
    { id },
  )
  return setup
}
