import { randomBytes } from 'node:crypto'
import type { Database } from '@latchkey/service/database'
import { type Kysely, sql, type Transaction } from 'kysely'
import { eventBody, type NewWebhookEvent, newEventId } from './events.js'
import type { WebhookDeliveryRow, WebhookEndpointRow, WebhookEventRow, WebhookSchema } from './schema.js'

/** An endpoint as the admin API shows it: never its secret after creation. */
export type WebhookEndpoint = { id: string; url: string; eventTypes: string[] | null; createdAt: number }
/** How a delivery stands: sent, being tried, or given up after `WEBHOOK_RETRY_MS`. */
export type DeliveryStatus = 'delivered' | 'pending' | 'given_up'
/** A delivery claimed for sending: the event's id, type and body, and where it goes with which secret. */
export type ClaimedDelivery = Pick<WebhookDeliveryRow, 'event_id' | 'endpoint_id' | 'attempts'> &
  Pick<WebhookEventRow, 'body'> & { url: string; secret: string; created_at: number }

/**
 * When a failed delivery is tried again: after 5 s, 30 s, 2, 10 and 30 minutes, 1, 2 and 4 hours,
 * then every 4 hours, until `WEBHOOK_RETRY_MS` after the event. `attempts` counts those made.
 */
export const retryDelayMs = (attempts: number) => [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000][attempts - 1] ?? 14_400_000
/** How long an event is retried before it is given up (24 h). */
export const WEBHOOK_RETRY_MS = 86_400_000

/** A new endpoint secret in the Standard Webhooks form: `whsec_` and 32 random bytes, base64. */
export const newEndpointSecret = () => `whsec_${randomBytes(32).toString('base64')}`

/** Whether an endpoint (its `event_types` column: a JSON array, or null for all) subscribes to `type`. */
const subscribes = (endpoint: Pick<WebhookEndpointRow, 'event_types'>, type: string) =>
  endpoint.event_types === null || (JSON.parse(endpoint.event_types) as string[]).includes(type)

const toEndpoint = (row: Pick<WebhookEndpointRow, 'id' | 'url' | 'event_types' | 'created_at'>): WebhookEndpoint => ({
  id: row.id,
  url: row.url,
  eventTypes: row.event_types === null ? null : (JSON.parse(row.event_types) as string[]),
  createdAt: Number(row.created_at),
})

/**
 * The webhook outbox on the backend's database. Events are written in the transaction of the
 * change they report (`enqueue`), with one delivery row per subscribed endpoint, so an event is
 * never lost to a crash after the commit nor sent for a change that rolled back. Senders on any
 * instance `claim` due deliveries with a lease and record each outcome.
 */
