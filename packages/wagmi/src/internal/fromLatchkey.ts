import {
  createConnectionStore,
  type EIP1193Provider,
  type Connector as LatchkeyConnector,
  type CreateConnectorFn as LatchkeyCreateConnectorFn,
  SESSION_FIELDS,
} from '@latchkey/core'
import { getAddress } from 'viem'
import { type CreateConnectorFn, createConnector } from 'wagmi'
import { assertWagmiVersion } from './assertWagmiVersion.js'

/**
 * @internal A wagmi connector over a Latchkey connector. wagmi keeps the connection (account,
 * chain, recent connector) in its own storage; core's connection store, the one writer of
 * Latchkey's connection state, keeps beside it only what wagmi has no place for, the WalletConnect
 * session (`SESSION_FIELDS`), so nothing is stored twice.
 */
export function fromLatchkey<properties extends Record<string, unknown>>(
  create: LatchkeyCreateConnectorFn,
  options: { properties?: (connector: LatchkeyConnector) => properties } = {},
): CreateConnectorFn<EIP1193Provider, properties> {
  assertWagmiVersion()
  return createConnector<EIP1193Provider, properties>((config) => {
    const store = createConnectionStore({ keep: SESSION_FIELDS })
    const inner = create({ chains: config.chains, stored: () => store.read(create.id) })
    // Wallet events reach wagmi through its emitter, as a wagmi connector's provider listeners
    // would, and the store, which keeps the session they may carry.
    inner.emitter.on('change', (change) => {
      store.report(create.id, { type: 'change', ...change })
      const { session: _session, ...wagmiChange } = change
      config.emitter.emit('change', wagmiChange)
    })
    inner.emitter.on('disconnect', () => {
      store.report(create.id, { type: 'disconnect' })
      config.emitter.emit('disconnect')
    })
    // `display_uri` is sent exactly as wagmi's own WalletConnect connector sends it.
    inner.emitter.on('message', (message) => config.emitter.emit('message', message))
    const connector = {
      id: inner.id,
      name: inner.name,
      type: inner.type,
      icon: inner.icon,
      ...(inner.rdns ? { rdns: inner.rdns } : {}),
      async connect(
        parameters: {
          chainId?: number | undefined
          isReconnecting?: boolean | undefined
          withCapabilities?: boolean | undefined
          /** Ends a pairing in progress (the Latchkey modal's Cancel passes it through wagmi's connect). */
          signal?: AbortSignal | undefined
        } = {},
      ) {
        const result = await inner.connect({ chainId: parameters.chainId, isReconnecting: parameters.isReconnecting, signal: parameters.signal })
        store.report(create.id, { type: 'connect', ...result })
        const { accounts, chainId } = result
        // wagmi 3 may ask for accounts with their capabilities; EIP-5792 capabilities come from the wallet later.
        return { accounts: (parameters.withCapabilities ? accounts.map((address) => ({ address, capabilities: {} })) : accounts) as never, chainId }
      },
      async disconnect() {
        store.report(create.id, { type: 'disconnect' })
        await inner.disconnect()
      },
      getAccounts: () => inner.getAccounts(),
      getChainId: () => inner.getChainId(),
      getProvider: () => inner.getProvider(),
      isAuthorized: () => inner.isAuthorized(),
      switchChain: ({ chainId }: { chainId: number }) => inner.switchChain({ chainId }),
      onAccountsChanged(accounts: string[]) {
        if (accounts.length === 0) config.emitter.emit('disconnect')
        else config.emitter.emit('change', { accounts: accounts.map((account) => getAddress(account)) })
      },
      onChainChanged: (chainId: string) => config.emitter.emit('change', { chainId: Number(chainId) }),
      onDisconnect: () => config.emitter.emit('disconnect'),
      ...(options.properties?.(inner) as properties),
    }
    return connector
  })
}
