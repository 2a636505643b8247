import { z } from 'zod'
import type { Db } from '../db.js'
import { GrpcCode } from '../errors.js'
import { parse } from '../params.js'
import { type Asset, allowancesOf, formatAmount, formatPeriod, type GrantRule, grantRefusal, spendsOf } from './rule.js'

// A grant's rule applied to an activity its key stamped, against the ledger of what it already
// signed: run inside the activity's transaction, so the charge commits with the signature or not
// at all, and the grant's row lock makes concurrent signatures (on any instance) count one by one.

/** What a signature under a grant spends, to be recorded with it (`recordCharge`). */
export type GrantCharge = { grantId: string; spends: ReadonlyMap<Asset, bigint> }

/** The one activity a grant's key may submit. */
export const GRANT_ACTIVITY = 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2'

const signTransaction = z.object({ signWith: z.string().min(1), unsignedTransaction: z.string().min(1) }).passthrough()

/**
 * Checks an activity stamped by the grant key `apiKeyId` against its grant, at `at` (unix ms):
 * only sign_transaction, for the grant's account and chain, to what its permissions allow, and
 * within each allowance's rolling window counting what was already signed (the fee ceiling, gas
 * times the highest price, counts as native spend: rule.ts feeCeilingOf). Takes the grant's row
 * lock (call inside the activity's transaction); throws a typed refusal, writing nothing.
 *
 * @example
 * const charge = await chargeGrant(trx, caller.grantKeyId, type, params, now())
 */
export async function chargeGrant(db: Db, apiKeyId: string, type: string, params: unknown, at: number): Promise<GrantCharge> {
  if (type !== GRANT_ACTIVITY)
    throw grantRefusal(GrpcCode.permissionDenied, 'GRANT_ACTIVITY_NOT_ALLOWED', `A grant's key signs transactions only; ${type} is refused`)
  const grant = await db.lockGrantOfKey(apiKeyId)
  if (!grant) throw grantRefusal(GrpcCode.permissionDenied, 'GRANT_EXPIRED', 'The grant of this key was revoked')
  if (grant.expires_at <= at)
    throw grantRefusal(GrpcCode.permissionDenied, 'GRANT_EXPIRED', `The grant expired at ${new Date(grant.expires_at).toISOString()}`, { grantId: grant.id })
  const rule = JSON.parse(grant.rule) as GrantRule
  const { signWith, unsignedTransaction } = parse(signTransaction, params)
  if (signWith.toLowerCase() !== rule.account.toLowerCase())
    throw grantRefusal(GrpcCode.permissionDenied, 'GRANT_CALL_NOT_ALLOWED', `Outside the grant: it signs for ${rule.account} only`, { grantId: grant.id })
  const spends = spendsOf(rule, unsignedTransaction)
  for (const [asset, asked] of spends)
    for (const limit of allowancesOf(rule, asset)) {
      if (at < Number(limit.start) * 1000)
        throw grantRefusal(GrpcCode.permissionDenied, 'GRANT_NOT_STARTED', `Grant limit starts at ${new Date(Number(limit.start) * 1000).toISOString()}`, {
          grantId: grant.id,
        })
      const period = Number(limit.period)
      const spent = (await db.grantSpendsSince(grant.id, asset, at - period * 1000)).reduce((sum, amount) => sum + BigInt(amount), 0n)
      if (spent + asked > BigInt(limit.allowance))
        throw grantRefusal(
          GrpcCode.permissionDenied,
          'GRANT_LIMIT_EXCEEDED',
          `Grant limit: ${formatAmount(BigInt(limit.allowance), asset, limit)} per ${formatPeriod(period)}; ${formatAmount(spent, asset, limit)} already spent`,
          { grantId: grant.id, asset, allowance: limit.allowance, spent: String(spent), asked: String(asked) },
        )
    }
  return { grantId: grant.id, spends }
}

/** Records a charge in the ledger, in the transaction that stores its signature. */
export async function recordCharge(db: Db, charge: GrantCharge, activityId: string, at: number) {
  for (const [asset, amount] of charge.spends)
    await db.insertGrantSpend({ grant_id: charge.grantId, asset, amount: String(amount), activity_id: activityId, signed_at: at })
}
