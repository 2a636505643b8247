import type { Logger } from '@latchkey/service'
import { type ClaimedDelivery, type DeliveryQueue, retryDelayMs, WEBHOOK_RETRY_MS } from './outbox.js'
import { signWebhook } from './signature.js'

export type WebhookSenderOptions = {
  outbox: DeliveryQueue
  /** Clock in unix ms. */
  now?: (() => number) | undefined
  /** How the request is made; default the global `fetch`. */
  fetch?: typeof fetch | undefined
  logger?: Logger | undefined
  /** How long an endpoint has to answer. Default 10 s. */
  timeoutMs?: number | undefined
  /** How often due deliveries are looked for, besides a nudge after each enqueue. Default 1 s. */
  pollMs?: number | undefined
  /** Deliveries claimed, and sent at once, per turn. Default 20. */
  batch?: number | undefined
}

/**
 * Sends the outbox's due deliveries, signed as Standard Webhooks (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`), at least once: a delivery is claimed with a lease longer than the timeout,
 * so one whose sender dies is sent again when the lease ends, with the same id. A 2xx answer
 * delivers it; anything else (a status, a timeout, a refused connection, a redirect) schedules a
 * retry with backoff until 24 h after the event, then gives it up. It runs beside the requests,
 * never in them: an endpoint that is down slows no sign-in.
 *
 * @example
 * const sender = createWebhookSender({ outbox: store.webhooks, logger })
 * sender.start()
 */
export function createWebhookSender(options: WebhookSenderOptions) {
  const now = options.now ?? Date.now
  const send = options.fetch ?? fetch
  const timeoutMs = options.timeoutMs ?? 10_000
  const batch = options.batch ?? 20
  let timer: NodeJS.Timeout | undefined
  let running: Promise<number> | undefined
  let again = false

  const deliver = async (delivery: ClaimedDelivery) => {
    const timestamp = Math.floor(now() / 1000)
    let status: number | undefined
    let error: string | undefined
    try {
      const response = await send(delivery.url, {
        method: 'POST',
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'latchkey-server webhooks',
          'webhook-id': delivery.event_id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook(delivery.secret, delivery.event_id, timestamp, delivery.body),
        },
        body: delivery.body,
      })
      status = response.status
      await response.body?.cancel()
    } catch (failure) {
      error = (failure as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (failure as Error).message
    }
    const at = now()
    const delivered = status !== undefined && status >= 200 && status < 300
    const retryAt = at + retryDelayMs(delivery.attempts)
    const keepTrying = retryAt <= delivery.created_at + WEBHOOK_RETRY_MS
    if (!delivered) error ??= `answered ${status}`
    await options.outbox.settle(delivery, { at, delivered, status, error, retryAt: delivered || !keepTrying ? undefined : retryAt })
    if (!delivered)
      options.logger?.warn(
        { eventId: delivery.event_id, endpointId: delivery.endpoint_id, attempts: delivery.attempts, status, err: error },
        keepTrying ? 'webhook delivery failed; it will be tried again' : 'webhook delivery failed for 24 hours; given up',
      )
  }

  /** Sends every delivery due now, a batch at a time; answers how many were attempted. */
  const runOnce = async (): Promise<number> => {
    let attempted = 0
    for (;;) {
      const claimed = await options.outbox.claim(now(), timeoutMs + 5_000, batch)
      await Promise.all(claimed.map(deliver))
      attempted += claimed.length
      if (claimed.length < batch) return attempted
    }
  }

  /** One turn at a time; a nudge during a turn runs another after it. */
  const turn = () => {
    if (running) {
      again = true
      return running
    }
    running = runOnce()
      .catch((error: Error) => {
        options.logger?.error({ err: error }, `webhook sender: ${error.message}`)
        return 0
      })
      .finally(() => {
        running = undefined
        if (again) {
          again = false
          void turn()
        }
      })
    return running
  }

  return {
    runOnce,
    /** Looks for due deliveries now (after an enqueue), without waiting for the next poll. */
    nudge: () => void turn(),
    start() {
      timer ??= setInterval(() => void turn(), options.pollMs ?? 1_000)
      timer.unref()
    },
    /** Stops polling and waits for the turn in progress. */
    async stop() {
      if (timer) clearInterval(timer)
      timer = undefined
      again = false
      await running
    },
  }
}

export type WebhookSender = ReturnType<typeof createWebhookSender>
