// Entry point of @latchkey/core. Internal modules are not re-exported.
export { connect, type ConnectErrorType, type ConnectParameters, type ConnectReturnType } from './actions/connect.js'
export { disconnect, type DisconnectReturnType } from './actions/disconnect.js'
export { getAccount, type GetAccountReturnType } from './actions/getAccount.js'
export { getBalance, type GetBalanceParameters, type GetBalanceReturnType } from './actions/getBalance.js'
export { getChainId } from './actions/getChainId.js'
export { getConnectors } from './actions/getConnectors.js'
export { getPublicClient } from './actions/getPublicClient.js'
export { reconnect, type ReconnectParameters, type ReconnectReturnType } from './actions/reconnect.js'
export { sendTransaction, type SendTransactionErrorType, type SendTransactionParameters, type SendTransactionReturnType } from './actions/sendTransaction.js'
export { signMessage, type SignMessageErrorType, type SignMessageParameters, type SignMessageReturnType } from './actions/signMessage.js'
export { signTypedData, type SignTypedDataErrorType, type SignTypedDataParameters, type SignTypedDataReturnType } from './actions/signTypedData.js'
export { switchChain, type SwitchChainErrorType, type SwitchChainParameters, type SwitchChainReturnType } from './actions/switchChain.js'
export { waitForTransactionReceipt, type WaitForTransactionReceiptParameters, type WaitForTransactionReceiptReturnType } from './actions/waitForTransactionReceipt.js'
export { watchAccount, type WatchAccountParameters } from './actions/watchAccount.js'
export { watchChainId } from './actions/watchChainId.js'
export { watchConnectors } from './actions/watchConnectors.js'
export * from './constants.js'
export { createProviderDiscovery, type EIP6963ProviderDetail, type EIP6963ProviderInfo, type ProviderDiscovery } from './connectors/eip6963.js'
export { EMBEDDED_ID, embedded, type EmbeddedConnector, type EmbeddedFlows, type EmbeddedParameters, isEmbeddedConnector } from './connectors/embedded.js'
export { injected, type InjectedParameters } from './connectors/injected.js'
export { type QrModalModule, WALLETCONNECT_ID, walletConnect, type WalletConnectParameters } from './connectors/walletConnect.js'
export { type Client, type ClientConfig, createClient } from './createClient.js'
export {
  createSiweMessage,
  getSignIn,
  signIn,
  type SignInErrorType,
  SignInNotConfiguredError,
  type SignInParameters,
  SignInRejectedError,
  signOut,
  watchSignIn,
} from './signIn/actions.js'
export { serverAdapter } from './signIn/serverAdapter.js'
export type { CreateMessageParameters, SignInAdapter, SignInSession, SignInState, SignInStatus, SignInStore } from './signIn/store.js'
export { BaseError, type BaseErrorParameters, type BaseErrorType } from './errors/base.js'
export * from './errors/connection.js'
export * from './errors/rpc.js'
export { transition, initialState, type StateEvent } from './state.js'
export { createMemoryStorage, createStorage, type ConnectorStorage, type KeyValueStorage, type Storage } from './storage.js'
export type * from './types.js'
export type { Logger } from './utils/logger.js'
export { version } from './version.js'
export {
  findWalletById,
  findWalletByRdns,
  getInAppBrowserLink,
  getWalletBook,
  getWalletConnectDeepLink,
  type GetWalletConnectDeepLinkOptions,
  type WalletBook,
  type WalletBookEntry,
  type WalletBookInjectedConfig,
} from './walletBook/index.js'
