import type { TurnkeyClient } from '@turnkey/http'
import type { Context, Hono } from 'hono'
import { z } from 'zod'
import { ServerError } from '../errors.js'
import { callKms } from '../internal/context.js'
import type { Store } from '../store.js'
import { loginsOf, mfaOf } from './logins.js'
import { budgetDays, searchUsers, usersOf } from './queries.js'

// The operator console's admin API (issue 29 item 7): read-only pages of users, their activities,
// the parent organization's pending approvals and the policies, webhook deliveries and the
// sponsorship budgets; the changes are a vote on an approval and a delivery's replay (audited as
// every non-GET admin call is). Each list is one page (`limit`, default 20, at most 100) and names
// the cursor of the next one (`next`, null on the last page); a malformed query is 400
// `invalid_query` and nothing is read.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const DELIVERY_ID = /^(msg_[A-Za-z0-9_-]{1,64})\.(ep_[A-Za-z0-9_-]{1,64})$/
const DAY = /^\d{4}-\d{2}-\d{2}$/
const ACTIVITY_STATUSES = [
  'ACTIVITY_STATUS_CREATED',
  'ACTIVITY_STATUS_PENDING',
  'ACTIVITY_STATUS_COMPLETED',
  'ACTIVITY_STATUS_FAILED',
  'ACTIVITY_STATUS_CONSENSUS_NEEDED',
  'ACTIVITY_STATUS_REJECTED',
] as const

const limit = z
  .string()
  .regex(/^\d{1,3}$/, 'must be a whole number')
  .transform(Number)
  .refine((value) => value >= 1 && value <= 100, 'must be between 1 and 100')
  .optional()
  .transform((value) => value ?? 20)
const uuid = (what: string) => z.string().regex(UUID, `must be a ${what} id`)

/** The query string checked by `schema` (unknown parameters refused); the first problem is a 400. */
function queryOf<schema extends z.ZodType>(c: Context, schema: schema): z.infer<schema> {
  const parsed = schema.safeParse(c.req.query())
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    const at = issue.path.join('.')
    throw new ServerError(400, 'invalid_query', at ? `${at}: ${issue.message}` : issue.message)
  }
  return parsed.data
}

const unknownUser = () => new ServerError(404, 'unknown_user', 'This backend created no user with this sub-organization')
const unknownCursor = () => new ServerError(400, 'invalid_query', 'after: names nothing on this list')

/** A Turnkey timestamp (`{seconds, nanos}`) in unix ms. */
const msOf = (time: { seconds?: string; nanos?: string } | undefined) =>
  time ? Number(time.seconds ?? 0) * 1000 + Math.floor(Number(time.nanos ?? 0) / 1e6) : null

type KmsActivity = {
  id: string
  organizationId: string
  type: string
  status: string
  fingerprint: string
  createdAt?: { seconds?: string; nanos?: string }
  updatedAt?: { seconds?: string; nanos?: string }
  canApprove?: boolean
  canReject?: boolean
  votes?: { userId?: string; user?: { userName?: string }; selection?: string }[]
  failure?: { message?: string } | null
}

const activityView = (activity: KmsActivity) => ({
  id: activity.id,
  organizationId: activity.organizationId,
  type: activity.type,
  status: activity.status,
  fingerprint: activity.fingerprint,
  createdAt: msOf(activity.createdAt),
  updatedAt: msOf(activity.updatedAt),
  canApprove: activity.canApprove ?? false,
  canReject: activity.canReject ?? false,
  votes: (activity.votes ?? []).map((vote) => ({ userId: vote.userId ?? null, userName: vote.user?.userName ?? null, selection: vote.selection ?? null })),
  failure: activity.failure?.message ?? null,
})

/** `next`: the cursor after a full page's last item, null after a short one. */
const nextOf = <item>(items: readonly item[], size: number, cursor: (item: item) => string) =>
  items.length === size && items.length ? cursor(items[items.length - 1]!) : null

/**
 * Registers the console's routes on the admin app (behind its token and audit).
 *
 * @example
 * consoleRoutes(admin, { store, kms, organizationId, now })
 */
