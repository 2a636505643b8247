import { BaseError } from '../errors/base.js'

/** `signIn` on a client created without a `signIn` adapter. */
export class SignInNotConfiguredError extends BaseError {
  override name = 'SignInNotConfiguredError'
  override code = 'sign_in_not_configured'
  constructor() {
    super('Sign-in is not configured.', { details: 'Pass `signIn: serverAdapter(url)` (or your own adapter) to createClient.' })
  }
}

/** The backend refused the signed message; `details` says why. */
export class SignInRejectedError extends BaseError {
  override name = 'SignInRejectedError'
  override code = 'sign_in_rejected'
  constructor(parameters: { details?: string | undefined; cause?: unknown } = {}) {
    super('Sign-in was refused.', parameters)
  }
}
