// Types only: the protocol itself loads with the first use of the connector.
import type { EthereumProvider, Metadata, ProposalNamespaces, WebSocketConstructor } from '@latchkey/walletconnect'
import { getAddress } from 'viem'
import type { ConnectorSession } from '../connectionStore.js'
import { DEFAULT_EVENTS, DEFAULT_METHODS, MAX_PAIRING_ATTEMPTS, OPTIONAL_EVENTS, PROVIDER_REINIT_WAIT_MS } from '../constants.js'
import {
  ChainNotConfiguredError,
  NetworkSwitchingNotAvailableError,
  NotConnectedError,
  QrModalInstanceError,
  QrModalNotInstalledError,
} from '../errors/connection.js'
import { toProviderError } from '../errors/rpc.js'
import type { KeyValueStorage } from '../storage.js'
import type { Address, ConnectorEvents, CreateConnectorFn, EIP1193Provider } from '../types.js'
import { createEmitter } from '../utils/emitter.js'
import { WALLETCONNECT_INFO } from './info.js'

/** What the optional QR modal package exports. */
export type QrModalModule = {
  createQrModal(options: { onClose?: (() => void) | undefined }): { open(uri: string): void; close(): void }
}

export type WalletConnectParameters = {
  /** Needed for the public relay; our relay runs without one. */
  projectId?: string | undefined
  /** Default: the public relay with a project id, else our local relay at ws://localhost:5555. */
  relayUrl?: string | undefined
  /** How the wallet shows the app. Default: the page's title, origin and icon. */
  metadata?: Metadata | undefined
  /** Show the framework-free QR modal of `@latchkey/qr-modal` (React apps use the Latchkey modal). */
  showQrModal?: boolean | undefined
  /**
   * RPC urls for reads, by chain id (or by CAIP-2 id for other namespaces). Without a project
   * id the client's chains' urls fill the gaps; with one, a chain without an url here reads
   * through the relay's JSON-RPC endpoint (SPEC §7).
   */
  rpcMap?: Readonly<Record<number | string, string>> | undefined
  /** Sent with the proposal; the wallet's answer is on the session. */
  sessionProperties?: Readonly<Record<string, string>> | undefined
  /** Namespaces besides eip155 to ask for (`solana`, …); requests reach them through the provider's `request(args, chain)`. */
  namespaces?: ProposalNamespaces | undefined
  /** Where the protocol keeps keys and sessions. Default: localStorage, else memory. */
  storage?: KeyValueStorage | undefined
  /** In Node 20, `ws`'s WebSocket. */
  WebSocket?: WebSocketConstructor | undefined
  /** Extra methods and events to ask for besides the defaults (SPEC §9). */
  optionalMethods?: readonly string[] | undefined
  /** @internal How the QR modal package is loaded; tests replace it. */
  loadQrModal?: (() => Promise<QrModalModule>) | undefined
  /** @internal Wait after re-initialising, SPEC §9 (1000 ms); tests shorten it. */
  reinitWaitMs?: number | undefined
}

// A literal (typed by WALLETCONNECT_INFO): reading WALLETCONNECT_INFO.id here would keep its icon in apps that never use it.
export const WALLETCONNECT_ID: typeof WALLETCONNECT_INFO.id = 'walletConnect'

/** The EIP-5792 methods every session asks for as optional methods. */
export const EIP5792_METHODS = ['wallet_sendCalls', 'wallet_getCallsStatus', 'wallet_getCapabilities', 'wallet_showCallsStatus'] as const

/**
 * The WalletConnect connector: pairs with a mobile wallet through a URI (QR code or deep link).
 * The protocol (about 20 KB gzip) loads on first use; until then this is a few hundred bytes.
 *
 * @example
 * const client = createClient({ chains: [mainnet], connectors: [walletConnect({ projectId })] })
 */
