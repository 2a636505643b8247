/** An error answered as `{ error: { code, message } }` with its HTTP status. */
export class ServerError extends Error {
  override name = 'ServerError'
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 429 | 502,
    readonly code: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message)
  }
}

/** The key-management service answered, but without what the activity should have returned. */
export const incompleteAnswer = () => new ServerError(502, 'kms_unavailable', 'The key-management service gave an incomplete answer')
