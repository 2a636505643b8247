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
