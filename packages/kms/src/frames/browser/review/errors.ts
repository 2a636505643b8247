// Why a request cannot be reviewed at all. The frame shows the message and offers nothing to
// approve: a request that does not decode is never signed "as hex".

export type ReviewErrorCode =
  | 'UNSUPPORTED_METHOD'
  | 'MALFORMED_MESSAGE'
  | 'MALFORMED_TYPED_DATA'
  | 'MALFORMED_USER_OPERATION'
  | 'REFUSED_USER_OPERATION'
  | 'MALFORMED_TRANSACTION'
  | 'MALFORMED_CALLS'
  | 'MALFORMED_AUTHORIZATION'
  | 'MALFORMED_GRANT'
  | 'MALFORMED_ACCOUNT'
  | 'MALFORMED_IMPORT'
  | 'GRANT_WITHOUT_EXPIRY'
  | 'UNKNOWN_PERMISSION'

/**
 * A request the frame refuses to show for approval: its shape is wrong. The message names what
 * is wrong and is safe to show (it holds nothing secret).
 *
 * @example
 * throw new ReviewError('MALFORMED_TRANSACTION', 'The transaction\'s "to" is not an address: 0x12')
 */
export class ReviewError extends Error {
  override name = 'ReviewError'
  readonly code: ReviewErrorCode
  constructor(code: ReviewErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
}
