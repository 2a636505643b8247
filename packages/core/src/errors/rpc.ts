import { BaseError, type BaseErrorParameters } from './base.js'
import { ConnectorError } from './connection.js'

/*
 * EIP-1193 provider errors as typed classes. Connectors convert raw `{ code, message }` errors at
 * their boundary with `toProviderError`, so nothing above them looks at numbers or text.
 */

export type ProviderRpcErrorParameters = BaseErrorParameters & { message?: string | undefined }

/** Base of the EIP-1193 errors; `rpcCode` is the numeric code the wallet sent. */
export class ProviderRpcError extends BaseError {
  override name = 'ProviderRpcError'
  rpcCode: number
  constructor(shortMessage: string, rpcCode: number, parameters: ProviderRpcErrorParameters = {}) {
    super(shortMessage, { details: parameters.message, ...parameters })
    this.rpcCode = rpcCode
  }
}

export type UserRejectedRequestErrorType = UserRejectedRequestError & { name: 'UserRejectedRequestError' }
/** 4001: the user rejected the request. A warning, not an error. */
export class UserRejectedRequestError extends ProviderRpcError {
  static code = 4001 as const
  override name = 'UserRejectedRequestError'
  override code = 'user_rejected'
  constructor(parameters: ProviderRpcErrorParameters = {}) {
    super('User rejected the request.', 4001, parameters)
  }
}

export type UnauthorizedProviderErrorType = UnauthorizedProviderError & { name: 'UnauthorizedProviderError' }
/** 4100: the method or account is not authorized by the user. */
export class UnauthorizedProviderError extends ProviderRpcError {
  static code = 4100 as const
  override name = 'UnauthorizedProviderError'
  override code = 'unauthorized'
  constructor(parameters: ProviderRpcErrorParameters = {}) {
    super('The requested method and/or account has not been authorized by the user.', 4100, parameters)
  }
}

export type UnsupportedProviderMethodErrorType = UnsupportedProviderMethodError & {
  name: 'UnsupportedProviderMethodError'
}
/** 4200: the wallet does not support the method. */
export class UnsupportedProviderMethodError extends ProviderRpcError {
  static code = 4200 as const
  override name = 'UnsupportedProviderMethodError'
  override code = 'unsupported_method'
  constructor(parameters: ProviderRpcErrorParameters = {}) {
    super('The wallet does not support the requested method.', 4200, parameters)
  }
}

export type ProviderDisconnectedErrorType = ProviderDisconnectedError & { name: 'ProviderDisconnectedError' }
/** 4900: the wallet is disconnected from all chains. */
export class ProviderDisconnectedError extends ProviderRpcError {
  static code = 4900 as const
  override name = 'ProviderDisconnectedError'
  override code = 'provider_disconnected'
  constructor(parameters: ProviderRpcErrorParameters = {}) {
    super('The wallet is disconnected from all chains.', 4900, parameters)
  }
}

export type ChainDisconnectedErrorType = ChainDisconnectedError & { name: 'ChainDisconnectedError' }
/** 4901: the wallet is not connected to the requested chain. */
export class ChainDisconnectedError extends ProviderRpcError {
  static code = 4901 as const
  override name = 'ChainDisconnectedError'
  override code = 'chain_disconnected'
  constructor(parameters: ProviderRpcErrorParameters = {}) {
    super('The wallet is not connected to the requested chain.', 4901, parameters)
  }
}

export type UnrecognizedChainErrorType = UnrecognizedChainError & { name: 'UnrecognizedChainError' }
/** 4902: the wallet does not know the chain; add it with wallet_addEthereumChain first. */
export class UnrecognizedChainError extends ProviderRpcError {
  static code = 4902 as const
  override name = 'UnrecognizedChainError'
  override code = 'unrecognized_chain'
  constructor(parameters: ProviderRpcErrorParameters = {}) {
    super('The wallet does not recognise the chain.', 4902, parameters)
  }
}

export type RequestPendingErrorType = RequestPendingError & { name: 'RequestPendingError' }
/** -32002: the wallet already shows a request of this kind; the user should finish it there. */
export class RequestPendingError extends ProviderRpcError {
  static code = -32002 as const
  override name = 'RequestPendingError'
  override code = 'request_pending'
  constructor(parameters: ProviderRpcErrorParameters = {}) {
    super('A request is already pending in the wallet. Open the wallet to continue.', -32002, parameters)
  }
}

