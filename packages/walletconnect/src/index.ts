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
export {
  ExpiredError,
  InvalidEnvelopeError,
  InvalidKeyError,
  InvalidNamespacesError,
  InvalidPairingUriError,
  PairingExpiredError,
  PeerError,
  RelayConnectionError,
  RelayRequestError,
  SessionNotFoundError,
  StorageWriteError,
  WalletConnectError,
} from './errors.js'
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
export {
  createRelayClient,
  type PublishOptions,
  type RelayClient,
  type RelayClientEvents,
  type RelayClientOptions,
  type RelayMessage,
  type WebSocketConstructor,
  type WebSocketLike,
} from './relayClient.js'
export {
  assertConforms,
  assertProposalNamespaces,
  assertSessionNamespaces,
  buildApprovedNamespaces,
  chainsOf,
  isChainId,
  parseAccountId,
  type ProposalNamespace,
  type ProposalNamespaces,
  type SessionNamespace,
  type SessionNamespaces,
  type SupportedNamespace,
} from './namespaces.js'
export {
  type ConnectParameters,
  createSignClient,
  type Metadata,
  type Pairing,
  type PendingRequest,
  type ProposalParams,
  SdkErrors,
  type Session,
  type SessionEventParams,
  type SessionRequestParams,
  type SignClient,
  type SignClientEvents,
  type SignClientOptions,
} from './signClient.js'
export { type KeyValueStorage, memoryStorage } from './store.js'
export { createEmitter, type Emitter } from './emitter.js'
export { type JsonRpcErrorObject, type JsonRpcRequest, type JsonRpcResponse, payloadId } from './jsonrpc.js'
