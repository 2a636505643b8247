import { randomBytes } from 'node:crypto'
import type { Context } from 'hono'
import { getCookie, setCookie } from 'hono/cookie'
import { cookieAttributes, enforce, type RouteContext } from '../internal/context.js'
import { SIWE_COOKIE, SIWE_TIMES } from '../internal/siwe.js'

/** A pre-session cookie value this backend could have issued (32 random bytes, base64url). */
const holderFormat = /^[\w-]{43}$/

/**
 * `GET /auth/nonce` → `{nonce}`: 128 random bits in hex (EIP-4361 wants at least 8 alphanumeric
 * characters), usable once within ten minutes, and only by this browser: the nonce is bound to
 * the pre-session cookie `__Host-latchkey_siwe`, set here or kept if the browser has one. 60 per IP per
 * ten minutes.
 *
 * @example
 * app.get('/auth/nonce', nonce(context))
 */
export const nonce = (context: RouteContext) => async (c: Context) => {
  enforce(await context.limits.noncesPerIp(context.ipOf(c)), (minutes) => `Too many sign-in attempts from this network; try again in ${minutes} minutes`)
  const at = context.now()
  const cookie = getCookie(c, SIWE_COOKIE)
  const holder = cookie && holderFormat.test(cookie) ? cookie : randomBytes(32).toString('base64url')
  // viem's generateSiweNonce draws from Math.random; a nonce must not be guessable.
  const value = randomBytes(16).toString('hex')
  await context.store.pruneNonces(at)
  await context.store.insertNonce({ nonce: value, holder, expires_at: at + SIWE_TIMES.nonceSeconds * 1000 })
  setCookie(c, SIWE_COOKIE, holder, cookieAttributes(SIWE_TIMES.nonceSeconds))
  c.header('cache-control', 'no-store')
  return c.json({ nonce: value })
}
