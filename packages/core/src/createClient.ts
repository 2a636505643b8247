import type { Chain } from 'viem'
import { type ConnectionStore, type ConnectorSession, createConnectionStore } from './connectionStore.js'
import { createProviderDiscovery, type EIP6963ProviderDetail, type ProviderDiscovery } from './connectors/eip6963.js'
import { injected } from './connectors/injected.js'
import { legacyWalletName } from './connectors/legacy.js'
import { DEFAULT_CHAIN_ID, EXCLUDED_EIP6963_CONNECTOR_KEYS } from './constants.js'
import { InvalidChainsError, NoRpcUrlError } from './errors/connection.js'
import { createSignInStore, type SignInAdapter, type SignInStore } from './signIn/store.js'
import { initialState, type StateEvent, transition } from './state.js'
import type { KeyValueStorage } from './storage.js'
import type { Connector, CreateConnectorFn, State } from './types.js'
import { type Logger, report } from './utils/logger.js'
import { dedicatedWalletRdns } from './walletBook/dedicated.js'

export type ClientConfig = {
  /** The chains the app supports; switching is allowed only among them. Each needs an RPC url. */
  chains: readonly [Chain, ...Chain[]]
  /** Connectors the app sets up itself; EIP-6963 wallets are added on their own. */
  connectors?: readonly CreateConnectorFn[] | undefined
  /** Where the default connection store keeps its keys. Default: localStorage in browsers, memory elsewhere. */
  storage?: KeyValueStorage | undefined
  /**
   * The one writer of connection state (SPEC §3, §4). Default: `createConnectionStore({ storage })`.
   * A bridge whose connection state lives in another store (wagmi) passes its own here.
   */
  connectionStore?: ConnectionStore | undefined
  /** Listen for EIP-6963 announcements. Default true. */
  multiInjectedProviderDiscovery?: boolean | undefined
  /** The chain used before any wallet says otherwise. Default 1 if configured, else the first chain. */
  defaultChainId?: number | undefined
  /** Where warnings and errors go. Default `console`. */
  logger?: Logger | undefined
  /** The window to discover wallets in. Default the global one, when there is one. */
  window?: (EventTarget & { ethereum?: unknown }) | undefined
  /** Sign-In with Ethereum against the app's backend: `serverAdapter(url)` or your own adapter. */
  signIn?: SignInAdapter | undefined
  /** The language of the connectors' own UI (BCP 47: `ar`, `pt-BR`) until `setLocale` says otherwise. Default: the browser's. */
  locale?: string | undefined
}

export type Client = {
  readonly chains: readonly [Chain, ...Chain[]]
  /** What is kept of each connector's connection; read-only to everything but the client. */
  readonly connections: Pick<ConnectionStore, 'read' | 'getLastUsedChainId' | 'getRecentConnectorId'>
  readonly logger: Logger
  /** Sign-in state and its adapter, when the client was given `signIn`. */
  readonly auth: SignInStore | undefined
  getState(): State
  subscribe(listener: (state: State, previous: State) => void): () => void
  getConnectors(): readonly Connector[]
  subscribeConnectors(listener: (connectors: readonly Connector[]) => void): () => void
  /**
   * Starts browser-side work (EIP-6963 discovery). Idempotent; returns a function that stops it.
   * Nothing touches `window` before this is called, so the client is SSR-safe.
   */
  mount(): () => void
  /**
   * The language of the app's Latchkey UI (LatchkeyProvider calls this with its locale): connectors
   * with UI of their own show it in this language from then on (the embedded wallet's consent frame,
   * when it opens). `undefined`: the browser's.
   */
  setLocale(locale: string | undefined): void
  /** @internal */
  readonly _internal: ClientInternals
}

