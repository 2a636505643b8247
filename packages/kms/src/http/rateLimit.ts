import type { AuditTrail } from '@latchkey/service/database'
import type { Context, MiddlewareHandler } from 'hono'
import type { Db } from '../db.js'
import { GrpcCode, KmsError } from '../errors.js'
import { claimedCredential } from './audit.js'
import type { Authenticated } from './authenticate.js'
import type { StageProfile } from './stages.js'

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

/**
 * An instance takes units from the store in leases of a 20th of the limit (or the activity's
 * weight, when larger) and spends them in memory: one store write per lease, not per activity.
 * The store still counts every unit leased, so the instances together never admit more than the
 * limit; a lease not spent by the window's end is lost, so another instance may refuse up to a
 * 20th of the limit early per instance holding one.
 */
const LEASE_SHARE = 20

/** Accounts an activity's parameters ask to derive (create_wallet, create_wallet_accounts, a sub-organization's wallet, import_wallet). */
function accountsAsked(body: Record<string, unknown>): number {
  const parameters = body['parameters'] as { accounts?: unknown; wallet?: { accounts?: unknown } } | undefined
  const accounts = parameters?.accounts ?? parameters?.wallet?.accounts
  return Array.isArray(accounts) ? accounts.length : 0
}

/** A refusal for being over a window: Turnkey's shape (code 8, RESOURCE_EXHAUSTED), answered with `Retry-After`. */
export class RateLimitedError extends KmsError {
  constructor(
    readonly over: string,
    readonly retryAfterSeconds: number,
  ) {
    super(GrpcCode.resourceExhausted, `rate limit exceeded for ${over}: retry in ${retryAfterSeconds} s`)
  }
}

type Lease = { windowEnd: number; available: number }
type Block = {
  until: number
  over: string
  /** Refusals answered from memory since the block began, for its audit summary. */
  refused: number
  actor: { organization: string; user: string; credential: string }
  timer: ReturnType<typeof setTimeout>
}

export type RateLimiterOptions = {
  db: Db
  limits: RateLimits
  /** The service's clock (unix ms). */
  now: () => number
  /** Where each block's refusals answered from memory are summarised, once the block ends. */
  audit?: AuditTrail | undefined
  /** Laps the profile's clock (http/stages.ts), when one is given. */
  stages?: StageProfile | undefined
}

/**
 * Counts each authenticated activity against its API key's (or passkey's) window and its
 * organization's, before it runs; beyond either, it is refused with 429 (`Retry-After`, code 8)
 * and nothing else is written. The store (`rate_limits`) is the count every instance shares;
 * in front of it each instance keeps, in memory, the units it leased (`LEASE_SHARE`) and the
 * credentials and organizations it saw go over their window. A credential over its window is
 * refused by `gate` before its stamp is verified and before any statement (a flood's refusals
 * cost next to nothing); an organization over its window by `count`, after authentication, also
 * without a statement. Only verified requests ever set a block, so naming someone else's public
 * key in a forged stamp cannot block them.
 *
 * Audit: the first refusal of a window is an activity's refusal like any other (`refused`, with
 * its message); the refusals answered from memory after it are one `refused` event per block,
 * recorded when the block ends (or at `flush`), with their number: the audit trail's one
 * summarised event, so that a flood cannot make the kms write a row per refusal.
 *
 * @example
 * const limiter = createRateLimiter({ db, limits: DEFAULT_RATE_LIMITS, now: Date.now, audit })
 * app.use('/public/v1/submit/*', limiter.gate, auditSubmissions(audit), ...guard, limiter.count)
 */
