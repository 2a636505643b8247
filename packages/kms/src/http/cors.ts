import type { MiddlewareHandler } from 'hono'

/** The headers Turnkey's clients send (research/turnkey-api.md §1). */
export const CORS_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers': 'content-type, x-stamp, x-stamp-webauthn, x-stamp-attested, x-client-version, x-session, x-auth-proxy-config-id',
  'access-control-max-age': '86400',
}

/**
 * CORS for the whole service, the dev inbox included: preflights answered here, and every answer
 * (refusals too, so a browser reads their message) carries the headers, for the page origins in
 * `origins` only (the request's Origin echoed back), or for any with '*'. A page of another origin
 * gets no allow-origin header, so its browser reads nothing (security review L13: any website a
 * developer visited could read codes from a local kms's /dev/mailbox.json).
 *
 * @example
 * app.use('*', cors(['http://localhost:5173', 'http://localhost:8091']))
 */
export function cors(origins: readonly string[] | '*'): MiddlewareHandler {
  const allowed = origins === '*' ? undefined : new Set(origins)
  const headersFor = (origin: string | undefined): Record<string, string> => {
    if (!allowed) return { ...CORS_HEADERS, 'access-control-allow-origin': '*' }
    if (origin && allowed.has(origin)) return { ...CORS_HEADERS, 'access-control-allow-origin': origin, vary: 'Origin' }
    return { vary: 'Origin' }
  }
  return async (c, next) => {
    const headers = headersFor(c.req.header('origin'))
    if (c.req.method === 'OPTIONS') return new Response(null, { status: 204, headers })
    await next()
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value)
    return c.res
  }
}
