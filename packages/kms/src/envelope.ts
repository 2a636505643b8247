import type { Caller } from './context.js'
import type { Db } from './db.js'
import { countingVotes, voteStanding, windowVotes } from './policies/consensus.js'
import { mapSeries } from './sequence.js'
import type { ActivityRow } from './storage/tables.js'
import { timestamp, userView } from './views.js'

/**
 * The `v1Activity` shape the clients read, from a stored row, as `viewer.caller` sees it at
 * `viewer.now`:
 * - `votes`: the votes that count (a waiting activity's open window, none once it closed; a
 *   settled one's last window), each with its voter (a voter deleted since is left out) and the
 *   stamp it was cast with;
 * - `canApprove` / `canReject`: whether the caller's vote would be counted now.
 * For an activity stored this moment, `fresh` holds its intent and result as stored (it has no votes).
 *
 * @example
 * return c.json({ activity: await activityView(db, row, { caller, now: now() }) })
 */
export async function activityView(db: Db, row: ActivityRow, viewer: { caller: Caller; now: number }, fresh?: { intent: unknown; result: unknown }) {
  const waiting = row.status === 'ACTIVITY_STATUS_CONSENSUS_NEEDED'
  const stored = fresh ? [] : await db.votes(row.id)
  const votes = waiting ? countingVotes(stored, viewer.now) : windowVotes(stored)
  const standing = waiting ? await voteStanding(db, viewer.caller, row, viewer.now) : { canApprove: false, canReject: false }
  return {
    id: row.id,
    organizationId: row.organization_id,
    status: row.status,
    type: row.type,
    intent: fresh ? fresh.intent : (JSON.parse(row.intent) as unknown),
    result: fresh ? fresh.result : row.result ? (JSON.parse(row.result) as unknown) : {},
    votes: await mapSeries(votes, async (vote) => {
      const user = await db.user(vote.user_id, row.organization_id)
      return {
        id: vote.id,
        userId: vote.user_id,
        ...(user ? { user: await userView(db, user) } : {}),
        activityId: row.id,
        selection: vote.selection,
        message: vote.message ?? '',
        publicKey: vote.public_key ?? '',
        signature: vote.signature ?? '',
        scheme: vote.scheme ?? '',
        createdAt: timestamp(vote.created_at),
      }
    }),
    fingerprint: row.fingerprint,
    ...standing,
    createdAt: timestamp(row.created_at),
    updatedAt: timestamp(row.updated_at),
    ...(row.failure ? { failure: JSON.parse(row.failure) as unknown } : {}),
  }
}
