/**
 * The business constants and limits of SPEC §9, and nothing else: the one place that holds them.
 * Browser packages (core, walletconnect, embedded) and servers (kms, server) import them from
 * here; this module has no dependencies and no side effects, so importing it pulls no browser
 * code into a server and no server code into a page. `spec.test.ts` pins every value against
 * the text of SPEC §9.
 *
 * @example
 * import { MAX_PAIRING_ATTEMPTS, RECOVERY_CODE_VALIDITY_S } from '@latchkey/constants'
 */

/** Maximum automatic pairing attempts before 'Max auto pairing attempts reached'. */
export const MAX_PAIRING_ATTEMPTS = 10

/** Default WebAuthn ceremony timeout. */
export const WEBAUTHN_TIMEOUT_MS = 300_000

/** WebAuthn user verification requirement. */
export const WEBAUTHN_USER_VERIFICATION = 'preferred' as const

/** A recovery code is valid for this long after its credential was created. */
export const RECOVERY_CODE_VALIDITY_S = 900

/** Default expiry of a recovery session. */
export const RECOVERY_SESSION_EXPIRY_S = 1800

/** Wait after re-initialising a provider (after 'Connection rejected. Please try again.'). */
export const PROVIDER_REINIT_WAIT_MS = 1000

/** Signing methods requested by default. */
export const DEFAULT_METHODS = ['eth_sendTransaction', 'personal_sign'] as const

/** Events requested by default. */
export const DEFAULT_EVENTS = ['chainChanged', 'accountsChanged'] as const

/** Events requested as optional: the defaults, and also message, disconnect and connect. */
export const OPTIONAL_EVENTS = ['chainChanged', 'accountsChanged', 'message', 'disconnect', 'connect'] as const

/** Chain ids on the wire are hex with a 0x prefix. */
export const CHAIN_ID_FORMAT = 'hex' as const

/** The chain used when nothing else is known. */
export const DEFAULT_CHAIN_ID = 1

/** Length of a WebAuthn challenge in bytes (random). */
export const WEBAUTHN_CHALLENGE_BYTES = 32

/** Suffix of the embedded wallet's key. */
export const WALLET_KEY_SUFFIX = 'evm'

/** Names given to embedded wallets. */
export const WALLET_NAMES = ['Turnkey', 'Turnkey HD'] as const

/** COSE algorithm of passkey public keys: ES256. */
export const PASSKEY_PUBLIC_KEY_ALGORITHM = -7

/**
 * EIP-6963 announcements of these wallets are not listed as generic injected connectors: the
 * wallet gets a dedicated connector keyed by the same id, so no wallet appears twice.
 */
export const EXCLUDED_EIP6963_CONNECTOR_KEYS = ['phantomevm', 'coinbase', 'exodusevm', 'abstract', 'metamask', 'edenonline', 'intersend'] as const

/** The fixed storage key of the last used chain id (SPEC §9 fixes it; its value is ours). */
export const LAST_USED_CHAIN_ID_KEY = 'latchkey.lastUsedChainId'
