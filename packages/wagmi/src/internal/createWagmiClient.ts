import {
  type Address,
  CancelledError,
  type Client,
  type ConnectionStatus,
  type ConnectorEvents,
  type ConnectorType,
  createConnectionStore,
  createMemoryStorage,
  createSignInStore,
  type EIP1193Provider,
  type Connector as LatchkeyConnector,
  type Logger,
  report,
  type SignInAdapter,
  type State,
  type StateEvent,
} from '@latchkey/core'
import type { Config, Connector as WagmiConnector } from 'wagmi'
import { disconnect, switchAccount, switchChain, connect as wagmiConnect, watchConnectors } from 'wagmi/actions'
import { setUiLocale, takeCacaos } from './fromLatchkey.js'

/** What a connect attempt in Latchkey's modal adds to wagmi's state while it runs: which wallet, and the pairing URI. */
type Attempt = { connectorId: string; status: 'initialising' | 'connecting' | 'pairing'; uri: string | undefined }

const types: readonly ConnectorType[] = ['injected', 'walletConnect', 'embedded', 'mock']

/**
 * @internal A Latchkey client whose connection is wagmi's: the state is computed from
 * `config.state` on read, actions go through wagmi's actions, and connectors are wagmi's own
 * (EIP-6963 wallets included). It keeps only what wagmi has no place for, the connect attempt in
 * progress in the modal (pending wallet, pairing URI), and persists nothing, so `reconnect` of
 * `LatchkeyProvider` finds nothing and wagmi's own reconnect restores sessions.
 */
