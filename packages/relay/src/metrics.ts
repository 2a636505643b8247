import { performance } from 'node:perf_hooks'
import type { Metrics } from '@latchkey/service'

// The relay's metrics. Its hot path only adds to plain numbers (see `counts` in server.ts); these
// read them when Prometheus scrapes, so metrics cost a publish nothing. No label holds a topic, a
// client id or a message.

/**
 * Open sockets, subscriptions, publishes and deliveries, read when scraped from `counts` and the
 * node's connections.
 *
 * @example
 * relayMetrics(metrics, counts, () => connections.values())
 */
export function relayMetrics(
  metrics: Metrics,
  counts: { readonly published: number; readonly delivered: number },
  connections: () => Iterable<{ subscriptions: { readonly size: number } }>,
): void {
  metrics.gauge({
    name: 'latchkey_relay_sockets',
    help: 'WebSocket connections open on this node (authenticated clients).',
    collect() {
      let open = 0
      for (const _ of connections()) open++
      this.set(open)
    },
  })
  metrics.gauge({
    name: 'latchkey_relay_subscriptions',
    help: 'Topic subscriptions held by the connections on this node.',
    collect() {
      let held = 0
      for (const connection of connections()) held += connection.subscriptions.size
      this.set(held)
    },
  })
  monotonic(metrics, 'latchkey_relay_publishes_total', 'Messages published to this node (each of a batch counts).', () => counts.published)
  monotonic(metrics, 'latchkey_relay_deliveries_total', 'Messages pushed to subscribers by this node.', () => counts.delivered)
}

/** A counter that follows a running total kept elsewhere. */
function monotonic(metrics: Metrics, name: string, help: string, total: () => number) {
  let reported = 0
  metrics.counter({
    name,
    help,
    // Called before each scrape: a counter only goes up, by what is new since the last one.
    collect() {
      const now = total()
      if (now > reported) this.inc(now - reported)
      reported = now
    },
  })
}

/** What the Redis store needs to time its commands: ioredis's `sendCommand`. */
type CommandSender = { sendCommand(command: { name: string; promise: Promise<unknown> }, ...rest: unknown[]): unknown }

/**
 * Times every command a Redis client sends until its answer (with auto-pipelining, a command's
 * share of one round trip), by command name (the store's own commands: `evalsha`, `get`, …).
 *
 * @example
 * timeRedis(redis, metrics)
 */
export function timeRedis(redis: CommandSender, metrics: Metrics): void {
  const roundTrips = metrics.histogram({
    name: 'latchkey_relay_redis_round_trip_seconds',
    help: 'Time from sending a Redis command to its answer, by command.',
    labelNames: ['command'],
  })
  const send = redis.sendCommand.bind(redis)
  redis.sendCommand = (command, ...rest) => {
    const startedAt = performance.now()
    const observe = () => roundTrips.observe({ command: command.name.toLowerCase() }, (performance.now() - startedAt) / 1000)
    command.promise.then(observe, observe)
    return send(command, ...rest)
  }
}
