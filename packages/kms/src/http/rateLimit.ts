import type { MiddlewareHandler } from 'hono'
import type { Db } from '../db.js'
import { GrpcCode, KmsError } from '../errors.js'
import type { Authenticated } from './authenticate.js'

/**
 * How much one API key and one organization may ask of the kms: units per fixed window, shared by
 * every instance on the database. An activity costs 1 unit, plus `UNITS_PER_ACCOUNT` per account
 * it derives (the expensive part: security review M4). 0 turns a limit off.
 */
export type RateLimits = { perApiKey: number; perOrganization: number; windowMs: number }

/**
 * Defaults: far above what one app's backend or one user does (the benchmarks sign 1,000+ times a
 * second with one key), and low enough that one key cannot keep the kms deriving accounts: a
 * create_wallet of 100 accounts costs 1,001 units, so one key gets about 20 of them per 10 s.
 */
export const DEFAULT_RATE_LIMITS: RateLimits = { perApiKey: 20_000, perOrganization: 40_000, windowMs: 10_000 }
export const UNITS_PER_ACCOUNT = 10

/** Accounts an activity's parameters ask to derive (create_wallet, create_wallet_accounts, a sub-organization's wallet, import_wallet). */
function accountsAsked(body: Record<string, unknown>): number {
  const parameters = body['parameters'] as { accounts?: unknown; wallet?: { accounts?: unknown } } | undefined
  const accounts = parameters?.accounts ?? parameters?.wallet?.accounts
  return Array.isArray(accounts) ? accounts.length : 0
}

/**
 * Counts each authenticated activity against its API key's (or passkey's) window and its
 * organization's, before it runs; beyond either, it is refused with 429 and Turnkey's shape
 * (code 8, RESOURCE_EXHAUSTED, with Retry-After) and nothing else is written. `now` is the service's clock.
 *
 * @example
 * app.use('/public/v1/submit/*', rateLimit({ db, limits: DEFAULT_RATE_LIMITS, now: Date.now }))
 */
export function rateLimit(options: { db: Db; limits: RateLimits; now: () => number }): MiddlewareHandler<{ Variables: Authenticated }> {
  const { db, limits, now } = options
  let sweptAt = now()
  const over = async (subject: string, limit: number, weight: number, at: number) => {
    if (!limit) return undefined
    const window = await db.countRequest(subject, weight, limits.windowMs, at)
    return window.count > limit ? Math.max(1, Math.ceil((window.windowStartedAt + limits.windowMs - at) / 1000)) : undefined
  }
  return async (c, next) => {
    const at = now()
    // Windows long past are dropped now and then (by whichever instance comes first), not on every request.
    if (at - sweptAt >= limits.windowMs) {
      sweptAt = at
      await db.deleteRateLimitsBefore(at - limits.windowMs)
    }
    const { caller, stamp } = c.var
    const weight = 1 + UNITS_PER_ACCOUNT * accountsAsked(c.var.body)
    const key = stamp?.publicKey ?? caller.userId
    const keyWait = await over(`per-api-key:${key}`, limits.perApiKey, weight, at)
    const wait = keyWait ?? (await over(`per-organization:${caller.organizationId}`, limits.perOrganization, weight, at))
    if (wait !== undefined) {
      const refusal = new KmsError(
        GrpcCode.resourceExhausted,
        `rate limit exceeded for ${keyWait !== undefined ? 'this API key' : `organization ${caller.organizationId}`}: retry in ${wait} s`,
      )
      return c.json(refusal.toJSON(), 429, { 'Retry-After': String(wait) })
    }
    return await next()
  }
}
