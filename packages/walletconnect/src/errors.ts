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
