import {
  type ConnectorStorage,
  createMemoryStorage,
  createStorage,
  type EIP1193Provider,
  type Connector as LatchkeyConnector,
  type CreateConnectorFn as LatchkeyCreateConnectorFn,
} from '@latchkey/core'
import { getAddress } from 'viem'
import { type CreateConnectorFn, createConnector } from 'wagmi'
import { assertWagmiVersion } from './assertWagmiVersion.js'

type StorageField = Parameters<ConnectorStorage['get']>[0]

/**
 * @internal A wagmi connector over a Latchkey connector. wagmi keeps the connection (account,
 * chain, recent connector) in its own storage; the Latchkey connector keeps only what its protocol
 * needs across a reload (`persisted`, e.g. the WalletConnect session topic), the rest in memory, so
 * nothing is stored twice.
 */
export function fromLatchkey<properties extends Record<string, unknown>>(
  create: LatchkeyCreateConnectorFn,
  options: { persisted: readonly StorageField[]; properties?: (connector: LatchkeyConnector) => properties },
): CreateConnectorFn<EIP1193Provider, properties> {
  assertWagmiVersion()
  return createConnector<EIP1193Provider, properties>((config) => {
    const inner = create({ chains: config.chains, storage: connectorStorage(create.id, options.persisted) })
    // Wallet events reach wagmi through its emitter, as a wagmi connector's provider listeners would.
    inner.emitter.on('change', (change) => config.emitter.emit('change', change))
    inner.emitter.on('disconnect', () => config.emitter.emit('disconnect'))
    // `display_uri` is sent exactly as wagmi's own WalletConnect connector sends it.
    inner.emitter.on('message', (message) => config.emitter.emit('message', message))
    const connector = {
      id: inner.id,
      name: inner.name,
      type: inner.type,
      icon: inner.icon,
      ...(inner.rdns ? { rdns: inner.rdns } : {}),
      async connect(parameters: { chainId?: number | undefined; isReconnecting?: boolean | undefined; withCapabilities?: boolean | undefined } = {}) {
        const { accounts, chainId } = await inner.connect({ chainId: parameters.chainId, isReconnecting: parameters.isReconnecting })
        // wagmi 3 may ask for accounts with their capabilities; EIP-5792 capabilities come from the wallet later.
        return { accounts: (parameters.withCapabilities ? accounts.map((address) => ({ address, capabilities: {} })) : accounts) as never, chainId }
      },
      disconnect: () => inner.disconnect(),
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

/** Persisted fields in the page's storage under Latchkey's keys (SPEC §3), the others in memory. */
function connectorStorage(connectorId: string, persisted: readonly StorageField[]): ConnectorStorage {
  const disk = createStorage().forConnector(connectorId)
  const memory = createStorage({ storage: createMemoryStorage() }).forConnector(connectorId)
  const slot = (field: StorageField) => (persisted.includes(field) ? disk : memory)
  return {
    get: (field) => slot(field).get(field),
    set: (field, value) => slot(field).set(field, value),
    remove: (field) => slot(field).remove(field),
    clear() {
      disk.clear()
      memory.clear()
    },
  }
}
