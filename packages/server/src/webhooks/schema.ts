import type { Migration } from '@latchkey/service/database'
import { sql } from 'kysely'

/** An app endpoint that receives events; `event_types` is a JSON array, or null for every type. */
export type WebhookEndpointRow = { id: string; url: string; secret: string; event_types: string | null; created_at: number }
/** One event in the outbox: `body` is the exact JSON every endpoint receives and the signature covers. */
export type WebhookEventRow = { id: string; type: string; body: string; created_at: number }
/**
 * One event's delivery to one endpoint. While it is neither delivered nor given up, it is due at
 * `next_attempt_at`; a sender claims it by moving that on (a lease), so a sender that dies mid-way
 * leaves it to be sent again, with the same `webhook-id`.
 */
export type WebhookDeliveryRow = {
  event_id: string
  endpoint_id: string
  attempts: number
  next_attempt_at: number
  delivered_at: number | null
  given_up_at: number | null
  last_status: number | null
  last_error: string | null
}
/** Events that happen once per subject (`user.created:<organization>`): the first insert wins on any instance. */
export type WebhookOnceRow = { key: string }

export type WebhookSchema = {
  webhook_endpoints: WebhookEndpointRow
  webhook_events: WebhookEventRow
  webhook_deliveries: WebhookDeliveryRow
  webhook_once: WebhookOnceRow
}

/** The outbox's tables. An expansion: a release before it writes sessions and simply sends no events. */
export const webhooksMigration: Migration = {
  name: '0008_webhooks',
  expand: true,
  async up(db) {
    await db.schema
      .createTable('webhook_endpoints')
      .addColumn('id', 'text', (column) => column.primaryKey())
      .addColumn('url', 'text', (column) => column.notNull())
      .addColumn('secret', 'text', (column) => column.notNull())
      .addColumn('event_types', 'text')
      .addColumn('created_at', 'bigint', (column) => column.notNull())
      .execute()
    await db.schema
      .createTable('webhook_events')
      .addColumn('id', 'text', (column) => column.primaryKey())
      .addColumn('type', 'text', (column) => column.notNull())
      .addColumn('body', 'text', (column) => column.notNull())
      .addColumn('created_at', 'bigint', (column) => column.notNull())
      .execute()
    await db.schema.createIndex('webhook_events_by_time').on('webhook_events').column('created_at').execute()
    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('event_id', 'text', (column) => column.notNull())
      .addColumn('endpoint_id', 'text', (column) => column.notNull())
      .addColumn('attempts', 'integer', (column) => column.notNull())
      .addColumn('next_attempt_at', 'bigint', (column) => column.notNull())
      .addColumn('delivered_at', 'bigint')
      .addColumn('given_up_at', 'bigint')
      .addColumn('last_status', 'integer')
      .addColumn('last_error', 'text')
      .addPrimaryKeyConstraint('webhook_deliveries_key', ['event_id', 'endpoint_id'])
      .execute()
    await db.schema
      .createIndex('webhook_deliveries_due')
      .on('webhook_deliveries')
      .column('next_attempt_at')
      .where(sql<boolean>`delivered_at is null and given_up_at is null`)
      .execute()
    await db.schema
      .createTable('webhook_once')
      .addColumn('key', 'text', (column) => column.primaryKey())
      .execute()
  },
}
