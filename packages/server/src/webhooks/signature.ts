import { createHmac } from 'node:crypto'

/**
 * The Standard Webhooks signature of a message: `v1,` and the base64 HMAC-SHA256, keyed with the
 * secret's bytes (after `whsec_`), of `${id}.${timestamp}.${body}`. Receivers verify it with any
 * Standard Webhooks library (the tests use the `standardwebhooks` package).
 *
 * @example
 * headers['webhook-signature'] = signWebhook(secret, 'msg_…', 1700000000, body)
 */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`
}