export function webhookOutbox<schema extends WebhookSchema>(database: Database<schema>) {
  const db = database.db as unknown as Kysely<WebhookSchema>
  return {
    async createEndpoint(input: { url: string; eventTypes: readonly string[] | null; at: number }): Promise<WebhookEndpoint & { secret: string }> {
      const row: WebhookEndpointRow = {
        id: `ep_${randomBytes(12).toString('base64url')}`,
        url: input.url,
        secret: newEndpointSecret(),
        event_types: input.eventTypes === null ? null : JSON.stringify(input.eventTypes),
        created_at: input.at,
      }
      await db.insertInto('webhook_endpoints').values(row).execute()
      return { ...toEndpoint(row), secret: row.secret }
    },
    async endpoints(): Promise<WebhookEndpoint[]> {
      const rows = await db.selectFrom('webhook_endpoints').select(['id', 'url', 'event_types', 'created_at']).orderBy('created_at').orderBy('id').execute()
      return rows.map(toEndpoint)
    },
    /** Deletes an endpoint and its pending deliveries; false when there was none. */
    async deleteEndpoint(id: string): Promise<boolean> {
      return database.transaction(
        async (trx) => {
          const tx = trx as unknown as Transaction<WebhookSchema>
          await tx.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute()
          const deleted = await tx.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst()
          return deleted.numDeletedRows > 0n
        },
        { isolation: 'read committed' },
      )
    },
    /**
     * Writes `events` in the caller's transaction, each with a delivery to every endpoint that
     * subscribes to its type. An event with `once` is written only by the first transaction to
     * claim that key. Answers how many deliveries were queued.
     */
    async enqueue(trx: Transaction<schema>, events: readonly NewWebhookEvent[], at: number): Promise<number> {
      const tx = trx as unknown as Transaction<WebhookSchema>
      const endpoints = await tx.selectFrom('webhook_endpoints').select(['id', 'event_types']).execute()
      let queued = 0
      for (const event of events) {
        if (event.once !== undefined) {
          const claimed = await tx
            .insertInto('webhook_once')
            .values({ key: event.once })
            .onConflict((conflict) => conflict.column('key').doNothing())
            .executeTakeFirst()
          if ((claimed.numInsertedOrUpdatedRows ?? 0n) === 0n) continue
        }
        const id = newEventId()
        await tx
          .insertInto('webhook_events')
          .values({ id, type: event.type, body: eventBody(event, at), created_at: at })
          .execute()
        const targets = endpoints.filter((endpoint) => subscribes(endpoint, event.type))
        if (!targets.length) continue
        await tx
          .insertInto('webhook_deliveries')
          .values(
            targets.map((endpoint) => ({
              event_id: id,
              endpoint_id: endpoint.id,
              attempts: 0,
              next_attempt_at: at,
              delivered_at: null,
              given_up_at: null,
              last_status: null,
              last_error: null,
            })),
          )
          .execute()
        queued += targets.length
      }
      return queued
    },
    /**
     * Claims up to `limit` deliveries due at `at` for `leaseMs`: each is counted as an attempt and
     * not due again until the lease ends, so two senders never hold one at once. One statement;
     * on PostgreSQL a row another sender claimed meanwhile fails the re-checked condition.
     */
    async claim(at: number, leaseMs: number, limit: number): Promise<ClaimedDelivery[]> {
      const due = db
        .selectFrom('webhook_deliveries')
        .select(sql<string>`event_id || ' ' || endpoint_id`.as('key'))
        .where('delivered_at', 'is', null)
        .where('given_up_at', 'is', null)
        .where('next_attempt_at', '<=', at)
        .orderBy('next_attempt_at')
        .limit(limit)
      const claimed = await db
        .updateTable('webhook_deliveries')
        .set({ attempts: sql`attempts + 1`, next_attempt_at: at + leaseMs })
        .where(sql<string>`event_id || ' ' || endpoint_id`, 'in', due)
        .where('delivered_at', 'is', null)
        .where('given_up_at', 'is', null)
        .where('next_attempt_at', '<=', at)
        .returning(['event_id', 'endpoint_id', 'attempts'])
        .execute()
      if (!claimed.length) return []
      const details = await db
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
        .innerJoin('webhook_endpoints as p', 'p.id', 'd.endpoint_id')
        .select(['d.event_id', 'd.endpoint_id', 'e.body', 'e.created_at', 'p.url', 'p.secret'])
        .where(
          sql<string>`d.event_id || ' ' || d.endpoint_id`,
          'in',
          claimed.map((row) => `${row.event_id} ${row.endpoint_id}`),
        )
        .execute()
      const attempts = new Map(claimed.map((row) => [`${row.event_id} ${row.endpoint_id}`, Number(row.attempts)]))
      return details.map((row) => ({ ...row, created_at: Number(row.created_at), attempts: attempts.get(`${row.event_id} ${row.endpoint_id}`)! }))
    },
    /** Records a delivery's outcome: delivered, due again at `retryAt`, or given up (`retryAt` undefined). */
    async settle(
      delivery: Pick<ClaimedDelivery, 'event_id' | 'endpoint_id'>,
      outcome: { at: number; delivered: boolean; status?: number | undefined; error?: string | undefined; retryAt?: number | undefined },
    ) {
      await db
        .updateTable('webhook_deliveries')
        .set({
          last_status: outcome.status ?? null,
          last_error: outcome.error?.slice(0, 500) ?? null,
          ...(outcome.delivered
            ? { delivered_at: outcome.at }
            : outcome.retryAt === undefined
              ? { given_up_at: outcome.at }
              : { next_attempt_at: outcome.retryAt }),
        })
        .where('event_id', '=', delivery.event_id)
        .where('endpoint_id', '=', delivery.endpoint_id)
        .execute()
    },
    /** Every delivery of every event since `since`, to each endpoint that subscribes to it, due again now: `webhooks replay`. Answers how many. */
    async replay(since: number, at: number): Promise<number> {
      return database.transaction(async (trx) => {
        const tx = trx as unknown as Transaction<WebhookSchema>
        const events = await tx.selectFrom('webhook_events').select(['id', 'type']).where('created_at', '>=', since).execute()
        const endpoints = await tx.selectFrom('webhook_endpoints').select(['id', 'event_types']).execute()
        let count = 0
        for (const event of events)
          for (const endpoint of endpoints) {
            if (!subscribes(endpoint, event.type)) continue
            const again = { attempts: 0, next_attempt_at: at, delivered_at: null, given_up_at: null, last_status: null, last_error: null }
            await tx
              .insertInto('webhook_deliveries')
              .values({ event_id: event.id, endpoint_id: endpoint.id, ...again })
              .onConflict((conflict) => conflict.columns(['event_id', 'endpoint_id']).doUpdateSet(again))
              .execute()
            count++
          }
        return count
      })
    },
    /** Deliveries of one endpoint, newest first: what was sent, when, and how it went. */
    deliveries: (endpointId: string, limit: number) =>
      db
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
        .select(['d.event_id', 'e.type', 'e.created_at', 'd.attempts', 'd.delivered_at', 'd.given_up_at', 'd.last_status', 'd.last_error', 'd.next_attempt_at'])
        .where('d.endpoint_id', '=', endpointId)
        .orderBy('e.created_at', 'desc')
        .limit(limit)
        .execute(),
    /**
     * Every endpoint's deliveries, newest event first, `limit` of them after the delivery `after`
     * (its event and endpoint ids), optionally only those `status`: the operator console's list.
     * Answers undefined when `after` names no delivery.
     */
    async allDeliveries(input: { limit: number; after?: { eventId: string; endpointId: string } | undefined; status?: DeliveryStatus | undefined }) {
      let cursor: { created_at: number; event_id: string; endpoint_id: string } | undefined
      if (input.after) {
        const found = await db
          .selectFrom('webhook_deliveries as d')
          .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
          .select(['e.created_at', 'd.event_id', 'd.endpoint_id'])
          .where('d.event_id', '=', input.after.eventId)
          .where('d.endpoint_id', '=', input.after.endpointId)
          .executeTakeFirst()
        if (!found) return undefined
        cursor = { ...found, created_at: Number(found.created_at) }
      }
      const rows = await db
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
        .innerJoin('webhook_endpoints as p', 'p.id', 'd.endpoint_id')
        .select([
          'd.event_id',
          'd.endpoint_id',
          'p.url',
          'e.type',
          'e.created_at',
          'd.attempts',
          'd.delivered_at',
          'd.given_up_at',
          'd.last_status',
          'd.last_error',
          'd.next_attempt_at',
        ])
        .$if(input.status === 'delivered', (query) => query.where('d.delivered_at', 'is not', null))
        .$if(input.status === 'given_up', (query) => query.where('d.given_up_at', 'is not', null))
        .$if(input.status === 'pending', (query) => query.where('d.delivered_at', 'is', null).where('d.given_up_at', 'is', null))
        .$if(cursor !== undefined, (query) =>
          query.where((where) =>
            where.or([
              where('e.created_at', '<', cursor!.created_at),
              where.and([where('e.created_at', '=', cursor!.created_at), where('d.event_id', '<', cursor!.event_id)]),
              where.and([
                where('e.created_at', '=', cursor!.created_at),
                where('d.event_id', '=', cursor!.event_id),
                where('d.endpoint_id', '>', cursor!.endpoint_id),
              ]),
            ]),
          ),
        )
        .orderBy('e.created_at', 'desc')
        .orderBy('d.event_id', 'desc')
        .orderBy('d.endpoint_id', 'asc')
        .limit(input.limit)
        .execute()
      return rows
    },
    /**
     * Sends one delivered or given-up delivery again (with the same `webhook-id`): due at `at`,
     * its attempts counted afresh. One conditional statement: a pending delivery is left as it is
     * (its sender may hold it), so of operators replaying one delivery at once, one does. Answers
     * `replayed`, `pending`, or `unknown` when there is no such delivery.
     */
    async replayDelivery(eventId: string, endpointId: string, at: number): Promise<'replayed' | 'pending' | 'unknown'> {
      const updated = await db
        .updateTable('webhook_deliveries')
        .set({ attempts: 0, next_attempt_at: at, delivered_at: null, given_up_at: null, last_status: null, last_error: null })
        .where('event_id', '=', eventId)
        .where('endpoint_id', '=', endpointId)
        .where((where) => where.or([where('delivered_at', 'is not', null), where('given_up_at', 'is not', null)]))
        .executeTakeFirst()
      if (updated.numUpdatedRows > 0n) return 'replayed'
      const found = await db
        .selectFrom('webhook_deliveries')
        .select('event_id')
        .where('event_id', '=', eventId)
        .where('endpoint_id', '=', endpointId)
        .executeTakeFirst()
      return found ? 'pending' : 'unknown'
    },
    /** Drops events (and their deliveries) older than `before` that are delivered or given up everywhere. */
    async prune(before: number) {
      const pending = db.selectFrom('webhook_deliveries').select('event_id').where('delivered_at', 'is', null).where('given_up_at', 'is', null)
      const old = db.selectFrom('webhook_events').select('id').where('created_at', '<', before).where('id', 'not in', pending)
      await db.deleteFrom('webhook_deliveries').where('event_id', 'in', old).execute()
      await db.deleteFrom('webhook_events').where('created_at', '<', before).where('id', 'not in', pending).execute()
    },
  }
}

/** What a sender needs of the outbox: claiming due deliveries and recording how each went. */
export type DeliveryQueue = Pick<ReturnType<typeof webhookOutbox<WebhookSchema>>, 'claim' | 'settle'>