export function createWagmiClient(config: Config, options: { signIn?: SignInAdapter | undefined; logger?: Logger | undefined } = {}): Client {
  const logger = options.logger ?? console
  // Written by nobody: wagmi keeps the connection, so Latchkey's reconnect finds nothing to restore.
  const connections = createConnectionStore({ storage: createMemoryStorage() })
  let attempt: Attempt | undefined
  let attemptNumber = 0
  let state: State = derive()
  const listeners = new Set<(state: State, previous: State) => void>()

  function derive(): State {
    const wagmi = config.state
    const current = wagmi.current === null ? undefined : wagmi.connections.get(wagmi.current)
    const [first, ...rest] = current?.accounts ?? []
    const connection =
      current && first ? { connectorId: current.connector.id, accounts: [first, ...rest] as [Address, ...Address[]], chainId: current.chainId } : undefined
    const settled: ConnectionStatus = connection
      ? wagmi.status === 'reconnecting'
        ? 'reconnecting'
        : 'connected'
      : wagmi.status === 'connected'
        ? 'disconnected'
        : wagmi.status
    // The attempt ends the moment wagmi holds its connection, not a tick later when connect() returns.
    const pending = attempt && !(wagmi.status === 'connected' && connection?.connectorId === attempt.connectorId) ? attempt : undefined
    const status = pending?.status ?? settled
    return { status, connection, pendingConnectorId: pending?.connectorId, pairingUri: pending?.uri, chainId: connection?.chainId ?? wagmi.chainId }
  }

  function same(a: State, b: State) {
    return (
      a.status === b.status &&
      a.chainId === b.chainId &&
      a.pendingConnectorId === b.pendingConnectorId &&
      a.pairingUri === b.pairingUri &&
      a.connection?.connectorId === b.connection?.connectorId &&
      a.connection?.chainId === b.connection?.chainId &&
      a.connection?.accounts.join() === b.connection?.accounts.join()
    )
  }

  /** Recomputes from wagmi; listeners hear of real changes only, and the snapshot stays the same object otherwise. */
  function refresh() {
    const next = derive()
    if (same(next, state)) return
    const previous = state
    state = next
    for (const listener of [...listeners]) listener(state, previous)
  }

  const wrapped = new Map<string, LatchkeyConnector>()
  function wrap(connector: WagmiConnector): LatchkeyConnector {
    const known = wrapped.get(connector.uid)
    if (known) return known
    const rdns = typeof connector.rdns === 'string' ? connector.rdns : connector.rdns?.[0]
    const emitter = {
      on<name extends keyof ConnectorEvents>(name: name, listener: (data: ConnectorEvents[name]) => void) {
        connector.emitter.on(name, listener as never)
        return () => void connector.emitter.off(name, listener as never)
      },
      emit<name extends keyof ConnectorEvents>(name: name, data: ConnectorEvents[name]) {
        ;(connector.emitter.emit as (name: string, data: unknown) => void)(name, data)
      },
      listenerCount: (name: keyof ConnectorEvents) => connector.emitter.listenerCount(name),
    }
    const flows = (connector as { getFlows?: unknown }).getFlows
    const oauthProviders = (connector as { oauthProviders?: readonly ('google' | 'apple')[] }).oauthProviders
    const offersGuests = (connector as { offersGuests?: () => Promise<boolean> }).offersGuests
    const latchkey: LatchkeyConnector = {
      id: connector.id,
      name: connector.name,
      type: types.includes(connector.type as ConnectorType) ? (connector.type as ConnectorType) : 'injected',
      icon: connector.icon,
      rdns,
      emitter,
      async connect({ chainId, signal, signIn } = {}) {
        if (config.state.connections.has(connector.uid)) {
          // Connected already (wagmi keeps several connections): make it the current one.
          switchAccount(config, { connector })
          const connection = config.state.connections.get(connector.uid)!
          return { accounts: connection.accounts, chainId: connection.chainId }
        }
        // Our own connectors take the signal (it ends a WalletConnect pairing) and the one-click sign-in
        // fields (wagmi's connect passes what it does not know to the connector); for others the signal ends the wait.
        const result = wagmiConnect(config, {
          connector,
          ...(chainId === undefined ? {} : { chainId }),
          ...(signal ? { signal } : {}),
          ...(signIn ? { signIn } : {}),
        } as never) as Promise<{
          accounts: readonly (Address | { address: Address })[]
          chainId: number
        }>
        const aborted = new Promise<never>((_, reject) => {
          const abort = () => reject(new CancelledError({ details: 'Connecting was cancelled.' }))
          if (signal?.aborted) abort()
          signal?.addEventListener('abort', abort, { once: true })
        })
        const { accounts, chainId: connectedChainId } = await Promise.race([result, aborted])
        const cacaos = (connector as { [takeCacaos]?: () => readonly unknown[] | undefined })[takeCacaos]?.()
        return {
          accounts: accounts.map((account) => (typeof account === 'string' ? account : account.address)),
          chainId: connectedChainId,
          ...(cacaos ? { cacaos } : {}),
        }
      },
      disconnect: () => disconnect(config, { connector }),
      getAccounts: () => connector.getAccounts(),
      getChainId: () => connector.getChainId(),
      getProvider: async () => (await connector.getProvider()) as EIP1193Provider,
      isAuthorized: () => connector.isAuthorized(),
      switchChain: ({ chainId }) => switchChain(config, { chainId, connector }),
      ...(typeof flows === 'function'
        ? { getFlows: flows.bind(connector), oauthProviders: oauthProviders ?? [], offersGuests: offersGuests?.bind(connector) ?? (async () => false) }
        : {}),
    }
    wrapped.set(connector.uid, latchkey)
    return latchkey
  }

  let connectors: readonly LatchkeyConnector[] = config.connectors.map(wrap)
  const connectorListeners = new Set<(connectors: readonly LatchkeyConnector[]) => void>()

  const subscribe = (listener: (state: State, previous: State) => void) => {
    listeners.add(listener)
    return () => void listeners.delete(listener)
  }
  let unsubscribe: (() => void) | undefined
  // Until mounted nothing listens to wagmi (server render, a provider that never mounts): read afresh.
  const getState = () => {
    if (!unsubscribe) {
      const next = derive()
      if (!same(next, state)) state = next
    }
    return state
  }
  const auth = options.signIn ? createSignInStore(options.signIn, { getState, subscribe }) : undefined

  function setAttempt(next: Attempt | undefined) {
    attempt = next
    refresh()
  }

  return {
    chains: config.chains,
    connections,
    logger,
    auth,
    getState,
    subscribe,
    setLocale: setUiLocale,
    getConnectors: () => (unsubscribe ? connectors : (connectors = config.connectors.map(wrap))),
    subscribeConnectors(listener) {
      connectorListeners.add(listener)
      return () => void connectorListeners.delete(listener)
    },
    mount() {
      if (!unsubscribe) {
        // wagmi's store is the one store: every change of it is a change here, at once.
        const offState = config.subscribe(
          (wagmi) => wagmi,
          () => refresh(),
        )
        const offConnectors = watchConnectors(config, {
          onChange(next) {
            connectors = next.map(wrap)
            for (const listener of [...connectorListeners]) listener(connectors)
            refresh()
          },
        })
        connectors = config.connectors.map(wrap)
        refresh()
        unsubscribe = () => (offState(), offConnectors(), (unsubscribe = undefined))
      }
      // wagmi discovers EIP-6963 wallets and reconnects; what is left is a backend session kept across a reload.
      void auth?.restore()
      return () => unsubscribe?.()
    },
    _internal: {
      dispatch(event: StateEvent) {
        // Only the attempt in progress is ours; the connection itself is whatever wagmi says.
        if (event.type === 'connect') setAttempt({ connectorId: event.connectorId, status: event.needsInit ? 'initialising' : 'connecting', uri: undefined })
        else if (event.type === 'initialised' && attempt?.status === 'initialising') setAttempt({ ...attempt, status: 'connecting' })
        else if (event.type === 'pairing' && attempt) setAttempt({ ...attempt, status: 'pairing', uri: event.uri })
        else if (event.type === 'failed' || event.type === 'connected' || event.type === 'disconnected') setAttempt(undefined)
      },
      setConnection: () => setAttempt(undefined),
      clearConnection: () => setAttempt(undefined),
      forget: () => {},
      nextAttempt: () => ++attemptNumber,
      isCurrentAttempt: (value) => value === attemptNumber,
      report: (context, error) => report(logger, context, error),
    },
  }
}
