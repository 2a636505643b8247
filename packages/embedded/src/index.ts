export { type BackendAccount, type BackendConfig, BackendError } from './backend.js'
// The frame's module itself loads on the wallet's first need (signers.ts); mounting it by hand is
// `@latchkey/embedded/consent-frame`'s `mountConsentFrame`.
export type { CollectedOtp, CollectOtpValue, ConsentContext, ConsentFrame, ConsentFrameParameters, ConsentWalletRequest } from './consentFrame.js'
export {
  AccountAlreadyLinkedError,
  AccountNotFoundError,
  ActivityStatusError,
  CannotProceedError,
  ClientsNotFoundError,
  ConsensusNeededError,
  EmbeddedError,
  GrantRefusedError,
  GrantRequestError,
  GrantWithoutExpiryError,
  InvalidAuthorizationError,
  InvalidCodeError,
  isSessionKeyExpired,
  KmsRequestError,
  LastLoginError,
  MalformedGrantError,
  MfaRequiredError,
  MissingAppNameError,
  MissingBaseUrlError,
  MissingSignWithError,
  PasskeyIdentifierRequiredError,
  SessionError,
  SessionKeyRegistrationError,
  SignRawPayloadResultNotFoundError,
  type SponsorshipRefusal,
  SponsorshipUnavailableError,
  SubOrganizationNotFoundError,
  UnknownPermissionError,
  WebauthnCeremonyError,
  WebauthnNotSupportedError,
} from './errors.js'
export { BATCH_EXECUTOR_ADDRESS, BATCH_MODE } from './executor.js'
export { exportWallet, type FrameKind, importWallet, startRecovery } from './frames.js'
export {
  type EmbeddedUser,
  type LinkableProvider,
  type LinkedLogin,
  type LinkingFlows,
  type LinkingPort,
  type LoginKind,
  linkingFlows,
  type MfaFactor,
} from './linking.js'
export {
  completeOAuthRedirect,
  defaultRedirectUri,
  OAuthError,
  type OAuthProvider,
  oauthNonce,
  signInWithOAuth,
} from './oauth.js'
export {
  createPasskey,
  PASSKEY_ALGORITHM,
  type PasskeyAttestation,
  type PasskeyFlows,
  passkeyFlows,
  WEBAUTHN_CHALLENGE_BYTES,
  WEBAUTHN_TIMEOUT_MS,
  WEBAUTHN_USER_VERIFICATION,
} from './passkeys.js'
export { OAUTH_WINDOW, OAUTH_WINDOW_FEATURES } from './popup.js'
export { createEmbeddedProvider, ProviderRpcError } from './provider.js'
export type { SessionKeyStore, Stamper } from './sessionKeys.js'
export type { AtomicStatus, BatchCall, PaymasterService } from './smartAccount.js'
export type { Sponsorship } from './userOperations.js'
export {
  completed,
  createEmbeddedWallet,
  DEFAULT_SESSION_SECONDS,
  type EmailCodeSent,
  type EmbeddedWallet,
  type EmbeddedWalletCredential,
  type EmbeddedWalletOptions,
  type KeyValueStorage,
  kmsCall,
  RECOVERY_CODE_SECONDS,
  RECOVERY_SESSION_SECONDS,
  type RecoveryState,
  type RecoveryType,
  type SessionKey,
  type SignInKind,
  type StoredWallet,
  type TransactionRequest,
  WALLET_NAMES,
} from './wallet.js'