export function consoleRoutes(admin: Hono, options: { store: Store; kms: TurnkeyClient; organizationId: string; now: () => number }) {
  const { store, kms, organizationId: parent } = options
  /** A sub-organization this backend created: 404 otherwise (the kms is not asked about anything else). */
  const knownAccount = async (organizationId: string) => {
    const account = await store.accountByOrganization(organizationId)
    if (!account) throw unknownUser()
    return account
  }

  admin.get('/users', async (c) => {
    const input = queryOf(c, z.strictObject({ query: z.string().max(320).optional(), limit, after: uuid('sub-organization').optional() }))
    const users = await searchUsers(store, { query: (input.query ?? '').trim(), limit: input.limit, after: input.after })
    return c.json({ users, next: nextOf(users, input.limit, (user) => user.organizationId) })
  })

  admin.get('/users/:org', async (c) => {
    const organizationId = c.req.param('org')
    if (!UUID.test(organizationId)) throw new ServerError(400, 'invalid_query', 'org: must be a sub-organization id')
    const account = await knownAccount(organizationId)
    const [user] = await usersOf(store, [organizationId])
    const { user: kmsUser } = await callKms(() => kms.getUser({ organizationId, userId: account.user_id }))
    const { wallets } = await callKms(() => kms.getWallets({ organizationId }))
    const withAccounts = []
    for (const wallet of wallets) {
      const { accounts } = await callKms(() => kms.getWalletAccounts({ organizationId, walletId: wallet.walletId, paginationOptions: { limit: '100' } }))
      withAccounts.push({
        walletId: wallet.walletId,
        walletName: wallet.walletName,
        createdAt: msOf(wallet.createdAt),
        accounts: accounts.map((entry) => ({ address: entry.address, path: entry.path, addressFormat: entry.addressFormat })),
      })
    }
    return c.json({
      ...user!,
      userName: kmsUser.userName,
      logins: await loginsOf(store, organizationId),
      authenticators: kmsUser.authenticators.map((authenticator) => ({
        name: authenticator.authenticatorName,
        credentialId: authenticator.credentialId,
        createdAt: msOf(authenticator.createdAt),
      })),
      wallets: withAccounts,
      mfa: await mfaOf(kms, organizationId, account.user_id),
    })
  })

  admin.get('/activities', async (c) => {
    const input = queryOf(
      c,
      z.strictObject({ org: uuid('sub-organization'), status: z.enum(ACTIVITY_STATUSES).optional(), limit, after: uuid('activity').optional() }),
    )
    await knownAccount(input.org)
    const activities = await listActivities(input.org, input)
    return c.json({ activities, next: nextOf(activities, input.limit, (activity) => activity.id) })
  })

  /** One page of an organization's activities, newest first; an unknown cursor is a 400. */
  async function listActivities(organizationId: string, input: { status?: string | undefined; limit: number; after?: string | undefined }) {
    const { activities } = await callKms(() =>
      kms.getActivities({
        organizationId,
        ...(input.status ? { filterByStatus: [input.status as (typeof ACTIVITY_STATUSES)[number]] } : {}),
        paginationOptions: { limit: String(input.limit), ...(input.after ? { after: input.after } : {}) },
      }),
    ).catch((error: unknown) => {
      if (error instanceof ServerError && error.code === 'kms_refused' && /pagination cursor/.test(error.message)) throw unknownCursor()
      throw error
    })
    return (activities as unknown as KmsActivity[]).map(activityView)
  }

  admin.get('/approvals', async (c) => {
    const input = queryOf(c, z.strictObject({ limit, after: uuid('activity').optional() }))
    const activities = await listActivities(parent, { ...input, status: 'ACTIVITY_STATUS_CONSENSUS_NEEDED' })
    return c.json({ approvals: activities, next: nextOf(activities, input.limit, (activity) => activity.id) })
  })

  for (const [vote, type] of [
    ['approve', 'ACTIVITY_TYPE_APPROVE_ACTIVITY'],
    ['reject', 'ACTIVITY_TYPE_REJECT_ACTIVITY'],
  ] as const)
    admin.post(`/approvals/:id/${vote}`, async (c) => {
      const activityId = c.req.param('id')
      if (!UUID.test(activityId)) throw new ServerError(400, 'invalid_query', 'id: must be an activity id')
      /** The activity, refused with 409 unless the parent's key may cast this vote on it now. */
      const votable = async () => {
        const { activity } = await callKms(() => kms.getActivity({ organizationId: parent, activityId })).catch((error: unknown) => {
          if (error instanceof ServerError && error.code === 'kms_refused')
            throw new ServerError(404, 'unknown_approval', 'The parent organization has no activity with this id')
          throw error
        })
        const target = activity as unknown as KmsActivity
        if (target.status !== 'ACTIVITY_STATUS_CONSENSUS_NEEDED')
          throw new ServerError(409, 'not_pending', `This activity is not waiting for approval: it is ${target.status}`)
        if (!(vote === 'approve' ? target.canApprove : target.canReject))
          throw new ServerError(409, 'cannot_vote', 'The parent organization’s key cannot vote on this activity: it has voted, or is not among its approvers')
        return target
      }
      const target = await votable()
      const request = { type, timestampMs: String(options.now()), organizationId: parent, parameters: { fingerprint: target.fingerprint } }
      try {
        const answer =
          type === 'ACTIVITY_TYPE_APPROVE_ACTIVITY'
            ? await callKms(() => kms.approveActivity({ ...request, type }))
            : await callKms(() => kms.rejectActivity({ ...request, type }))
        return c.json({ activity: activityView(answer.activity as unknown as KmsActivity) })
      } catch (error) {
        // Another vote (another operator's, on any instance) settled it meanwhile: said as above.
        if (error instanceof ServerError && error.code === 'kms_refused') await votable()
        throw error
      }
    })

  admin.get('/policies', async (c) => {
    const input = queryOf(c, z.strictObject({ org: uuid('organization').optional(), limit, after: uuid('policy').optional() }))
    const organizationId = input.org ?? parent
    if (organizationId !== parent) await knownAccount(organizationId)
    const { policies } = await callKms(() => kms.getPolicies({ organizationId }))
    const start = input.after === undefined ? 0 : policies.findIndex((policy) => policy.policyId === input.after) + 1
    if (start === 0 && input.after !== undefined) throw unknownCursor()
    const page = policies.slice(start, start + input.limit).map((policy) => ({
      policyId: policy.policyId,
      policyName: policy.policyName,
      effect: policy.effect,
      condition: policy.condition ?? null,
      consensus: policy.consensus ?? null,
      notes: policy.notes,
      createdAt: msOf(policy.createdAt),
    }))
    return c.json({
      organizationId,
      policies: page,
      next: start + input.limit < policies.length ? nextOf(page, input.limit, (policy) => policy.policyId) : null,
    })
  })

  admin.get('/webhooks/deliveries', async (c) => {
    const input = queryOf(
      c,
      z.strictObject({
        status: z.enum(['delivered', 'pending', 'given_up']).optional(),
        limit,
        after: z.string().regex(DELIVERY_ID, 'must be a delivery id').optional(),
      }),
    )
    const cursor = input.after ? DELIVERY_ID.exec(input.after)! : undefined
    const rows = await store.webhooks.allDeliveries({
      limit: input.limit,
      status: input.status,
      after: cursor ? { eventId: cursor[1]!, endpointId: cursor[2]! } : undefined,
    })
    if (!rows) throw unknownCursor()
    const deliveries = rows.map((row) => ({
      id: `${row.event_id}.${row.endpoint_id}`,
      eventId: row.event_id,
      endpointId: row.endpoint_id,
      url: row.url,
      type: row.type,
      createdAt: Number(row.created_at),
      attempts: Number(row.attempts),
      status: row.delivered_at !== null ? 'delivered' : row.given_up_at !== null ? 'given_up' : 'pending',
      lastStatus: row.last_status === null ? null : Number(row.last_status),
      lastError: row.last_error,
      ...(row.delivered_at === null && row.given_up_at === null ? { nextAttemptAt: Number(row.next_attempt_at) } : {}),
    }))
    return c.json({ deliveries, next: nextOf(deliveries, input.limit, (delivery) => delivery.id) })
  })

  admin.post('/webhooks/deliveries/:id/replay', async (c) => {
    const id = DELIVERY_ID.exec(c.req.param('id'))
    if (!id) throw new ServerError(400, 'invalid_query', 'id: must be a delivery id')
    const outcome = await store.webhooks.replayDelivery(id[1]!, id[2]!, options.now())
    if (outcome === 'unknown') throw new ServerError(404, 'unknown_delivery', 'No webhook delivery has this id')
    if (outcome === 'pending')
      throw new ServerError(409, 'delivery_pending', 'This delivery is still being tried: only a delivered or given-up one is replayed')
    store.webhooksQueued()
    return c.json({ id: c.req.param('id'), status: 'pending' })
  })

  admin.get('/sponsorship/budgets', async (c) => {
    const input = queryOf(
      c,
      z.strictObject({
        day: z.string().regex(DAY, 'must be a day, YYYY-MM-DD').optional(),
        chain: z
          .string()
          .regex(/^[1-9]\d{0,15}$/, 'must be a chain id')
          .transform(Number)
          .optional(),
        limit,
        after: z
          .string()
          .regex(/^\d{4}-\d{2}-\d{2}:[1-9]\d{0,15}$/, 'must be a day and a chain id, YYYY-MM-DD:chain')
          .optional(),
      }),
    )
    const [afterDay, afterChain] = input.after?.split(':') ?? []
    const budgets = await budgetDays(store, {
      limit: input.limit,
      day: input.day,
      chainId: input.chain,
      after: afterDay ? { day: afterDay, chainId: Number(afterChain) } : undefined,
    })
    return c.json({ budgets, next: nextOf(budgets, input.limit, (budget) => `${budget.day}:${budget.chainId}`) })
  })
}
