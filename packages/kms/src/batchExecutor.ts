import { isAddress } from 'viem'

// One setting for the batch executor. The kms lets a sub-organization delegate with EIP-7702 only
// to its delegates (routes/activities.ts), and the consent frame signs authorizations and batches
// for one executor (frames/): two settings for one address could disagree, and then the frame
// would show a delegation the kms refuses, or the kms allow one the frame never offers.

/** The names the settings go by where they are given: options of createKms, or the CLI's flags. */
export type BatchExecutorLabels = { delegates: string; deprecatedExecutor: string }

/** createKms's option names. */
export const OPTION_LABELS: BatchExecutorLabels = { delegates: 'eip7702Delegates', deprecatedExecutor: 'frames.executor' }

/**
 * The EIP-7702 delegates and the consent frame's executor, from the delegates alone, or from the
 * deprecated frames executor when no delegate is named. Throws (a message naming `labels`) when
 * both are given and differ, and when frames are served with more than one delegate (the frame
 * signs for one executor).
 *
 * @example
 * batchExecutor({ delegates: [executor], framesServed: true }) // { delegates: [executor], framesExecutor: executor }
 */
export function batchExecutor(
  parameters: { delegates?: readonly string[] | undefined; deprecatedExecutor?: string | undefined; framesServed: boolean },
  labels: BatchExecutorLabels = OPTION_LABELS,
): { delegates: readonly string[]; framesExecutor: string | undefined } {
  const delegates = parameters.delegates ?? []
  const deprecated = parameters.deprecatedExecutor
  if (deprecated !== undefined) {
    if (!isAddress(deprecated, { strict: false })) throw new Error(`${labels.deprecatedExecutor}: ${JSON.stringify(deprecated)} is not an address`)
    if (delegates.length === 0) return { delegates: [deprecated], framesExecutor: deprecated }
    if (delegates.length === 1 && delegates[0]!.toLowerCase() === deprecated.toLowerCase()) return { delegates, framesExecutor: delegates[0] }
    throw new Error(
      `${labels.deprecatedExecutor} (deprecated) is ${deprecated} but ${labels.delegates} is ${delegates.join(', ')}: they name one contract, the batch executor; give ${labels.delegates} only`,
    )
  }
  if (parameters.framesServed && delegates.length > 1)
    throw new Error(
      `${labels.delegates} names ${delegates.length} contracts, but the consent frame signs for one batch executor: name one while the frames are served`,
    )
  return { delegates, framesExecutor: delegates[0] }
}
