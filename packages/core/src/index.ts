// Entry point of @latchkey/core. Internal modules are not re-exported.

// The popup's two ends, import-free: a callback page that imports only these stays a kilobyte.
export { openOAuthPopup, postOAuthCallback } from '@latchkey/embedded/popup'
export { type ConnectErrorType, type ConnectParameters, type ConnectReturnType, connect } from './actions/connect.js'
export { type DisconnectReturnType, disconnect } from './actions/disconnect.js'
export {
  resendEmailCode,
  type StartEmailSignInParameters,
  type StartEmailSignInReturnType,
  startEmailSignIn,
  type VerifyEmailSignInParameters,
  verifyEmailSignIn,
} from './actions/embedded/emailSignIn.js'
export { getGuestSignIn, type SignInAsGuestParameters, signInAsGuest } from './actions/embedded/guestSignIn.js'
export {
  type EmbeddedUser,
  enrollTotp,
  getLinkableProviders,
  getUser,
  type LinkAccountParameters,
  type LinkableProvider,
  type LinkedLogin,
  type LoginKind,
  linkAccount,
  type MfaFactor,
  type UnlinkAccountParameters,
  unlinkAccount,
  type VerifyMfaParameters,
  verifyMfa,
} from './actions/embedded/linking.js'
export { completeOAuthRedirect, type OAuthProviderName, type SignInWithOAuthParameters, signInWithOAuth } from './actions/embedded/oauthSignIn.js'
export {
  type AddPasskeyParameters,
  addPasskey,
  type SignUpWithPasskeyParameters,
  signInWithPasskey,
  signUpWithPasskey,
} from './actions/embedded/passkeySignIn.js'
export {
  type FinishRecoveryParameters,
  finishRecovery,
  type Recovery,
  type RecoveryType,
  type StartRecoveryParameters,
  startRecovery,
} from './actions/embedded/recovery.js'
export {
  type UpgradeAccountErrorType,
  type UpgradeAccountParameters,
  type UpgradeAccountReturnType,
  upgradeAccount,
} from './actions/embedded/upgradeAccount.js'
export {
  addAccount,
  exportWallet,
  type FrameParameters,
  finishImport,
  getEmbeddedAccounts,
  selectAccount,
  startImport,
  type WalletImport,
} from './actions/embedded/walletTools.js'
export { type GetAccountReturnType, getAccount } from './actions/getAccount.js'
export { type GetBalanceParameters, type GetBalanceReturnType, getBalance } from './actions/getBalance.js'
export {
  type GetCallsStatusErrorType,
  type GetCallsStatusParameters,
  type GetCallsStatusReturnType,
  getCallsStatus,
} from './actions/getCallsStatus.js'
export {
  type Capabilities,
  type GetCapabilitiesErrorType,
  type GetCapabilitiesParameters,
  type GetCapabilitiesReturnType,
  getCapabilities,
} from './actions/getCapabilities.js'
export { getChainId } from './actions/getChainId.js'
export { getConnectors } from './actions/getConnectors.js'
export { getPublicClient } from './actions/getPublicClient.js'
export { type ReconnectParameters, type ReconnectReturnType, reconnect } from './actions/reconnect.js'
export { type Call, type SendCallsErrorType, type SendCallsParameters, type SendCallsReturnType, sendCalls } from './actions/sendCalls.js'
export { type SendTransactionErrorType, type SendTransactionParameters, type SendTransactionReturnType, sendTransaction } from './actions/sendTransaction.js'
export { type SignMessageErrorType, type SignMessageParameters, type SignMessageReturnType, signMessage } from './actions/signMessage.js'
export { type SignTypedDataErrorType, type SignTypedDataParameters, type SignTypedDataReturnType, signTypedData } from './actions/signTypedData.js'
export { type SwitchChainErrorType, type SwitchChainParameters, type SwitchChainReturnType, switchChain } from './actions/switchChain.js'
export {
  type WaitForCallsStatusErrorType,
  type WaitForCallsStatusParameters,
  type WaitForCallsStatusReturnType,
  waitForCallsStatus,
} from './actions/waitForCallsStatus.js'
export {
  type WaitForTransactionReceiptParameters,
  type WaitForTransactionReceiptReturnType,
  waitForTransactionReceipt,
} from './actions/waitForTransactionReceipt.js'
export { type WatchAccountParameters, watchAccount } from './actions/watchAccount.js'
export { watchChainId } from './actions/watchChainId.js'
export { watchConnectors } from './actions/watchConnectors.js'
export {
  type ConnectionReport,
  type ConnectionStore,
  type ConnectorSession,
  type CreateConnectionStoreParameters,
  createConnectionStore,
  DISCONNECT_CLEARS,
  SESSION_FIELDS,
  type StoredConnection,
  type StoredField,
} from './connectionStore.js'
export { createProviderDiscovery, type EIP6963ProviderDetail, type EIP6963ProviderInfo, type ProviderDiscovery } from './connectors/eip6963.js'
export { EMBEDDED_ID, type EmbeddedConnector, type EmbeddedFlows, type EmbeddedParameters, embedded, isEmbeddedConnector } from './connectors/embedded.js'
export { type InjectedParameters, injected } from './connectors/injected.js'
export { EIP5792_METHODS, type QrModalModule, WALLETCONNECT_ID, type WalletConnectParameters, walletConnect } from './connectors/walletConnect.js'
export * from './constants.js'
export { type Client, type ClientConfig, createClient } from './createClient.js'
export { BaseError, type BaseErrorParameters, type BaseErrorType } from './errors/base.js'
export * from './errors/calls.js'
export * from './errors/connection.js'
export {
  AccountAlreadyLinkedError,
  AccountNotFoundError,
  CannotProceedError,
  EmbeddedFlowError,
  GrantRefusedError,
  InvalidAuthorizationError,
  InvalidCodeError,
  LastLoginError,
  MfaRequiredError,
  type MfaRequirement,
  OAuthError,
  SessionError,
  type SponsorshipRefusal,
  SponsorshipUnavailableError,
  WebauthnCeremonyError,
  WebauthnNotSupportedError,
} from './errors/embedded.js'
export * from './errors/rpc.js'
export { getSignIn, type SignInErrorType, signOut, watchSignIn } from './signIn/actions.js'
export { type ConnectAndSignInParameters, type ConnectAndSignInReturnType, connectAndSignIn } from './signIn/connectAndSignIn.js'
export { SignInNotConfiguredError, SignInRejectedError } from './signIn/errors.js'
export { serverAdapter } from './signIn/serverAdapter.js'
export { createSiweMessage, type SignInParameters, signIn } from './signIn/signIn.js'
export {
  type CreateMessageParameters,
  createSignInStore,
  type SignInAdapter,
  type SignInSession,
  type SignInState,
  type SignInStatus,
  type SignInStore,
} from './signIn/store.js'
export { initialState, type StateEvent, transition } from './state.js'
export { createMemoryStorage, type KeyValueStorage } from './storage.js'
export type * from './types.js'
export { type Logger, report } from './utils/logger.js'
export { version } from './version.js'
export {
  findWalletById,
  findWalletByRdns,
  type GetWalletConnectDeepLinkOptions,
  getInAppBrowserLink,
  getWalletBook,
  getWalletConnectDeepLink,
  type WalletBook,
  type WalletBookEntry,
  type WalletBookInjectedConfig,
} from './walletBook/index.js'
