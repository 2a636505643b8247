/**
 * The one error base of @latchkey/walletconnect. `shortMessage` is the text shown to people,
 * `code` a stable identifier. Core maps these onto its own catalogue classes at the connector.
 *
 * @example
 * try { parsePairingUri(text) } catch (e) { if (e instanceof WalletConnectError) console.log(e.code) }
 */
export class WalletConnectError extends Error {
  override name = 'WalletConnectError'
  readonly code: string
  readonly shortMessage: string
  readonly details: string | undefined

  constructor(code: string, shortMessage: string, options: { details?: string | undefined; cause?: unknown } = {}) {
    super(options.details ? `${shortMessage}\n\nDetails: ${options.details}` : shortMessage, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.shortMessage = shortMessage
    this.details = options.details
  }
}

/** A pairing URI that is not a valid WalletConnect v2 URI. */
export class InvalidPairingUriError extends WalletConnectError {
  override name = 'InvalidPairingUriError'
  constructor(details: string) {
    super('invalid_pairing_uri', 'This is not a valid WalletConnect pairing link.', { details })
  }
}

/** A pairing whose expiry time has passed. */
export class PairingExpiredError extends WalletConnectError {
  override name = 'PairingExpiredError'
  constructor(details: string) {
    super('pairing_expired', 'This pairing link has expired. Ask for a new one.', { details })
  }
}

/** An envelope that is malformed, of an unknown type, or fails authentication. */
export class InvalidEnvelopeError extends WalletConnectError {
  override name = 'InvalidEnvelopeError'
  constructor(details: string, cause?: unknown) {
    super('invalid_envelope', 'A message could not be decrypted.', { details, cause })
  }
}

/** A key that is not 32 bytes of hex. */
export class InvalidKeyError extends WalletConnectError {
  override name = 'InvalidKeyError'
  constructor(details: string) {
    super('invalid_key', 'A key has the wrong format.', { details })
  }
}

/** The relay could not be reached or refused the connection. */
export class RelayConnectionError extends WalletConnectError {
  override name = 'RelayConnectionError'
  constructor(details: string, cause?: unknown) {
    super('relay_connection', 'Could not reach the WalletConnect relay.', { details, cause })
  }
}

/** The relay answered a request with an error, or not at all. */
export class RelayRequestError extends WalletConnectError {
  override name = 'RelayRequestError'
  readonly rpcCode: number | undefined
  constructor(method: string, details: string, rpcCode?: number) {
    super('relay_request', 'The WalletConnect relay refused a request.', { details: `${method}: ${details}` })
    this.rpcCode = rpcCode
  }
}

/** The peer answered with a JSON-RPC error; `rpcCode` is its code (4001 and 5000 mean the user said no). */
export class PeerError extends WalletConnectError {
  override name = 'PeerError'
  readonly rpcCode: number
  constructor(error: { code: number; message: string }) {
    super('peer_error', error.message || 'The wallet returned an error.', { details: `code ${error.code}` })
    this.rpcCode = error.code
  }
}

/** There is no session (or pairing) on this topic, or it has ended. */
export class SessionNotFoundError extends WalletConnectError {
  override name = 'SessionNotFoundError'
  constructor(topic: string) {
    super('no_session', 'No session found', { details: `topic ${topic}` })
  }
}

/** The proposal, or a request, ran out of time before the peer answered. */
export class ExpiredError extends WalletConnectError {
  override name = 'ExpiredError'
  constructor(what: string) {
    super('expired', `${what} expired`)
  }
}

/** Namespaces that break CAIP-2/CAIP-10 rules or do not cover what was required. */
export class InvalidNamespacesError extends WalletConnectError {
  override name = 'InvalidNamespacesError'
  constructor(details: string) {
    super('invalid_namespaces', 'The session namespaces are not valid.', { details })
  }
}

/** A write to storage failed (quota, private mode). The client carries on in memory. */
export class StorageWriteError extends WalletConnectError {
  override name = 'StorageWriteError'
  constructor(key: string, cause: unknown) {
    super('storage_write', 'WalletConnect data could not be saved in this browser.', { details: key, cause })
  }
}

/*
 * The EIP-1193 provider's errors, with the catalogue texts of SPEC §8. Their `code`s are stable;
 * core re-raises them as its own BaseError with the same code and text.
 */

/**
 * Declared, not inferred: an inferred class type would copy ErrorConstructor's statics into the
 * published declarations, `prepareStackTrace(…: NodeJS.CallSite[])` among them, which fail to
 * type-check in an app without @types/node.
 */
type ProviderErrorClass = new (details?: string, cause?: unknown) => WalletConnectError

function providerError(name: string, code: string, text: string): ProviderErrorClass {
  return class extends WalletConnectError {
    override name = name
    constructor(details?: string, cause?: unknown) {
      super(code, text, { details, cause })
    }
  }
}

/** `request` or `connect` before `init()`. */
export class ProviderNotInitializedError extends providerError(
  'ProviderNotInitializedError',
  'provider_not_initialized',
  'Provider not initialized. Call init() first',
) {}
/** A call after the provider closed, or while a re-initialisation failed. */
export class SignClientNotInitializedError extends providerError(
  'SignClientNotInitializedError',
  'sign_client_not_initialized',
  'Sign Client not initialized',
) {}
/** `request` with no session. */
export class NotConnectedError extends providerError('NotConnectedError', 'not_connected', 'Please call connect() before request()') {}
/** `connect` with no chains to ask for. */
export class InvalidChainsError extends providerError('InvalidChainsError', 'invalid_chains', 'Invalid chains') {}
/** The caller aborted the pairing (closed the modal). */
export class PairingAbortedError extends providerError('PairingAbortedError', 'pairing_aborted', 'Pairing aborted') {}
/** Every automatic pairing attempt was rejected or expired. */
export class MaxPairingAttemptsError extends providerError('MaxPairingAttemptsError', 'max_pairing_attempts', 'Max auto pairing attempts reached') {}
/** A newer `connect` replaced this one. */
export class ConnectionResetError extends providerError('ConnectionResetError', 'connection_reset', 'Connection request reset. Please try again.') {}
/** The wallet rejected the proposal; the provider re-initialises and offers a new pairing. */
export class ConnectionRejectedError extends providerError('ConnectionRejectedError', 'connection_rejected', 'Connection rejected. Please try again.') {}
/** A switch to a chain outside the session, with a wallet that cannot add it. */
export class NetworkSwitchingOnlyInWalletError extends providerError(
  'NetworkSwitchingOnlyInWalletError',
  'network_switching_only_available_in_wallet',
  'Network switching is not available at this time. The user should manually switch network in their wallet',
) {}
/** `wallet_addEthereumChain` for a chain the wallet did not grant. */
export class NetworkSwitchingThroughWalletError extends providerError(
  'NetworkSwitchingThroughWalletError',
  'network_switching_through_wallet',
  'Network switching is only supported through the wallet',
) {}
/** No session chain matches: a default chain that is not in the session. */
export class ChainIdNotFoundError extends providerError('ChainIdNotFoundError', 'chain_id_not_found', 'ChainId not found') {}

/** A read for a chain with no RPC url (no rpcMap entry and no relay RPC). */
export class RpcProviderNotFoundError extends WalletConnectError {
  override name = 'RpcProviderNotFoundError'
  constructor(chain: string) {
    super('rpc_provider_not_found', `JSON-RPC provider for ${chain} not found`)
  }
}

/** A request for a namespace the session was not made with. */
export class NamespaceNotConfiguredError extends WalletConnectError {
  override name = 'NamespaceNotConfiguredError'
  constructor(namespace: string) {
    super('namespace_not_configured', `Namespace ${namespace} is not configured. Please call connect() first with namespace config.`)
  }
}

/** A signing method the wallet did not grant in this session (EIP-1193 code 4200). */
export class MethodNotGrantedError extends WalletConnectError {
  override name = 'MethodNotGrantedError'
  readonly rpcCode = 4200
  constructor(method: string, chain: string) {
    super('method_not_granted', `The wallet did not grant ${method} on ${chain}.`)
  }
}

/** `pair` with a URI whose pairing already carries a session. */
export class PairingInUseError extends providerError('PairingInUseError', 'pairing_in_use', 'This pairing is already in use.') {}
/** `approve`/`reject` (or their one-click forms) with an id that names no pending proposal. */
export class ProposalNotFoundError extends providerError('ProposalNotFoundError', 'proposal_not_found', 'There is no such proposal.') {}
/** `update` from the side that does not control the session (the dapp). */
export class NotControllerError extends providerError('NotControllerError', 'not_controller', 'Only the wallet can update a session.') {}

/** `emit` of an event the dapp did not ask for on that chain. */
export class EventNotGrantedError extends WalletConnectError {
  override name = 'EventNotGrantedError'
  constructor(event: string, chain: string) {
    super('event_not_granted', `The dapp did not ask for ${event} on ${chain}.`)
  }
}

/** One-click sign-in parameters that cannot make a CAIP-222 request (no chains, no domain, a bad nonce). */
export class InvalidAuthenticateParametersError extends providerError(
  'InvalidAuthenticateParametersError',
  'invalid_authenticate_parameters',
  'The sign-in request is not valid.',
) {}