export function createRateLimiter(options: RateLimiterOptions) {
  const { db, limits, now, audit, stages } = options
  const leases = new Map<string, Lease>()
  const blocks = new Map<string, Block>()
  let sweptAt = now()

  function summarise(subject: string) {
    const block = blocks.get(subject)
    if (!block) return
    blocks.delete(subject)
    clearTimeout(block.timer)
    if (!block.refused || !audit) return
    void audit.record({
      action: 'RATE_LIMITED',
      outcome: 'refused',
      reason: `${GrpcCode.resourceExhausted} rate limit exceeded for ${block.over}: ${block.refused} more submissions refused until ${new Date(block.until).toISOString()}`,
      actorOrganization: block.actor.organization,
      actorUser: block.actor.user,
      credential: block.actor.credential,
      target: { organization: block.actor.organization },
    })
  }

  /** The block on `subject` now, if any (an ended one is summarised and dropped). */
  function blockOf(subject: string, at: number): Block | undefined {
    const block = blocks.get(subject)
    if (block && block.until <= at) summarise(subject)
    return blocks.get(subject)
  }

  const waitOf = (until: number, at: number) => Math.max(1, Math.ceil((until - at) / 1000))

  /** Answers a request from a block: 429 with the block's message, counted for its summary. */
  function refuseFromMemory(c: Context, block: Block, at: number) {
    block.refused += 1
    c.set('refusedFromMemory', true)
    const refusal = new RateLimitedError(block.over, waitOf(block.until, at))
    return c.json(refusal.toJSON(), 429, { 'Retry-After': String(refusal.retryAfterSeconds) })
  }

  /**
   * Takes `weight` units of `subject`'s window: from this instance's lease, or from a new lease
   * in the store. Answers the window's end when they are not there (the subject is then blocked).
   */
  async function take(subject: string, limit: number, weight: number, at: number): Promise<number | undefined> {
    const held = leases.get(subject)
    if (held && held.windowEnd > at && held.available >= weight) {
      held.available -= weight
      return undefined
    }
    const ask = Math.max(weight, Math.ceil(limit / LEASE_SHARE))
    const window = await db.countRequest(subject, ask, limits.windowMs, at)
    const windowEnd = window.windowStartedAt + limits.windowMs
    // What was left of the limit before this lease, and what remains of this instance's earlier
    // lease in the same window (read after the statement: another request may have spent it).
    const granted = Math.max(0, Math.min(ask, limit - (window.count - ask)))
    const current = leases.get(subject)
    const available = granted + (current && current.windowEnd === windowEnd ? current.available : 0)
    if (available < weight) {
      leases.set(subject, { windowEnd, available })
      return windowEnd
    }
    leases.set(subject, { windowEnd, available: available - weight })
    return undefined
  }

  function sweep(at: number) {
    for (const [subject, lease] of leases) if (lease.windowEnd <= at) leases.delete(subject)
    for (const [subject, block] of blocks) if (block.until <= at) summarise(subject)
  }

  return {
    /** Before the body is read: refuses a credential this instance saw go over its window, from memory. */
    gate: (async (c, next) => {
      stages?.lap('http')
      const credential = claimedCredential(c.req.header('x-stamp'), c.req.header('x-stamp-webauthn'))
      const at = now()
      const block = credential === undefined ? undefined : blockOf(`per-api-key:${credential}`, at)
      if (block) return refuseFromMemory(c, block, at)
      stages?.lap('rateLimit')
      return await next()
    }) satisfies MiddlewareHandler,

    /** After authentication: counts the activity against its credential's and organization's windows. */
    count: (async (c, next) => {
      const at = now()
      // Windows long past are dropped now and then (by whichever instance comes first), not on every request.
      if (at - sweptAt >= limits.windowMs) {
        sweptAt = at
        sweep(at)
        await db.deleteRateLimitsBefore(at - limits.windowMs)
      }
      const { caller } = c.var
      const credential = caller.credential ?? caller.userId
      const weight = 1 + UNITS_PER_ACCOUNT * accountsAsked(c.var.body)
      const subjects = [
        [`per-api-key:${credential}`, limits.perApiKey, 'this API key'],
        [`per-organization:${caller.organizationId}`, limits.perOrganization, `organization ${caller.organizationId}`],
      ] as const
      for (const [subject, limit] of subjects) {
        const block = limit ? blockOf(subject, at) : undefined
        if (block) return refuseFromMemory(c, block, at)
      }
      for (const [subject, limit, over] of subjects) {
        if (!limit) continue
        const until = await take(subject, limit, weight, at)
        if (until === undefined) continue
        const actor = { organization: caller.organizationId, user: caller.userId, credential }
        const timer = setTimeout(() => summarise(subject), until - at)
        timer.unref()
        if (!blocks.has(subject)) blocks.set(subject, { until, over, refused: 0, actor, timer })
        else clearTimeout(timer)
        // Thrown, not answered: the audit records this refusal with its message.
        throw new RateLimitedError(over, waitOf(until, at))
      }
      stages?.lap('rateLimit')
      return await next()
    }) satisfies MiddlewareHandler<{ Variables: Authenticated }>,

    /** Records the summaries of the blocks still running (the service stopping). */
    flush() {
      for (const subject of [...blocks.keys()]) summarise(subject)
    },
  }
}

export type RateLimiter = ReturnType<typeof createRateLimiter>
