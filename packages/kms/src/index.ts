// Entry point of @latchkey/kms.
export { ACTIVITIES, OTP_DEFAULT_SECONDS, OTP_MAX_ATTEMPTS, RECOVERY_CODE_SECONDS } from './activities.js'
export { createKmsApp, DEFAULT_WEBAUTHN, type KmsAppOptions, SIGNER_PATH, TIMESTAMP_WINDOW_MS } from './app.js'
export { credentialBundle, exportBundle, hpkeOpen, hpkeSeal, openCredentialBundle, openExportBundle, type SignedBundle, signBundle } from './bundles.js'
export { expiredKeyMessage, GrpcCode, KmsError, UNKNOWN_KEY_MESSAGE } from './errors.js'
export { createKms, type Kms, type KmsOptions, type ParentOrganization } from './service.js'
export { API_KEY_P256_SCHEME, type Stamp, verifyApiKeyStamp } from './stamp.js'
export { devInbox, type Mail, type Mailer } from './mail.js'
export type { WebauthnConfig } from './webauthn.js'