/** @internal */
export type ClientInternals = {
  dispatch(event: StateEvent): void
  /** Makes `connector` the live connection: listens to its events, persists, notifies. */
  setConnection(connector: Connector, result: { accounts: readonly `0x${string}`[]; chainId: number; session?: ConnectorSession | undefined }): void
  /** Forgets what is kept of a connector that could not be restored. */
  forget(connectorId: string): void
  /** Forgets the live connection and what storage holds of it (SPEC §4). */
  clearConnection(): void
  /** A number that changes with every connect attempt, so late results of older ones are ignored. */
  nextAttempt(): number
  isCurrentAttempt(attempt: number): boolean
  report(context: string, error: unknown): void
}

/**
 * Creates a Latchkey client: chains, connectors, storage and the connection store.
 *
 * @example
 * import { createClient } from '@latchkey/core'
 * import { mainnet } from 'viem/chains'
 * const client = createClient({ chains: [mainnet] })
 */
export function createClient(config: ClientConfig): Client {
  const chains = config.chains
  if (!chains?.length) throw new InvalidChainsError()
  for (const chain of chains) if (!chain.rpcUrls?.default?.http?.[0]) throw new NoRpcUrlError({ chainId: chain.id })

  const logger = config.logger ?? console
  const store = config.connectionStore ?? createConnectionStore({ storage: config.storage, onError: (error) => report(logger, 'storage', error) })

  const lastUsed = store.getLastUsedChainId()
  const fallbackChainId = config.defaultChainId ?? (chains.some((c) => c.id === DEFAULT_CHAIN_ID) ? DEFAULT_CHAIN_ID : chains[0].id)
  let state = initialState(chains.some((c) => c.id === lastUsed) ? (lastUsed as number) : fallbackChainId)
  const stateListeners = new Set<(state: State, previous: State) => void>()

  let locale = config.locale
  const build = (fn: CreateConnectorFn) => fn({ chains, stored: () => store.read(fn.id), locale: () => locale })
  const configured = (config.connectors ?? []).map(build)
  const discoveredById = new Map<string, Connector>()
  let connectors: readonly Connector[] = configured
  const connectorListeners = new Set<(connectors: readonly Connector[]) => void>()

  let discovery: ProviderDiscovery | undefined
  let unsubscribeDiscovery: (() => void) | undefined
  let detachConnection: (() => void) | undefined
  let attempt = 0

  function setState(next: State) {
    if (next === state) return
    const previous = state
    state = next
    for (const listener of [...stateListeners]) listener(state, previous)
  }

  function dispatch(event: StateEvent) {
    const previous = state
    setState(transition(state, event))
    persist(event, previous)
  }

  /** Storage follows the state: the store hears of each change of the live connection. */
  function persist(event: StateEvent, previous: State) {
    // However the connection ended (disconnect, wallet locked, no accounts left), its storage goes.
    if (previous.connection && !state.connection) return store.report(previous.connection.connectorId, { type: 'disconnect' })
    const connection = state.connection
    if (!connection || state === previous) return
    if (event.type === 'accountsChanged' && connection.accounts.join() !== previous.connection?.accounts.join())
      store.report(connection.connectorId, { type: 'change', accounts: connection.accounts })
    // Wallets tell of a switch twice (the answer and chainChanged): the store hears it once.
    if (event.type === 'chainChanged' && connection.chainId !== previous.connection?.chainId)
      store.report(connection.connectorId, { type: 'change', chainId: connection.chainId })
  }

  function connectorsFromDiscovery(providers: readonly EIP6963ProviderDetail[], win: ClientConfig['window']) {
    const taken = new Set(configured.map((c) => c.id))
    const next: Connector[] = [...configured]
    for (const { info, provider } of providers) {
      // A wallet with a dedicated key is listed once, under that key (SPEC §9 excluded keys).
      const dedicated = dedicatedWalletRdns[info.rdns as keyof typeof dedicatedWalletRdns] as string | undefined
      const id = dedicated && (EXCLUDED_EIP6963_CONNECTOR_KEYS as readonly string[]).includes(dedicated) ? dedicated : info.rdns
      if (taken.has(id)) continue
      taken.add(id)
      const connector = discoveredById.get(id) ?? build(injected({ id, name: info.name, icon: info.icon, rdns: info.rdns, provider }))
      discoveredById.set(id, connector)
      next.push(connector)
    }
    // The legacy window.ethereum only when no wallet announces itself.
    const legacy = win?.ethereum
    if (providers.length === 0 && legacy && typeof legacy === 'object' && !taken.has('injected')) {
      const connector =
        discoveredById.get('injected') ?? build(injected({ id: 'injected', name: legacyWalletName(legacy), provider: () => win?.ethereum as never }))
      discoveredById.set('injected', connector)
      next.push(connector)
    }
    return next
  }

  function setConnectors(next: readonly Connector[]) {
    if (next.length === connectors.length && next.every((c, i) => c === connectors[i])) return
    connectors = next
    for (const listener of [...connectorListeners]) listener(connectors)
  }

  const internals: ClientInternals = {
    dispatch,
    setConnection(connector, { accounts, chainId, session }) {
      detachConnection?.()
      const previousId = state.connection?.connectorId
      const offChange = connector.emitter.on('change', ({ accounts, chainId, session }) => {
        if (accounts?.length === 0) return internals.clearConnection()
        if (session && state.connection?.connectorId === connector.id) store.report(connector.id, { type: 'change', session })
        if (accounts) dispatch({ type: 'accountsChanged', accounts })
        if (chainId !== undefined && state.connection) dispatch({ type: 'chainChanged', chainId })
      })
      const offDisconnect = connector.emitter.on('disconnect', () => internals.clearConnection())
      detachConnection = () => {
        offChange()
        offDisconnect()
        detachConnection = undefined
      }
      if (previousId && previousId !== connector.id) store.report(previousId, { type: 'disconnect' })
      dispatch({ type: 'connected', connectorId: connector.id, accounts, chainId })
      if (state.connection?.connectorId === connector.id)
        store.report(connector.id, { type: 'connect', accounts: state.connection.accounts, chainId: state.chainId, session })
    },
    forget: (connectorId) => store.report(connectorId, { type: 'disconnect' }),
    clearConnection() {
      detachConnection?.()
      dispatch({ type: 'disconnected' })
    },
    nextAttempt: () => ++attempt,
    isCurrentAttempt: (value) => value === attempt,
    report: (context, error) => report(logger, context, error),
  }

  const subscribe = (listener: (state: State, previous: State) => void) => {
    stateListeners.add(listener)
    return () => void stateListeners.delete(listener)
  }
  const auth = config.signIn ? createSignInStore(config.signIn, { getState: () => state, subscribe }) : undefined

  return {
    chains,
    connections: {
      read: (connectorId) => store.read(connectorId),
      getLastUsedChainId: () => store.getLastUsedChainId(),
      getRecentConnectorId: () => store.getRecentConnectorId(),
    },
    logger,
    auth,
    getState: () => state,
    subscribe,
    getConnectors: () => connectors,
    subscribeConnectors(listener) {
      connectorListeners.add(listener)
      return () => void connectorListeners.delete(listener)
    },
    mount() {
      const win = config.window ?? (typeof window === 'undefined' ? undefined : window)
      if (!discovery && win && config.multiInjectedProviderDiscovery !== false) {
        discovery = createProviderDiscovery(win)
        const refresh = (providers: readonly EIP6963ProviderDetail[]) => setConnectors(connectorsFromDiscovery(providers, win))
        unsubscribeDiscovery = discovery.subscribe(refresh)
        refresh(discovery.getProviders())
      }
      // A session the backend kept across a reload.
      void auth?.restore()
      return () => {
        unsubscribeDiscovery?.()
        discovery?.destroy()
        discovery = undefined
        unsubscribeDiscovery = undefined
      }
    },
    setLocale(next) {
      locale = next
    },
    _internal: internals,
  }
}
