import { toHex } from 'viem'
import { ActivityStatusError, ConsensusNeededError, EmbeddedError, KmsRequestError, MfaRequiredError } from './errors.js'
import { TurnkeyRequestError } from './kmsClient.js'

/** An activity as the kms answers it. */
export type Activity = { status: string; result: Record<string, unknown>; failure?: { message?: string } | undefined }

/** A value as JSON-RPC carries it: bigints as hex quantities (what the frame shows the user). */
export function rpcJson(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? toHex(item) : item)) ?? 'null')
}

/** SPEC §4: COMPLETED → the result; CONSENSUS_NEEDED → a consensus error; anything else → an activity error. */
export function completed(response: { activity: Activity }): Record<string, unknown> {
  const { status, result, failure } = response.activity
  if (status === 'ACTIVITY_STATUS_COMPLETED') return result
  if (status === 'ACTIVITY_STATUS_CONSENSUS_NEEDED') throw new ConsensusNeededError()
  throw new ActivityStatusError(status, { details: failure?.message })
}

/** A key-management call whose refusal becomes "Turnkey error {code}: {message}". */
export async function kmsCall<result>(call: () => Promise<result>): Promise<result> {
  try {
    return await call()
  } catch (error) {
    if (error instanceof TurnkeyRequestError) {
      const message = error.message.replace(/^Turnkey error \d+: /, '').replace(/ \(Details: .*\)$/s, '')
      const details = Array.isArray(error.details) ? (error.details as { reason?: unknown; domain?: unknown; metadata?: { activityType?: unknown } }[]) : []
      const mfa = details.find(
        (detail) => detail?.domain === 'latchkey.mfa' && (detail.reason === 'MFA_REQUIRED' || detail.reason === 'MFA_ENROLLMENT_REQUIRED'),
      )
      if (mfa)
        throw new MfaRequiredError({
          kmsCode: Number(error.code),
          message,
          reason: mfa.reason as 'MFA_REQUIRED' | 'MFA_ENROLLMENT_REQUIRED',
          activityType: typeof mfa.metadata?.activityType === 'string' ? mfa.metadata.activityType : undefined,
          cause: error,
        })
      throw new KmsRequestError(Number(error.code), message, { cause: error })
    }
    // fetch's own failure; anything else (a passkey prompt closed, ...) is the caller's to read.
    if (!(error instanceof TypeError)) throw error
    throw new EmbeddedError('kms_unreachable', 'The key-management service is unreachable.', {
      details: error instanceof Error ? error.message : String(error),
      cause: error,
    })
  }
}
