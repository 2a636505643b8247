import { randomBytes } from 'node:crypto'
import type { SessionRow } from '../store.js'

/**
 * Every event type an endpoint may subscribe to. The backend's own routes send `user.created`,
 * `wallet.created`, `user.authenticated`, `account.linked` and `account.unlinked`; the kms event
 * follower (kmsEvents.ts) sends `wallet.exported`, `mfa.enrolled`, `permission.granted` and
 * `transaction.sent`; the paymaster's settlement sends `sponsorship.spent`.
 */
export const WEBHOOK_EVENT_TYPES = [
  'user.created',
  'user.authenticated',
  'account.linked',
  'account.unlinked',
  'wallet.created',
  'wallet.exported',
  'mfa.enrolled',
  'permission.granted',
  'transaction.sent',
  'sponsorship.spent',
] as const
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]

/** An event to put in the outbox: its type, what it says, and (for once-only events) the key that makes it once. */
export type NewWebhookEvent = { type: WebhookEventType; data: Record<string, unknown>; once?: string | undefined }

/** A Standard Webhooks message id: `msg_` and 128 random bits, kept across every retry. */
export const newEventId = () => `msg_${randomBytes(16).toString('base64url')}`

/**
 * The body every endpoint receives, in the Standard Webhooks payload shape: `type`, `timestamp`
 * (when it happened) and `data`.
 */
export const eventBody = (event: NewWebhookEvent, at: number) => JSON.stringify({ type: event.type, timestamp: new Date(at).toISOString(), data: event.data })

/**
 * What a new session tells the app's backend: `user.authenticated` always, and the first time a
 * user of this backend's embedded wallets signs in, `user.created` and `wallet.created` (once per
 * sub-organization on any instance; an email account exists from its first code, but it is a user
 * only once a code or a token proved the email).
 */
export function sessionEvents(session: SessionRow): NewWebhookEvent[] {
  const user = session.organization_id
    ? { userId: session.user_id, organizationId: session.organization_id, address: session.address, email: session.email }
    : { address: session.address }
  const events: NewWebhookEvent[] = []
  if (session.organization_id) {
    const once = `user.created:${session.organization_id}`
    events.push({ type: 'user.created', data: { ...user, loginMethod: session.kind }, once })
    events.push({ type: 'wallet.created', data: { ...user, walletKind: 'embedded' }, once: `wallet.created:${session.organization_id}` })
  }
  events.push({
    type: 'user.authenticated',
    data: { ...user, loginMethod: session.kind, ...(session.kind === 'siwe' ? { chainId: session.chain_id, walletKind: session.wallet_kind } : {}) },
  })
  return events
}
