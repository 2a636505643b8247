import type { Address, Chain, EIP1193Provider, Hex } from 'viem'
import type { ConnectorSession, StoredConnection } from './connectionStore.js'
import type { Emitter } from './utils/emitter.js'

export type { Address, Chain, EIP1193Provider, Hex }

export type ConnectorType = 'injected' | 'walletConnect' | 'embedded' | 'mock'

/** Events every connector emits through its one emitter. */
export type ConnectorEvents = {
  /** The wallet changed account or chain. An empty `accounts` means it locked or revoked us. */
  change: { accounts?: readonly Address[] | undefined; chainId?: number | undefined; session?: ConnectorSession | undefined }
  connect: ConnectResult
  disconnect: undefined
  /** Out-of-band messages; `display_uri` carries a pairing URI. */
  message: { type: string; data?: unknown }
}

export type ConnectParameters = {
  chainId?: number | undefined
  signal?: AbortSignal | undefined
  /** True when restoring a stored connection: the connector must not prompt the user. */
  isReconnecting?: boolean | undefined
  /**
   * Sign in while connecting, where the wallet protocol can (WalletConnect's one-click sign-in):
   * the SIWE fields; the connector answers with the wallet's signed `cacaos`, or none when the
   * wallet only connected.
   */
  signIn?: OneClickSignIn | undefined
}

/** The EIP-4361 fields a one-click sign-in asks the wallet to sign, per chain. */
export type OneClickSignIn = {
  nonce: string
  domain: string
  uri: string
  statement?: string | undefined
  /** ISO 8601. */
  expirationTime?: string | undefined
}

/**
 * What a connection is: accounts, chain and, for a session-based connector, its session; and the
 * signed sign-in objects (CACAOs) when the wallet signed in while connecting.
 */
export type ConnectResult = {
  accounts: readonly Address[]
  chainId: number
  session?: ConnectorSession | undefined
  cacaos?: readonly unknown[] | undefined
}

/**
 * A wallet connector: data plus methods, events through `emitter`. Every connector exposes an
 * EIP-1193 provider, so viem, ethers or wagmi can drive any of them.
 */
export type Connector = {
  readonly id: string
  readonly name: string
  readonly type: ConnectorType
  /** A data: or https: URL of the wallet's icon. */
  readonly icon?: string | undefined
  /** The EIP-6963 reverse-DNS id, when the wallet announced one. */
  readonly rdns?: string | undefined
  /**
   * How often `waitForCallsStatus` asks this wallet for a batch's status, in ms (default 250). A
   * wallet in the page that watches its own batches (the embedded one) answers without a request,
   * so it may be asked more often.
   */
  readonly callsStatusPollingIntervalMs?: number | undefined
  readonly emitter: Emitter<ConnectorEvents>
  connect(parameters?: ConnectParameters): Promise<ConnectResult>
  disconnect(): Promise<void>
  getAccounts(): Promise<readonly Address[]>
  getChainId(): Promise<number>
  getProvider(): Promise<EIP1193Provider>
  isAuthorized(): Promise<boolean>
  switchChain(parameters: { chainId: number; signal?: AbortSignal | undefined }): Promise<Chain>
}

/**
 * What a connector factory is given by the client. Connectors never write storage: they report
 * through their events and `connect()` result, and read back what the connection store keeps.
 */
export type ConnectorConfig = {
  readonly chains: readonly [Chain, ...Chain[]]
  /** What the connection store keeps of this connector's connection, for restoring it. */
  readonly stored: () => StoredConnection
  /**
   * The language the app's Latchkey UI shows (`client.setLocale`, which LatchkeyProvider calls with
   * its locale), read when a connector opens UI of its own (the embedded wallet's consent frame).
   */
  readonly locale?: (() => string | undefined) | undefined
}

/** A connector factory: `injected()`, `walletConnect()`, `embedded()` return one. */
export type CreateConnectorFn = ((config: ConnectorConfig) => Connector) & {
  /** Known before the connector is built, so storage can be namespaced by it. */
  readonly id: string
}

/** Where the connection stands (ARCHITECTURE.md, SPEC §4). */
export type ConnectionStatus = 'disconnected' | 'initialising' | 'pairing' | 'connecting' | 'connected' | 'reconnecting'

export type Connection = {
  readonly connectorId: string
  readonly accounts: readonly [Address, ...Address[]]
  readonly chainId: number
}

export type State = {
  readonly status: ConnectionStatus
  /** The live connection; present only while `status` is `connected` or a new attempt runs over it. */
  readonly connection: Connection | undefined
  /** The connector an attempt in progress uses. */
  readonly pendingConnectorId: string | undefined
  /** The pairing URI while `status` is `pairing`. */
  readonly pairingUri: string | undefined
  /** The chain the app is on: the wallet's when connected, otherwise the last used or the default. */
  readonly chainId: number
}
