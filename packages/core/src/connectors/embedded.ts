// Types only: the embedded wallet (key-management client, crypto, passkeys) loads on first use.
import type * as Embedded from '@latchkey/embedded'
import { ChainNotConfiguredError, ConnectorError, NotConnectedError } from '../errors/connection.js'
import { toProviderError } from '../errors/rpc.js'
import type { Address, Connector, ConnectorEvents, CreateConnectorFn, EIP1193Provider } from '../types.js'
import { createEmitter } from '../utils/emitter.js'
import { EMBEDDED_INFO, EMBEDDED_WALLET_KEY, guestsOffered } from './info.js'

export type EmbeddedParameters = {
  /** Shown in sign-in emails and passkey prompts. Required (SPEC §5). */
  appName: string
  /** The app backend (@latchkey/server). Default: http://localhost:8787, the local stack's. */
  backendUrl?: string | undefined
  /** The key-management API; default: what the backend's /auth/config says. */
  kmsUrl?: string | undefined
  /** The parent organization; default: what the backend's /auth/config says. */
  organizationId?: string | undefined
  /** The export, import and recovery frames' origin; default: what the backend's /auth/config says. */
  framesUrl?: string | undefined
  /** Passkey relying party id (passkey sign-in, Add a passkey, re-verification). Default: the page's host name. */
  rpId?: string | undefined
  /** Lifetime of a session key in seconds. Default 900. */
  sessionSeconds?: number | undefined
  /**
   * The EIP-7702 batch executor the account delegates to for atomic `sendCalls`. Default: the
   * embedded wallet's `BATCH_EXECUTOR_ADDRESS`; `null` turns smart accounts off.
   */
  batchExecutor?: Address | null | undefined
  /**
   * Sponsored gas (ERC-7677): `sendTransaction` and `sendCalls` go as ERC-4337 UserOperations
   * through the chain's bundler (`bundlerUrls`, else the chain's `rpcUrls.bundler`) with the
   * paymaster's data. A refusal is `SponsorshipUnavailableError` and nothing is sent, unless
   * `fallback: 'user-pays'`.
   */
  sponsorship?: Embedded.Sponsorship | undefined
  /** The social sign-ins the modal offers ("Continue with Google / Apple"); the backend must have them configured. Default: none. */
  oauthProviders?: readonly ('google' | 'apple')[] | undefined
  /**
   * The language of the consent frame's dialogs (BCP 47: `ar`, `pt-BR`). Default: the client's
   * (`client.setLocale`, which LatchkeyProvider calls with its `locale`), else the browser's.
   */
  locale?: string | undefined
  /** @internal Tests replace the wallet's pieces (key store, storage, fetch). */
  walletOptions?: Partial<Embedded.EmbeddedWalletOptions> | undefined
}

/** The flows the sign-in UI drives; the connector connects once one of them has signed in. */
export type EmbeddedFlows = {
  wallet: Embedded.EmbeddedWallet
  passkeys: ReturnType<typeof Embedded.passkeyFlows>
  exportWallet(container: HTMLElement): Promise<{ close(): void }>
  importWallet(container: HTMLElement): Promise<{ complete(walletName: string): Promise<Address>; close(): void }>
  startRecovery(
    container: HTMLElement,
    email: string,
    recoveryType?: Embedded.RecoveryType,
  ): Promise<{ finish(): Promise<Embedded.EmbeddedWalletCredential>; close(): void }>
  /** Social sign-in: a popup (or a redirect where one cannot open), and finishing a redirect on return. */
  oauth: {
    signIn(provider: Embedded.OAuthProvider, mode?: 'popup' | 'redirect', popup?: Window | null): Promise<Embedded.EmbeddedWalletCredential>
    completeRedirect(): ReturnType<typeof Embedded.completeOAuthRedirect>
  }
  /** Account linking: the user, a login of each kind linked by its own flow, unlinking. */
  linking: Embedded.LinkingFlows
}

/** The embedded connector: a connector plus the sign-in and wallet flows, loaded on demand. */
export type EmbeddedConnector = Connector & {
  readonly type: 'embedded'
  /** The social sign-ins to offer (from the parameters). */
  readonly oauthProviders: readonly ('google' | 'apple')[]
  /**
   * Whether the app backend offers "Continue as guest" (`guests: true` at its /auth/config), read
   * without loading the wallet's code; false when it cannot be read.
   */
  offersGuests(): Promise<boolean>
  getFlows(): Promise<EmbeddedFlows>
}

// A literal (typed by EMBEDDED_INFO): reading EMBEDDED_INFO.id here would keep its icon in apps that never use it.
export const EMBEDDED_ID: typeof EMBEDDED_INFO.id = 'embedded'

/** Whether `connector` is the embedded one, with its flows. */
export function isEmbeddedConnector(connector: Connector | undefined): connector is EmbeddedConnector {
  return connector?.type === 'embedded' && typeof (connector as Partial<EmbeddedConnector>).getFlows === 'function'
}

/**
 * The embedded-wallet connector: email or passkey sign-in through the app backend, keys held by
 * the key-management service, signing through its API. Its code (about the size of the modal)
 * loads on first use; until then the connector is a few hundred bytes.
 *
 * @example
 * const client = createClient({ chains, connectors: [embedded({ appName: 'Demo', backendUrl: 'http://localhost:8787' })] })
 */
