/** The kms's own refusal of a body the user's consent frame stamped, passed on unchanged (`{code, message, details}`). */
export type KmsRefusal = { code: number; message: string; details: unknown }

/**
 * An error answered as `{ error: { code, message } }` with its HTTP status; with `kms`, the kms's
 * refusal of a user-stamped activity the backend carried (`{ error: { code, message, kms } }`), so
 * the browser's wallet reads it as it reads the kms's own answers (a fresh verification or a second
 * factor asked for).
 */
export class ServerError extends Error {
  override name = 'ServerError'
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 429 | 502,
    readonly code: string,
    message: string,
    readonly retryAfterSeconds?: number,
    readonly kms?: KmsRefusal,
  ) {
    super(message)
  }
}

/** The key-management service answered, but without what the activity should have returned. */
export const incompleteAnswer = () => new ServerError(502, 'kms_unavailable', 'The key-management service gave an incomplete answer')
