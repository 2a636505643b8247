import { BaseError, type BaseErrorParameters } from './base.js'

/*
 * EIP-5792 (wallet call batches). SPEC §8 has no entry for them, so these are our own, in the
 * catalogue's style: a fixed short message and a stable `code`.
 */

export type CallsNotSupportedErrorType = CallsNotSupportedError & { name: 'CallsNotSupportedError' }
/**
 * The wallet does not answer the EIP-5792 method (`wallet_sendCalls`, `wallet_getCallsStatus`,
 * `wallet_getCapabilities`): a browser wallet without it, or a WalletConnect wallet that did not
 * grant it in the session. Send the calls one by one with `sendTransaction` instead.
 */
export class CallsNotSupportedError extends BaseError {
  override name = 'CallsNotSupportedError'
  override code = 'calls_not_supported'
  /** The method the wallet lacks. */
  method: string
  constructor({ method, ...parameters }: BaseErrorParameters & { method: string }) {
    super('The wallet does not support call batches (EIP-5792).', { details: `${method} is not available.`, ...parameters })
    this.method = method
  }
}

export type InvalidCallsResultErrorType = InvalidCallsResultError & { name: 'InvalidCallsResultError' }
/** The wallet answered an EIP-5792 method with something that is not the shape the EIP defines. */
export class InvalidCallsResultError extends BaseError {
  override name = 'InvalidCallsResultError'
  override code = 'invalid_calls_result'
  method: string
  constructor({ method, problem, ...parameters }: BaseErrorParameters & { method: string; problem: string }) {
    super('The wallet answered with a malformed result.', { details: `${method}: ${problem}`, ...parameters })
    this.method = method
  }
}

export type AtomicityNotSupportedErrorType = AtomicityNotSupportedError & { name: 'AtomicityNotSupportedError' }
/** 5760: the calls were required to run atomically and the wallet cannot do that. */
export class AtomicityNotSupportedError extends BaseError {
  static rpcCode = 5760 as const
  override name = 'AtomicityNotSupportedError'
  override code = 'atomicity_not_supported'
  constructor(parameters: BaseErrorParameters = {}) {
    super('The wallet cannot run these calls atomically.', parameters)
  }
}

export type UnknownCallsIdErrorType = UnknownCallsIdError & { name: 'UnknownCallsIdError' }
/** 5730: the wallet does not know a batch with that id. */
export class UnknownCallsIdError extends BaseError {
  static rpcCode = 5730 as const
  override name = 'UnknownCallsIdError'
  override code = 'unknown_calls_id'
  constructor(parameters: BaseErrorParameters = {}) {
    super('The wallet does not know this batch of calls.', parameters)
  }
}