export function embedded(parameters: EmbeddedParameters): CreateConnectorFn {
  const id = EMBEDDED_ID
  const setup: CreateConnectorFn = Object.assign(
    (config: Parameters<CreateConnectorFn>[0]) => {
      const emitter = createEmitter<ConnectorEvents>()
      let flows: Promise<EmbeddedFlows> | undefined
      let provider: EIP1193Provider | undefined

      function load(): Promise<EmbeddedFlows> {
        flows ??= (async () => {
          const module = await import('@latchkey/embedded')
          const rpId = parameters.rpId ?? (typeof location === 'undefined' ? 'localhost' : location.hostname)
          const wallet = module.createEmbeddedWallet({
            appName: parameters.appName,
            backendUrl: parameters.backendUrl ?? 'http://localhost:8787',
            kmsUrl: parameters.kmsUrl,
            organizationId: parameters.organizationId,
            framesUrl: parameters.framesUrl,
            sessionSeconds: parameters.sessionSeconds,
            rpId,
            ...(parameters.batchExecutor === undefined ? {} : { batchExecutor: parameters.batchExecutor }),
            ...(parameters.sponsorship ? { sponsorship: parameters.sponsorship } : {}),
            chains: config.chains,
            // Read when the consent frame opens: the app's language then, not at connector setup.
            locale: parameters.locale ?? (() => config.locale?.()),
            ...parameters.walletOptions,
          })
          let last = wallet.current
          wallet.subscribe((next) => {
            const before = last
            last = next
            if (!next) {
              if (before) emitter.emit('disconnect', undefined)
              return
            }
            if (before && before.credential.address !== next.credential.address) emitter.emit('change', { accounts: [next.credential.address] })
            if (before && before.chainId !== next.chainId) emitter.emit('change', { chainId: next.chainId })
          })
          provider = module.createEmbeddedProvider(wallet, config.chains) as unknown as EIP1193Provider
          const passkeys = module.passkeyFlows(wallet, { rpId, appName: parameters.appName, sessionSeconds: parameters.sessionSeconds })
          return {
            wallet,
            passkeys,
            exportWallet: (container) => module.exportWallet(wallet, container),
            importWallet: (container) => module.importWallet(wallet, container),
            startRecovery: (container, email, recoveryType) => module.startRecovery(wallet, container, email, { recoveryType, passkeys }),
            oauth: {
              signIn: (provider, mode, popup) => module.signInWithOAuth(wallet, { provider, mode, popup }),
              completeRedirect: () => module.completeOAuthRedirect(wallet),
            },
            linking: module.linkingFlows(wallet, wallet.linkingPort, { rpId, appName: parameters.appName }),
          }
        })()
        flows.catch(() => (flows = undefined))
        return flows
      }

      const connector: EmbeddedConnector = {
        id,
        name: EMBEDDED_INFO.name,
        type: EMBEDDED_INFO.type,
        icon: EMBEDDED_INFO.icon,
        // The wallet watches the batches it sends and answers their status in the page (embedded's callsWatch.ts).
        callsStatusPollingIntervalMs: 25,
        emitter,
        oauthProviders: parameters.oauthProviders ?? [],
        offersGuests: guestsOffered(parameters),
        getFlows: load,
        async connect({ chainId, isReconnecting } = {}) {
          try {
            const { wallet } = await load()
            const current = isReconnecting ? await wallet.restore() : wallet.current
            if (!current) {
              if (isReconnecting) throw new NotConnectedError({ details: 'The embedded wallet session has ended.' })
              throw new ConnectorError({ code: 'account_not_found', shortMessage: 'Account not found', details: 'Sign in with email or a passkey first.' })
            }
            if (chainId !== undefined && chainId !== wallet.chainId && config.chains.some((chain) => chain.id === chainId)) wallet.switchChain(chainId)
            return { accounts: [current.credential.address], chainId: wallet.chainId }
          } catch (error) {
            throw toProviderError(error)
          }
        },
        async disconnect() {
          if (!flows) return
          await (await flows).wallet.signOut()
        },
        async getAccounts() {
          const current = (await load()).wallet.current
          return current ? [current.credential.address] : []
        },
        async getChainId() {
          return (await load()).wallet.chainId
        },
        async getProvider() {
          await load()
          return provider!
        },
        async isAuthorized() {
          // Nothing stored: nothing to restore, and no reason to load the wallet's code.
          if (!(parameters.walletOptions?.storage ?? browserStorage())?.getItem(EMBEDDED_WALLET_KEY)) return false
          try {
            return (await (await load()).wallet.restore()) !== undefined
          } catch {
            return false
          }
        },
        async switchChain({ chainId }) {
          // Local: the wallet signs for any configured chain.
          const chain = config.chains.find((candidate) => candidate.id === chainId)
          if (!chain)
            throw new ChainNotConfiguredError({ chainId })
            // The wallet's subscription reports the change.
          ;(await load()).wallet.switchChain(chainId)
          return chain
        },
      }
      return connector
    },
    { id },
  )
  return setup
}

function browserStorage(): Storage | undefined {
  try {
    return typeof localStorage === 'undefined' ? undefined : localStorage
  } catch {
    // Storage blocked (privacy settings): nothing was stored either.
    return undefined
  }
}