export function walletConnect(parameters: WalletConnectParameters = {}): CreateConnectorFn {
  const id = WALLETCONNECT_ID
  const setup: CreateConnectorFn = Object.assign(
    (config: Parameters<CreateConnectorFn>[0]) => {
      const emitter = createEmitter<ConnectorEvents>()
      let provider: Promise<EthereumProvider> | undefined
      let detach: (() => void) | undefined

      function relayUrl() {
        if (parameters.relayUrl) return parameters.relayUrl
        return parameters.projectId ? 'wss://relay.walletconnect.org' : 'ws://localhost:5555'
      }

      function load(): Promise<EthereumProvider> {
        provider ??= (async () => {
          const { createEthereumProvider, memoryStorage, OPTIONAL_METHODS } = await import('@latchkey/walletconnect')
          // With a project id the relay's endpoint is the default; the chains' urls only fill in without one.
          const rpcMap: Record<number | string, string> = {}
          if (!parameters.projectId) for (const chain of config.chains) rpcMap[chain.id] = chain.rpcUrls.default.http[0]!
          const created = createEthereumProvider({
            relayUrl: relayUrl(),
            projectId: parameters.projectId,
            metadata: parameters.metadata ?? pageMetadata(),
            chains: [config.chains[0].id],
            optionalChains: config.chains.map((chain) => chain.id),
            // SPEC §9, from core's constants.
            methods: DEFAULT_METHODS,
            events: DEFAULT_EVENTS,
            optionalEvents: OPTIONAL_EVENTS,
            maxPairingAttempts: MAX_PAIRING_ATTEMPTS,
            // Call batches pass through to wallets that grant them (EIP-5792), never required.
            optionalMethods: [...new Set([...(parameters.optionalMethods ?? OPTIONAL_METHODS), ...EIP5792_METHODS])],
            rpcMap: { ...rpcMap, ...parameters.rpcMap },
            ...(parameters.sessionProperties ? { sessionProperties: parameters.sessionProperties } : {}),
            ...(parameters.namespaces ? { namespaces: parameters.namespaces } : {}),
            storage: parameters.storage ?? browserStorage() ?? memoryStorage(),
            storagePrefix: `latchkey.${id}.client`,
            WebSocket: parameters.WebSocket,
            reinitWaitMs: parameters.reinitWaitMs ?? PROVIDER_REINIT_WAIT_MS,
          })
          await created.init()
          return created
        })()
        // A failed load may be retried by the next call.
        provider.catch(() => (provider = undefined))
        return provider
      }

      async function loadQrModal(onClose: () => void) {
        let module: QrModalModule
        try {
          module = await (parameters.loadQrModal ?? (() => import('@latchkey/qr-modal') as Promise<QrModalModule>))()
        } catch (error) {
          throw new QrModalNotInstalledError({ cause: error })
        }
        try {
          return module.createQrModal({ onClose })
        } catch (error) {
          throw new QrModalInstanceError({ cause: error })
        }
      }

      function attach(wc: EthereumProvider) {
        if (detach) return
        // Reported, not stored: the client's connection store writes (and clears) what is kept.
        const onAccounts = (accounts: readonly string[]) => emitter.emit('change', { accounts: accounts.map((a) => getAddress(a)), session: sessionOf(wc) })
        const onChain = (hex: string) => emitter.emit('change', { chainId: Number(hex) })
        const onDisconnect = () => {
          detach?.()
          emitter.emit('disconnect', undefined)
        }
        wc.on('accountsChanged', onAccounts)
        wc.on('chainChanged', onChain)
        wc.on('disconnect', onDisconnect)
        detach = () => {
          wc.removeListener('accountsChanged', onAccounts)
          wc.removeListener('chainChanged', onChain)
          wc.removeListener('disconnect', onDisconnect)
          detach = undefined
        }
      }

      function sessionOf(wc: EthereumProvider): ConnectorSession | undefined {
        return wc.session ? { topic: wc.session.topic, namespaces: wc.session.namespaces } : undefined
      }

      /** The EIP-1193 face: numeric codes for wallet answers, catalogue errors for ours. */
      function eip1193(wc: EthereumProvider): EIP1193Provider {
        const wrapped = {
          async request(args: { method: string; params?: unknown }) {
            try {
              return await wc.request(args)
            } catch (error) {
              const rpcCode = (error as { rpcCode?: unknown }).rpcCode
              if (typeof rpcCode === 'number')
                throw Object.assign(new Error((error as Error).message), { code: rpcCode === 5000 ? 4001 : rpcCode, cause: error })
              throw error
            }
          },
          on: wc.on,
          removeListener: wc.removeListener,
        }
        return wrapped as unknown as EIP1193Provider
      }

      const connector: ReturnType<CreateConnectorFn> = {
        id,
        name: WALLETCONNECT_INFO.name,
        type: WALLETCONNECT_INFO.type,
        icon: WALLETCONNECT_INFO.icon,
        emitter,
        async connect({ chainId, signal, isReconnecting, signIn } = {}) {
          try {
            const wc = await load()
            let cacaos: readonly unknown[] | undefined
            if (!wc.session) {
              if (isReconnecting) throw new NotConnectedError({ details: 'The WalletConnect session has ended.' })
              // Closing the QR modal ends the attempt as the caller's abort would.
              const local = new AbortController()
              const forward = () => local.abort(signal?.reason)
              signal?.addEventListener('abort', forward, { once: true })
              if (signal?.aborted) forward()
              const modal = parameters.showQrModal ? await loadQrModal(() => local.abort()) : undefined
              const onUri = (uri: string) => {
                emitter.emit('message', { type: 'display_uri', data: uri })
                modal?.open(uri)
              }
              const onMessage = (message: { type: string; data: unknown }) =>
                emitter.emit('message', { type: message.type, data: toProviderError(message.data) })
              wc.on('display_uri', onUri)
              wc.on('message', onMessage)
              try {
                if (signIn) {
                  // One approval for both: a wallet that cannot sign in this way still connects.
                  const result = await wc.authenticate({
                    domain: signIn.domain,
                    uri: signIn.uri,
                    nonce: signIn.nonce,
                    statement: signIn.statement,
                    exp: signIn.expirationTime,
                    signal: local.signal,
                  })
                  cacaos = result.cacaos
                } else await wc.connect({ signal: local.signal })
              } finally {
                signal?.removeEventListener('abort', forward)
                wc.removeListener('display_uri', onUri)
                wc.removeListener('message', onMessage)
                modal?.close()
              }
            } else if (isReconnecting) {
              const stored = config.stored().currentChain
              if (stored && stored !== wc.chainId) {
                try {
                  wc.setDefaultChain(stored)
                } catch {
                  // The stored chain left the session; stay on the session's.
                }
              }
            }
            attach(wc)
            if (chainId !== undefined && chainId !== wc.chainId && !isReconnecting) {
              // A chain outside the session is left to the wallet; the connection still stands.
              await connector.switchChain({ chainId, signal }).catch(() => undefined)
            }
            return {
              accounts: wc.accounts.map((a) => getAddress(a)) as Address[],
              chainId: wc.chainId,
              session: sessionOf(wc),
              ...(cacaos ? { cacaos } : {}),
            }
          } catch (error) {
            throw toProviderError(error)
          }
        },
        async disconnect() {
          detach?.()
          if (!provider) return
          const wc = await provider
          await wc.disconnect().catch(() => undefined)
        },
        async getAccounts() {
          return (await load()).accounts.map((a) => getAddress(a)) as Address[]
        },
        async getChainId() {
          return (await load()).chainId
        },
        async getProvider() {
          return eip1193(await load())
        },
        async isAuthorized() {
          // No stored session: nothing to restore, and no reason to load the protocol.
          if (!config.stored().sessionTopic) return false
          try {
            return (await load()).session !== undefined
          } catch {
            return false
          }
        },
        async switchChain({ chainId }) {
          const chain = config.chains.find((c) => c.id === chainId)
          if (!chain) throw new ChainNotConfiguredError({ chainId })
          const wc = await load()
          try {
            await wc.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: `0x${chainId.toString(16)}` }] })
          } catch (error) {
            const mapped = toProviderError(error)
            if (mapped.code === 'network_switching_only_available_in_wallet') throw new NetworkSwitchingNotAvailableError({ cause: error })
            throw mapped
          }
          // The provider's chainChanged reports the switch.
          return chain
        },
      }
      return connector
    },
    { id },
  )
  return setup
}

function pageMetadata(): Metadata {
  if (typeof document === 'undefined') return { name: 'Latchkey app', description: '', url: 'http://localhost', icons: [] }
  const icon = document.querySelector<HTMLLinkElement>('link[rel~="icon"]')?.href
  return { name: document.title || location.host, description: document.title, url: location.origin, icons: icon ? [icon] : [] }
}

function browserStorage(): KeyValueStorage | undefined {
  try {
    return typeof localStorage === 'undefined' ? undefined : localStorage
  } catch {
    // Storage blocked (privacy settings): memory instead.
    return undefined
  }
}
