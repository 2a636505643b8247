import type { FrameRequest } from './channel.js'
import { FrameError } from './encoding.js'
import type { WalletRequest } from './review/types.js'

// The consent frame's messages, on the channel channel.ts opens (the @turnkey/iframe-stamper
// framing: {type, requestId, value}). The parent asks
//   {type: REVIEW_AND_STAMP, requestId, value: {request, payload, context}}
// and gets, once the user has answered in the frame,
//   {type: STAMP, value: {stampHeaderName, stampHeaderValue}, requestId}
// or {type: ERROR, value: {code, message}, requestId}: 4001 when the user rejected, -32602 when
// the request is malformed, already used, or its payload is not the reviewed request.
// Everything here is checked on arrival; nothing unchecked reaches the dialog or the key.

export const REVIEW_AND_STAMP = 'REVIEW_AND_STAMP'

/** The wallet requests the frame knows (review/types.ts `WalletRequest`). */
export const WALLET_METHODS: readonly WalletRequest['method'][] = [
  'personal_sign',
  'eth_signTypedData_v4',
  'eth_sendTransaction',
  'wallet_sendCalls',
  'wallet_grantPermissions',
  'eip7702_authorization',
  'export_wallet',
  'add_credential',
  'add_account',
  'init_import',
  'import_wallet',
]

/** What the parent says about the request; the origin is never the parent's word, the frame knows it. */
export type ConsentContext = { readonly account: `0x${string}`; readonly chainId: number }

export type ReviewAndStampValue = {
  readonly request: WalletRequest
  /** The exact body to stamp (a kms activity), bound to `request` before anything shows. */
  readonly payload: string
  readonly context: ConsentContext
}

export type ReviewAndStampMessage = { readonly type: typeof REVIEW_AND_STAMP; readonly requestId: string; readonly value: ReviewAndStampValue }
export type StampMessage = {
  readonly type: 'STAMP'
  readonly requestId: string
  readonly value: { readonly stampHeaderName: 'X-Stamp'; readonly stampHeaderValue: string }
}
export type ConsentErrorMessage = { readonly type: 'ERROR'; readonly requestId: string; readonly value: { readonly code: number; readonly message: string } }

/** EIP-1193 4001: what Reject, Escape and a closed frame answer. */
export const USER_REJECTED = { code: 4001, message: 'User rejected the request.' } as const
/** JSON-RPC invalid params: a malformed, replayed or unbound request. */
export const INVALID_REQUEST_CODE = -32602

/** The most a payload or a request's params may hold: 1 MiB of text. */
export const MAX_CONSENT_TEXT = 1024 * 1024

const invalid = (message: string) => new FrameError(message, INVALID_REQUEST_CODE)
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The value of a REVIEW_AND_STAMP request, checked: a known method with a JSON array of params,
 * a non-empty payload, an account address and a chain id.
 *
 * @example
 * const { request, payload, context } = parseReviewAndStamp(frameRequest)
 */
export function parseReviewAndStamp(frameRequest: FrameRequest): ReviewAndStampValue {
  const value = frameRequest.value
  if (!isObject(value)) throw invalid('REVIEW_AND_STAMP needs value {request, payload, context}')
  const { request, payload, context } = value
  if (!isObject(request) || typeof request['method'] !== 'string' || !WALLET_METHODS.includes(request['method'] as WalletRequest['method']))
    throw invalid(`REVIEW_AND_STAMP: request.method must be one of ${WALLET_METHODS.join(', ')}`)
  if (!Array.isArray(request['params'])) throw invalid('REVIEW_AND_STAMP: request.params must be an array')
  let params: unknown[]
  try {
    const text = JSON.stringify(request['params'])
    if (text.length > MAX_CONSENT_TEXT) throw invalid(`REVIEW_AND_STAMP: request.params is longer than ${MAX_CONSENT_TEXT} characters`)
    params = JSON.parse(text) as unknown[]
  } catch (error) {
    if (error instanceof FrameError) throw error
    throw invalid('REVIEW_AND_STAMP: request.params must be JSON')
  }
  if (typeof payload !== 'string' || payload.length === 0) throw invalid('REVIEW_AND_STAMP needs payload (the body to stamp, a string)')
  if (payload.length > MAX_CONSENT_TEXT) throw invalid(`REVIEW_AND_STAMP: payload is longer than ${MAX_CONSENT_TEXT} characters`)
  if (!isObject(context)) throw invalid('REVIEW_AND_STAMP needs context {account, chainId}')
  const { account, chainId } = context
  if (typeof account !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(account)) throw invalid('REVIEW_AND_STAMP: context.account must be an address')
  if (typeof chainId !== 'number' || !Number.isSafeInteger(chainId) || chainId <= 0)
    throw invalid('REVIEW_AND_STAMP: context.chainId must be a positive integer')
  return {
    request: { method: request['method'], params } as WalletRequest,
    payload,
    context: { account: account as `0x${string}`, chainId },
  }
}