export type UnknownProviderErrorType = UnknownProviderError & { name: 'UnknownProviderError' }
/** Any other error a wallet returned; its own message is kept as the details. */
export class UnknownProviderError extends ProviderRpcError {
  override name = 'UnknownProviderError'
  override code = 'provider_error'
  constructor(rpcCode: number, parameters: ProviderRpcErrorParameters = {}) {
    super(parameters.message ?? 'The wallet returned an error.', rpcCode, parameters)
  }
}

const byCode = {
  4001: UserRejectedRequestError,
  // WalletConnect's "User rejected." (wallets answer proposals and some requests with it).
  5000: UserRejectedRequestError,
  4100: UnauthorizedProviderError,
  4200: UnsupportedProviderMethodError,
  4900: ProviderDisconnectedError,
  4901: ChainDisconnectedError,
  4902: UnrecognizedChainError,
  [-32002]: RequestPendingError,
} as const

/**
 * Turns whatever a wallet threw into a typed error. Our own errors pass through unchanged.
 * MetaMask wraps 4902 inside `data.originalError`; that is looked at too.
 *
 * @example
 * try { await provider.request(args) } catch (e) { throw toProviderError(e) }
 */
export function toProviderError(error: unknown): BaseError {
  if (error instanceof BaseError) return error
  const catalogued = cataloguedOf(error)
  if (catalogued) return new ConnectorError(catalogued)
  const code = rpcCodeOf(error)
  const message = messageOf(error)
  if (code === undefined) return new UnknownProviderError(-1, { message, cause: error })
  const Class = byCode[code as keyof typeof byCode]
  return Class ? new Class({ message, cause: error }) : new UnknownProviderError(code, { message, cause: error })
}

/**
 * A connector package's own catalogue error (string `code` and `shortMessage`, no EIP-1193
 * number) anywhere down the cause chain: viem wraps what a provider throws.
 */
function cataloguedOf(error: unknown, depth = 0): { code: string; shortMessage: string; details?: string } | undefined {
  if (!error || typeof error !== 'object' || depth > 8) return undefined
  const e = error as { code?: unknown; shortMessage?: unknown; rpcCode?: unknown; cause?: unknown }
  if (typeof e.code === 'string' && typeof e.shortMessage === 'string' && typeof e.rpcCode !== 'number') return error as { code: string; shortMessage: string }
  return cataloguedOf(e.cause, depth + 1)
}

/** The first numeric code down the cause chain (viem wraps wallet errors in its own). */
function rpcCodeOf(error: unknown, depth = 0): number | undefined {
  if (!error || typeof error !== 'object' || depth > 8) return undefined
  const e = error as { code?: unknown; cause?: unknown; data?: { originalError?: { code?: unknown } } }
  const nested = e.data?.originalError?.code
  if (typeof nested === 'number') return nested
  if (typeof e.code === 'number') return e.code
  // WalletConnect peers' errors keep their number beside a string code.
  if (typeof (e as { rpcCode?: unknown }).rpcCode === 'number') return (e as { rpcCode: number }).rpcCode
  return rpcCodeOf(e.cause, depth + 1)
}

function messageOf(error: unknown): string | undefined {
  if (error && typeof error === 'object') {
    // viem's errors carry the wallet's words in `details` and their own summary in `shortMessage`.
    const e = error as { details?: unknown; shortMessage?: unknown; message?: unknown }
    for (const text of [e.details, e.shortMessage, e.message]) if (typeof text === 'string' && text) return text
  }
  return typeof error === 'string' ? error : undefined
}

/** Cancellations and waits running out, of every connector (pairing ends when the modal closes). */
// ERROR_CEREMONY_ABORTED: the user closed the passkey prompt (a cancellation, SPEC §8).
const benignCodes = new Set(['timeout', 'cancelled', 'pairing_aborted', 'connection_reset', 'connection_rejected', 'ERROR_CEREMONY_ABORTED'])

/** True for failures that are the user's choice or a wait running out: logged as warnings. */
export function isBenign(error: unknown): boolean {
  return error instanceof UserRejectedRequestError || (error instanceof BaseError && benignCodes.has(error.code))
}
