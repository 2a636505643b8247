/**
 * Constants of core. SPEC §9 lives in `@latchkey/constants` (one module for the browser packages
 * and the servers); core re-exports it so apps import every constant from core.
 */
export {
  CHAIN_ID_FORMAT,
  DEFAULT_CHAIN_ID,
  DEFAULT_EVENTS,
  DEFAULT_METHODS,
  EXCLUDED_EIP6963_CONNECTOR_KEYS,
  LAST_USED_CHAIN_ID_KEY,
  MAX_PAIRING_ATTEMPTS,
  OPTIONAL_EVENTS,
  PASSKEY_PUBLIC_KEY_ALGORITHM,
  PROVIDER_REINIT_WAIT_MS,
  RECOVERY_CODE_VALIDITY_S,
  RECOVERY_SESSION_EXPIRY_S,
  WALLET_KEY_SUFFIX,
  WALLET_NAMES,
  WEBAUTHN_CHALLENGE_BYTES,
  WEBAUTHN_TIMEOUT_MS,
  WEBAUTHN_USER_VERIFICATION,
} from '@latchkey/constants'

export { STORAGE_PREFIX } from './connectors/info.js'

/** How long reconnecting on load waits for a wallet before giving up. */
export const RECONNECT_TIMEOUT_MS = 10_000

/** How long a connect request waits for the user before it times out. */
export const CONNECT_TIMEOUT_MS = 300_000

/** How long a signing or transaction request waits for the user before it times out. */
export const REQUEST_TIMEOUT_MS = 300_000
