import type { ActivityContext } from '../context.js'
import type { UserRow } from '../db.js'
import { GrpcCode, KmsError } from '../errors.js'
import { notFound } from '../params.js'

/** An activity type this service executes: its path, the intent key it is echoed under and the result key the clients read. */
export type Activity = {
  op: string
  intentKey: string
  resultKey: string
  run(params: unknown, context: ActivityContext): Promise<Record<string, unknown>> | Record<string, unknown>
}
/** Activities by the exact `type` the clients send. */
export type ActivityTable = Readonly<Record<string, Activity>>

/** A user of the organization the request names. */
export async function userIn(context: ActivityContext, userId: string): Promise<UserRow> {
  const user = await context.db.user(userId, context.caller.organizationId)
  if (!user) throw notFound(`user ${userId} not found in organization ${context.caller.organizationId}`)
  return user
}

export const alreadyExists = (message: string) => new KmsError(GrpcCode.alreadyExists, message)
export const failedPrecondition = (message: string) => new KmsError(GrpcCode.failedPrecondition, message)
