import type {
  ConnectionStore,
  ConnectorType,
  EIP1193Provider,
  Connector as LatchkeyConnector,
  CreateConnectorFn as LatchkeyCreateConnectorFn,
  OneClickSignIn,
} from '@latchkey/core'
import { type CreateConnectorFn, createConnector } from 'wagmi'
import { assertWagmiVersion } from './assertWagmiVersion.js'

/**
 * @internal Where a wagmi connector of ours leaves the CACAOs a one-click sign-in brought back:
 * wagmi's `connect` returns accounts and chain only, so the bridge picks them up here.
 */
export const takeCacaos = Symbol.for('latchkey.wagmi.takeCacaos')

/** What wagmi needs of a connector before its code has loaded. */
export type ConnectorInfo = { id: string; name: string; type: ConnectorType; icon: string }

/**
 * @internal A wagmi connector over a Latchkey connector whose code, core's connector included,
 * loads on first use. wagmi's `reconnect` asks every connector for its provider on mount; one with
 * nothing to restore (`canRestore` false: no WalletConnect session, no embedded-wallet record)
 * answers none without loading anything, so a first visit downloads neither. wagmi keeps the
 * connection (account, chain, recent connector) in its own storage; core's connection store, the
 * one writer of Latchkey's connection state, keeps beside it only what wagmi has no place for,
 * the WalletConnect session (`SESSION_FIELDS`), so nothing is stored twice.
 */
/**
 * The language of the app's Latchkey UI (the wagmi client's `setLocale`, which the provider calls):
 * wagmi builds these connectors, not our client, so they read it here when they open UI of their
 * own (the embedded wallet's consent frame).
 */
let uiLocale: string | undefined
export const setUiLocale = (locale: string | undefined): void => {
  uiLocale = locale
}

export function fromLatchkey<properties extends Record<string, unknown>>(
  info: ConnectorInfo,
  parameters: {
    load: () => Promise<{ create: LatchkeyCreateConnectorFn; store: ConnectionStore }>
    canRestore: () => boolean
    properties?: (connector: () => Promise<LatchkeyConnector>) => properties
  },
): CreateConnectorFn<EIP1193Provider, properties> {
  assertWagmiVersion()
  return createConnector<EIP1193Provider, properties>((config) => {
    let loading: Promise<LatchkeyConnector> | undefined
    let cacaos: readonly unknown[] | undefined
    const load = () => {
      loading ??= parameters.load().then(({ create, store }) => {
        const inner = create({ chains: config.chains, stored: () => store.read(info.id), locale: () => uiLocale })
        // Wallet events reach wagmi through its emitter, as a wagmi connector's provider listeners
        // would, and the store, which keeps the session they may carry.
        inner.emitter.on('change', (change) => {
          store.report(info.id, { type: 'change', ...change })
          const { session: _session, ...wagmiChange } = change
          config.emitter.emit('change', wagmiChange)
        })
        inner.emitter.on('disconnect', () => {
          store.report(info.id, { type: 'disconnect' })
          config.emitter.emit('disconnect')
        })
        // `display_uri` is sent exactly as wagmi's own WalletConnect connector sends it.
        inner.emitter.on('message', (message) => config.emitter.emit('message', message))
        const connect = inner.connect.bind(inner)
        const disconnect = inner.disconnect.bind(inner)
        return Object.assign(inner, {
          async connect(options: Parameters<LatchkeyConnector['connect']>[0]) {
            const result = await connect(options)
            store.report(info.id, { type: 'connect', ...result })
            return result
          },
          async disconnect() {
            store.report(info.id, { type: 'disconnect' })
            await disconnect()
          },
        })
      })
      loading.catch(() => (loading = undefined))
      return loading
    }
    const connector = {
      ...info,
      async connect(
        options: {
          chainId?: number | undefined
          isReconnecting?: boolean | undefined
          withCapabilities?: boolean | undefined
          /** Ends a pairing in progress (the Latchkey modal's Cancel passes it through wagmi's connect). */
          signal?: AbortSignal | undefined
          /** One-click sign-in (WalletConnect's `wc_sessionAuthenticate`): the SIWE fields, passed through wagmi's connect. */
          signIn?: OneClickSignIn | undefined
        } = {},
      ) {
        const inner = await load()
        cacaos = undefined
        const result = await inner.connect({ chainId: options.chainId, isReconnecting: options.isReconnecting, signal: options.signal, signIn: options.signIn })
        const { accounts, chainId } = result
        cacaos = result.cacaos
        // wagmi 3 may ask for accounts with their capabilities; EIP-5792 capabilities come from the wallet later.
        return { accounts: (options.withCapabilities ? accounts.map((address) => ({ address, capabilities: {} })) : accounts) as never, chainId }
      },
      async disconnect() {
        // Never loaded: nothing to end.
        if (loading) await (await load()).disconnect()
      },
      getAccounts: async () => (await load()).getAccounts(),
      getChainId: async () => (await load()).getChainId(),
      async getProvider() {
        // What wagmi's reconnect asks on every mount: no provider when there is nothing to restore.
        if (!loading && !parameters.canRestore()) return undefined as unknown as EIP1193Provider
        return (await load()).getProvider()
      },
      async isAuthorized() {
        if (!loading && !parameters.canRestore()) return false
        return (await load()).isAuthorized()
      },
      switchChain: async ({ chainId }: { chainId: number }) => (await load()).switchChain({ chainId }),
      onAccountsChanged(accounts: string[]) {
        if (accounts.length === 0) config.emitter.emit('disconnect')
        else config.emitter.emit('change', { accounts: accounts as `0x${string}`[] })
      },
      onChainChanged: (chainId: string) => config.emitter.emit('change', { chainId: Number(chainId) }),
      onDisconnect: () => config.emitter.emit('disconnect'),
      [takeCacaos]() {
        const taken = cacaos
        cacaos = undefined
        return taken
      },
      ...(parameters.properties?.(load) as properties),
    }
    return connector
  })
}
