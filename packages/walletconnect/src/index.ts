// Entry point of @latchkey/walletconnect.
export {
  type DecodedEnvelope,
  decodeEnvelope,
  decrypt,
  deriveSymKey,
  type EncryptParameters,
  type EnvelopeType,
  encrypt,
  generateKeyPair,
  generateSymKey,
  type KeyPair,
  topicOf,
} from './crypto.js'
export { InvalidEnvelopeError, InvalidKeyError, InvalidPairingUriError, PairingExpiredError, WalletConnectError } from './errors.js'
export { formatPairingUri, type PairingUri, parsePairingUri } from './uri.js'
export {
  clientIdOf,
  publicKeyOf,
  RELAY_JWT_LEEWAY_S,
  RELAY_JWT_TTL_S,
  RelayAuthError,
  type RelayJwtClaims,
  type SignRelayJwtParameters,
  signRelayJwt,
  verifyRelayJwt,
} from './auth.js'
