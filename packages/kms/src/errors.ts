/** gRPC status codes, as the Turnkey API (a grpc-gateway) reports them in `code`. */
export const GrpcCode = {
  invalidArgument: 3,
  notFound: 5,
  alreadyExists: 6,
  permissionDenied: 7,
  resourceExhausted: 8,
  failedPrecondition: 9,
  unimplemented: 12,
  internal: 13,
  unavailable: 14,
  unauthenticated: 16,
} as const

const httpStatus: Record<number, 400 | 401 | 403 | 404 | 409 | 413 | 429 | 500 | 501 | 503> = {
  3: 400,
  5: 404,
  6: 409,
  7: 403,
  8: 429,
  9: 400,
  12: 501,
  13: 500,
  14: 503,
  16: 401,
}

/**
 * Every error the service answers with: `{ code, message, details }` in the body (what the
 * official clients turn into "Turnkey error {code}: {message}"), and an HTTP status to match.
 *
 * @example
 * throw new KmsError(GrpcCode.notFound, 'wallet not found', [{ walletId }])
 */
export class KmsError extends Error {
  override name = 'KmsError'
  constructor(
    readonly code: number,
    message: string,
    readonly details: readonly unknown[] = [],
    readonly status: number = httpStatus[code] ?? 400,
  ) {
    super(message)
  }

  toJSON() {
    return { code: this.code, message: this.message, details: this.details }
  }
}

// The catalogue's refusals, built here only; app.ts's onError maps every KmsError to its answer.

/** InvalidArgument (400): a parameter is wrong; `details` may carry field violations. */
export const invalid = (message: string, details: readonly unknown[] = []) => new KmsError(GrpcCode.invalidArgument, message, details)
/** NotFound (404). */
export const notFound = (message: string) => new KmsError(GrpcCode.notFound, message)
/** AlreadyExists (409). */
export const alreadyExists = (message: string) => new KmsError(GrpcCode.alreadyExists, message)
/** FailedPrecondition (400): the request is well formed but the state does not allow it. */
export const failedPrecondition = (message: string) => new KmsError(GrpcCode.failedPrecondition, message)
/** PermissionDenied (403). */
export const permissionDenied = (message: string) => new KmsError(GrpcCode.permissionDenied, message)

/**
 * PermissionDenied (403): an activity that hands out the wallet or a lasting credential, stamped
 * in a sub-organization by a session credential without a fresh verification (policies/freshVerification.ts).
 */
export const freshVerificationRequired = (type: string, freshSeconds: number) =>
  permissionDenied(
    `fresh verification required: ${type} from a session credential needs a passkey stamp (X-Stamp-Webauthn) or a credential from an email code less than ${freshSeconds} seconds old`,
  )

/**
 * PermissionDenied (403): a sub-organization's user asked to sign bytes the kms cannot read (an
 * opaque 32-byte hash); policies could not see what is signed (policies/readableSigning.ts).
 */
export const opaqueHashRefused = () =>
  permissionDenied(
    'opaque hash refused: a sub-organization signs only what the kms can read: a message with HASH_FUNCTION_KECCAK256, PAYLOAD_ENCODING_EIP712 typed data or a PAYLOAD_ENCODING_EIP7702_AUTHORIZATION',
  )

/**
 * PermissionDenied (403): a sub-organization's user asked to KECCAK256-hash bytes that are not an
 * EIP-191 message; a serialized unsigned transaction hashes to its signing hash, which would sign
 * it past the transaction's rules (policies/readableSigning.ts).
 */
export const unframedPayloadRefused = () =>
  permissionDenied(
    'unframed payload refused: a sub-organization hashes with HASH_FUNCTION_KECCAK256 only an EIP-191 message, whose first byte is 0x19 ("\\x19Ethereum Signed Message:\\n…" or "\\x19\\x01…"); a transaction is signed with sign_transaction',
  )

/** PermissionDenied (403): an EIP-7702 delegation in a sub-organization to an address the kms does not allow, or for every chain (policies/readableSigning.ts). */
export const delegationRefused = (address: string, chainId: number) =>
  permissionDenied(
    chainId === 0
      ? 'EIP-7702 delegation refused: an authorization for every chain (chainId 0) is not signed in a sub-organization'
      : `EIP-7702 delegation refused: ${address} is not an allowed delegate (--eip7702-delegate)`,
  )

/** Texts the official clients match to recognise an unknown or expired session key (research §3.5). */
export const UNKNOWN_KEY_MESSAGE = 'could not find public key in organization or its parent organization'
export const expiredKeyMessage = (publicKey: string) => `rpc error: code = Unauthenticated desc = expired api key publicKey: ${publicKey}`
