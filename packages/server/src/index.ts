// Entry point of @latchkey/server.
export {
  createServerApp,
  LIMITS,
  PAYMASTER_PATH,
  type PaymasterSettings,
  type PerIpLimits,
  SESSION_COOKIE,
  type ServerAppOptions,
  ServerError,
  SIWE_COOKIE,
  SIWE_TIMES,
  type SiweChain,
  WALLET_NAME,
} from './app.js'
export { APPLE_CLIENT_SECRET_SECONDS, APPLE_ISSUER, type AppleClientSecretParameters, appleClientSecret } from './appleClientSecret.js'
export { createServerAudit, type ServerAuditOptions, verifyServerAudit } from './audit.js'
export { SESSION_KEY_SECONDS } from './internal/schemas.js'
export { ACCESS_TOKEN_SECONDS } from './internal/sessionTokens.js'
export { type PaymasterPolicy, type PaymasterPolicyInput, parsePaymasterPolicy } from './paymaster/policy.js'
export { PAYMASTER_ERROR_CODES, type PaymasterRefusal } from './paymaster/service.js'
export { type RevokeOptions, type RevokeResult, type RevokeTarget, revokeSessions } from './revoke.js'
export { OAUTH_CALLBACK_PATH, OAUTH_PROVIDERS, type OAuthProviderConfig, type OAuthProviderName, oauthNonce } from './routes/oauth.js'
export { RECOVERY_CODE_SECONDS } from './routes/recoveryStart.js'
export { type AppServerOptions, createAppServer } from './service.js'
export {
  type AccountRow,
  type KnownAccount,
  type NonceRow,
  type OAuthNonceRow,
  type OpenStoreOptions,
  openStore,
  type PasskeyAccountRow,
  type RefreshTokenRow,
  SERVER_MIGRATIONS,
  type ServerSchema,
  type SessionKind,
  type SessionRow,
  type Store,
  StoreConflictError,
  type WalletKind,
} from './store.js'
