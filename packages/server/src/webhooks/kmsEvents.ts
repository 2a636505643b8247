import type { Logger } from '@latchkey/service'
import type { TurnkeyClient } from '@turnkey/http'
import { type Hex, keccak256 } from 'viem'
import type { NewWebhookEvent } from './events.js'

// The events that happen in the kms (issue 28 item 5): an export, a second factor enrolled, a
// permission granted, a transaction signed. The backend never sees those requests (the browser's
// session key makes them), so it follows the kms's trail of its sub-organizations' completed
// activities (`list_suborganization_activities`, a parent-readable query) with a cursor kept in
// its own database, and turns each activity into an outbox event whose once-key is the activity
// id: at least once, one webhook-id per event, and two instances never queue one activity twice.

/** The activity types that make events, and the event each makes. */
const EVENT_OF_TYPE = {
  ACTIVITY_TYPE_EXPORT_WALLET: 'wallet.exported',
  ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT: 'wallet.exported',
  ACTIVITY_TYPE_EXPORT_PRIVATE_KEY: 'wallet.exported',
  ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR: 'mfa.enrolled',
  ACTIVITY_TYPE_LATCHKEY_CREATE_PASSKEY_FACTOR: 'mfa.enrolled',
  ACTIVITY_TYPE_LATCHKEY_CREATE_GRANT: 'permission.granted',
  ACTIVITY_TYPE_SIGN_TRANSACTION_V2: 'transaction.sent',
} as const
export const KMS_EVENT_ACTIVITY_TYPES = Object.keys(EVENT_OF_TYPE)

/** An activity as list_suborganization_activities answers it. */
export type KmsActivity = {
  activityId: string
  organizationId: string
  type: string
  userId: string
  completedAt: string
  intent: Record<string, Record<string, unknown> | undefined>
  result: Record<string, Record<string, unknown> | undefined> | null
}

const first = (record: Record<string, Record<string, unknown> | undefined> | null | undefined) =>
  (record ? Object.values(record)[0] : undefined) ?? ({} as Record<string, unknown>)
const text = (value: unknown) => (typeof value === 'string' ? value : undefined)

/**
 * The event a completed kms activity makes, or none (a verification that was not a first TOTP
 * code is no enrolment). Its once-key is `kms-activity:<id>`; its time is the activity's.
 */
export function eventOfActivity(activity: KmsActivity): (NewWebhookEvent & { at: number }) | undefined {
  const type = EVENT_OF_TYPE[activity.type as keyof typeof EVENT_OF_TYPE]
  if (type === undefined) return undefined
  const params = first(activity.intent)
  const result = first(activity.result)
  const subject = { organizationId: activity.organizationId, userId: activity.userId, activityId: activity.activityId }
  let data: Record<string, unknown>
  if (type === 'wallet.exported')
    data = {
      ...subject,
      ...(text(params['walletId']) ? { walletId: params['walletId'] } : {}),
      ...(text(params['address']) ? { address: params['address'] } : {}),
      ...(text(params['privateKeyId']) ? { privateKeyId: params['privateKeyId'] } : {}),
    }
  else if (type === 'mfa.enrolled') {
    if (activity.type === 'ACTIVITY_TYPE_LATCHKEY_VERIFY_MFA_FACTOR' && result['enrolled'] !== true) return undefined
    data = { ...subject, factorId: result['factorId'], factorType: activity.type === 'ACTIVITY_TYPE_LATCHKEY_CREATE_PASSKEY_FACTOR' ? 'passkey' : 'totp' }
  } else if (type === 'permission.granted') data = { ...subject, grantId: result['grantId'] }
  else {
    const signed = text(result['signedTransaction'])
    const raw = signed === undefined ? undefined : ((signed.startsWith('0x') ? signed : `0x${signed}`) as Hex)
    data = { ...subject, signWith: params['signWith'], ...(raw ? { transactionHash: keccak256(raw) } : {}) }
  }
  return { type, data, once: `kms-activity:${activity.activityId}`, at: Number(activity.completedAt) }
}

/**
 * Where the follower keeps its cursor: read it, and in one transaction queue events and move it on
 * from `from`, answering the deliveries queued (undefined: another instance moved it first).
 */
export type KmsCursorStore = {
  kmsCursor(): Promise<string | null>
  advanceKmsCursor(from: string | null, to: string, events: readonly (NewWebhookEvent & { at: number })[]): Promise<number | undefined>
}

export type KmsEventFollowerOptions = {
  kms: TurnkeyClient
  /** The parent organization (the backend's). */
  organizationId: string
  store: KmsCursorStore
  logger?: Logger | undefined
  /** How often the kms is asked. Default 2 s. */
  pollMs?: number | undefined
  /** Activities per page. Default 100. */
  limit?: number | undefined
}

/**
 * Follows the kms's completed activities of the sub-organizations and queues their events. Runs
 * beside the requests, never in them: a kms or an endpoint that is down slows no sign-in. A page's
 * events and the cursor after it commit together, so a restart resumes where the last commit left
 * off and a page is queued again at most (the once-keys drop it).
 *
 * @example
 * const follower = createKmsEventFollower({ kms, organizationId, store })
 * follower.start()
 */
export function createKmsEventFollower(options: KmsEventFollowerOptions) {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<number> | undefined

  const list = (parameters: { afterCursor?: string; startAtNewest?: true }) =>
    options.kms.request<unknown, { activities: KmsActivity[]; cursor: string | null }>('/public/v1/query/list_suborganization_activities', {
      organizationId: options.organizationId,
      filterByType: KMS_EVENT_ACTIVITY_TYPES,
      limit: options.limit ?? 100,
      ...parameters,
    })

  /** Reads pages until the trail is caught up; answers how many deliveries were queued. */
  const runOnce = async (): Promise<number> => {
    let queued = 0
    for (;;) {
      const from = await options.store.kmsCursor()
      if (from === null) {
        // The first run of this backend (no cursor row): start at the kms's newest settled
        // activity, not at its beginning, so the past is not sent as news. '' when the trail is
        // empty: its beginning, from now on. Of two instances starting together the first to
        // write wins; the other writes nothing and reads on from the winner's cursor.
        const newest = await list({ startAtNewest: true })
        // A kms older than this backend answers a first page instead: starting after it would pass it over.
        if (newest.activities.length) throw new Error('the kms answered startAtNewest with activities; it is older than this backend')
        await options.store.advanceKmsCursor(null, newest.cursor ?? '', [])
        continue
      }
      const page = await list(from ? { afterCursor: from } : {})
      if (!page.activities.length || page.cursor === null) return queued
      const events = page.activities.map(eventOfActivity).filter((event) => event !== undefined)
      // Another instance moved the cursor first: it queued this page; read on from where it is.
      queued += (await options.store.advanceKmsCursor(from, page.cursor, events)) ?? 0
      if (page.activities.length < (options.limit ?? 100)) return queued
    }
  }

  const turn = () => {
    running ??= runOnce()
      .catch((error: Error) => {
        options.logger?.warn({ err: error }, `kms event follower: ${error.message}; it will try again`)
        return 0
      })
      .finally(() => {
        running = undefined
      })
    return running
  }

  return {
    runOnce,
    start() {
      timer ??= setInterval(() => void turn(), options.pollMs ?? 2_000)
      timer.unref()
    },
    /** Stops polling and waits for the turn in progress. */
    async stop() {
      if (timer) clearInterval(timer)
      timer = undefined
      await running
    },
  }
}

export type KmsEventFollower = ReturnType<typeof createKmsEventFollower>
