import type { Context, MiddlewareHandler } from 'hono'
import { ServerError } from '../errors.js'

/** Methods a browser may send cross-site without asking (and that change nothing here). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** A JSON body, with or without parameters (`application/json; charset=utf-8`). */
const JSON_TYPE = /^application\/json\s*(;|$)/i

/** 403 `origin_not_allowed`: a request that changes something came from a page not on an allowed origin. */
export const originNotAllowed = (origin: string | undefined) =>
  new ServerError(
    403,
    'origin_not_allowed',
    origin === undefined ? 'This request must come from an allowed origin, and it named none' : `This request must come from an allowed origin, not ${origin}`,
  )

/** 403 `json_required`: a request that changes something came with a body that is not `application/json`. */
export const jsonRequired = () => new ServerError(403, 'json_required', 'This request must be sent as application/json')

/**
 * Refuses, before any route runs, every request that may change something (not GET, HEAD or
 * OPTIONS) unless its `Origin` is one of `allowedOrigins` and its `Content-Type` is
 * `application/json`. A page on another origin (a sibling subdomain, another port of localhost:
 * same-site, so it gets SameSite cookies) can send a form or a no-cors `fetch` with the browser's
 * cookie, but only with a safelisted type (`text/plain`, a form) and its own `Origin`; a JSON
 * body from it needs a CORS preflight, which only allowed origins pass. So neither a cookie
 * (CSRF) nor a sign-in that sets one (login CSRF) can be driven from elsewhere.
 *
 * `exempt` names the requests that need neither: ones that are not a browser's (a provider's
 * form post, a refresh token sent by a service) and that check what they carry themselves.
 *
 * @example
 * app.use('*', sameOrigin(['https://app.example'], (c) => c.req.path === '/auth/oauth/callback'))
 */
export function sameOrigin(allowedOrigins: readonly string[], exempt: (c: Context) => boolean = () => false): MiddlewareHandler {
  const allowed = new Set(allowedOrigins)
  return async (c, next) => {
    if (SAFE_METHODS.has(c.req.method) || exempt(c)) return next()
    const origin = c.req.header('origin')
    if (origin === undefined || !allowed.has(origin)) throw originNotAllowed(origin)
    if (!JSON_TYPE.test(c.req.header('content-type') ?? '')) throw jsonRequired()
    return next()
  }
}
