import type { MiddlewareHandler } from 'hono'

/** The headers Turnkey's clients send (research/turnkey-api.md §1), allowed from any origin. */
export const CORS_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers': 'content-type, x-stamp, x-stamp-webauthn, x-stamp-attested, x-client-version, x-session, x-auth-proxy-config-id',
  'access-control-max-age': '86400',
}

/**
 * CORS for the whole API: preflights answered here, and every answer (refusals too, so a browser
 * reads their message) carries the headers.
 *
 * @example
 * app.use('*', cors())
 */
export function cors(): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method === 'OPTIONS') return new Response(null, { status: 204, headers: CORS_HEADERS })
    await next()
    for (const [name, value] of Object.entries(CORS_HEADERS)) c.res.headers.set(name, value)
    return c.res
  }
}
