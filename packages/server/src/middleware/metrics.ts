import type { Metrics } from '@latchkey/service'
import type { MiddlewareHandler } from 'hono'
import { ServerError } from '../errors.js'

/** The routes that sign someone in, and the kind of sign-in each is: the only values of the `kind` label. */
const SIGN_INS: Readonly<Record<string, string>> = {
  '/auth/email/verify': 'email',
  '/auth/passkey/signup': 'passkey_signup',
  '/auth/login': 'passkey',
  '/auth/oauth': 'oauth',
  '/auth/siwe': 'siwe',
  '/auth/cacao': 'cacao',
  '/auth/guest': 'guest',
}

/**
 * Counts sign-ins by kind (email, passkey, OAuth, SIWE, …) and outcome: `completed`, `refused`
 * (a 4xx: a wrong code, a bad signature, a rate limit) or `failed` (a 5xx: the kms or the
 * database). Never an email, an address or a session in a label.
 *
 * @example
 * app.use('/auth/*', signInMetrics(metrics))
 */
export function signInMetrics(metrics: Metrics): MiddlewareHandler {
  const signIns = metrics.counter({
    name: 'latchkey_server_sign_ins_total',
    help: 'Sign-ins, by kind (email, passkey, passkey_signup, oauth, siwe, cacao, guest) and outcome (completed, refused, failed).',
    labelNames: ['kind', 'outcome'],
  })
  return async (c, next) => {
    const kind = c.req.method === 'POST' ? SIGN_INS[c.req.path] : undefined
    await next()
    if (!kind) return
    const status = c.error ? (c.error instanceof ServerError ? c.error.status : 500) : c.res.status
    signIns.inc({ kind, outcome: status < 400 ? 'completed' : status < 500 ? 'refused' : 'failed' })
  }
}
