import { type Metrics, withSpan } from '@latchkey/service'
import type { MiddlewareHandler } from 'hono'
import type { Db } from '../db.js'
import { GrpcCode, KmsError } from '../errors.js'
import { own } from '../own.js'
import { POLICY_DENIED_MESSAGE } from '../policies/engine.js'
import { ACTIVITIES } from '../resources.js'
import type { AuditedActivity } from './audit.js'
import type { Authenticated } from './authenticate.js'

// The kms's own metrics: activities by type and status, policy denials, and the outbox's backlog.
// Labels hold only activity types the kms knows and statuses from a fixed list, never an id,
// an organization, an email or a key.

/** Stored activity statuses as label values. */
const STATUSES: Readonly<Record<string, string>> = {
  ACTIVITY_STATUS_COMPLETED: 'completed',
  ACTIVITY_STATUS_CONSENSUS_NEEDED: 'consensus_needed',
  ACTIVITY_STATUS_FAILED: 'failed',
  ACTIVITY_STATUS_REJECTED: 'rejected',
}

/**
 * A middleware for `/public/v1/submit/*`, after authentication (the body is parsed): counts each
 * activity by type and status (`refused` when the kms refused it, `error` when it failed
 * unexpectedly) and each policy denial, and, with traces on, makes a span of the activity. With
 * neither metrics nor traces, nothing to install: `undefined`.
 *
 * @example
 * const observe = activityObserver(metrics, { tracing: tracingOn() })
 * if (observe) app.use('/public/v1/submit/*', observe)
 */
export function activityObserver(
  metrics: Metrics | undefined,
  options: { tracing?: boolean | undefined } = {},
): MiddlewareHandler<{ Variables: Partial<Authenticated & AuditedActivity> }> | undefined {
  if (!metrics && !options.tracing) return undefined
  const activities = metrics?.counter({
    name: 'latchkey_kms_activities_total',
    help: 'Activities submitted, by type and status (completed, consensus_needed, failed, rejected; refused by the kms; error).',
    labelNames: ['type', 'status'],
  })
  const denials = metrics?.counter({ name: 'latchkey_kms_policy_denials_total', help: 'Activities the policy engine denied, by type.', labelNames: ['type'] })
  return async (c, next) => {
    const submitted = c.var.body?.['type']
    const type = typeof submitted === 'string' && own(ACTIVITIES, submitted) ? submitted : 'unknown'
    await withSpan(`kms activity ${type}`, { attributes: { 'latchkey.activity.type': type } }, next)
    if (!metrics) return
    const { error } = c
    const status = error
      ? error instanceof KmsError && error.code !== GrpcCode.internal
        ? 'refused'
        : 'error'
      : (STATUSES[c.var.audited?.status ?? ''] ?? 'completed')
    activities?.inc({ type, status })
    if (error instanceof KmsError && error.code === GrpcCode.permissionDenied && error.message === POLICY_DENIED_MESSAGE) denials?.inc({ type })
  }
}

/**
 * The outbox's gauges, read from the database when scraped: messages by status (pending, failed)
 * and how old the oldest of each is.
 *
 * @example
 * outboxMetrics(metrics, db, Date.now)
 */
export function outboxMetrics(metrics: Metrics, db: Db, now: () => number): void {
  const read = async () => {
    const rows = await db.outboxBacklog()
    return ['pending', 'failed'].map((status) => {
      const row = rows.find((each) => each.status === status)
      return { status, count: Number(row?.count ?? 0), ageSeconds: row ? Math.max(0, (now() - Number(row.oldest)) / 1000) : 0 }
    })
  }
  metrics.gauge({
    name: 'latchkey_kms_outbox_messages',
    help: 'Mail in the outbox, by status: pending (not sent yet) or failed (refused for good).',
    labelNames: ['status'],
    async collect() {
      for (const { status, count } of await read()) this.set({ status }, count)
    },
  })
  metrics.gauge({
    name: 'latchkey_kms_outbox_oldest_age_seconds',
    help: 'Age of the oldest mail in the outbox, by status (0 when there is none).',
    labelNames: ['status'],
    async collect() {
      for (const { status, ageSeconds } of await read()) this.set({ status }, ageSeconds)
    },
  })
}
