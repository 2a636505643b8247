import { BaseError, type BaseErrorParameters } from './base.js'

/*
 * Connection and provider errors of SPEC §8 that browser wallets can reach, plus the few of our
 * own that every wait needs (timeouts, cancellation). Texts are the catalogue's, exactly.
 */

export type ProviderNotFoundErrorType = ProviderNotFoundError & { name: 'ProviderNotFoundError' }
/** The connector's wallet is not present (uninstalled extension, no `window.ethereum`). */
export class ProviderNotFoundError extends BaseError {
  override name = 'ProviderNotFoundError'
  override code = 'provider_not_found'
  constructor(parameters: BaseErrorParameters = {}) {
    super('No provider found', parameters)
  }
}

export type NotConnectedErrorType = NotConnectedError & { name: 'NotConnectedError' }
/** A request needs an existing session (SPEC §5). */
export class NotConnectedError extends BaseError {
  override name = 'NotConnectedError'
  override code = 'not_connected'
  constructor(parameters: BaseErrorParameters = {}) {
    super('Please call connect() before request()', parameters)
  }
}

export type NoRpcUrlErrorType = NoRpcUrlError & { name: 'NoRpcUrlError' }
/** A configured chain has no RPC url (SPEC §5). */
export class NoRpcUrlError extends BaseError {
  override name = 'NoRpcUrlError'
  override code = 'no_rpc_url'
  chainId: number
  constructor({ chainId, ...parameters }: BaseErrorParameters & { chainId: number }) {
    super('No RPC url provided for chainId', { details: `chainId ${chainId}`, ...parameters })
    this.chainId = chainId
  }
}

export type ChainNotConfiguredErrorType = ChainNotConfiguredError & { name: 'ChainNotConfiguredError' }
/** Switching is allowed only to chains in the client's config (SPEC §5). */
export class ChainNotConfiguredError extends BaseError {
  override name = 'ChainNotConfiguredError'
  override code = 'chain_not_configured'
  chainId: number
  constructor({ chainId, ...parameters }: BaseErrorParameters & { chainId: number }) {
    super(`Chain ${chainId} is not configured.`, parameters)
    this.chainId = chainId
  }
}

export type ConnectorNotFoundErrorType = ConnectorNotFoundError & { name: 'ConnectorNotFoundError' }
/** No connector with that id is known to the client. */
export class ConnectorNotFoundError extends BaseError {
  override name = 'ConnectorNotFoundError'
  override code = 'connector_not_found'
  constructor({ id, ...parameters }: BaseErrorParameters & { id: string }) {
    super(`Connector "${id}" not found.`, parameters)
  }
}

export type TimeoutErrorType = TimeoutError & { name: 'TimeoutError' }
/** A wait ran out. Logged as a warning, not an error (SPEC §8 handling). */
export class TimeoutError extends BaseError {
  override name = 'TimeoutError'
  override code = 'timeout'
  constructor({ what, ms, ...parameters }: BaseErrorParameters & { what: string; ms: number }) {
    super(`${what} timed out after ${ms} ms.`, parameters)
  }
}

export type CancelledErrorType = CancelledError & { name: 'CancelledError' }
/** The user or the app cancelled a pending wait. Logged as a warning. */
export class CancelledError extends BaseError {
  override name = 'CancelledError'
  override code = 'cancelled'
  constructor(parameters: BaseErrorParameters = {}) {
    super('The request was cancelled.', parameters)
  }
}

export type NetworkSwitchingNotAvailableErrorType = NetworkSwitchingNotAvailableError & {
  name: 'NetworkSwitchingNotAvailableError'
}
/** The wallet cannot switch networks on request; the user has to do it in the wallet. */
export class NetworkSwitchingNotAvailableError extends BaseError {
  override name = 'NetworkSwitchingNotAvailableError'
  override code = 'network_switching_only_available_in_wallet'
  constructor(parameters: BaseErrorParameters = {}) {
    super('Network switching is not available at this time. The user should manually switch network in their wallet', parameters)
  }
}

export type InvalidChainsErrorType = InvalidChainsError & { name: 'InvalidChainsError' }
/** Connecting requires a non-empty chains list (SPEC §5). */
export class InvalidChainsError extends BaseError {
  override name = 'InvalidChainsError'
  override code = 'invalid_chains'
  constructor(parameters: BaseErrorParameters = {}) {
    super('Invalid chains', parameters)
  }
}

export type ConnectorErrorType = ConnectorError & { name: 'ConnectorError' }
/**
 * A catalogue error raised by a lazily loaded connector package (WalletConnect, embedded), carried
 * with its own `code` and text so that apps branch on BaseError alone.
 */
export class ConnectorError extends BaseError {
  override name = 'ConnectorError'
  constructor(source: { code: string; shortMessage: string; details?: string | undefined }, parameters: BaseErrorParameters = {}) {
    super(source.shortMessage, { cause: source, details: source.details ?? '', ...parameters })
    this.code = source.code
  }
}

export type QrModalNotInstalledErrorType = QrModalNotInstalledError & { name: 'QrModalNotInstalledError' }
/** `showQrModal: true` without the optional `@latchkey/qr-modal` package. */
export class QrModalNotInstalledError extends BaseError {
  override name = 'QrModalNotInstalledError'
  override code = 'qr_modal_not_installed'
  constructor(parameters: BaseErrorParameters = {}) {
    super('To use QR modal, please install the modal package', parameters)
  }
}

export type QrModalInstanceErrorType = QrModalInstanceError & { name: 'QrModalInstanceError' }
/** The QR modal package is there but could not build its modal (no DOM, a broken install). */
export class QrModalInstanceError extends BaseError {
  override name = 'QrModalInstanceError'
  override code = 'qr_modal_instance'
  constructor(parameters: BaseErrorParameters = {}) {
    super('Could not generate WalletConnectModal Instance', parameters)
  }
}
