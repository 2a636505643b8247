import type { Db } from './db.js'
import { mapSeries } from './sequence.js'
import type { ActivityRow } from './storage/tables.js'
import { timestamp, userView } from './views.js'

/**
 * The `v1Activity` shape the clients read, from a stored row: its votes with their voters (a
 * voter deleted since is left out), and approval open while it waits for consensus. For an
 * activity stored this moment, `fresh` holds its intent and result as stored (it has no votes).
 *
 * @example
 * return c.json({ activity: await activityView(db, row) })
 */
export async function activityView(db: Db, row: ActivityRow, fresh?: { intent: unknown; result: unknown }) {
  const waiting = row.status === 'ACTIVITY_STATUS_CONSENSUS_NEEDED'
  const votes = fresh ? [] : await db.votes(row.id)
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
        message: '',
        publicKey: '',
        signature: '',
        scheme: '',
        createdAt: timestamp(vote.created_at),
      }
    }),
    fingerprint: row.fingerprint,
    canApprove: waiting,
    canReject: waiting,
    createdAt: timestamp(row.created_at),
    updatedAt: timestamp(row.updated_at),
    ...(row.failure ? { failure: JSON.parse(row.failure) as unknown } : {}),
  }
}
